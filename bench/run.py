"""oar's benchmark suite: the same workloads on oar, PyTorch, PaddlePaddle and ONNX Runtime, side by side.

    python bench/run.py                        # every workload and installed framework, 1 then 2 threads
    python bench/run.py --threads 1 --workloads W2 W3 --rounds 2
    python bench/run.py --frameworks oar --quick   # oar alone, one short sample each: a smoke test
    python bench/run.py --write                # and append the results, dated, to docs/benchmarks.md

Each framework runs in its own process (bench/worker_<framework>.py), one process per workload and
round, the frameworks alternating (oar, torch, paddle, onnxruntime, oar, torch, ...) so that a
slow minute of the machine hits all of them alike. Every process has the same thread count, set
before its libraries load (OMP/MKL/OpenBLAS variables) and again through the framework's own
switch. A framework that is not installed gets "not installed" in its columns.

Workloads (shapes and weights in bench/suite.py; the models written once against Paddle's API in
bench/paddle_api.py and run by oar and Paddle alike):
    W1  eager dispatch floor: x + y on [1]; Linear(4,4) forward+backward
    W2  MLP 784-512-512-10, batch 128, one Adam step
    W3  LeNet-5, batch 64, 1x28x28, one Adam step
    W4  small CIFAR ResNet (stem + two BasicBlocks of 32 channels, BatchNorm), batch 32, one SGD-momentum step
    W5  Transformer encoder layer (d_model 256, 4 heads, ffn 1024), 8 x 128 tokens, forward+backward
    W6  LeNet inference at batch 1 and 64: eager no_grad, and each framework's graph path
    W7  machine limits: numpy GEMM 1024^3 and a 16M-element add; the frameworks' matmul, linear, add
    W8  oar's DataLoader with 0 and 2 worker processes
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pin_threads import thread_environment
from suite import STEP_CASES, W1_CASES, W7_CASES, w6_case

BENCH = Path(__file__).resolve().parent
RESULTS_FILE = BENCH.parent / "docs" / "benchmarks.md"
WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8")
FRAMEWORKS = ("oar", "torch", "paddle", "onnxruntime")
MODULES = {"oar": "oar", "torch": "torch", "paddle": "paddle", "onnxruntime": "onnxruntime"}
# Which frameworks run which workloads: ONNX Runtime only serves W6; W8 is oar's own DataLoader.
RUNS = {"onnxruntime": {"W6"}, "torch": set(WORKLOADS) - {"W8"}, "paddle": set(WORKLOADS) - {"W8"}}
W6_ORDER = {w6_case(batch, path): i for i, (batch, path) in
            enumerate([("b1", "eager"), ("b1", "graph"), ("b64", "eager"), ("b64", "graph")])}
WORKER_TIMEOUT_S = 900


# -- running the workers -------------------------------------------------------------------------

@dataclass
class Cell:
    """One framework's figures for one case, pooled over the rounds."""

    unit: str
    samples: list[float] = field(default_factory=list)
    higher_is_better: bool = False
    checks: list[float] = field(default_factory=list)
    note: str = ""
    unavailable: str = ""

    @property
    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


@dataclass
class Run:
    """Everything measured at one thread count."""

    threads: int
    cells: dict[tuple[str, str], dict[str, Cell]] = field(default_factory=dict)  # (workload, case) -> framework
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average before and after

    def add(self, framework: str, case: dict) -> None:
        row = self.cells.setdefault((case["workload"], case["case"]), {})
        cell = row.setdefault(framework, Cell(case["unit"], higher_is_better=case["higher_is_better"]))
        cell.samples.extend(case["samples"])
        if case["check"] is not None:
            cell.checks.append(case["check"])
        cell.note = case["note"] or cell.note
        cell.unavailable = case["unavailable"] or cell.unavailable


def framework_status(selected: list[str]) -> dict[str, str]:
    """Each framework's column state: "" when it runs, else "not installed" or "not run"."""
    status = {}
    for name in FRAMEWORKS:
        if importlib.util.find_spec(MODULES[name]) is None:
            status[name] = "not installed"
        else:
            status[name] = "" if name == "oar" or name in selected else "not run"
    return status


def run_worker(framework: str, workload: str, threads: int, args: argparse.Namespace, extra: list[str]) -> dict:
    """Start bench/worker_<framework>.py for one workload; its JSON, or ``{"error": ...}``."""
    command = [sys.executable, str(BENCH / f"worker_{framework}.py"), workload, "--threads", str(threads), *extra]
    if args.repeats is not None:
        command += ["--repeats", str(args.repeats)]
    if args.quick:
        command.append("--quick")
    env = os.environ.copy()
    env.update(thread_environment(threads))
    env["PYTHONWARNINGS"] = "ignore"  # peers' deprecation chatter is not a result
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=BENCH, timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {WORKER_TIMEOUT_S} s"}
    if done.returncode != 0:
        last = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or ["(no message)"]
        return {"error": f"exit {done.returncode}: {last[0].strip()}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(threads: int, frameworks: list[str], args: argparse.Namespace, onnx_model: str | None,
            log) -> Run:
    run = Run(threads)
    load_before = os.getloadavg()[0]
    for workload in args.workloads:
        runners = [f for f in frameworks if workload in RUNS.get(f, set(WORKLOADS))]
        for round_index in range(args.rounds):
            for framework in runners:
                extra = []
                if framework == "onnxruntime":
                    if onnx_model is None:
                        continue
                    extra = ["--model", onnx_model]
                started = time.perf_counter()
                result = run_worker(framework, workload, threads, args, extra)
                log(f"  {threads} thread(s) {workload} round {round_index + 1}/{args.rounds} {framework}: "
                    f"{time.perf_counter() - started:.1f} s" + (f" FAILED {result['error']}" if "error" in result else ""))
                if "error" in result:
                    run.failures.append(f"{framework} {workload}: {result['error']}")
                    continue
                run.versions[framework] = result["version"]
                run.details[framework] = result["details"]
                for case in result["cases"]:
                    run.add(framework, case)
    run.load = (load_before, os.getloadavg()[0])
    return run


def export_onnx(directory: str, args: argparse.Namespace, log) -> tuple[str | None, str]:
    """The LeNet ONNX model for the onnxruntime worker, written by the torch worker."""
    path = os.path.join(directory, "lenet.onnx")
    quick = argparse.Namespace(**{**vars(args), "quick": True, "repeats": None})
    result = run_worker("torch", "W6", 1, quick, ["--export-onnx", path])
    if "error" in result or not os.path.exists(path):
        reason = f"the ONNX export failed: {result.get('error', 'no file written')}"
        log(f"  {reason}")
        return None, reason
    return path, ""


# -- the tables ----------------------------------------------------------------------------------

def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def time_ratio(oar: Cell | None, peer: Cell | None) -> float | None:
    """oar's time over the peer's (rates inverted): above 1, oar is slower."""
    if oar is None or peer is None or oar.value is None or peer.value is None:
        return None
    return peer.value / oar.value if oar.higher_is_better else oar.value / peer.value


class Table:
    def __init__(self, run: Run, status: dict[str, str], absent_reasons: dict[str, str]):
        self.run, self.status, self.absent_reasons = run, status, absent_reasons
        self.footnotes: list[str] = []

    def cell(self, framework: str, workload: str, row: dict[str, Cell]) -> str:
        if self.status[framework]:
            return self.status[framework]
        if workload not in RUNS.get(framework, set(WORKLOADS)):
            return "—"
        if framework in self.absent_reasons:
            return self.footnote(self.absent_reasons[framework])
        cell = row.get(framework)
        if cell is None:
            failed = [f for f in self.run.failures if f.startswith(f"{framework} {workload}:")]
            return self.footnote(failed[0]) if failed else "—"
        if cell.value is None:
            return self.footnote(cell.unavailable or "no samples")
        return fmt(cell.value)

    def footnote(self, text: str) -> str:
        if text not in self.footnotes:
            self.footnotes.append(text)
        return f"n/a [{self.footnotes.index(text) + 1}]"

    def markdown(self) -> str:
        peers = FRAMEWORKS[1:]
        header = ["workload", "case", "unit", *FRAMEWORKS, *(f"oar/{p}" for p in peers)]
        lines = ["| " + " | ".join(header) + " |",
                 "| " + " | ".join(["---", "---", "---"] + ["---:"] * (len(header) - 3)) + " |"]
        rows = sorted(self.run.cells.items(), key=lambda kv: (kv[0][0], W6_ORDER.get(kv[0][1], 0)))
        for (workload, case), row in rows:
            unit = next(iter(row.values())).unit
            values = [self.cell(f, workload, row) for f in FRAMEWORKS]
            ratios = []
            for peer in peers:
                ratio = time_ratio(row.get("oar"), row.get(peer))
                ratios.append(f"{ratio:.2f}x" if ratio is not None else "")
            lines.append("| " + " | ".join([workload, case, unit, *values, *ratios]) + " |")
        notes = [f"[{i + 1}] {text}" for i, text in enumerate(self.footnotes)]
        return "\n".join(lines + ([""] + notes if notes else []))


def load_note(run: Run) -> str:
    """The machine's load around the run: other processes make every figure noisier."""
    before, after = run.load
    text = f"Load average (1 min) {before:.1f} before and {after:.1f} after, on {os.cpu_count()} cores."
    if max(before, after) > 0.5 * (os.cpu_count() or 1):
        text += (" Other processes were busy on the machine: absolute times are noisy; the ratios, from "
                 "interleaved processes, less so.")
    return text


def graph_notes(run: Run) -> str:
    notes = sorted({f"{f}: {c.note}" for row in run.cells.values() for f, c in row.items() if c.note})
    return "W6 graph paths: " + "; ".join(notes) + "." if notes else ""


def agreement(run: Run) -> str:
    """How closely the frameworks' first losses and outputs agree: the check of same initialisation."""
    worst: tuple[float, str] = (0.0, "")
    compared = 0
    for (workload, case), row in run.cells.items():
        reference = row.get("oar")
        if reference is None or not reference.checks:
            continue
        for framework, cell in row.items():
            if framework == "oar" or not cell.checks:
                continue
            a, b = reference.checks[0], cell.checks[0]
            compared += 1
            difference = abs(a - b) / max(abs(a), 1e-6)
            if difference >= worst[0]:
                worst = (difference, f"{workload} {case}, oar {a:.6g} vs {framework} {b:.6g}")
    if not compared:
        return ""
    verdict = "agree" if worst[0] < 1e-3 else "DIFFER"
    return (f"Same initialisation: the first loss (or output) of every case is compared between oar and each peer; "
            f"they {verdict} ({compared} comparisons, largest relative difference {worst[0]:.1e}: {worst[1]}).")


# -- the targets of issue 7 ----------------------------------------------------------------------

def targets(run: Run) -> list[dict]:
    """Each target of issue 7 at this thread count: what was measured and whether it is met."""

    def cell(workload: str, case: str, framework: str) -> Cell | None:
        c = run.cells.get((workload, case), {}).get(framework)
        return c if c is not None and c.value is not None else None

    out = []

    def ratio_target(name: str, workload: str, case: str, peer: str, limit: float, strict: bool = False):
        oar, other = cell(workload, case, "oar"), cell(workload, case, peer)
        ratio = time_ratio(oar, other)
        met = None if ratio is None else (ratio < limit if strict else ratio <= limit)
        out.append({"target": name, "workload": workload, "oar": oar.value if oar else None,
                    "peer": other.value if other else None, "unit": (oar or other).unit if (oar or other) else "",
                    "measured": None if ratio is None else f"{ratio:.2f}x", "met": met})

    ratio_target("W1 x + y: within 2x of torch", "W1", W1_CASES[0], "torch", 2.0)
    ratio_target("W1 Linear(4,4) fwd+bwd: no slower than paddle", "W1", W1_CASES[1], "paddle", 1.0)
    ratio_target("W2 MLP step: no slower than torch", "W2", STEP_CASES["W2"], "torch", 1.0)
    ratio_target("W2 MLP step: faster than paddle", "W2", STEP_CASES["W2"], "paddle", 1.0, strict=True)
    for workload, model in (("W3", "LeNet"), ("W4", "ResNet"), ("W5", "encoder")):
        ratio_target(f"{workload} {model}: within 1.3x of torch", workload, STEP_CASES[workload], "torch", 1.3)
        ratio_target(f"{workload} {model}: faster than paddle", workload, STEP_CASES[workload], "paddle", 1.0,
                     strict=True)
    for batch in ("b1", "b64"):
        paths = [c for c in (cell("W6", w6_case(batch, p), "oar") for p in ("eager", "graph")) if c is not None]
        best = min(paths, key=lambda c: c.value) if paths else None
        ort = cell("W6", w6_case(batch, "graph"), "onnxruntime")
        ratio = time_ratio(best, ort)
        out.append({"target": f"W6 LeNet batch {batch[1:]}: oar's best path within 1.5x of onnxruntime",
                    "workload": "W6", "oar": best.value if best else None, "peer": ort.value if ort else None,
                    "unit": "ms", "measured": None if ratio is None else f"{ratio:.2f}x",
                    "met": None if ratio is None else ratio <= 1.5,
                    "path": (best.note.split(" (")[0] or "eager") if best else ""})
    numpy_gemm = cell("W7", f"numpy {W7_CASES['matmul']}", "oar")
    for key in ("matmul", "linear"):
        op = cell("W7", W7_CASES[key], "oar")
        share = op.value / numpy_gemm.value if op and numpy_gemm else None
        out.append({"target": f"W7 oar {key} 1024^3: at least 90% of numpy GEMM", "workload": "W7",
                    "oar": op.value if op else None, "peer": numpy_gemm.value if numpy_gemm else None,
                    "unit": "GFLOP/s", "measured": None if share is None else f"{share:.0%}",
                    "met": None if share is None else share >= 0.9})
    return out


def targets_markdown(rows: list[dict]) -> str:
    lines = ["| target | oar | reference | unit | measured | met |", "| --- | ---: | ---: | --- | ---: | --- |"]
    for row in rows:
        met = "—" if row["met"] is None else ("met" if row["met"] else "**missed**")
        oar = fmt(row["oar"]) if row["oar"] is not None else "—"
        if row.get("path"):
            oar += f" ({row['path']})"
        peer = fmt(row["peer"]) if row["peer"] is not None else "—"
        lines.append(f"| {row['target']} | {oar} | {peer} | {row['unit']} | {row['measured'] or '—'} | {met} |")
    return "\n".join(lines)


def profile_section(workloads: list[str], log) -> str:
    """cProfile summaries of oar's step for ``workloads`` (bench/profile_oar.py, one thread)."""
    if not workloads:
        return ""
    log(f"  profiling oar: {' '.join(workloads)}")
    env = os.environ.copy()
    env.update(thread_environment(1))
    done = subprocess.run([sys.executable, str(BENCH / "profile_oar.py"), *workloads, "--threads", "1", "--top", "8"],
                          capture_output=True, text=True, env=env, cwd=BENCH, timeout=WORKER_TIMEOUT_S)
    if done.returncode != 0:
        return f"(profiling failed: {done.stderr.strip().splitlines()[-1:]})"
    return done.stdout.strip()


# -- the report ----------------------------------------------------------------------------------

def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            cpu = next(line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{cpu}, {os.cpu_count()} cores visible; {platform.system()} {platform.release()}; Python {platform.python_version()}"


def versions_markdown(runs: list[Run], status: dict[str, str]) -> str:
    lines = []
    for framework in FRAMEWORKS:
        version = next((r.versions[framework] for r in runs if framework in r.versions), None)
        detail = next((r.details[framework] for r in runs if framework in r.details), "")
        if status[framework]:
            lines.append(f"- {framework}: {status[framework]}")
        elif version is None:
            lines.append(f"- {framework}: installed, but no worker finished")
        else:
            lines.append(f"- {framework} {version}" + (f" ({detail})" if detail else ""))
    return "\n".join(lines)


def report(runs: list[Run], status: dict[str, str], absent_reasons: dict[str, str], profile: str,
           elapsed_s: float) -> str:
    parts = [versions_markdown(runs, status)]
    for run in runs:
        table = Table(run, status, absent_reasons)
        plural = "s" if run.threads > 1 else ""
        parts += [f"### {run.threads} thread{plural}", load_note(run), table.markdown()]
        parts += [text for text in (graph_notes(run), agreement(run)) if text]
        parts += ["Targets of issue 7:", targets_markdown(targets(run))]
        if run.failures:
            parts.append("Failed workers: " + "; ".join(run.failures))
    if profile:
        parts += ["### Where oar's time goes (cProfile, 1 thread)", profile]
    parts.append(f"Wall time of the whole run: {elapsed_s / 60:.1f} min.")
    return "\n\n".join(parts)


RESULTS_HEADER = """# Benchmarks

Results of `nox -s bench -- --write` (which runs `python bench/run.py --write`), newest last. Each
section names the machine, the versions and the command.

How the suite measures (bench/run.py): every workload runs with the same shapes and the same
initial weights (generated once with numpy from a fixed seed and loaded into each framework), in
float32, on oar and, where installed, PyTorch, PaddlePaddle and ONNX Runtime. Each framework runs
in its own process, one per workload and round, the frameworks alternating over several rounds.
Thread counts are pinned equally (environment variables before import, then the framework's own
setting: `torch.set_num_threads`, `paddle.base.core.set_num_threads`, threadpoolctl or
`oar.set_num_threads`). Each case has warm-up calls; a sample is the mean over back-to-back calls
and the figure is the median of all samples over the rounds (a case stops sampling after 12 s in a
round, one sample at least, so a pathological case cannot stall the run). The first loss or
output of every case is compared across frameworks: the check that they start from the same
weights. Profiles (cProfile of oar's step, `python bench/profile_oar.py W3`) are added for the
workloads whose targets are missed.

Ratios are oar's time over the peer's (for rates, the peer's rate over oar's): **above 1, oar is
slower**. Compare ratios between runs on different machines, not absolute numbers.

- **W1** eager dispatch floor: `x + y` on a one-element tensor; Linear(4,4) forward, `sum`,
  backward and clearing the gradients.
- **W2** MLP 784-512-512-10, batch 128: forward, cross-entropy, backward, Adam step, clear.
- **W3** LeNet-5 (Paddle's), batch 64, 1x28x28: the same with Adam.
- **W4** small CIFAR ResNet (3->32 conv-BN-ReLU stem, two BasicBlocks of 32 channels, global
  average pool, Linear 32->10), batch 32, 3x32x32: the same with SGD momentum 0.9.
- **W5** Transformer encoder layer (d_model 256, 4 heads, ffn 1024, post-norm, dropout 0), batch
  8 x 128 tokens: forward, `mean`, backward.
- **W6** LeNet inference at batch 1 and 64: eager under `no_grad`, and each framework's graph
  path (oar: `oar.jit.to_static` with a dynamic-batch InputSpec and `full_graph=True`, "n/a"
  where oar lacks it or it disagrees with eager; torch: `torch.jit.trace` + `freeze`; Paddle:
  a `paddle.inference` predictor with oneDNN; ONNX Runtime: the LeNet exported by
  `torch.onnx.export`).
- **W7** machine limits: numpy's GEMM (1024^3) and a 16M-element add with `out=` (the ceiling of
  oar's cpu kernels), then each framework's `matmul`, `linear` (GEMM + bias) and `a + b` (which
  allocates its result).
- **W8** oar's DataLoader over a dataset that sleeps 1 ms per sample, with 0 and 2 worker processes.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="thread counts, in order (default: 1 2)")
    parser.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS), metavar="W",
                        help="workloads to run (default: all)")
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS), metavar="NAME",
                        help=f"frameworks to run, of {', '.join(FRAMEWORKS)} (default: every one installed; oar always runs)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of alternating processes (default: 3)")
    parser.add_argument("--repeats", type=int, default=None, help="timed samples per case and round (default: per workload)")
    parser.add_argument("--quick", action="store_true", help="one short sample per case: checks that everything runs")
    parser.add_argument("--profile", nargs="*", choices=("W1", "W2", "W3", "W4", "W5", "W6"), default=None,
                        metavar="W", help="profile oar's step of these workloads (default: those that miss a target)")
    parser.add_argument("--write", action="store_true", help="append the results to the --output file")
    parser.add_argument("--output", type=Path, default=RESULTS_FILE, help="where --write appends (default: %(default)s)")
    args = parser.parse_args(argv)

    status = framework_status(args.frameworks)
    if status["oar"]:
        sys.exit("bench/run.py: oar is not installed in this Python")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.perf_counter()
    absent_reasons: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as directory:
        onnx_model = None
        if "W6" in args.workloads and not status["onnxruntime"]:
            if not status["torch"]:
                onnx_model, reason = export_onnx(directory, args, log)
            else:
                reason = f"the ONNX model is exported by torch, which is {status['torch']}"
            if onnx_model is None:
                absent_reasons["onnxruntime"] = reason
        active = [f for f in FRAMEWORKS if not status[f]]
        runs = [measure(threads, active, args, onnx_model, log) for threads in args.threads]

    if args.profile is None:  # the oar steps behind every missed target, at the first thread count
        missed = {row["workload"] for row in targets(runs[0]) if row["met"] is False}
        profile_workloads = [w for w in ("W1", "W2", "W3", "W4", "W5", "W6") if w in missed]
    else:
        profile_workloads = args.profile
    profile = "" if args.quick and args.profile is None else profile_section(profile_workloads, log)

    text = report(runs, status, absent_reasons, profile, time.perf_counter() - started)
    print(machine_description())
    print()
    print(text)
    if args.write:
        command = "python bench/run.py " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
        stamp = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
        section = f"\n## {stamp}\n\n`{command.strip()}`\n\n{machine_description()}\n\n{text}\n"
        if not args.output.exists():
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(RESULTS_HEADER)
        with args.output.open("a") as file:
            file.write(section)
        log(f"appended to {args.output}")
    oar_failed = [f for run in runs for f in run.failures if f.startswith("oar ")]
    return 1 if oar_failed else 0


if __name__ == "__main__":
    sys.exit(main())
