"""The benchmark suite runs its oar part without the peers, prints the table and appends dated sections.

The peers (PyTorch, PaddlePaddle, ONNX Runtime) are never needed: the suite runs with
``--frameworks oar`` and the table logic is checked for absent peers directly.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W12", "W13", "W14"]  # W12-W14: oar only, in the main table
HEADER = ["workload", "case", "unit", "oar", "torch", "paddle", "onnxruntime", "oar/torch", "oar/paddle",
          "oar/onnxruntime"]


@pytest.fixture(scope="module")
def bench_modules():
    sys.path.insert(0, str(BENCH))
    try:
        import run
        import suite

        yield run, suite
    finally:
        sys.path.remove(str(BENCH))
        for name in ("run", "suite", "pin_threads"):  # bench/ is scripts, not a package: leave no trace
            sys.modules.pop(name, None)


def run_suite(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, str(BENCH / "run.py"), "--frameworks", "oar", "--quick", "--rounds", "1",
                             "--threads", "1", *args], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return result


def table_rows(text: str, first_column: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith(f"| {first_column}")]


def test_the_oar_part_of_the_suite_prints_every_workload_and_appends_dated_sections(tmp_path):
    output = tmp_path / "benchmarks.md"
    result = run_suite("--write", "--output", str(output))
    header = table_rows(result.stdout, "workload")[0]
    assert header == HEADER
    rows = [row for row in table_rows(result.stdout, "W") if len(row) == len(HEADER)]  # not the targets
    assert sorted({row[0] for row in rows}) == sorted(WORKLOADS)
    w12 = {row[1]: row for row in rows if row[0] == "W12"}  # the data-parallel MLP, when oar-distributed is installed
    if importlib.util.find_spec("oar.distributed") is not None and importlib.util.find_spec("mpi4py") is not None:
        assert any(case.startswith("2 ranks / 1 process") for case in w12), w12
        assert sum("all_reduce" in case for case in w12) == 4, w12
    for row in rows:
        workload, case, oar = row[0], row[1], row[3]
        if workload == "W6" and "graph" in case:  # oar.jit.to_static, where oar has it
            assert oar.startswith("n/a") or float(oar) > 0, row
        else:
            assert float(oar) > 0, row
        # A peer not run (or not installed) says so in its column and leaves its ratio empty.
        assert all(cell in ("not run", "not installed", "—") for cell in row[4:7]), row
        assert row[7:] == ["", "", ""], row
    targets = table_rows(result.stdout, "W7 oar")  # the GEMM targets need oar and numpy only
    assert len(targets) == 2 and all(row[-1] in ("met", "**missed**") for row in targets), targets

    run_suite("--workloads", "W1", "--write", "--output", str(output))
    text = output.read_text()
    assert text.startswith("# Benchmarks")
    assert text.count("\n## ") == 2  # one dated section per run, appended
    assert text.count("--frameworks oar --quick --rounds 1 --threads 1") == 2


def test_a_worker_prints_its_timings_as_json():
    result = subprocess.run([sys.executable, str(BENCH / "worker_oar.py"), "W1", "--threads", "1", "--quick"],
                            capture_output=True, text=True, timeout=120, cwd=BENCH)
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert payload["framework"] == "oar" and payload["threads"] == 1
    cases = {case["case"]: case for case in payload["cases"]}
    assert cases["x + y, float32 [1]"]["check"] == 3.0
    assert all(case["unit"] == "µs" and case["samples"][0] > 0 for case in cases.values())


def test_absent_peers_say_not_installed_and_ratios_compare_times(bench_modules):
    run, _ = bench_modules
    measured = run.Run(threads=1)
    for framework, step_ms, gemm in (("oar", 10.0, 50.0), ("torch", 5.0, 100.0)):
        measured.add(framework, {"workload": "W2", "case": "step", "unit": "ms", "samples": [step_ms, 2 * step_ms],
                                 "higher_is_better": False, "check": 2.3, "note": "", "unavailable": ""})
        measured.add(framework, {"workload": "W7", "case": "gemm", "unit": "GFLOP/s", "samples": [gemm],
                                 "higher_is_better": True, "check": None, "note": "", "unavailable": ""})
    status = {"oar": "", "torch": "", "paddle": "not installed", "onnxruntime": "not installed"}
    text = run.Table(measured, status, {}).markdown()
    rows = {row[0]: row for row in table_rows(text, "W")}
    # medians 15 vs 7.5 ms: oar takes 2x torch's time; half torch's GFLOP/s is also 2x the time
    assert rows["W2"][3:] == ["15.0", "7.50", "not installed", "not installed", "2.00x", "", ""]
    assert rows["W7"][3:] == ["50.0", "100", "not installed", "not installed", "2.00x", "", ""]
    assert "agree" in run.agreement(measured)


def test_every_framework_gets_the_same_initial_weights(bench_modules):
    _, suite = bench_modules
    first, again = suite.weights("lenet"), suite.weights("lenet")
    assert list(first) == ["features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias",
                           "fc.0.weight", "fc.0.bias", "fc.1.weight", "fc.1.bias", "fc.2.weight", "fc.2.bias"]
    assert all((first[key] == again[key]).all() and first[key].dtype == "float32" for key in first)
    assert first["fc.0.weight"].shape == (400, 120)  # Paddle's [in, out]; the torch worker transposes


def w11_rows(text: str) -> dict[str, list[str]]:
    """W11's two tables: every row by its first cell."""
    return {row[0]: row for row in (
        [cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("| "))}


def check_w11_tables(text: str, suite) -> None:
    """W11's tables as the smoke run prints them: every model and variant measured through the oar
    Predictor (ONNX Runtime too where it is installed), every target met or not met."""
    rows = w11_rows(text)
    ort = importlib.util.find_spec("onnxruntime") is not None and importlib.util.find_spec("oar.onnx") is not None
    for subject, variant in suite.w11_keys():
        row = rows[suite.w11_case(subject, variant)]
        flops, oar_accuracy, ort_accuracy, oar_ms, ort_ms = row[1], row[3], row[4], row[7], row[8]
        assert float(flops.replace(",", "")) > 0 and 0 <= float(oar_accuracy.rstrip("%")) <= 100, row
        assert float(oar_ms) > 0, row
        if ort:  # the same model; ORT's int8 kernels requantize between layers (docs/slim.md): a flip or two
            assert abs(float(ort_accuracy.rstrip("%")) - float(oar_accuracy.rstrip("%"))) <= 3.0 and float(ort_ms) > 0, row
    targets = [row for name, row in rows.items() if name.endswith("(no target)") or " at least " in name
               or " within " in name]
    # int8's three per model; accuracy, FLOPs and speed per pruning, two prunings per ResNet
    assert len(targets) == 3 * 3 + 2 * 2 * 3, targets
    assert all(row[2] in ("met", "**not met**", "—") and row[4] in ("met", "**not met**", "—") for row in targets)


def test_the_suite_runs_w11_at_one_thread_and_prints_its_tables(bench_modules):
    _, suite = bench_modules
    result = run_suite("--workloads", "W11")
    check_w11_tables(result.stdout, suite)
    assert "### 1 thread" in result.stdout and "Failed workers" not in result.stdout


def test_w11_targets_take_the_median_of_interleaved_round_ratios(bench_modules):
    _, suite = bench_modules

    def case(subject, variant, column, samples, unavailable="", **extra):
        return suite.Case("W11", suite.w11_case(subject, variant), "ms", samples, unavailable=unavailable,
                          column=column, extra=extra)

    reason = "onnxruntime is not installed"
    cases = [case("lenet", "float32", "oar", [10.0, 20.0, 10.0], accuracy=0.950, bytes=400.0, flops=1000.0),
             case("lenet", "int8", "oar", [5.0, 10.0, 8.0], accuracy=0.935, bytes=100.0, flops=1000.0),
             case("resnet", "float32", "oar", [30.0, 30.0], accuracy=0.9, bytes=300.0, flops=1000.0),
             case("resnet", "pruned", "oar", [15.0, 20.0], accuracy=0.885, bytes=100.0, flops=500.0),
             case("resnet18", "float32", "oar", [300.0], accuracy=0.932, bytes=4e7, flops=37_118_976.0),
             case("resnet18", "pruned-inner", "oar", [150.0], accuracy=0.916, bytes=2e7, flops=19_998_720.0),
             *(case(s, v, "onnxruntime", [], unavailable=reason) for s, v in suite.w11_keys())]
    cells = {(c.case, c.column): c for c in cases}
    targets = {row["target"]: row for row in suite.w11_targets(cells)}

    def target(start: str) -> dict:
        return next(row for name, row in targets.items() if name.startswith(start))

    # round ratios 2, 2, 1.25: the median is 2x (the ratio of the medians would be 12 / 8 = 1.5x)
    assert target("LeNet, digits: int8 at least 1.5x faster")["oar"] == ("2.00x (10 -> 8 ms)", True)
    assert target("LeNet, digits: int8 model file")["oar"] == ("4.00x (400 -> 100 B)", True)
    assert target("LeNet, digits: PTQ int8 test accuracy")["oar"] == ("93.5% vs 95.0% (-1.5)", False)
    pruned = f"small ResNet, synthetic CIFAR, {suite.W11_VARIANTS['pruned']}"
    assert target(f"{pruned}: test accuracy")["oar"] == ("88.5% vs 90.0% (-1.5)", True)
    assert target(f"{pruned}: FLOPs")["oar"] == ("-50.0% (1,000 -> 500)", True)
    assert target(f"{pruned}: speed-up")["oar"] == ("1.75x (30 -> 17.5 ms)", None)  # rounds: 2x, 1.5x
    assert target("small ResNet, synthetic CIFAR: PTQ int8")["oar"] == ("—", None)  # not measured
    inner = f"ResNet18, synthetic CIFAR, {suite.W11_VARIANTS['pruned-inner']}"
    assert target(f"{inner}: test accuracy")["oar"] == ("91.6% vs 93.2% (-1.6)", True)
    assert target(f"{inner}: FLOPs")["oar"] == ("-46.1% (37,118,976 -> 19,998,720)", True)
    assert target(f"{inner}: speed-up")["oar"] == ("2.00x (300 -> 150 ms)", None)  # one round each
    assert all(row["onnxruntime"] == ("—", None) for row in targets.values())

    text = suite.w11_markdown(cells)
    rows = w11_rows(text)
    assert rows[suite.w11_case("lenet", "int8")][1:] == ["1,000", "—", "93.5%", "n/a [1]", "100", "n/a [1]",
                                                       "8", "n/a [1]"]
    assert f"[1] {reason}" in text
    assert rows[next(name for name in rows if name.startswith("LeNet, digits: PTQ int8"))][2] == "**not met**"


def test_synthetic_cifar_is_seeded_learnable_and_not_trivial(bench_modules):
    _, suite = bench_modules
    x, y = suite.synthetic_cifar(1000, "train")
    again, labels = suite.synthetic_cifar(1000, "train")
    test_x, test_y = suite.synthetic_cifar(500, "test")
    assert x.shape == (1000, 3, 32, 32) and x.dtype == np.float32 and y.dtype == np.int64
    assert (x == again).all() and (y == labels).all() and not np.allclose(x[:500], test_x)
    assert np.bincount(y, minlength=10).min() > 50  # every class, about equally often
    # Nearest class mean on raw pixels: well above chance (the classes are there to learn), well
    # below 100% (shifts, flips, contrast and the distractor hide them from a linear rule).
    means = np.stack([x[y == c].reshape(-1, 3 * 32 * 32).mean(0) for c in range(10)])
    distances = ((test_x.reshape(len(test_x), 1, -1) - means[None]) ** 2).sum(-1)
    assert 0.4 < (distances.argmin(1) == test_y).mean() < 0.95


def test_w13_times_the_profiler_absent_off_and_recording():
    result = subprocess.run([sys.executable, str(BENCH / "profiler_cost.py"), "W13", "--threads", "1", "--quick"],
                            capture_output=True, text=True, timeout=300, cwd=BENCH)
    assert result.returncode == 0, result.stderr
    cases = {case["case"]: case for case in json.loads(result.stdout.strip().splitlines()[-1])["cases"]}
    for label in ("W1 x + y, float32 [1]", "W1 Linear(4,4) fwd+bwd, [1,4]",
                  "W2 MLP 784-512-512-10, batch 128, Adam step"):
        for mode in ("without oar.profiler", "oar.profiler imported, off", "recording", "recording (shapes + memory)"):
            assert cases[f"{label}: {mode}"]["samples"][0] > 0, (label, mode)
        ratio = cases[f"{label}: off / without"]
        assert ratio["unit"] == "x" and 0.2 < ratio["samples"][0] < 5, ratio  # a ratio of times, not a time
    assert "without: commit " in result.stdout  # the tree without the profiler, exported from git
