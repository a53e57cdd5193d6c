#!/usr/bin/env python3
"""oar's two-command bootstrap: needs only Python >= 3.10 with pip and venv.

    python3 dev.py demo     # set up, then run oar's main job (nox session "demo")
    python3 dev.py test     # set up, then lint and run every test once (nox sessions "lint", "tests_isolated", "tests")

The first run creates ``.venv-dev/`` with nox in it; nox then builds one virtualenv per session
under ``.nox/`` and reuses them on later runs. Anything after the task name goes to nox, e.g.
``python3 dev.py test -- -k plugins`` (arguments after ``--`` reach pytest).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
DEV_VENV = ROOT / ".venv-dev"
TASKS = {
    "demo": ["demo"],
    "test": ["lint", "tests_isolated", "tests"],
    "lint": ["lint"],
    "bench": ["bench"],
}
NOX_REQUIREMENT = "nox>=2024.10.9"  # per-session reuse_venv=False, which tests_isolated relies on


def dev_python() -> Path:
    return DEV_VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_nox() -> Path:
    """``.venv-dev/`` with nox installed; created on the first run only."""
    python = dev_python()
    if python.exists() and subprocess.run([python, "-c", "import nox"], capture_output=True).returncode == 0:
        return python
    print(f"dev.py: creating {DEV_VENV.name}/ with nox (first run only)", flush=True)
    try:
        venv.create(DEV_VENV, with_pip=True, clear=True)
    except subprocess.CalledProcessError:  # Debian and Ubuntu ship ensurepip separately
        sys.exit("dev.py: could not create a virtual environment; install your Python's venv module "
                 "(e.g. apt-get install python3-venv) and run again")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip", NOX_REQUIREMENT], check=True)
    return python


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 10):  # noqa: UP036 - dev.py runs under whatever python3 a newcomer has
        sys.exit(f"dev.py: oar needs Python >= 3.10, this is {sys.version.split()[0]}")
    if not argv or argv[0] not in TASKS:
        print(__doc__.strip(), f"\n\ntasks: {', '.join(TASKS)}", file=sys.stderr)
        return 2
    task, extra = argv[0], argv[1:]
    python = ensure_nox()
    command = [python, "-m", "nox", "--noxfile", str(ROOT / "noxfile.py"), "--reuse-existing-virtualenvs",
               "--sessions", *TASKS[task], *extra]
    print("dev.py:", " ".join(str(part) for part in command[1:]), flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
