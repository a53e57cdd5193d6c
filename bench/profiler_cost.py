"""W13: what oar.profiler costs W1 and W2 -- absent, imported but off, and recording (oar only).

    python bench/profiler_cost.py W13 --threads 1             # the table, then the JSON bench/run.py reads
    python bench/profiler_cost.py W13 --threads 1 --rounds 9  # more rounds
    python bench/profiler_cost.py W13 --threads 1 --baseline <git revision or source tree>
    python bench/profiler_cost.py W13 --threads 1 --quick     # one short sample of each: the code paths

Each round starts one process per mode, back to back, so that a slow moment of the machine hits
them alike; each process times W1 (``x + y`` on [1]; Linear(4,4) forward, backward, clear) and
W2 (the MLP's Adam step) under the suite's budgets (bench/suite.py), with the suite's weights,
and with the same plugins loaded (``PLUGINS_OFF`` are blocked in every mode, so that every mode
runs core's and oar-nn's kernels: W2's absolute times are not the main table's, which has numba's):

- ``without``: the source tree of ``--baseline`` (default ``BASELINE``, the last commit before
  any of the profiler's recording points, exported with ``git archive`` into a temporary folder),
  its packages/core/src and packages/nn/src first on PYTHONPATH: there is no oar.profiler to
  import, and no recording point to test. The process checks that it ran that tree's oar.
- ``off``: this checkout. oar-nn imports oar.profiler (layers, optimizers and the DataLoader
  record through it), so in this tree "imported but off" is the only way to run W1's Linear or
  W2; no profiler is started.
- ``on``: this checkout, a ``Profiler(on_trace_ready=None)`` recording through every timed call.
- ``on, shapes + memory``: the same with ``record_shapes=True, profile_memory=True``, what
  ``oar-run trainer.profile=true`` records.

Reported: each mode's median over the rounds (each process's figure is the median of its
samples), and off / without as the median of the rounds' ratios, with their range. The baseline
differs from this checkout in more than the profiler (the commits since it in packages/core and
packages/nn; the script lists how many): off / without bounds the profiler's cost when off from
above.
"""

from __future__ import annotations

import pin_threads

if __name__ == "__main__":
    pin_threads.from_argv()  # before numpy loads: it reads the thread variables once

import argparse  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import suite  # noqa: E402
from paddle_api import PaddleAPIWorkloads  # noqa: E402
from pin_threads import worker_environment  # noqa: E402
from suite import Case  # noqa: E402
from worker_oar import details, set_threads  # noqa: E402

import oar  # noqa: E402 - this process's PYTHONPATH says which tree's
import oar.plugins  # noqa: E402

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
# The parent of the commit that first put a recording point (oar._engine.profiling) into core's autograd.
BASELINE = "91586ee^"
SOURCES = ("packages/core/src", "packages/nn/src")  # W1 and W2 need oar-core and oar-nn only
# Off in every mode: today's plugins need today's core (they fail to load on the baseline's), and
# the modes must run the same kernels. The recording points are in core and oar-nn, not in kernels.
PLUGINS_OFF = ("numba", "distributed")
MODES = ("without", "off", "on", "on, shapes + memory")
CASES = {"add": f"W1 {suite.W1_CASES[0]}", "linear": f"W1 {suite.W1_CASES[1]}", "step": f"W2 {suite.STEP_CASES['W2']}"}
UNITS = {"add": "µs", "linear": "µs", "step": "ms"}
ROUNDS, QUICK_ROUNDS = 5, 1


# -- one process: one mode ------------------------------------------------------------------------

def measure_mode(mode: str, threads: int, repeats: int | None, quick: bool) -> dict:
    """Time W1's two cases and W2 in this process as ``mode`` says; the medians per case key, the
    file oar was imported from and whether oar.profiler was imported."""
    set_threads(threads)
    args = suite.WorkerArgs(["W1", "W2"], threads, repeats, quick, argparse.Namespace())
    api = PaddleAPIWorkloads(oar)
    profiler = None
    if mode.startswith("on"):
        from oar.profiler import Profiler  # here: in 'without', oar's namespace would find this checkout's

        detailed = mode == "on, shapes + memory"
        profiler = Profiler(on_trace_ready=None, record_shapes=detailed, profile_memory=detailed)
        profiler.start()
    cases = api.w1(args) + api.step_workload("W2", args)
    recorded = len(profiler.events()) if profiler is not None else 0
    if profiler is not None:
        profiler.stop()
    medians = dict(zip(CASES, (statistics.median(case.samples) for case in cases)))
    plugins = sorted(info.name for info in oar.plugins.plugin_infos() if info.status == "loaded")
    return {"mode": mode, "medians": medians, "oar_file": oar.__file__, "recorded": recorded,
            "profiler_imported": "oar.profiler" in sys.modules, "plugins": plugins}


# -- the rounds -----------------------------------------------------------------------------------

def export_baseline(baseline: str, directory: str) -> tuple[Path, str]:
    """``baseline`` as a source tree: itself when it is a folder, else the git revision's
    ``SOURCES`` extracted into ``directory``; and a line that says what it is."""
    if Path(baseline).is_dir():
        return Path(baseline).resolve(), f"the tree {baseline}"

    def git(*args: str) -> bytes:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, check=True).stdout

    commit = git("rev-parse", "--short", baseline).decode().strip()
    with tarfile.open(fileobj=io.BytesIO(git("archive", commit, *SOURCES))) as archive:
        archive.extractall(directory, filter="data")
    since = len(git("rev-list", f"{commit}..HEAD", "--", *SOURCES).split())
    return Path(directory), f"commit {commit} ({since} commits to packages/core and packages/nn since)"


def run_mode(mode: str, tree: Path | None, threads: int, repeats: int | None, quick: bool) -> dict:
    env = worker_environment(threads)
    env["PYTHONWARNINGS"] = "ignore"
    env["OAR_DISABLE_PLUGINS"] = ",".join(PLUGINS_OFF)
    if tree is not None:  # the baseline's packages before the installed (editable) ones
        env["PYTHONPATH"] = os.pathsep.join([*(str(tree / s) for s in SOURCES), env.get("PYTHONPATH", "")])
    command = [sys.executable, str(BENCH / "profiler_cost.py"), "W13", "--threads", str(threads), "--mode", mode,
               *(["--repeats", str(repeats)] if repeats is not None else []), *(["--quick"] if quick else [])]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=BENCH, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"the {mode!r} process failed: {done.stderr.strip()[-500:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if tree is not None and not Path(result["oar_file"]).is_relative_to(tree):
        raise RuntimeError(f"the 'without' process imported oar from {result['oar_file']}, not from {tree}")
    if (mode == "without") == result["profiler_imported"]:
        raise RuntimeError(f"the {mode!r} process {'imported' if result['profiler_imported'] else 'lacked'} "
                           f"oar.profiler")
    if mode.startswith("on") and not result["recorded"]:
        raise RuntimeError(f"the {mode!r} process recorded nothing")
    return result


def measure(threads: int, rounds: int, repeats: int | None, quick: bool, baseline: str) -> tuple[list[Case], str]:
    """Every mode ``rounds`` times, in turn; W13's cases and what the baseline was."""
    samples: dict[tuple[str, str], list[float]] = {}
    plugins: dict[str, list[str]] = {}  # each mode's: the same everywhere, or the kernels differ
    with tempfile.TemporaryDirectory() as directory:
        try:
            tree, described = export_baseline(baseline, directory)
        except (subprocess.CalledProcessError, OSError, tarfile.TarError) as error:
            tree, described = None, f"no baseline ({baseline!r}: {error})"
        modes = [m for m in MODES if m != "without" or tree is not None]
        for _ in range(rounds):
            for mode in modes:
                result = run_mode(mode, tree if mode == "without" else None, threads, repeats, quick)
                for key, value in result["medians"].items():
                    samples.setdefault((key, mode), []).append(value)
                plugins[mode] = result["plugins"]
    if len({tuple(names) for names in plugins.values()}) > 1:
        raise RuntimeError(f"the modes loaded different plugins, so their kernels differ: {plugins}")
    cases = []
    for key, label in CASES.items():
        for mode in MODES:
            name = f"{label}: " + {"without": "without oar.profiler", "off": "oar.profiler imported, off"}.get(
                mode, f"recording ({mode.removeprefix('on, ')})" if mode != "on" else "recording")
            cases.append(Case("W13", name, UNITS[key], samples.get((key, mode), []),
                              unavailable="" if (key, mode) in samples else described))
        if (key, "without") in samples:
            ratios = [off / without for off, without in zip(samples[(key, "off")], samples[(key, "without")])]
            cases.append(Case("W13", f"{label}: off / without", "x", ratios))
    return cases, described


def table(cases: list[Case], described: str, rounds: int) -> str:
    """The standalone table: a row per case key, a column per mode and the ratio with its range."""
    by_name = {case.case: case for case in cases}
    lines = ["| case (W13) | unit | " + " | ".join(MODES) + " | off / without (range of rounds) |",
             "| --- | --- |" + " ---: |" * (len(MODES) + 1)]
    for key, label in CASES.items():
        row = [c for c in cases if c.case.startswith(f"{label}: ") and c.unit != "x"]
        values = [f"{statistics.median(c.samples):.3g}" if c.samples else "—" for c in row]
        ratio = by_name.get(f"{label}: off / without")
        spread = (f"{statistics.median(ratio.samples):.3f}x ({min(ratio.samples):.3f}-{max(ratio.samples):.3f})"
                  if ratio is not None and ratio.samples else "—")
        lines.append(f"| {label} | {UNITS[key]} | " + " | ".join(values) + f" | {spread} |")
    return "\n".join(lines) + f"\n\nwithout: {described}; medians of {rounds} rounds; plugins off: {', '.join(PLUGINS_OFF)}."


def main(argv: list[str] | None = None) -> int:
    def extend(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--mode", choices=MODES, help="run one mode in this process (the rounds start these)")
        parser.add_argument("--rounds", type=int, default=None, help=f"rounds of every mode (default: {ROUNDS})")
        parser.add_argument("--baseline", default=BASELINE,
                            help="the tree without the profiler: a git revision or a folder (default: %(default)s)")

    args = suite.parse_worker_args(__doc__.splitlines()[0], extend, argv)
    if args.extra.mode is not None:
        print(json.dumps(measure_mode(args.extra.mode, args.threads, args.repeats, args.quick)))
        return 0
    thread_control = set_threads(args.threads)
    rounds = args.extra.rounds or (QUICK_ROUNDS if args.quick else ROUNDS)
    cases, described = measure(args.threads, rounds, args.repeats, args.quick, args.extra.baseline)
    print(table(cases, described, rounds))
    suite.emit("oar", oar.__version__, details(thread_control), args.threads, cases)
    return 0


if __name__ == "__main__":
    sys.exit(main())
