"""The benchmark suite runs its oar part without the peers, prints the table and appends dated sections.

The peers (PyTorch, PaddlePaddle, ONNX Runtime) are never needed: the suite runs with
``--frameworks oar`` and the table logic is checked for absent peers directly.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
WORKLOADS = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
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
    assert sorted({row[0] for row in rows}) == WORKLOADS
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
