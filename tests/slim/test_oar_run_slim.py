"""``oar-run slim=ptq|qat|prune``: after training, compress, export and compare with the float model.

The runs are real (``python -m oar_hydra``, or ``oar_hydra.run.run`` on a composed config): one
epoch on the bundled digits without augmentation (LeNet about 93%), about 3 s each.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.plugins
import oar.slim._plugin
import oar.slim.run
from oar.errors import ArgumentError
from oar.slim.prune import PruningError

pytest.importorskip("oar_hydra", reason="oar-hydra (oar-run) is not installed in this session")

# After the skip: Hydra comes with oar-hydra.
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from oar_hydra.data import digits
from oar_hydra.run import run
from oar_hydra.schema import register_configs

QUICK = ["trainer.epochs=1", "trainer.verbose=0", "data.augment=false"]


def serving_installed() -> bool:
    return importlib.util.find_spec("oar.inference") is not None


def oar_run(tmp_path: Path, *overrides: str, multirun: bool = False) -> tuple[subprocess.CompletedProcess, Path]:
    run_dir = tmp_path / ("sweep" if multirun else "run")
    where = f"hydra.sweep.dir={run_dir}" if multirun else f"hydra.run.dir={run_dir}"
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    done = subprocess.run([sys.executable, "-m", "oar_hydra", *(["-m"] if multirun else []), *overrides, where],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done, run_dir


def table_rows(text: str) -> list[list[str]]:
    """The cells of the float32-vs-compressed table printed in ``text``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| model "))
    return [[c.strip() for c in line.split("|")[1:-1]] for line in lines[start:start + 4]]


def test_doc_examples_run():
    for module in (oar.slim.run, oar.slim._plugin):
        assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0, module.__name__


def test_ptq_run_prints_the_table_and_exports_the_int8_model(tmp_path):
    done, run_dir = oar_run(tmp_path, *QUICK, "slim=ptq", "slim.activation=kl")
    metrics = json.loads((run_dir / "metrics.json").read_text())
    report = metrics["slim"]
    before, after = report["float32"], report["compressed"]
    assert report["option"] == "ptq" and metrics["choices"]["slim"] == "ptq"
    assert before["test_accuracy"] == metrics["test_accuracy"] > 0.85  # one epoch trains LeNet well enough
    assert after["test_accuracy"] == metrics["slim_test_accuracy"]
    assert abs(report["accuracy_change"]) <= 0.03  # int8 costs LeNet at most a few points
    assert (before["model"], after["model"]) == ("inference/lenet_float32", "inference/lenet")

    # Sizes are the files' own; LeNet's biases and per-channel steps keep it from 4x (docs/slim.md).
    float_bytes = (run_dir / "inference" / "lenet_float32.pdiparams").stat().st_size
    int8_bytes = (run_dir / "inference" / "lenet.pdiparams").stat().st_size
    assert (before["pdiparams_bytes"], after["pdiparams_bytes"]) == (float_bytes, int8_bytes)
    assert report["size_ratio"] == pytest.approx(float_bytes / int8_bytes) and report["size_ratio"] >= 3

    # The exported file is the compressed model: its predictions score what the run reported.
    eval_data = digits(augment=False).eval
    x = np.stack([eval_data[i][0] for i in range(len(eval_data))]).astype(np.float32)
    y = np.concatenate([np.ravel(eval_data[i][1]) for i in range(len(eval_data))])
    int8_model = oar.jit.load(str(run_dir / "inference" / "lenet"))
    with oar.no_grad():
        predicted = int8_model(oar.to_tensor(x)).numpy().argmax(-1)
    assert float((predicted == y).mean()) == pytest.approx(after["test_accuracy"])
    float_model = oar.jit.load(str(run_dir / "inference" / "lenet_float32"))
    with oar.no_grad():
        assert float((float_model(oar.to_tensor(x)).numpy().argmax(-1) == y).mean()) == \
            pytest.approx(before["test_accuracy"])

    # One table, on the terminal and in the log, with the numbers of metrics.json.
    rows = table_rows(done.stdout)
    assert rows == table_rows((run_dir / "oar-run.log").read_text())
    assert rows[0] == ["model", "test accuracy", ".pdiparams", "Predictor latency (batch 64)"]
    assert rows[2][:3] == ["float32", f"{before['test_accuracy']:.2%}", f"{float_bytes:,} B"]
    assert rows[3][:3] == ["ptq", f"{after['test_accuracy']:.2%} ({100 * report['accuracy_change']:+.2f} points)",
                           f"{int8_bytes:,} B ({report['size_ratio']:.2f}x smaller)"]
    if serving_installed():
        assert before["latency_ms"] > 0 and after["latency_ms"] > 0
        assert report["speedup"] == pytest.approx(before["latency_ms"] / after["latency_ms"])
        assert rows[2][3] == f"{before['latency_ms']:.2f} ms"
    else:
        assert rows[2][3] == "n/a (install oar-serving)" and report["speedup"] is None


def test_a_weight_dominated_model_shrinks_almost_4x_with_ptq_and_qat(tmp_path):
    # One process, two jobs: MLP 784-256-128-10, post-training and quantization-aware.
    done, sweep = oar_run(tmp_path, *QUICK, "model=mlp", "slim=ptq,qat", multirun=True)
    for job, option in ((0, "ptq"), (1, "qat")):
        report = json.loads((sweep / str(job) / "metrics.json").read_text())["slim"]
        assert report["option"] == option
        assert report["size_ratio"] >= 3.5, report
        assert abs(report["accuracy_change"]) <= 0.03, report
        params = oar.load(str(sweep / str(job) / "inference" / "mlp.pdiparams"))["params"]
        assert {v.dtype.name for k, v in params.items() if k.endswith(".weight")} == {"int8"}
    assert done.stdout.count("| float32 ") == 2  # each job printed its table


@pytest.fixture
def composed():
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="oar_hydra.conf", version_base="1.3"):
        yield lambda *overrides: compose(config_name="config", overrides=list(overrides))
    GlobalHydra.instance().clear()


def test_prune_cuts_flops_and_says_latency_needs_oar_serving(composed, tmp_path, caplog, monkeypatch):
    oar.plugins.registries()  # the plugins load first; then oar.inference reads as not installed
    monkeypatch.setitem(sys.modules, "oar.inference", None)
    # export=none: the table still needs oar.jit files, the compressed one is saved as lenet_compressed.
    cfg = composed(*QUICK, "slim=prune", "slim.criterion=fpgm", "slim.ratio=0.5", "export=none")
    with caplog.at_level(logging.INFO, logger="oar_hydra"):
        metrics = run(cfg, tmp_path)
    report = metrics["slim"]
    before, after = report["float32"], report["compressed"]
    record = json.loads((tmp_path / "metrics.json").read_text())
    assert record["slim"] == report and "export" not in record
    # Half of each conv's filters: conv 2's FLOPs go to a quarter, conv 1's and fc 1's to half.
    assert before["flops"] == 347560 and after["flops"] <= 0.5 * before["flops"]
    assert report["size_ratio"] > 1.5
    assert abs(report["accuracy_change"]) <= 0.05  # one epoch of fine-tuning brings it back
    assert after["model"] == "inference/lenet_compressed"
    pruned = oar.load(str(tmp_path / "inference" / "lenet_compressed.pdiparams"))["params"]
    assert [tuple(pruned[f"{k}.weight"].shape) for k in ("features.0", "features.3", "fc.0")] == \
        [(3, 1, 3, 3), (8, 3, 5, 5), (200, 120)]
    assert before["latency_ms"] is None and report["speedup"] is None

    rows = table_rows(caplog.text)
    assert rows[0] == ["model", "test accuracy", ".pdiparams", "FLOPs", "Predictor latency (batch 64)"]
    assert rows[2][3:] == ["347,560", "n/a (install oar-serving)"]
    assert rows[3][0] == "prune" and rows[3][3] == f"{after['flops']:,} ({after['flops'] / 347560 - 1:+.1%})"


def test_slim_options_are_typed_while_composing(composed):
    cfg = composed("slim=qat", "slim.epochs=2", "slim.weight=abs_max")
    assert (cfg.slim._target_, cfg.slim.epochs, cfg.slim.weight.value) == ("oar.slim.run.qat", 2, "abs_max")
    with pytest.raises(ConfigCompositionException) as info:
        composed("slim=ptq", "slim.activation=entropy")
    assert "expected one of [abs_max, moving_average, hist, kl, mse]" in str(info.value.__cause__)
    with pytest.raises(ConfigCompositionException):
        composed("slim=prune", "slim.ratio=half")


def test_bad_arguments_are_named():
    data = oar.io.TensorDataset([oar.randn([8, 784]), oar.randint(0, 10, [8, 1])])
    mlp = oar.vision.models.MLP(input_size=784, hidden_sizes=[16], num_classes=10)
    with pytest.raises(PruningError, match=r"nothing to prune in MLP \(input \[1, 784\]\).*it has no conv"):
        oar.slim.run.prune(mlp, data)
    with pytest.raises(ArgumentError, match=r"ratio must be between 0 and 1.*got 1\.5"):
        oar.slim.run.prune(mlp, data, ratio=1.5)
    with pytest.raises(ArgumentError, match=r"activation='entropy' is not one of 'abs_max', 'moving_average'"):
        oar.slim.run.ptq(mlp, data, activation="entropy")
    with pytest.raises(ArgumentError, match=r"model must be an oar.Model or an oar.nn.Layer, got dict"):
        oar.slim.run.qat({}, data)


def test_slim_imports_no_hydra():
    code = ("import sys, oar.slim.run, oar.slim._plugin; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('hydra', 'omegaconf', 'oar_hydra')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stdout + done.stderr
