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
    W9  deployment engines on whole models, the same weights everywhere: oar's Predictor
        (oar.jit.save, oar.inference.create_predictor, infer), ONNX Runtime (torch.onnx.export),
        Paddle Inference with and without oneDNN, torch eager no_grad as a reference; Paddle's
        tutorial LeNet at batch 1 and 64, ResNet18 and MobileNetV2 at 1 and 8 x 3x224x224, the
        W5 encoder layer at batch 1 and 8; outputs compared element by element
    W10 load test of oar's HTTP server (python -m oar.serving, bench/serving_load.py): 16 clients
        for 15 s each sending batch-1 LeNet requests, with and without dynamic batching (oar only,
        one round whatever --rounds says)
    W11 oar-slim's compression targets (bench/slim_targets.py, oar only, one round, at 1 thread only):
        the digits LeNet, W4's small ResNet and ResNet18 on synthetic CIFAR-shaped data, trained, then
        PTQ int8 and (the ResNets) 50% of their filters pruned (every conv, or each block's first conv)
        and fine-tuned one epoch: accuracy, file size,
        FLOPs and batch-64 latency through oar's Predictor and ONNX Runtime (oar.onnx's files)
    W12 data-parallel MLP (bench/data_parallel.py, oar only, 1 thread per rank): W2's step on a global batch of
        128 by 1 process and by 2 ranks of oar.DataParallel (oar.distributed.launch), samples/s and their
        ratio, a rank's step next to its compute alone, and oar's all_reduce next to mpi4py's Allreduce (GB/s)
    W13 oar.profiler's cost (bench/profiler_cost.py, oar only, 1 thread): W1 and W2 on a tree without the profiler,
        with it imported but off, and recording; off / without as the median of interleaved rounds' ratios
    W14 oar.incubate.autotune (bench/autotune.py, oar only): W3 and W4 steps with kernel tuning off and on
        (after tuning), interleaved, and the tuning range's overhead
    W15 models as users write them, a training step and eager inference (eval, no_grad) each: Paddle's docs'
        LeNet (batch 64, Adam); vision.models' ResNet18 and MobileNetV2 at 8 x 3x224x224 and 32 x 3x32x32
        (SGD momentum); a depthwise-separable block at 32 x 32x56x56; the seq2seq tutorial's LSTMCell
        attention decoder (batch 16, 30 steps: teacher-forced Adam step, greedy decoding); the vision LeNet
        through jit.to_static at batch 1, called with and without no_grad; CPU time over wall time per case
"""

from __future__ import annotations

import argparse
import datetime
import functools
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

import numpy as np
import suite
from pin_threads import worker_environment
from suite import FINGERPRINT_SIZE, STEP_CASES, W1_CASES, W7_CASES, W9_MODELS, W15_CASES, w6_case, w9_case

BENCH = Path(__file__).resolve().parent
RESULTS_FILE = BENCH.parent / "docs" / "benchmarks.md"
WORKLOADS = ("W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12", "W13", "W14", "W15")
FRAMEWORKS = ("oar", "torch", "paddle", "onnxruntime")
MODULES = {"oar": "oar", "torch": "torch", "paddle": "paddle", "onnxruntime": "onnxruntime"}
# Which frameworks run which workloads: ONNX Runtime only serves W6 and W9; W8 is oar's own
# DataLoader, W10 oar's own server and W11 oar-slim's compression (which runs ONNX Runtime itself).
RUNS = {"onnxruntime": {"W6", "W9"}, "torch": set(WORKLOADS) - {"W8", "W10", "W11", "W12", "W13", "W14"},
        "paddle": set(WORKLOADS) - {"W8", "W10", "W11", "W12", "W13", "W14"}}
# One round whatever --rounds says: 16 clients for 15 s per configuration are samples enough (W10);
# W11 trains its models (minutes) and times its engines in interleaved rounds of its own.
ONCE = {"W10", "W11", "W12", "W13", "W14"}  # W12-W14 interleave rounds of their own (W13: one process per mode)
# 1-thread run only: W11's targets are 1-thread latencies, W12's ranks run 1 thread each, W13 times Python overhead
ONE_THREAD = {"W11", "W12", "W13"}
OWN_SCRIPTS = {"W11": "slim_targets.py", "W12": "data_parallel.py", "W13": "profiler_cost.py",
               "W14": "autotune.py"}  # run by a script of their own, not by the framework's worker
OWN_TABLES = {"W9", "W10", "W11", "W15"}  # reported in tables of their own, not in the main one
# W9's columns: the oar Predictor, then the engines it is measured against; Paddle's worker fills two.
W9_COLUMNS = (("oar", "oar Predictor", ""), ("onnxruntime", "onnxruntime", "oar/ort"),
              ("onnxruntime-oar", "onnxruntime, oar's file", "oar/ort oar's file"),
              ("paddle-onednn", "Paddle Inference oneDNN", "oar/Paddle oneDNN"),
              ("paddle-plain", "Paddle Inference no oneDNN", "oar/Paddle no oneDNN"),
              ("torch", "torch eager no_grad", "oar/torch"))  # (column, header, ratio header)
W9_FRAMEWORK = {"paddle-onednn": "paddle", "paddle-plain": "paddle", "onnxruntime-oar": "onnxruntime"}  # a column's framework, where not its name
W9_TOLERANCE = 1e-3  # largest |difference| from the frameworks' median, relative to the largest |output|
W6_ORDER = {w6_case(batch, path): i for i, (batch, path) in
            enumerate([("b1", "eager"), ("b1", "graph"), ("b64", "eager"), ("b64", "graph")])}
WORKER_TIMEOUT_S = 900
W15_FRAMEWORKS = ("oar", "torch", "paddle")
W15_CPU_LIMIT = 1.1  # oar's CPU time over wall time at 1 thread: more is CPU burnt beside the work (spinning)


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
    fingerprint: list[float] | None = None  # W9: the first round's output values (suite.fingerprint)
    # W10: the load test's further figures; timed cases: cpu_s and wall_s summed over the rounds, cpu_per_wall
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def value(self) -> float | None:
        return statistics.median(self.samples) if self.samples else None


@dataclass
class Run:
    """Everything measured at one thread count."""

    threads: int
    cells: dict[tuple[str, str], dict[str, Cell]] = field(default_factory=dict)  # (workload, case) -> column
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)  # the 1-minute load average before and after
    workloads: set[str] = field(default_factory=set)  # the workloads this run was asked to measure

    def add(self, framework: str, case: dict) -> None:
        """Pool one case of a worker's result into its cell: the framework's column, or the one the
        case names (W9's Paddle with and without oneDNN)."""
        row = self.cells.setdefault((case["workload"], case["case"]), {})
        column = case.get("column") or framework
        cell = row.setdefault(column, Cell(case["unit"], higher_is_better=case["higher_is_better"]))
        cell.samples.extend(case["samples"])
        if case["check"] is not None:
            cell.checks.append(case["check"])
        cell.note = case["note"] or cell.note
        cell.unavailable = case["unavailable"] or cell.unavailable
        if case.get("fingerprint") and cell.fingerprint is None:
            cell.fingerprint = case["fingerprint"]
        extra = dict(case.get("extra") or {})
        if "cpu_s" in extra and "wall_s" in extra:  # over the rounds: their CPU time over their wall time
            for key in ("cpu_s", "wall_s"):
                cell.extra[key] = cell.extra.get(key, 0.0) + extra.pop(key)
            extra["cpu_per_wall"] = cell.extra["cpu_s"] / max(cell.extra["wall_s"], 1e-9)
        cell.extra.update(extra)


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
    """Start bench/worker_<framework>.py (or the workload's own script, OWN_SCRIPTS) for one
    workload; its JSON, or ``{"error": ...}``."""
    script = OWN_SCRIPTS.get(workload, f"worker_{framework}.py")
    command = [sys.executable, str(BENCH / script), workload, "--threads", str(threads), *extra]
    if args.repeats is not None:
        command += ["--repeats", str(args.repeats)]
    if args.quick:
        command.append("--quick")
    env = worker_environment(threads)
    env["PYTHONWARNINGS"] = "ignore"  # peers' deprecation chatter is not a result
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=BENCH, timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {WORKER_TIMEOUT_S} s"}
    if done.returncode != 0:
        last = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:] or ["(no message)"]
        return {"error": f"exit {done.returncode}: {last[0].strip()}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(threads: int, frameworks: list[str], args: argparse.Namespace, onnx_models: dict[str, list[str]],
            log) -> Run:
    """Every workload at ``threads``; ``onnx_models`` holds the ONNX Runtime worker's arguments per
    workload (its model files), a workload without them has no ONNX Runtime run."""
    run = Run(threads, workloads=set(args.workloads))
    load_before = os.getloadavg()[0]
    for workload in args.workloads:
        if workload in ONE_THREAD and threads != 1:
            continue
        runners = [f for f in frameworks if workload in RUNS.get(f, set(WORKLOADS))]
        rounds = 1 if workload in ONCE else args.rounds
        for round_index in range(rounds):
            for framework in runners:
                extra = []
                if framework == "onnxruntime":
                    if workload not in onnx_models:
                        continue
                    extra = onnx_models[workload]
                started = time.perf_counter()
                result = run_worker(framework, workload, threads, args, extra)
                log(f"  {threads} thread(s) {workload} round {round_index + 1}/{rounds} {framework}: "
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


def export_w9_onnx(framework: str, directory: str, args: argparse.Namespace, log) -> tuple[str | None, str]:
    """W9's models as ONNX files, written into ``directory`` by ``framework``'s worker (torch:
    ``torch.onnx.export``; oar: ``oar.onnx.export``), for the onnxruntime worker."""
    quick = argparse.Namespace(**{**vars(args), "quick": True, "repeats": None})
    result = run_worker(framework, "W9", 1, quick, ["--export-onnx-dir", directory])
    if "error" in result:
        reason = f"{framework}'s ONNX export of W9's models failed: {result['error']}"
        log(f"  {reason}")
        return None, reason
    return directory, ""


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
        if not self.status[framework] and workload not in RUNS.get(framework, set(WORKLOADS)):
            return "—"
        reason = self.reason_for(framework, workload, row.get(framework))
        return reason if reason is not None else fmt(row[framework].value)

    def reason_for(self, framework: str, workload: str, cell: Cell | None) -> str | None:
        """What a cell without a value says instead (a status, or a footnote with the reason);
        None for a cell that holds a value."""
        if self.status[framework]:
            return self.status[framework]
        if (framework, workload) in self.absent_reasons:
            return self.footnote(self.absent_reasons[(framework, workload)])
        if cell is None:
            failed = [f for f in self.run.failures if f.startswith(f"{framework} {workload}:")]
            return self.footnote(failed[0]) if failed else "—"
        if cell.value is None:
            return self.footnote(cell.unavailable or "no samples")
        return None

    def footnote(self, text: str) -> str:
        return f"n/a {self.reference(text)}"

    def reference(self, text: str) -> str:
        if text not in self.footnotes:
            self.footnotes.append(text)
        return f"[{self.footnotes.index(text) + 1}]"

    def markdown(self) -> str:
        peers = FRAMEWORKS[1:]
        header = ["workload", "case", "unit", *FRAMEWORKS, *(f"oar/{p}" for p in peers)]
        lines = ["| " + " | ".join(header) + " |",
                 "| " + " | ".join(["---", "---", "---"] + ["---:"] * (len(header) - 3)) + " |"]
        rows = sorted(((key, row) for key, row in self.run.cells.items() if key[0] not in OWN_TABLES),
                      key=lambda kv: (int(kv[0][0][1:]), W6_ORDER.get(kv[0][1], 0)))
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
    notes = sorted({f"{f}: {c.note}" for (workload, _), row in run.cells.items() if workload == "W6"
                    for f, c in row.items() if c.note})
    return "W6 graph paths: " + "; ".join(notes) + "." if notes else ""


def agreement(run: Run, only: str = "") -> str:
    """How closely the frameworks' first losses and outputs agree: the check of same initialisation;
    of the main table's workloads, or of ``only`` (W15, whose table is its own)."""
    worst: tuple[float, str] = (0.0, "")
    compared = 0
    for (workload, case), row in run.cells.items():
        reference = row.get("oar")
        skipped = workload != only if only else workload in OWN_TABLES  # W9 compares whole outputs
        if skipped or reference is None or not reference.checks:
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
    lead = f"{only}, same" if only else "Same"
    return (f"{lead} initialisation: the first loss (or output) of every case is compared between oar and each peer; "
            f"they {verdict} ({compared} comparisons, largest relative difference {worst[0]:.1e}: {worst[1]}).")


# -- W9, W10 and W15: tables of their own ----------------------------------------------------------

def w9_keys() -> list[tuple[str, int]]:
    return [(model, batch) for model, (_, _, batches) in W9_MODELS.items() for batch in batches]


def w9_differences(run: Run) -> dict[tuple[str, str], float]:
    """``{(case, column): d}`` for every W9 output compared: ``d`` the largest |difference| of its
    fingerprint from the element-wise median of every column's, over the largest |median value|.
    The median of all engines is the reference, so one that is off stands out whichever it is."""
    out = {}
    for model, batch in w9_keys():
        case = w9_case(model, batch)
        row = run.cells.get(("W9", case), {})
        prints = {column: np.asarray(cell.fingerprint) for column, cell in row.items() if cell.fingerprint}
        if len(prints) < 2 or len({p.shape for p in prints.values()}) != 1:
            continue
        median = np.median(np.stack(list(prints.values())), axis=0)
        scale = max(float(np.abs(median).max()), 1e-12)
        for column, values in prints.items():
            out[(case, column)] = float(np.abs(values - median).max()) / scale
    return out


def w9_differs(run: Run) -> set[tuple[str, str]]:
    return {key for key, d in w9_differences(run).items() if d > W9_TOLERANCE}


class W9Table(Table):
    """W9's table: one row per model and batch, a column per engine (Paddle's twice)."""

    def column_cell(self, column: str, row: dict[str, Cell], case: str, differs: set) -> str:
        framework = W9_FRAMEWORK.get(column, column)
        cell = row.get(column)
        reason = self.reason_for(framework, "W9", cell)
        if reason is not None:
            return reason
        if (case, column) in differs:
            d = w9_differences(self.run)[(case, column)]
            return f"{fmt(cell.value)} differs " + self.reference(
                f"{column}'s output differs from the engines' median by {d:.1e} of the largest |output|: flagged, "
                f"not compared")
        return fmt(cell.value)

    def markdown(self) -> str:
        differs = w9_differs(self.run)
        peers = W9_COLUMNS[1:]
        header = ["model, batch (W9)", *(label for _, label, _ in W9_COLUMNS), *(ratio for _, _, ratio in peers)]
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
        for model, batch in w9_keys():
            case = w9_case(model, batch)
            row = self.run.cells.get(("W9", case), {})
            values = [self.column_cell(column, row, case, differs) for column, _, _ in W9_COLUMNS]
            ratios = []
            for column, _, _ in peers:
                ratio = None if {(case, "oar"), (case, column)} & differs else time_ratio(row.get("oar"), row.get(column))
                ratios.append(f"{ratio:.2f}x" if ratio is not None else "")
            lines.append("| " + " | ".join([case, *values, *ratios]) + " |")
        notes = [f"[{i + 1}] {text}" for i, text in enumerate(self.footnotes)]
        return "\n".join(lines + ([""] + notes if notes else []))


def w9_agreement(run: Run) -> str:
    differences = w9_differences(run)
    if not differences:
        return ""
    (case, column), worst = max(differences.items(), key=lambda kv: kv[1])
    flagged = sorted(f"{column} on {case}" for (case, column), d in differences.items() if d > W9_TOLERANCE)
    verdict = ("they agree" if not flagged else f"they DIFFER: {'; '.join(flagged)} (flagged in the table, left out "
               f"of the ratios and targets)")
    return (f"W9 outputs: {len(differences)} outputs compared, {FINGERPRINT_SIZE} values each at fixed "
            f"positions, with the element-wise median of every engine's; {verdict} (tolerance {W9_TOLERANCE:g} of the "
            f"largest |output|; largest difference {worst:.1e}, {column} on {case}).")


def w9_targets(run: Run) -> list[dict]:
    """Issue 15's W9 targets at this thread count, one row per model and batch: the oar Predictor
    within 1.3x of ONNX Runtime at batch 1 and no slower at the large batch, and faster than Paddle
    Inference with and without oneDNN."""
    differs = w9_differs(run)
    rows = []
    for model, batch in w9_keys():
        case = w9_case(model, batch)
        row = run.cells.get(("W9", case), {})
        oar = row.get("oar")
        small = batch == min(W9_MODELS[model][2])
        checks = {}
        for column, limit, strict in (("onnxruntime", 1.3 if small else 1.0, False), ("paddle-onednn", 1.0, True),
                                      ("paddle-plain", 1.0, True)):
            ratio = None if {(case, "oar"), (case, column)} & differs else time_ratio(oar, row.get(column))
            met = None if ratio is None else (ratio < limit if strict else ratio <= limit)
            checks[column] = {"ratio": ratio, "limit": limit, "strict": strict, "met": met}
        rows.append({"model": model, "batch": batch, "case": case,
                     "oar": oar.value if oar is not None else None, "checks": checks})
    return rows


def w9_targets_markdown(rows: list[dict]) -> str:
    lines = ["| model, batch (W9) | oar Predictor ms | oar/onnxruntime (batch 1: <= 1.3x, large batch: <= 1.0x) | "
             "oar/Paddle Inference oneDNN (< 1.0x) | oar/Paddle Inference no oneDNN (< 1.0x) |",
             "| --- | ---: | --- | --- | --- |"]
    for row in rows:
        cells = []
        for column in ("onnxruntime", "paddle-onednn", "paddle-plain"):
            check = row["checks"][column]
            if check["met"] is None:
                cells.append("—")
            else:
                cells.append(f"{check['ratio']:.2f}x " + ("met" if check["met"] else "**missed**"))
        oar = fmt(row["oar"]) if row["oar"] is not None else "—"
        lines.append(f"| {row['case']} | {oar} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def onnx_file_targets_markdown(run: Run) -> str:
    """Per W9 model and batch: ONNX Runtime's time on oar's file over its time on torch's (<= 1.0x):
    the same weights and the same engine, so the ratio is what the exporters wrote."""
    differs = w9_differs(run)
    lines = ["| model, batch (W9) | onnxruntime, torch's file ms | onnxruntime, oar's file ms | oar's file / torch's "
             "(<= 1.0x) |", "| --- | ---: | ---: | --- |"]
    for model, batch in w9_keys():
        case = w9_case(model, batch)
        row = run.cells.get(("W9", case), {})
        torch_file, oar_file = row.get("onnxruntime"), row.get("onnxruntime-oar")
        ratio = None if {(case, "onnxruntime"), (case, "onnxruntime-oar")} & differs else time_ratio(oar_file, torch_file)
        verdict = "—" if ratio is None else f"{ratio:.2f}x " + ("met" if ratio <= 1.0 else "**missed**")
        cells = [fmt(c.value) if c is not None and c.value is not None else "—" for c in (torch_file, oar_file)]
        lines.append(f"| {case} | {cells[0]} | {cells[1]} | {verdict} |")
    return "\n".join(lines)


class W15Table(Table):
    """W15's table: one row per case, oar's, torch's and Paddle's ms and oar's ratios, then each
    framework's CPU time over wall time in the timed loop (pooled over the rounds)."""

    def markdown(self) -> str:
        peers = W15_FRAMEWORKS[1:]
        header = ["case (W15)", *(f"{f} ms" for f in W15_FRAMEWORKS), *(f"oar/{p}" for p in peers),
                  *(f"CPU/wall {f}" for f in W15_FRAMEWORKS)]
        lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
        for case in W15_CASES.values():
            row = self.run.cells.get(("W15", case), {})
            values = [self.cell(f, "W15", row) for f in W15_FRAMEWORKS]
            ratios = [time_ratio(row.get("oar"), row.get(peer)) for peer in peers]
            cpu = []
            for framework in W15_FRAMEWORKS:
                cell = row.get(framework)
                ratio = cell.extra.get("cpu_per_wall") if cell is not None and cell.value is not None else None
                over = framework == "oar" and self.run.threads == 1 and ratio is not None and ratio > W15_CPU_LIMIT
                cpu.append("" if ratio is None else f"**{ratio:.2f}**" if over else f"{ratio:.2f}")
            lines.append("| " + " | ".join([case, *values, *(f"{r:.2f}x" if r is not None else "" for r in ratios),
                                            *cpu]) + " |")
        notes = [f"[{i + 1}] {text}" for i, text in enumerate(self.footnotes)]
        return "\n".join(lines + ([""] + notes if notes else []))


def w15_cpu_target(run: Run) -> str:
    """The target at 1 thread: oar's CPU time at most W15_CPU_LIMIT x its wall time on every case."""
    ratios = {case: row["oar"].extra["cpu_per_wall"] for (workload, case), row in run.cells.items()
              if workload == "W15" and "oar" in row and "cpu_per_wall" in row["oar"].extra}
    if run.threads != 1 or not ratios:
        return ""
    over = [f"{case} ({ratio:.2f})" for case, ratio in ratios.items() if ratio > W15_CPU_LIMIT]
    verdict = "met" if not over else "**missed**: " + "; ".join(over)
    return (f"Target, W15: oar's CPU time at most {W15_CPU_LIMIT:g}x its wall time at 1 thread on every case (no "
            f"hidden spinning): {verdict} (largest {max(ratios.values()):.2f}, {len(ratios)} cases).")


def w10_cells(run: Run) -> list[tuple[str, Cell]]:
    return [(case, row["oar"]) for (workload, case), row in run.cells.items() if workload == "W10" and "oar" in row]


def w10_markdown(run: Run) -> str:
    cells = w10_cells(run)
    if not cells:
        return ""
    lines = list(suite.W10_TABLE_HEAD)
    notes = []
    for case, cell in cells:
        lines.append(suite.w10_row(case, cell.value, cell.extra, cell.unavailable))
        if cell.note:
            notes.append(f"{case}: {cell.note}")
    clients = next((c.extra.get("clients") for _, c in cells if c.extra), None)
    seconds = next((c.extra.get("seconds") for _, c in cells if c.extra), None)
    text = "\n".join(lines)
    if clients:
        text += (f"\n\n{clients:.0f} clients for {seconds:.0f} s per configuration, batch-1 requests in the binary "
                 f"tensor form, every answer checked against the Predictor's; CPU in seconds per second of wall "
                 f"time (the server's process tree, the clients' process), on the same {os.cpu_count()} cores.")
    if notes:
        text += "\n\nErrors seen: " + "; ".join(notes)
    return text


def w11_cells(run: Run) -> dict[tuple[str, str], Cell]:
    """W11's cells as ``suite.w11_markdown`` takes them: ``{(case, column): cell}``."""
    return {(case, column): cell for (workload, case), row in run.cells.items() if workload == "W11"
            for column, cell in row.items()}


def w10_targets(run: Run) -> list[dict]:
    cells = dict(w10_cells(run))
    measured = {case: c for case, c in cells.items() if c.value is not None}
    rows = []
    if measured:
        errors = sum(c.extra.get("errors", 0) for c in measured.values())
        answers = sum(c.extra.get("requests", 0) for c in measured.values())
        rows.append({"target": "W10 zero errors in every configuration (each answer equal to the Predictor's)",
                     "measured": f"{errors:.0f} errors, {answers:.0f} answers", "met": errors == 0})
    batching = next((c for case, c in measured.items() if case.startswith("dynamic batching (default")), None)
    plain = next((c for case, c in measured.items() if case.startswith("no batching (max_batch_size 0)")), None)
    if batching is not None and plain is not None:
        ratio = batching.value / plain.value
        rows.append({"target": "W10 throughput with dynamic batching at least 2x without (max_batch_size 0)",
                     "measured": f"{ratio:.2f}x ({batching.value:.0f} vs {plain.value:.0f} requests/s)",
                     "met": ratio >= 2.0})
    return rows


def w10_targets_markdown(rows: list[dict]) -> str:
    lines = ["| target | measured | met |", "| --- | --- | --- |"]
    lines += [f"| {r['target']} | {r['measured']} | {'met' if r['met'] else '**missed**'} |" for r in rows]
    return "\n".join(lines)


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


def profile_section(workloads: list[str], log, w9_cases: list[tuple[str, int]] | None = None) -> str:
    """cProfile summaries of oar's step for ``workloads`` (bench/profile_oar.py, one thread); with
    W9, one line per ``(model, batch)`` of ``w9_cases`` (default: every one)."""
    if not workloads:
        return ""
    log(f"  profiling oar: {' '.join(workloads)}")
    env = worker_environment(1)
    cases = ["--cases", *(f"{model}:{batch}" for model, batch in w9_cases)] if "W9" in workloads and w9_cases else []
    done = subprocess.run([sys.executable, str(BENCH / "profile_oar.py"), *workloads, "--threads", "1", "--top", "8",
                           *cases], capture_output=True, text=True, env=env, cwd=BENCH, timeout=WORKER_TIMEOUT_S)
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
    measured = set().union(*(r.workloads for r in runs))
    for framework in FRAMEWORKS:
        version = next((r.versions[framework] for r in runs if framework in r.versions), None)
        detail = next((r.details[framework] for r in runs if framework in r.details), "")
        if status[framework]:
            lines.append(f"- {framework}: {status[framework]}")
        elif version is None and not RUNS.get(framework, set(WORKLOADS)) & measured:
            lines.append(f"- {framework}: installed; it runs none of the workloads measured here")
        elif version is None:
            lines.append(f"- {framework}: installed, but no worker finished")
        else:
            lines.append(f"- {framework} {version}" + (f" ({detail})" if detail else ""))
    return "\n".join(lines)


def report(runs: list[Run], status: dict[str, str], absent_reasons: dict[tuple[str, str], str], profile: str,
           elapsed_s: float) -> str:
    parts = [versions_markdown(runs, status)]
    for run in runs:
        plural = "s" if run.threads > 1 else ""
        parts += [f"### {run.threads} thread{plural}", load_note(run)]
        workloads = {workload for workload, _ in run.cells} | {f.split(" ")[1].rstrip(":") for f in run.failures}
        if workloads - OWN_TABLES:
            parts.append(Table(run, status, absent_reasons).markdown())
            parts += [text for text in (graph_notes(run), agreement(run)) if text]
            parts += ["Targets of issue 7:", targets_markdown(targets(run))]
        if "W9" in workloads:
            parts += ["W9, inference through each framework's deployment engine (ms per call; the ratios are the oar "
                      "Predictor's time over each engine's):", W9Table(run, status, absent_reasons).markdown()]
            parts += [text for text in (w9_agreement(run),) if text]
            parts += ["Targets of issue 15, W9:", w9_targets_markdown(w9_targets(run))]
            parts += ["Target of issue 17, W9: ONNX Runtime runs the file oar.onnx writes at least as fast as the one "
                      "torch.onnx.export writes for the same weights:", onnx_file_targets_markdown(run)]
        if "W10" in workloads and w10_cells(run):
            parts += ["W10, load test of `python -m oar.serving` (Paddle's tutorial LeNet, batch-1 requests):",
                      w10_markdown(run)]
            rows = w10_targets(run)
            if rows:
                parts += ["Targets of issue 15, W10:", w10_targets_markdown(rows)]
        if "W11" in workloads and w11_cells(run):
            parts += [f"W11, oar-slim's compression targets (bench/slim_targets.py: models trained in the run, "
                      f"test accuracy through each engine, latency in ms per call at batch {suite.W11_BATCH} and "
                      f"1 thread, medians of interleaved rounds; speed-ups are medians of the rounds' ratios):",
                      suite.w11_markdown(w11_cells(run))]
        if "W15" in workloads:
            parts += ["W15, models as users write them (ms per call; the ratios are oar's time over each peer's; "
                      "CPU/wall: the process's CPU time over the wall time of the timed calls, every thread counted):",
                      W15Table(run, status, absent_reasons).markdown()]
            parts += [text for text in (agreement(run, "W15"), w15_cpu_target(run)) if text]
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
`oar.set_num_threads`). Since 2026-12-02 01:35 the workers run without the OpenBLAS kernel
overrides this project's machines set for old OpenBLAS builds (`OPENBLAS_CORETYPE=Haswell` with
`OPENBLAS_L2_SIZE`, removed together): numpy's OpenBLAS then picks its AVX-512 (SkylakeX) kernels
on these AMD EPYC CPUs, as it would on a user's machine, and oar's "thread pools" line names the
kernels that ran; earlier sections ran oar's BLAS on Haswell's AVX2 kernels (a 1024^3 float32
GEMM at one thread: 114 GFLOP/s on them, 213 on SkylakeX's), while every peer picked its own.
Each case has warm-up calls; a sample is the mean over back-to-back calls
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
- **W9** deployment engines on whole models, with the same weights everywhere (bench/suite.py's
  `seeded_state`: each tensor from a seed of its model's and its own name, so every framework that
  names a weight alike loads the same numbers): Paddle's tutorial LeNet (`Sequential(Conv2D(1, 6,
  5, padding=2), ...)`) at batch 1 and 64, `vision.models.resnet18()` and `mobilenet_v2()` at 1
  and 8 x 3x224x224, the W5 encoder layer at batch 1 and 8 x 128 tokens. Columns: the oar
  Predictor (`oar.jit.save`, `oar.inference.create_predictor(Config(prefix))`, `infer([x])`),
  ONNX Runtime (the torch worker's copies of the models, layer for layer with Paddle's names,
  exported by `torch.onnx.export`), Paddle Inference (`paddle.jit.save`, `create_predictor`) with
  `enable_mkldnn()` and with `disable_mkldnn()`, and torch eager under `no_grad` as a reference.
  The encoder layer is saved once per batch size by every framework (oar's `to_static` captures
  MultiHeadAttention's reshape per batch size). 64 values of every output, at fixed positions,
  are compared with the element-wise median of all engines'; an engine off by more than 1e-3 of
  the largest |output| is flagged in the table and left out of the ratios and targets.
- **W10** load test of oar's HTTP server (`python -m oar.serving`, bench/serving_load.py; oar
  only, one round): the W9 LeNet in a model repository, 16 asyncio clients on keep-alive
  connections sending batch-1 requests (the binary tensor extension both ways, and one JSON
  request) for 15 s per server configuration: dynamic batching (the default config), no batching
  (`max_batch_size: 0`) and variants (`max_queue_delay_ms: 2`, `max_concurrency: 2`,
  `--workers 2` with and without batching). Every answer is compared with an in-process Predictor's; reported: errors,
  requests/s, client-side p50 and p99 latency, rows per batched run (from `/metrics`) and the CPU
  used by server and clients, which share the machine's cores.
- **W11** oar-slim's compression targets (bench/slim_targets.py; oar only, one round, 1 thread):
  `oar.vision.models.LeNet` trained 3 epochs on the bundled digits, and W4's small ResNet and
  `oar.vision.models.resnet18(num_classes=10)`, each trained 3 epochs on `suite.synthetic_cifar` (3x32x32, 10 classes: smooth class templates shifted, flipped,
  contrast-scaled, plus a smooth distractor and noise; 4,096 train / 1,000 test images). Each is
  quantized by PTQ (`AbsmaxObserver` activations, `AbsMaxChannelWiseWeightObserver` weights, 4
  calibration batches of 64; batch norms folded first by `fuse_conv_bn`); both ResNets are also
  pruned by `L1NormFilterPruner`, 50% of the filters of every conv (`prune_vars(0.5)`) or of each
  residual block's first conv only (the filters no residual sum reads), each fine-tuned one epoch. Every variant is saved by `oar.jit.save` and run by the oar Predictor, and
  exported by `oar.onnx.export` and run by ONNX Runtime: test accuracy through each engine, file
  sizes, FLOPs (`oar.flops`), and batch-64 latency timed in interleaved rounds in one process.
- **W15** models as users write them, written once against Paddle's API (bench/paddle_api.py) and
  run by oar and Paddle, the torch worker's copies with Paddle's layer names, W9's seeded weights:
  a training step and eager inference (eval mode, under `no_grad`) of Paddle's docs' LeNet
  (batch 64, Adam), `vision.models.resnet18()` and `mobilenet_v2()` (1000 classes) at 8 x
  3x224x224 and 32 x 3x32x32 (SGD momentum 0.9, cross-entropy; MobileNetV2's first loss compared
  with its dropout off), a depthwise-separable block (depthwise 3x3 conv, BN, ReLU, pointwise 1x1
  conv 32->64, BN, ReLU) at 32 x 32x56x56 (SGD momentum on the output's mean), the attention
  decoder of Paddle's seq2seq tutorial (embedding 256 over a vocabulary of 1000, `nn.LSTMCell(256,
  256)`, dot-product attention over 30 given encoder states [16, 30, 256], tanh(Linear(512, 256)),
  Linear(256, 1000); batch 16, 30 steps: a teacher-forced Adam step on the steps' mean
  cross-entropy, and greedy decoding under `no_grad`), and the vision LeNet converted by
  `jit.to_static` (InputSpec [None, 1, 28, 28], `full_graph=True`) in eval mode at batch 1, called
  without and with `no_grad` (torch: `torch.jit.trace`, not frozen). Each case also reports the
  process's CPU time over the wall time of its timed calls (every thread counted, pooled over the
  rounds): the target is at most 1.1 for oar at 1 thread.
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
    parser.add_argument("--profile", nargs="*", choices=("W1", "W2", "W3", "W4", "W5", "W6", "W9"), default=None,
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
    absent_reasons: dict[tuple[str, str], str] = {}  # (framework, workload) -> why it has no figures
    with tempfile.TemporaryDirectory() as directory:
        onnx_models: dict[str, list[str]] = {}  # the onnxruntime worker's model arguments, per workload
        for workload, export, flag in (("W6", export_onnx, "--model"),
                                       ("W9", functools.partial(export_w9_onnx, "torch"), "--model-dir")):
            if workload not in args.workloads or status["onnxruntime"]:
                continue
            if not status["torch"]:
                target = os.path.join(directory, workload)
                os.makedirs(target, exist_ok=True)
                path, reason = export(target, args, log)
            else:
                path, reason = None, f"the ONNX models are exported by torch, which is {status['torch']}"
            if path is None:
                absent_reasons[("onnxruntime", workload)] = reason
            else:
                onnx_models[workload] = [flag, path]
        if "W9" in args.workloads and not status["onnxruntime"]:
            target = os.path.join(directory, "W9-oar")  # the same models, exported by oar.onnx
            os.makedirs(target, exist_ok=True)
            path, reason = export_w9_onnx("oar", target, args, log)
            if path is not None:
                onnx_models.setdefault("W9", []).extend(["--oar-model-dir", path])
        if set(ONE_THREAD) & set(args.workloads) and 1 not in args.threads:
            log(f"  {' '.join(sorted(ONE_THREAD))}: measured at 1 thread only; add --threads 1 to run it")
        active = [f for f in FRAMEWORKS if not status[f]]
        # a thread count at which none of the workloads asked for runs (W11 alone at 2 threads) gets no section
        thread_counts = [t for t in args.threads if t == 1 or set(args.workloads) - ONE_THREAD] or args.threads
        runs = [measure(threads, active, args, onnx_models, log) for threads in thread_counts]

    w9_missed = sorted({(row["model"], row["batch"]) for run in runs for row in w9_targets(run)
                        if any(check["met"] is False for check in row["checks"].values())},
                       key=lambda key: list(w9_keys()).index(key))
    if args.profile is None:  # the oar steps behind every missed target, at the first thread count
        missed = {row["workload"] for row in targets(runs[0]) if row["met"] is False}
        profile_workloads = [w for w in ("W1", "W2", "W3", "W4", "W5", "W6") if w in missed]
        profile_workloads += ["W9"] if w9_missed else []
    else:
        profile_workloads = args.profile
    profile = "" if args.quick and args.profile is None else profile_section(profile_workloads, log, w9_missed)

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
