"""``oar.utils.deprecated`` / ``require_version`` / ``try_import``, with Paddle 3.3.1's semantics."""

from __future__ import annotations

import sys
import warnings

import pytest

from oar.errors import ArgumentError
from oar.utils import PADDLE_API_VERSION, VisibleDeprecationWarning, deprecated, require_version, try_import


def _calls(func, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = func(*args)
    return result, [w for w in caught if w.category is VisibleDeprecationWarning]


def test_level_0_only_marks_the_docstring():
    def old(x):
        """Double."""
        return 2 * x

    marked = deprecated(update_to="oar.scale", since="2.0", reason="renamed")(old)
    assert marked is old
    # Paddle 3.3.1's notice, word for word (its module name aside).
    assert marked.__doc__ == (f'\n\nWarning:\n    API "{__name__}.old" is deprecated since 2.0, and will be removed in '
                              f'future versions. Please use "oar.scale" instead.\n    Reason: renamed\n\nDouble.')
    assert _calls(marked, 3) == (6, [])


def test_level_1_warns_once_the_version_reaches_since():
    @deprecated(update_to="paddle.add", since="2.5", level=1)
    def plus(a, b):
        return a + b

    result, caught = _calls(plus, 1, 2)
    assert result == 3 and len(caught) == 1
    assert 'API "' in str(caught[0].message) and 'Please use "paddle.add" instead.' in str(caught[0].message)

    @deprecated(since="99.0", level=1)
    def future(x):
        return x

    assert _calls(future, 1) == (1, [])

    @deprecated(level=1)
    def always(x):
        return x

    assert len(_calls(always, 1)[1]) == 1 and always.__name__ == "always"


def test_level_2_raises_and_bad_arguments_are_refused():
    @deprecated(level=2)
    def gone():
        return 1

    with pytest.raises(RuntimeError, match="has been deprecated"):
        gone()
    with pytest.raises(ArgumentError, match="level"):
        deprecated(level=3)
    with pytest.raises(ArgumentError, match="update_to"):
        deprecated(update_to="numpy.add")
    with pytest.raises(ArgumentError, match="since"):
        deprecated(since=2.0)


def test_require_version_compares_with_the_paddle_api_oar_implements():
    assert PADDLE_API_VERSION == "3.3.1"
    require_version("2.0")
    require_version("3.3.1")
    require_version("3", "3.3.1.0")
    with pytest.raises(RuntimeError, match="VersionError: PaddlePaddle version 3.4 or higher"):
        require_version("3.4")
    with pytest.raises(RuntimeError, match=r"in \[2.0, 3.2\]"):
        require_version("2.0", "3.2")
    with pytest.raises(ArgumentError, match="min_version"):
        require_version("1.x")
    with pytest.raises(ArgumentError, match="max_version"):
        require_version("1.0", "2.0.0.0.0")
    with pytest.raises(TypeError, match="min_version"):
        require_version(1)


def test_try_import_names_the_pip_package(monkeypatch):
    assert try_import("json") is sys.modules["json"]
    with pytest.raises(ImportError, match=r"`pip install no_such_pkg_xyz`"):
        try_import("no_such_pkg_xyz.sub")
    monkeypatch.setitem(sys.modules, "cv2", None)  # makes `import cv2` fail whether or not it is installed
    with pytest.raises(ImportError, match="`pip install opencv-python`"):
        try_import("cv2")
    with pytest.raises(ImportError, match="^custom$"):
        try_import("no_such_pkg_xyz", err_msg="custom")
