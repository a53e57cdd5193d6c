"""oar-core as a distribution: other distributions add subpackages to the ``oar`` namespace (as
wheels and as editable installs), a missing one says what to install, and ``import oar`` loads no plugin.

The namespace tests build real virtual environments from scratch and install numpy, pluggy and
ml_dtypes from the package index (or pip's cache), as a user's ``pip install`` would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "packages" / "core"
# How long `import oar` takes is measured by the benchmark suite (bench/import_time.py, as a
# ratio to `import numpy` in the same run), not here: a timing is no unit test.


def test_import_oar_loads_no_plugin_and_no_subpackage_of_other_distributions():
    script = """
        import json, sys
        import oar
        import oar._engine.registries as registry
        print(json.dumps({"plugins_loaded": registry._loaded,
                          "modules": sorted(m for m in sys.modules if m.startswith("oar."))}))
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    assert report["plugins_loaded"] is False
    assert "oar.plugins._manager" not in report["modules"]
    assert not [m for m in report["modules"] if m.split(".")[1] in ("nn", "slim", "serving", "distributed", "amp", "onnx")]


NSPROBE_PYPROJECT = """
    [build-system]
    requires = ["hatchling>=1.18"]
    build-backend = "hatchling.build"

    [project]
    name = "oar-nsprobe"
    version = "0.0.1"
    requires-python = ">=3.10"
    dependencies = ["oar-core"]

    [tool.hatch.build.targets.wheel]
    packages = ["src/oar"]
"""

NAMESPACE_CHECK = """
    import json
    import oar, oar.nsprobe
    try:
        oar.nn
        missing = "oar.nn imported"
    except AttributeError as exc:
        missing = str(exc)
    print(json.dumps({"oar": oar.__file__, "nsprobe": oar.nsprobe.__file__, "marker": oar.nsprobe.MARKER,
                      "sum": oar.to_tensor([1.0, 2.0]).sum().item(), "missing": missing}))
"""


@pytest.fixture
def nsprobe(tmp_path: Path) -> Path:
    """A distribution that ships only ``oar/nsprobe/``, as oar-nn ships ``oar/nn/``."""
    root = tmp_path / "oar-nsprobe"
    (root / "src" / "oar" / "nsprobe").mkdir(parents=True)
    (root / "src" / "oar" / "nsprobe" / "__init__.py").write_text('MARKER = "from oar-nsprobe"\n')
    (root / "pyproject.toml").write_text(textwrap.dedent(NSPROBE_PYPROJECT))
    return root


def fresh_venv(path: Path) -> Path:
    """A venv with pip and nothing of this interpreter's packages."""
    venv.create(path, with_pip=True)
    return path / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def pip_install(python: Path, *args: str) -> None:
    result = subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


def check_namespace(python: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    result = subprocess.run([python, "-c", textwrap.dedent(NAMESPACE_CHECK)], capture_output=True, text=True,
                            timeout=120, env=env, cwd=python.parent)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["marker"] == "from oar-nsprobe"
    assert report["sum"] == 3.0
    assert re.search(r"oar\.nn is not installed: .*oar-nn.*pip install \./packages/nn", report["missing"]), report["missing"]
    return report


@pytest.mark.slow
def test_namespace_distributions_install_as_wheels(tmp_path, nsprobe):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, str(CORE), str(nsprobe))
    report = check_namespace(python)
    site_packages = str(tmp_path / "venv")
    assert report["oar"].startswith(site_packages) and report["nsprobe"].startswith(site_packages)
    assert Path(report["oar"]).parent == Path(report["nsprobe"]).parent.parent  # one merged oar/ folder


@pytest.mark.slow
def test_namespace_distributions_install_editable(tmp_path, nsprobe):
    python = fresh_venv(tmp_path / "venv")
    pip_install(python, "-e", str(CORE), "-e", str(nsprobe))
    report = check_namespace(python)
    assert Path(report["oar"]) == CORE / "src" / "oar" / "__init__.py"
    assert Path(report["nsprobe"]) == nsprobe / "src" / "oar" / "nsprobe" / "__init__.py"
