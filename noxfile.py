"""oar's automation: ``nox -s lint tests tests_isolated`` is what ``python3 dev.py test`` runs.

Sessions:
    tests_isolated  one fresh venv per distribution with only that distribution (a regular wheel
                    install), the oar distributions it declares and its test extra; runs
                    ``tests/<folder name>``, and lists what it skipped (a test that needs another
                    distribution skips there) in ``.nox/skipped/<folder name>.txt``
    tests           every package and plugin installed editable in one venv; after the isolated
                    sessions of the same nox run, the tests they skipped and the tests of no single
                    distribution (``tests/test_*.py``): each test runs once; alone, the whole tree
    lint            ruff (pyflakes, pycodestyle, import sorting), configured in the root pyproject.toml
    bench           the benchmark suite, ``python bench/run.py``: oar side by side with PyTorch,
                    PaddlePaddle and ONNX Runtime, installed into the session's own venv (never
                    into the test venvs); ``nox -s bench -- --write`` appends to docs/benchmarks.md
    demo            ``oar-run`` (plugins/oar-hydra): LeNet on the bundled digits, arguments passed through

Distributions are found on disk (``packages/*/pyproject.toml``, ``plugins/*/pyproject.toml``), so a
new package joins every session by existing.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nox
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # nox itself depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent
DISTRIBUTIONS = sorted(
    path.parent.relative_to(ROOT).as_posix()
    for pattern in ("packages/*/pyproject.toml", "plugins/*/pyproject.toml")
    for path in ROOT.glob(pattern)
)

nox.options.sessions = ["lint", "tests_isolated", "tests"]
SKIPPED = ROOT / ".nox" / "skipped"  # tests_isolated's lists of the tests it skipped (tests/conftest.py)
STARTED = time.time()  # this nox run's start: older lists are another run's
nox.options.error_on_missing_interpreters = True


def _project_table(distribution: str) -> dict:
    with open(ROOT / distribution / "pyproject.toml", "rb") as file:
        return tomllib.load(file)["project"]


def _with_local_dependencies(distribution: str) -> list[str]:
    """``distribution`` and, transitively, the sibling distributions it depends on, as local paths.

    oar's packages are not on an index: ``pip install ./packages/nn`` alone would look for
    oar-core there, so the local core is handed to pip beside it.
    """
    local = {canonicalize_name(_project_table(d)["name"]): d for d in DISTRIBUTIONS}
    needed, pending = [distribution], [distribution]
    while pending:
        for requirement in _project_table(pending.pop()).get("dependencies", []):
            dependency = local.get(canonicalize_name(Requirement(requirement).name))
            if dependency is not None and dependency not in needed:
                needed.append(dependency)
                pending.append(dependency)
    return needed


def _left_by_isolated_sessions() -> list[str] | None:
    """The tests this nox run's isolated sessions skipped, with the tests of no single distribution;
    None unless every distribution's isolated session wrote its list in this run."""
    lists = [SKIPPED / f"{Path(dist).name}.txt" for dist in DISTRIBUTIONS]
    if not all(path.exists() and path.stat().st_mtime >= STARTED for path in lists):
        return None
    skipped = sorted({line for path in lists for line in path.read_text(encoding="utf-8").split()})
    return sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").glob("test_*.py")) + skipped


@nox.session
def tests(session: nox.Session) -> None:
    """Every distribution installed editable: the tests the isolated sessions before it in this
    nox run skipped, and the cross-package ones (``tests/test_*.py``); the whole suite when it runs
    without them (posargs go to pytest)."""
    editable = [arg for dist in DISTRIBUTIONS for arg in ("-e", f"./{dist}[test]")]
    session.install(*editable, "pytest-xdist")
    left = _left_by_isolated_sessions()
    if left is not None:
        session.log(f"running the {len(left)} tests and files the isolated sessions left")
    session.run("pytest", *(left if left is not None else ["tests"]), "-n", "2", "--durations=20", *session.posargs)


@nox.session(reuse_venv=False)  # fresh each time: a leftover package would hide a missing dependency
@nox.parametrize("distribution", DISTRIBUTIONS, ids=[Path(d).name for d in DISTRIBUTIONS])
def tests_isolated(session: nox.Session, distribution: str) -> None:
    """One distribution alone, installed as a wheel, against its own tests."""
    dependencies = _with_local_dependencies(distribution)[1:]
    # pytest-xdist only runs the tests in parallel; it is no oar package, so isolation holds.
    session.install(f"./{distribution}[test]", *(f"./{dist}" for dist in dependencies), "pytest-xdist")
    # The tests must exercise the installed wheel, not the source tree.
    location = session.run("python", "-c", "import oar; print(oar.__file__)", silent=True).strip()
    if "site-packages" not in location:
        session.error(f"oar is imported from {location}, not from the installed wheel")
    skipped = SKIPPED / f"{Path(distribution).name}.txt"
    skipped.unlink(missing_ok=True)  # written anew by this run's tests (tests/conftest.py)
    session.run("pytest", f"tests/{Path(distribution).name}", "-n", "2", "--durations=20", *session.posargs,
                env={"OAR_SKIPPED_LOG": str(skipped)})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: errors, style, modern syntax and import order (see [tool.ruff] in pyproject.toml)."""
    session.install("ruff==0.17.6")  # pinned: a new ruff release may add checks
    session.run("ruff", "check", ".", *session.posargs)


# The peers of the benchmark suite, one pip call each so that one that cannot be installed leaves the
# others (its columns then say "not installed"). torch is the CPU build pinned here, never a CUDA one;
# onnx is what torch.onnx.export needs to write the model ONNX Runtime runs.
BENCH_PEERS = (("torch==2.13.0",), ("paddlepaddle",), ("onnxruntime", "onnx"))


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmark suite at 1 then 2 threads; ``nox -s bench -- --write`` appends it to docs/benchmarks.md.

    Other arguments go to bench/run.py, e.g. ``-- --frameworks oar --quick`` or ``-- --workloads W2 W3``.
    """
    session.install(*(f"./{dist}" for dist in DISTRIBUTIONS), "threadpoolctl")
    for requirements in BENCH_PEERS:
        try:
            session.install(*requirements, silent=True)
        except nox.command.CommandFailed:
            session.warn(f"could not install {' '.join(requirements)}: its columns will say 'not installed'")
    session.run("python", "bench/run.py", *session.posargs)


@nox.session
def demo(session: nox.Session) -> None:
    """oar's main job, end to end, with the installed packages: ``oar-run`` (oar-hydra) with its
    defaults trains LeNet on the bundled digits through ``oar.Model`` (oar-nn, with its ``vis`` extra
    for the TensorBoard logs and the training curves) and fails below 97% test accuracy; then, its
    second half, ``slim=ptq`` (oar-slim) quantizes the trained LeNet to int8 and prints float32 vs
    int8: test accuracy, ``.pdiparams`` size and Predictor latency (oar-serving). Arguments go to
    oar-run, replacing both: ``python3 dev.py demo -- model=mlp trainer.epochs=5 slim=qat``."""
    session.install(*(f"./{dist}[vis]" if dist == "packages/nn" else f"./{dist}" for dist in DISTRIBUTIONS))
    # Set-up compiles the common CPU kernels into numba's disk cache, saying so a model at a time,
    # so that no first training step or export waits silently for them (docs/numba.md).
    session.run("python", "-m", "oar_numba", "warm")
    session.run("oar-run", *(session.posargs or ["trainer.min_accuracy=0.97", "slim=ptq"]))
