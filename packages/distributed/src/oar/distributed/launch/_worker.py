"""One rank of a job that ``oar.distributed.launch`` started: ``mpiexec`` runs
``python -m oar.distributed.launch._worker --log_dir DIR (script.py | -m module) [args ...]`` on
every rank.

The worker joins MPI, sets the ``PADDLE_*`` variables, sends the rank's output to
``DIR/workerlog.<rank>`` (rank 0's to the console too), and runs the script as ``__main__``, as
``python script.py`` would. When the script raises, or exits with a non-zero code, the worker
prints the traceback to the log and, prefixed with the rank, to the console, records the failure
in ``DIR/.failed/rank<r>.json`` for the launcher, and calls ``MPI_Abort``: ``mpiexec`` then ends
every rank, also those waiting in a collective for the one that failed.
"""

from __future__ import annotations

import io
import json
import os
import runpy
import socket
import sys
import time
import traceback
from pathlib import Path

from oar.distributed._mpi import _import_mpi
from oar.distributed.launch._launcher import FAILED_DIR, WORLD_SIZE_VARIABLE

_INTERRUPTED = 130  # the shell's code for Ctrl-C


class _Tee(io.TextIOBase):
    """A text stream that writes to several: rank 0's stdout goes to the console and its log.
    Every line is flushed, so that an abort (which kills without flushing) loses nothing."""

    def __init__(self, *streams):
        self._streams = streams

    def write(self, text: str) -> int:
        for stream in self._streams:
            stream.write(text)
        if "\n" in text:
            self.flush()
        return len(text)

    def flush(self) -> None:
        for stream in self._streams:
            try:
                stream.flush()
            except (OSError, ValueError):
                pass  # a console closed under us must not hide the rank's own error

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._streams[0].isatty()

    def fileno(self) -> int:
        return self._streams[0].fileno()

    @property
    def encoding(self) -> str:
        return self._streams[0].encoding

    @property
    def errors(self) -> str | None:
        return self._streams[0].errors

    def __getattr__(self, name):
        return getattr(self._streams[0], name)  # .buffer, .mode, ...: the first stream's


def _parse(argv: list[str]) -> tuple[Path, str | None, str | None, list[str]]:
    """``--log_dir DIR (script | -m module) args...`` -> (log dir, script, module, args)."""
    if len(argv) < 3 or argv[0] != "--log_dir":
        raise SystemExit("usage: python -m oar.distributed.launch._worker --log_dir DIR (script.py | -m module) "
                         "[args ...]; started by python -m oar.distributed.launch, not by hand")
    log_dir, rest = Path(argv[1]), argv[2:]
    if rest[0] == "-m":
        if len(rest) < 2:
            raise SystemExit("oar.distributed.launch._worker: -m needs a module name")
        return log_dir, None, rest[1], rest[2:]
    return log_dir, rest[0], None, rest[1:]


def _exit_code(exc: SystemExit) -> int:
    """The process exit code ``python`` gives ``sys.exit(exc.code)``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    return 1  # sys.exit("message"): Python prints the message and exits 1


def _user_traceback(exc: BaseException) -> str:
    """The traceback as ``python script.py`` would print it: without the worker's and runpy's frames."""
    tb = exc.__traceback__
    # runpy's frames may be frozen ("<frozen runpy>"): know them by their module, not their file.
    while tb is not None and (tb.tb_frame.f_globals.get("__name__") == runpy.__name__
                              or os.path.abspath(tb.tb_frame.f_code.co_filename) == os.path.abspath(__file__)):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb))


class _Rank:
    """This process's place in the job and its output streams."""

    def __init__(self, MPI, log_dir: Path):
        self.MPI = MPI
        world = MPI.COMM_WORLD
        self.rank, self.size = world.Get_rank(), world.Get_size()
        node = world.Split_type(MPI.COMM_TYPE_SHARED)
        self.local_rank, self.local_size = node.Get_rank(), node.Get_size()
        node.Free()
        self.nnodes = world.allreduce(1 if self.local_rank == 0 else 0)
        self.host = socket.gethostname()
        self.log_dir = log_dir
        self.log_path = log_dir / f"workerlog.{self.rank}"
        # The console streams as mpiexec gave them: only the worker writes there once the rank's
        # output is redirected (rank 0's output, and every rank's fatal traceback).
        self.console_err = sys.stderr

    def set_environment(self) -> None:
        os.environ.update({
            "PADDLE_TRAINER_ID": str(self.rank),
            "PADDLE_TRAINERS_NUM": str(self.size),
            "PADDLE_LOCAL_RANK": str(self.local_rank),
            "PADDLE_RANK_IN_NODE": str(self.local_rank),
            "PADDLE_LOCAL_SIZE": str(self.local_size),
            "PADDLE_NNODES": str(self.nnodes),
        })

    def redirect_output(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)  # on another host, the launcher did not make it
        self.log = open(self.log_path, "w", encoding="utf-8", errors="backslashreplace", buffering=1)
        if self.rank == 0:
            sys.stdout = _Tee(sys.stdout, self.log)
            sys.stderr = _Tee(sys.stderr, self.log)
        else:
            sys.stdout = sys.stderr = _Tee(self.log)

    def flush(self) -> None:
        for stream in (sys.stdout, sys.stderr, self.console_err):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass

    def fail(self, code: int, text: str, summary: str) -> None:
        """Report the failure (log, console, ``.failed/rank<r>.json``) and abort the job."""
        self.flush()
        header = (f"rank {self.rank} of {self.size} on {self.host} failed with exit code {code}; "
                  f"stopping the job. Its log: {self.log_path}\n")
        self.log.write(header + text)
        self.log.flush()
        prefix = f"[rank {self.rank}] "
        self.console_err.write("".join(prefix + line for line in (header + text).splitlines(keepends=True)))
        self.console_err.flush()
        record = {"rank": self.rank, "exit_code": code, "error": summary, "host": self.host, "time": time.time()}
        failed = self.log_dir / FAILED_DIR
        try:
            failed.mkdir(parents=True, exist_ok=True)
            (failed / f"rank{self.rank}.json").write_text(json.dumps(record), encoding="utf-8")
        except OSError as exc:  # the abort below matters more than the record
            self.console_err.write(f"{prefix}could not record the failure in {failed}: {exc}\n")
        self.console_err.flush()
        # Ends every rank of the job, those blocked in a collective too; returns only if MPI is broken.
        self.MPI.COMM_WORLD.Abort(code)


def _check_world_size(MPI) -> None:
    """Fail clearly when mpiexec and mpi4py's MPI library are not the same MPI: each process
    then thinks it is alone (world size 1) and the job would compute nonsense, or hang."""
    expected = os.environ.get(WORLD_SIZE_VARIABLE, "")
    size = MPI.COMM_WORLD.Get_size()
    if expected.isdigit() and int(expected) != size:
        raise SystemExit(
            f"oar.distributed.launch: mpiexec started {expected} processes but MPI says this job has {size}: "
            f"mpiexec and mpi4py's MPI library ({MPI.Get_library_version().splitlines()[0].strip()}) come from "
            "different MPIs. Install one MPI in the environment (pip install mpich) and launch with its mpiexec")


def main(argv: list[str] | None = None) -> int:
    """Run one rank: ``python -m oar.distributed.launch._worker --log_dir DIR script.py args``."""
    log_dir, script, module, args = _parse(sys.argv[1:] if argv is None else argv)
    MPI = _import_mpi()
    _check_world_size(MPI)
    rank = _Rank(MPI, log_dir)
    rank.set_environment()
    rank.redirect_output()
    try:
        if module is not None:
            sys.argv = [module, *args]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [script, *args]
            # As `python script.py`: the script's folder first on sys.path, not the worker's.
            sys.path[0] = os.path.dirname(os.path.abspath(script))
            runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = _exit_code(exc)
        if code != 0:
            message = "" if isinstance(exc.code, int) else f"{exc.code}\n"
            rank.fail(code, f"{message}the script called sys.exit({exc.code!r})\n", f"sys.exit({exc.code!r})")
    except KeyboardInterrupt:
        rank.fail(_INTERRUPTED, "interrupted (KeyboardInterrupt)\n", "KeyboardInterrupt")
    except BaseException as exc:  # noqa: BLE001 - every failure must end the job, not only Exceptions
        message = str(exc).strip().splitlines()
        summary = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
        rank.fail(1, _user_traceback(exc), summary)
    rank.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
