"""``python -m oar plugins|doctor|version`` (and the ``oar`` console script): what is installed and
registered, and whether the install works."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
import warnings
from importlib import metadata
from pathlib import Path

from oar._engine.registries import BACKENDS, THREAD_CONTROLS
from oar._version import __version__
from oar.errors import PluginWarning
from oar.plugins import plugin_infos


def _plugins_command(args) -> int:
    infos = plugin_infos()
    if args.json:
        print(json.dumps([info.__dict__ for info in infos], indent=2))
        return 0
    for info in infos:
        version = f" {info.version}" if info.version else ""
        print(f"{info.name}{version} [{info.status}] ({info.module})")
        if info.error:
            print(f"    error: {info.error}")
        for kind, names in sorted(info.registered.items()):
            shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
            print(f"    {kind}: {shown}")
    return 0


DISTRIBUTIONS = ("oar-core", "oar-nn", "oar-slim", "oar-serving", "oar-amp", "oar-onnx", "oar-numba", "oar-hydra",
                 "oar-distributed", "oar-triton")
CORE_DEPENDENCIES = ("numpy", "pluggy", "ml_dtypes", "safetensors")  # oar-core's pyproject
OPTIONAL_DEPENDENCIES = ("numba", "threadpoolctl", "onnxruntime", "onnx", "mpi4py", "triton")
# Every environment switch oar reads (grep for "OAR_"), with what it does; secrets are not printed.
ENV_SWITCHES = {
    "OAR_DISABLE_PLUGINS": "entry-point names of plugins not to load, comma-separated",
    "OAR_TRACE_PLUGINS": "1: trace plugin hook calls on stderr",
    "OAR_KEEP_FREED_MEMORY": "0: leave glibc's malloc settings alone",
    "OAR_COUNT_MEMORY": "1: count tensor memory from import oar (oar.device's statistics)",
    "OAR_DATA_HOME": "where oar.vision.datasets downloads to",
    "OAR_SERVE_API_KEY": "the key oar.serving requires (value hidden)",
    "OAR_SERVE_OPTIONS": "set by `python -m oar.serving` for its workers",
    "OAR_DISTRIBUTED_TIMEOUT": "seconds a collective of oar-distributed waits before it raises",
    "OAR_DISTRIBUTED_DEBUG": "1: oar-distributed checks that every rank calls the same collective",
}
SECRET_SWITCHES = {"OAR_SERVE_API_KEY"}


def _module_version(name: str) -> tuple[str | None, str]:
    """``(version, error)`` of an importable module: imported, so that a blocked or broken one shows."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        return None, "" if isinstance(exc, ModuleNotFoundError) and exc.name == name else f"{type(exc).__name__}: {exc}"
    try:
        return str(getattr(module, "__version__", None) or metadata.version(name)), ""
    except metadata.PackageNotFoundError:
        return "unknown", ""


def _blas() -> dict:
    """numpy's BLAS and its threads, from threadpoolctl where installed, else from numpy's build."""
    found = {"oar_num_threads": THREAD_CONTROLS.num_threads, "thread_controls": list(THREAD_CONTROLS)}
    try:
        import threadpoolctl  # optional dependency: the running BLAS libraries and their threads
    except ImportError:
        blas = (sys.modules["numpy"].show_config(mode="dicts") or {}).get("Build Dependencies", {}).get("blas", {})
        return {**found, "threadpoolctl": None, "libraries": [{"internal_api": blas.get("name"),
                                                                "version": blas.get("version"), "num_threads": None}]}
    libraries = [{k: info.get(k) for k in ("internal_api", "version", "num_threads", "threading_layer", "filepath")}
                 for info in threadpoolctl.threadpool_info() if info.get("user_api") == "blas"]
    return {**found, "threadpoolctl": threadpoolctl.__version__, "libraries": libraries}


def _numba_cache() -> dict | None:
    """numba's cache folder for oar-numba's kernels and how many it holds (warm: a first call loads, not compiles)."""
    spec = importlib.util.find_spec("oar_numba")
    if spec is None or spec.origin is None:
        return None
    in_tree = Path(spec.origin).parent / "__pycache__"  # numba's default: next to the source, if writable
    folder = os.environ.get("NUMBA_CACHE_DIR") or (in_tree if os.access(in_tree.parent, os.W_OK)
                                                   else Path.home() / ".cache" / "numba")
    files = [f for f in Path(folder).rglob("*.nbi") if "oar_numba" in str(f) or Path(folder) == in_tree]
    return {"folder": str(folder), "from": "NUMBA_CACHE_DIR" if os.environ.get("NUMBA_CACHE_DIR") else "default",
            "cached_kernels": len(files), "warm": bool(files)}


def _gpu() -> dict:
    if "gpu" not in BACKENDS:
        return {"plugin": None, "state": "no GPU plugin installed (oar-triton)"}
    backend = BACKENDS.get("gpu")
    available = backend.is_available()
    count = backend.device_count() if available else 0
    why = backend.unavailable_reason() if not available and hasattr(backend, "unavailable_reason") else ""
    state = f"{count} GPU(s) available" if available else "GPU plugin installed, but no GPU is available here"
    if available and hasattr(backend, "get_device_name"):
        state += f" ({backend.get_device_name()})"
    return {"plugin": BACKENDS.source_of("gpu"), "devices": count, "state": state + (f": {why}" if why else "")}


def _mpi() -> dict:
    try:
        import mpi4py  # optional dependency: MPI for oar-distributed
    except ImportError:
        return {"mpi4py": None, "library": None}
    mpi4py.rc.initialize = mpi4py.rc.finalize = False  # ask the library its version without starting MPI
    from mpi4py import MPI  # optional dependency, as above

    return {"mpi4py": mpi4py.__version__, "library": MPI.Get_library_version().strip().splitlines()[0]}


def doctor_report() -> dict:
    """Everything ``python -m oar doctor`` prints, with ``problems``: each ``{"problem", "fix"}`` that breaks the install."""
    problems = []
    dependencies = {}
    for name in (*CORE_DEPENDENCIES, *OPTIONAL_DEPENDENCIES):
        version, error = _module_version(name)
        required = name in CORE_DEPENDENCIES
        dependencies[name] = {"version": version, "required": required, "error": error}
        if required and version is None:
            problems.append({"problem": f"oar-core's dependency {name} {error or 'is not installed'}",
                             "fix": f"pip install {'--force-reinstall ' if error else ''}{name}"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PluginWarning)  # the failures are reported below, with their fix
        plugins = [info.__dict__ for info in plugin_infos()]
    for info in plugins:
        if info["status"] == "failed":
            problems.append({"problem": f"plugin {info['name']!r} ({info['module']}) failed to load: {info['error']}",
                             "fix": f"reinstall or fix the package that provides it, or skip it with "
                                    f"OAR_DISABLE_PLUGINS={info['name']}"})
    distributions = {}
    for name in DISTRIBUTIONS:
        try:
            distributions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            distributions[name] = None
    environment = {name: ("(hidden)" if name in SECRET_SWITCHES else os.environ[name]) if name in os.environ else None
                   for name in ENV_SWITCHES}
    return {"oar": __version__, "python": sys.version.split()[0], "distributions": distributions,
            "dependencies": dependencies, "plugins": plugins, "blas": _blas(), "numba_cache": _numba_cache(),
            "gpu": _gpu(), "mpi": _mpi(), "environment": environment, "problems": problems}


def _print_doctor(report: dict) -> None:
    print(f"oar {report['oar']} on Python {report['python']}")
    print("distributions:")
    for name, version in report["distributions"].items():
        print(f"    {name}: {version or 'not installed'}")
    print("dependencies:")
    for name, dep in report["dependencies"].items():
        kind = "" if dep["required"] else " (optional)"
        print(f"    {name}{kind}: {dep['version'] or dep['error'] or 'not installed'}")
    print("plugins:")
    for info in report["plugins"]:
        print(f"    {info['name']} {info['version']} [{info['status']}]" + (f": {info['error']}" if info["error"] else ""))
    blas = report["blas"]
    print(f"BLAS (threadpoolctl {blas['threadpoolctl']}):" if blas["threadpoolctl"] else
          "BLAS (threadpoolctl not installed: numpy's build configuration, thread counts unknown):")
    for lib in blas["libraries"]:
        print(f"    {lib['internal_api']} {lib['version']}" + (f", {lib['num_threads']} threads" if lib["num_threads"] else ""))
    print(f"    oar.set_num_threads: {blas['oar_num_threads'] or 'not called'}; "
          f"thread controls: {', '.join(blas['thread_controls'])}")
    cache = report["numba_cache"]
    print("numba cache: " + ("oar-numba not installed" if cache is None else
          f"{cache['folder']} ({cache['from']}), " + (f"warm: {cache['cached_kernels']} kernels cached" if cache["warm"]
                                                      else "cold: the first calls compile oar-numba's kernels")))
    print(f"GPU: {report['gpu']['state']}")
    mpi = report["mpi"]
    print(f"MPI: mpi4py {mpi['mpi4py']}, {mpi['library']}" if mpi["mpi4py"] else "MPI: not found (mpi4py not installed)")
    print("environment switches:")
    for name, value in report["environment"].items():
        print(f"    {name}={value}" if value is not None else f"    {name} not set ({ENV_SWITCHES[name]})")
    for problem in report["problems"]:
        print(f"PROBLEM: {problem['problem']}. Fix: {problem['fix']}")
    print("oar's install is broken: see the problems above." if report["problems"] else "No problems found.")


def _doctor_command(args) -> int:
    report = doctor_report()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print_doctor(report)
    return 1 if report["problems"] else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="oar", description="oar command-line tools")
    sub = parser.add_subparsers(dest="command")
    plugins = sub.add_parser("plugins", help="list loaded plugins, their versions and what each registered")
    plugins.add_argument("--json", action="store_true", help="print machine-readable JSON")
    doctor = sub.add_parser("doctor", help="check the install: versions, plugins, BLAS, GPU, MPI, environment")
    doctor.add_argument("--json", action="store_true", help="print machine-readable JSON")
    sub.add_parser("version", help="print oar's version")
    args = parser.parse_args(argv)
    if args.command == "plugins":
        return _plugins_command(args)
    if args.command == "doctor":
        return _doctor_command(args)
    if args.command == "version":
        print(__version__)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
