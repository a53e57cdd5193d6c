"""``python -m oar.distributed.launch --check``: what every rank runs instead of a script.

Every rank reports its host, Python and the versions of oar-core, oar-distributed, mpi4py and the
MPI library; rank 0 prints them as a table, checks they agree, runs a test ``Allreduce`` (4 MiB of
float32, a few times) and prints its bus bandwidth. The job exits 1 with a one-line fix when the
versions differ or the all-reduce gives a wrong sum, 0 otherwise.

The reports travel as JSON in fixed-size byte buffers: no rank unpickles what another sent.
"""

from __future__ import annotations

import json
import platform
import re
import socket
import sys
import time
from importlib import metadata

import numpy as np

from oar.distributed._mpi import _import_mpi
from oar.distributed.launch._launcher import PREFLIGHT_STARTED

_REPORT_BYTES = 4096
_ALLREDUCE_BYTES = 4 << 20
_REPETITIONS = 10
# What must be the same on every rank (the host may differ).
_MUST_AGREE = ("python", "oar-core", "oar-distributed", "mpi4py", "MPI library")


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _library(MPI) -> str:
    """``MPICH 5.0.2`` from the library's banner (its first line, without the word Version)."""
    first = MPI.Get_library_version().strip().splitlines()[0]
    first = first.split(",")[0]  # Open MPI: "Open MPI v5.0.3, package: ..."
    return re.sub(r"\s*Version:?\s*", " ", first).strip()


def report(MPI) -> dict[str, str]:
    """This rank's host and versions.

    >>> sorted(report(_import_mpi()))  # doctest: +SKIP
    ['MPI library', 'host', 'mpi4py', 'oar-core', 'oar-distributed', 'python']
    """
    return {"host": socket.gethostname(), "python": platform.python_version(), "oar-core": _version("oar-core"),
            "oar-distributed": _version("oar-distributed"), "mpi4py": _version("mpi4py"),
            "MPI library": _library(MPI)}


def _gather_reports(MPI, comm) -> list[dict[str, str]] | None:
    data = json.dumps(report(MPI)).encode("utf-8")[:_REPORT_BYTES]
    send = np.zeros(_REPORT_BYTES, np.uint8)
    send[:len(data)] = np.frombuffer(data, np.uint8)
    received = np.zeros((comm.Get_size(), _REPORT_BYTES), np.uint8) if comm.Get_rank() == 0 else None
    comm.Gather(send, received, root=0)
    if received is None:
        return None
    return [json.loads(bytes(row).rstrip(b"\0")) for row in received]


def _table(reports: list[dict[str, str]]) -> str:
    columns = ["rank", "host", *_MUST_AGREE]
    rows = [[str(rank), *(r[c] for c in columns[1:])] for rank, r in enumerate(reports)]
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(columns)]
    lines = [columns, *rows]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths)).rstrip() for line in lines)


def _disagreements(reports: list[dict[str, str]]) -> list[str]:
    """One phrase per column whose value differs between ranks: which value on which hosts."""
    found = []
    for column in _MUST_AGREE:
        where: dict[str, list[str]] = {}
        for rank, r in enumerate(reports):
            where.setdefault(r[column], []).append(f"{rank}@{r['host']}")
        if len(where) > 1:
            found.append(f"{column} differs ("
                         + "; ".join(f"{value} on rank {', '.join(ranks)}" for value, ranks in where.items()) + ")")
    return found


def _time_allreduce(MPI, comm) -> tuple[float, bool]:
    """Seconds per in-place ``Allreduce`` of 4 MiB float32 (the slowest rank's), and whether its sum is right."""
    n = comm.Get_size()
    data = np.empty(_ALLREDUCE_BYTES // 4, np.float32)
    data.fill(comm.Get_rank() + 1)
    comm.Allreduce(MPI.IN_PLACE, data, MPI.SUM)  # warm-up: connections and buffers are set up on first use
    correct = bool(np.all(data == n * (n + 1) / 2))
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(_REPETITIONS):
        comm.Allreduce(MPI.IN_PLACE, data, MPI.SUM)
    seconds = (time.perf_counter() - start) / _REPETITIONS
    return comm.allreduce(seconds, MPI.MAX), bool(comm.allreduce(correct, MPI.LAND))


def main() -> int:
    """Run the preflight on this rank; rank 0 prints the verdict and returns 1 when something is wrong."""
    MPI = _import_mpi()
    comm = MPI.COMM_WORLD
    n = comm.Get_size()
    reports = _gather_reports(MPI, comm)
    if reports is not None:
        print(f"{PREFLIGHT_STARTED} ({n} ranks on {len({r['host'] for r in reports})} host(s))", flush=True)
        print(_table(reports), flush=True)
    seconds, correct = _time_allreduce(MPI, comm)
    if reports is None:
        return 0
    algorithm_bandwidth = _ALLREDUCE_BYTES / seconds / 1e9
    # nccl-tests' bus bandwidth: what each link carries in a ring all-reduce, comparable across world sizes.
    bus = algorithm_bandwidth * 2 * (n - 1) / n
    bus_text = f"bus bandwidth {bus:.2f} GB/s" if n > 1 else "bus bandwidth n/a with one rank"
    print(f"all_reduce of {_ALLREDUCE_BYTES >> 20} MiB float32 over {n} rank(s): {seconds * 1e3:.2f} ms, "
          f"{bus_text}", flush=True)
    problems = _disagreements(reports)
    if problems:
        print(f"oar preflight: FAILED: {'; '.join(problems)}. Fix: install the same Python and packages on every "
              "host, at the same path (e.g. the same venv, pip install -r one requirements file)", flush=True)
        return 1
    if not correct:
        print("oar preflight: FAILED: the test all_reduce returned a wrong sum. Fix: reinstall the MPI library "
              "(pip install --force-reinstall mpich) and check that every host uses the same one", flush=True)
        return 1
    print("oar preflight: OK", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
