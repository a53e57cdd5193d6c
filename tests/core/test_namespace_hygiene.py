"""``dir(oar)`` and ``dir(oar.nn)`` show only names that work, and an absent name says why.

A name in ``dir()`` is what tab completion offers and what ``import oar as paddle`` users explore:
no ``annotations``, no implementation modules or tables (``oar._engine``, ``ALL_OPS``), no subpackage
whose distribution is not installed. Reading one that is not installed names its distribution and how
to install it from a clone (no oar package is on an index); a planned one says it is planned; a name
no package provides (a typo) gets Python's own error.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import re
import types
from pathlib import Path

import pytest

import oar

REPO = Path(__file__).resolve().parents[2]


def python_error(module_name: str, name: str) -> str:
    """The message Python's own modules give for a missing attribute."""
    with pytest.raises(AttributeError) as info:
        getattr(types.ModuleType(module_name), name)
    return str(info.value)


def absent_message(name: str) -> str:
    with pytest.raises(AttributeError) as info:
        getattr(oar, name)
    return str(info.value)


def test_every_name_in_dir_oar_works():
    broken = []
    for name in dir(oar):
        try:
            getattr(oar, name)
        except AttributeError as exc:
            broken.append(f"{name}: {exc}")
    assert broken == []


def test_dir_oar_leaves_out_module_plumbing():
    names = set(dir(oar))
    private = sorted(name for name in names if name.startswith("_") and name != "__version__")
    assert private == []
    assert {"annotations", "ALL_OPS", "importlib", "pkgutil"}.isdisjoint(names)
    assert {"to_tensor", "Tensor", "no_grad", "jit", "static", "__version__"} <= names


def test_dir_oar_leaves_out_what_is_not_installed(monkeypatch):
    monkeypatch.setitem(oar._LAZY_MODULES, "not_installed_here", "oar-amp")
    monkeypatch.setitem(oar._LAZY_ATTRS, "NotInstalledHere", ("oar.not_installed_here", "NotInstalledHere"))
    names = set(dir(oar))
    assert {"not_installed_here", "NotInstalledHere"}.isdisjoint(names)
    for name, dist in oar._LAZY_MODULES.items():  # the real ones: listed exactly when they import
        assert (name in names) == (importlib.util.find_spec(f"oar.{name}") is not None), (name, dist)


def test_a_subpackage_not_installed_says_how_to_install_it_from_a_clone(monkeypatch):
    monkeypatch.setitem(oar._LAZY_MODULES, "not_installed_here", "oar-amp")
    monkeypatch.setitem(oar._LAZY_ATTRS, "NotInstalledHere", ("oar.not_installed_here", "NotInstalledHere"))
    expected = ("oar.{} is not installed: it comes with the oar-amp package, which is on no package index; "
                "from a clone of oar's repository: pip install ./plugins/oar-amp")
    assert absent_message("not_installed_here") == expected.format("not_installed_here")
    assert absent_message("NotInstalledHere") == expected.format("NotInstalledHere")
    assert not hasattr(oar, "not_installed_here")
    monkeypatch.setitem(oar._LAZY_MODULES, "nn_not_installed_here", "oar-nn")
    assert absent_message("nn_not_installed_here").endswith("pip install ./packages/nn")


def test_a_planned_subpackage_says_it_is_planned_and_a_typo_gets_pythons_usual_error(monkeypatch):
    monkeypatch.setattr(oar, "_PLANNED", {"oar-someday"})
    monkeypatch.setitem(oar._LAZY_MODULES, "someday", "oar-someday")
    assert absent_message("someday") == (
        "oar.someday is planned: it will come with the oar-someday package, not written yet; once it is, "
        "from a clone of oar's repository: pip install ./packages/someday")
    assert absent_message("nnn") == python_error("oar", "nnn")  # a name no package provides
    with pytest.raises(ModuleNotFoundError, match=r"^No module named 'oar\.nnn'$"):
        importlib.import_module("oar.nnn")


def distributions_in_repo() -> dict[str, Path]:
    """Each distribution's name -> its folder, from the pyproject.toml files of the clone."""
    found = {}
    for pyproject in [*REPO.glob("packages/*/pyproject.toml"), *REPO.glob("plugins/*/pyproject.toml")]:
        name = re.search(r'^name = "([^"]+)"', pyproject.read_text(encoding="utf-8"), re.MULTILINE).group(1)
        found[name] = pyproject.parent
    return found


def test_the_install_hints_point_at_the_repositorys_folders():
    # The message's folder is where the distribution is, and a distribution marked planned is not there yet.
    in_repo = distributions_in_repo()
    for name, dist in sorted(oar._LAZY_MODULES.items()):
        folder = re.search(r"pip install \./(\S+)$", str(oar._absent(name, f"oar.{name}"))).group(1)
        if dist in oar._PLANNED:
            assert dist not in in_repo, f"{dist} exists now ({in_repo.get(dist)}): drop it from oar._PLANNED"
            assert not (REPO / folder).exists(), f"{folder} exists, yet {dist} is marked planned"
        else:
            assert dist in in_repo, f"{dist} (oar.{name}) is in no folder of the repository: mark it planned"
            assert (REPO / folder) == in_repo[dist], f"oar.{name}'s hint says {folder}, {dist} is in {in_repo[dist]}"


def test_public_dir_example_runs():
    (test,) = doctest.DocTestFinder().find(oar.utils.public_dir)
    result = doctest.DocTestRunner().run(test)
    assert result.attempted >= 4 and result.failed == 0


def test_dir_oar_nn_shows_only_names_that_work():
    nn = pytest.importorskip("oar.nn", reason="oar-nn is not installed in this session")
    names = set(dir(nn))
    assert [name for name in names if not hasattr(nn, name)] == []
    assert {"Linear", "Conv2D", "Layer", "functional", "initializer"} <= names
    assert [name for name in names if name.startswith("_")] == []
    assert {"annotations", "layer", "clip", "param_attr", "parameter"}.isdisjoint(names)
    modules = {name for name in names if isinstance(getattr(nn, name), types.ModuleType)}
    assert modules <= {"functional", "initializer", "quant", "utils"}
    assert isinstance(nn.layer, types.ModuleType)  # left out of dir(), still there for code that reads it
    with pytest.raises(AttributeError) as info:
        nn.Lineer  # noqa: B018 - the typo is the point
    assert str(info.value) == python_error("oar.nn", "Lineer")


def test_dir_oar_nn_functional_leaves_out_module_plumbing():
    F = pytest.importorskip("oar.nn.functional", reason="oar-nn is not installed in this session")
    names = set(dir(F))
    assert {"annotations", "ALL_OPS", "FAMILIES", "activation", "conv", "loss"}.isdisjoint(names)
    assert [name for name in names if name.startswith("_") or isinstance(getattr(F, name), types.ModuleType)] == []
    assert {"relu", "conv2d", "cross_entropy"} <= names
    assert F.ALL_OPS  # oar-nn's plugin still reads it
