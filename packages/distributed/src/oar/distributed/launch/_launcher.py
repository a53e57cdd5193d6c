"""The launcher's side of ``oar.distributed.launch``: read the command line, build the ``mpiexec``
command, run it, and turn what the ranks left in ``DIR/.failed/`` into the exit code and one line.

The ranks' side is ``_worker`` (run by each process ``mpiexec`` starts) and ``_preflight``
(``--check``). The user's manual is the package docstring, ``oar.distributed.launch``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Ranks on one host share its cores: each gets cpu_count // ranks_per_host threads unless the user chose.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
WORLD_SIZE_VARIABLE = "OAR_LAUNCH_WORLD_SIZE"  # how many ranks mpiexec starts: the worker checks MPI agrees
FAILED_DIR = ".failed"
WORKER_MODULE = "oar.distributed.launch._worker"
PREFLIGHT_MODULE = "oar.distributed.launch._preflight"
# Rank 0 of ``--check`` prints this once every rank has reported: its absence means a host never started.
PREFLIGHT_STARTED = "oar preflight: every rank started"
# A preflight that cannot start on some host (ssh waiting on a dead address) must still end.
PREFLIGHT_TIMEOUT = 120

_USAGE_EXIT = 2
_PROG = "oar.distributed.launch"


class UsageError(Exception):
    """A command line the launcher cannot run: exit code 2 and the message on one line."""


class LaunchError(Exception):
    """The launcher cannot start the job (no ``mpiexec``): exit code 1 and the message on one line."""


@dataclass
class LaunchPlan:
    """What ``main`` runs: the ``mpiexec`` command and the variables it adds to the environment.

    >>> plan = plan_launch(["--nproc_per_node", "2", "--check"], mpiexec="mpiexec")
    >>> plan.command[:3], plan.world_size
    (['mpiexec', '-n', '2'], 2)
    """

    command: list[str]
    env: dict[str, str]  # the additions only; the rest of the launcher's environment is passed as it is
    log_dir: Path
    world_size: int
    ranks_per_host: int
    hosts: list[str] = field(default_factory=list)  # empty: this machine
    check: bool = False
    dry_run: bool = False

    def describe(self) -> str:
        """The command as one line a shell can run, environment additions first."""
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return f"{assignments} {shlex.join(self.command)}" if assignments else shlex.join(self.command)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=_PROG,
        description="Run script.py as a job of several processes (ranks) through MPICH's mpiexec, one log per rank, "
                    "and stop the whole job as soon as one rank fails.",
        epilog="Threads: unless you set them, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS and "
               "NUMBA_NUM_THREADS are set to max(1, cpu_count // ranks per host), so that the ranks sharing a "
               "machine's cores do not oversubscribe them. Each rank gets PADDLE_TRAINER_ID (its rank), "
               "PADDLE_TRAINERS_NUM (world size), PADDLE_LOCAL_RANK and PADDLE_RANK_IN_NODE (rank on its host), "
               "PADDLE_LOCAL_SIZE and PADDLE_NNODES. Exit code: that of the first rank that failed, 0 when every "
               "rank succeeded, 2 for a usage error. Manual: python -c 'import oar.distributed.launch as l; "
               "help(l)'.")
    parser.add_argument("--nproc_per_node", type=int, default=None, metavar="N",
                        help="ranks per host (default 1; with --hostfile, the counts in the file)")
    hosts = parser.add_mutually_exclusive_group()
    hosts.add_argument("--ips", default=None, metavar="HOST1,HOST2",
                       help="the hosts, comma-separated; reached by ssh, same Python path on each")
    hosts.add_argument("--hostfile", default=None, metavar="FILE",
                       help="MPICH hostfile: one 'host' or 'host:ranks' per line")
    parser.add_argument("--log_dir", default="log", metavar="DIR",
                        help="where each rank writes workerlog.<rank> (default ./log)")
    parser.add_argument("--check", action="store_true",
                        help="preflight instead of a script: versions on every rank, a test all_reduce and its "
                             "bandwidth; exits non-zero with a fix when something differs or a host cannot start")
    parser.add_argument("--dry_run", action="store_true",
                        help="print the mpiexec command and the environment it adds, run nothing")
    parser.add_argument("--mpiexec_args", default="", metavar="'ARGS'",
                        help="more mpiexec options, e.g. '-iface eth0' to pick the network between hosts")
    parser.add_argument("script", nargs="?", help="the training script, run as __main__ on every rank")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return parser


def find_mpiexec() -> str:
    """The ``mpiexec`` of this Python's environment (where the ``mpich`` wheel puts it), else the one
    on ``PATH``.

    >>> find_mpiexec().endswith("mpiexec")  # doctest: +SKIP
    True
    """
    # Not resolved: a venv's python is a link to the system one, but its mpiexec is in the venv.
    beside = Path(sys.executable).parent / ("mpiexec.exe" if os.name == "nt" else "mpiexec")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("mpiexec")
    if found:
        return found
    raise LaunchError(f"no mpiexec next to {sys.executable} nor on PATH: pip install mpich "
                      "(it ships mpiexec and the MPI library mpi4py needs)")


def read_hostfile(path: Path) -> list[tuple[str, int]]:
    """``(host, ranks)`` for each line of an MPICH hostfile (``node1:2``; ``node1`` means 1 rank).

    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "hosts"
    >>> _ = f.write_text("node1:2\\n# a comment\\nnode2\\n")
    >>> read_hostfile(f)
    [('node1', 2), ('node2', 1)]
    """
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        host, _, rest = line.partition(":")
        count = rest.split(":", 1)[0].strip() or "1"
        if not host.strip() or not count.isdigit() or int(count) < 1:
            raise UsageError(f"--hostfile {path}, line {number}: {line!r} is not 'host' or 'host:ranks'")
        entries.append((host.strip(), int(count)))
    if not entries:
        raise UsageError(f"--hostfile {path} names no host")
    return entries


def _cpu_count() -> int:
    if hasattr(os, "sched_getaffinity"):  # the cores this process may use, not the machine's
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def plan_launch(argv: list[str], mpiexec: str | None = None) -> LaunchPlan:
    """Read the launcher's command line into a ``LaunchPlan``; raises ``UsageError`` for a bad one.

    >>> plan = plan_launch(["--ips", "a,b", "--nproc_per_node", "2", "--check"], mpiexec="mpiexec")
    >>> plan.command[:7]
    ['mpiexec', '-n', '4', '-hosts', 'a,b', '-ppn', '2']
    """
    options = _parser().parse_args(argv)
    if options.nproc_per_node is not None and options.nproc_per_node < 1:
        raise UsageError(f"--nproc_per_node must be at least 1, got {options.nproc_per_node}")
    if options.check and options.script:
        raise UsageError(f"--check runs a preflight, not a script: drop {options.script} or --check")
    if not options.check and not options.script:
        raise UsageError("no script to run: python -m oar.distributed.launch [options] script.py [args ...]")
    if options.script and not Path(options.script).is_file():
        raise UsageError(f"the script {options.script} does not exist (looked in {Path.cwd()})")
    try:
        extra = shlex.split(options.mpiexec_args)
    except ValueError as exc:
        raise UsageError(f"--mpiexec_args {options.mpiexec_args!r}: {exc}") from None

    nproc = options.nproc_per_node
    hosts: list[str] = []
    placement: list[str] = []
    if options.ips is not None:
        hosts = [h.strip() for h in options.ips.split(",")]
        if not all(hosts):
            raise UsageError(f"--ips {options.ips!r}: expected host names separated by commas, e.g. node1,node2")
        nproc = nproc or 1
        world_size, per_host = nproc * len(hosts), nproc
        placement = ["-hosts", ",".join(hosts), "-ppn", str(nproc)]
    elif options.hostfile is not None:
        hostfile = Path(options.hostfile)
        if not hostfile.is_file():
            raise UsageError(f"the hostfile {options.hostfile} does not exist")
        entries = read_hostfile(hostfile)
        hosts = [host for host, _ in entries]
        placement = ["-f", str(hostfile.resolve())]
        if nproc is None:  # the file's counts decide
            world_size, per_host = sum(c for _, c in entries), max(c for _, c in entries)
        else:
            world_size, per_host = nproc * len(entries), nproc
            placement += ["-ppn", str(nproc)]
    else:
        nproc = nproc or 1
        world_size, per_host = nproc, nproc

    log_dir = Path(options.log_dir).resolve()  # ranks on other hosts, and the user's script, may change cwd
    threads = str(max(1, _cpu_count() // per_host))
    env = {name: threads for name in THREAD_VARIABLES if name not in os.environ}
    env[WORLD_SIZE_VARIABLE] = str(world_size)
    target = ["-m", PREFLIGHT_MODULE] if options.check else [options.script, *options.script_args]
    command = [mpiexec or find_mpiexec(), "-n", str(world_size), *placement, *extra,
               sys.executable, "-m", WORKER_MODULE, "--log_dir", str(log_dir), *target]
    return LaunchPlan(command, env, log_dir, world_size, per_host, hosts, options.check, options.dry_run)


def read_failures(log_dir: Path) -> list[dict]:
    """What the failed ranks recorded in ``log_dir/.failed/rank<r>.json``, the first failure first.

    >>> read_failures(Path("/nonexistent"))
    []
    """
    failures = []
    for path in (log_dir / FAILED_DIR).glob("rank*.json"):
        try:
            failures.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # a rank killed while writing: the others still say what happened
    return sorted(failures, key=lambda f: (f.get("time", 0.0), f.get("rank", 0)))


def _prepare_log_dir(log_dir: Path) -> None:
    """Create the log folder and drop what an earlier job left there, so that a stale failure or
    the log of a rank this job does not have cannot mislead."""
    (log_dir / FAILED_DIR).mkdir(parents=True, exist_ok=True)
    for path in (log_dir / FAILED_DIR).glob("rank*.json"):
        path.unlink(missing_ok=True)
    for path in log_dir.glob("workerlog.*"):
        if re.fullmatch(r"workerlog\.\d+", path.name):
            path.unlink(missing_ok=True)


def _say(message: str) -> None:
    print(f"{_PROG}: {message}", file=sys.stderr, flush=True)


def _run(plan: LaunchPlan) -> tuple[int, bool, int | None]:
    """Run ``plan``'s mpiexec, forwarding SIGINT/SIGTERM to it; returns its exit code, for
    ``--check`` whether every rank started (rank 0's marker line went by), and the signal that
    stopped the launcher, if one did."""
    env = {**os.environ, **plan.env}
    if plan.check:
        env.setdefault("MPIEXEC_TIMEOUT", str(PREFLIGHT_TIMEOUT))
    # --check reads the ranks' output, to see whether every host started; a job's output passes untouched.
    process = subprocess.Popen(plan.command, env=env, stdout=subprocess.PIPE if plan.check else None,
                               text=True if plan.check else None)

    received: list[int] = []

    def forward(signum, _frame):
        received.append(signum)
        if process.poll() is None:
            process.send_signal(signum)  # mpiexec passes it on to every rank

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    started = False
    try:
        if plan.check:
            for line in process.stdout:
                started = started or line.startswith(PREFLIGHT_STARTED)
                sys.stdout.write(line)
                sys.stdout.flush()
        code = process.wait()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    return (128 - code if code < 0 else code), started, (received[0] if received else None)


def main(argv: list[str] | None = None) -> int:
    """``python -m oar.distributed.launch`` and ``oar-launch``: run the job, return its exit code
    (the first failed rank's, 0 when every rank succeeded, 2 for a usage error).

    >>> main(["--dry_run", "--nproc_per_node", "2", "no_such_script.py"])
    2
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        plan = plan_launch(argv)
    except UsageError as exc:
        _say(f"error: {exc} (see --help)")
        return _USAGE_EXIT
    except LaunchError as exc:
        _say(f"error: {exc}")
        return 1
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if plan.dry_run:
        where = f"{plan.ranks_per_host} per host on {', '.join(plan.hosts)}" if plan.hosts else "on this machine"
        print(f"# {plan.world_size} ranks {where}; logs in {plan.log_dir}")
        print(f"# environment additions: {' '.join(f'{k}={v}' for k, v in plan.env.items())}")
        print(plan.describe())
        return 0

    _prepare_log_dir(plan.log_dir)
    code, started, stopped_by = _run(plan)
    failures = read_failures(plan.log_dir)
    if stopped_by is not None:  # the ranks' own reports (KeyboardInterrupt) are its echo, not the cause
        _say(f"stopped by {signal.Signals(stopped_by).name}; the logs are in {plan.log_dir}")
        return 128 + stopped_by
    if failures:
        first = failures[0]
        rank = first.get("rank", "?")
        others = f"; {len(failures) - 1} more rank(s) failed" if len(failures) > 1 else ""
        _say(f"rank {rank} failed with exit code {first.get('exit_code')} ({first.get('error', '')}){others}; "
             f"its log: {plan.log_dir / f'workerlog.{rank}'}")
        return int(first.get("exit_code", 1)) or 1
    if code == 0:
        return 0
    if plan.check and not started:
        hosts = ", ".join(plan.hosts) if plan.hosts else "this machine"
        _say(f"the ranks could not be started on every host ({hosts}); check that `ssh HOST` works without a "
             f"password from this machine for each host of --ips/--hostfile, the host names, and that "
             f"{sys.executable} exists on every host")
    else:
        _say(f"mpiexec exited with code {code} and no rank recorded a failure in {plan.log_dir / FAILED_DIR} on "
             "this host (a rank on another host records it on its own host; or a rank was killed, crashed in "
             f"native code, or a host could not start); the logs are in {plan.log_dir}")
    return code
