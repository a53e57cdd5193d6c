"""``oar-run amp=bf16_o1|bf16_o2|fp16_o1|fp16_o2``: the config group oar-amp contributes, composed as
oar-run composes it, and real ``oar-run`` runs (one epoch on the bundled digits, no augmentation:
LeNet about 93%, a few seconds each) that train through ``Model.prepare(amp_configs=...)``, record
the setting in metrics.json and the log, and export a model that computes as the evaluation did."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oar
from oar.hapi.model import parse_amp_configs

pytest.importorskip("oar_hydra", reason="oar-hydra (oar-run) is not installed in this session")

# After the skip: Hydra comes with oar-hydra.
from hydra import compose, initialize_config_module
from hydra.core.global_hydra import GlobalHydra
from hydra.errors import ConfigCompositionException
from hydra.utils import instantiate
from oar_hydra.data import digits
from oar_hydra.schema import group_options, register_configs

QUICK = ["trainer.epochs=1", "trainer.verbose=0", "data.augment=false"]


@pytest.fixture
def composed():
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="oar_hydra.conf", version_base="1.3"):
        yield lambda *overrides: compose(config_name="config", overrides=list(overrides))
    GlobalHydra.instance().clear()


def test_the_options_are_paddles_levels_and_dtypes(composed):
    assert group_options("amp") == ["bf16_o1", "bf16_o2", "fp16_o1", "fp16_o2"]
    for option in group_options("amp"):
        settings = parse_amp_configs(instantiate(composed(f"amp={option}").amp))
        dtype, level = option.split("_")
        assert (settings.dtype, settings.level) == ({"bf16": "bfloat16", "fp16": "float16"}[dtype], level.upper())
        # float16 scales the loss with Paddle's GradScaler defaults; bfloat16 has no scaler keys to warn about.
        assert settings.scaler == ({"init_loss_scaling": 65536.0, "incr_ratio": 2.0, "decr_ratio": 0.5,
                                    "incr_every_n_steps": 2000, "decr_every_n_nan_or_inf": 1,
                                    "use_dynamic_loss_scaling": True} if dtype == "fp16" else {})


def test_the_options_are_typed(composed):
    amp = instantiate(composed("amp=fp16_o1", "amp.init_loss_scaling=1024", "amp.custom_black_list=[conv2d]").amp)
    assert parse_amp_configs(amp).scaler["init_loss_scaling"] == 1024.0
    assert parse_amp_configs(amp).lists == {"custom_white_list": [], "custom_black_list": ["conv2d"]}
    for bad in ("amp.level=O3", "amp.dtype=float32", "amp.init_loss_scaling=big"):
        with pytest.raises(ConfigCompositionException):
            composed("amp=fp16_o1", bad)


def oar_run(tmp_path: Path, *overrides: str) -> tuple[subprocess.CompletedProcess, Path]:
    """A sweep of the real ``oar-run`` command (the console script beside this Python) in one process."""
    sweep = tmp_path / "sweep"
    command = Path(sys.executable).with_name("oar-run")
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    done = subprocess.run([str(command), "-m", *overrides, f"hydra.sweep.dir={sweep}"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done, sweep


@pytest.mark.slow
def test_oar_run_trains_records_and_exports_with_amp(tmp_path):
    _, sweep = oar_run(tmp_path, *QUICK, "amp=bf16_o2,fp16_o1")
    eval_data = digits(augment=False).eval
    x = np.stack([eval_data[i][0] for i in range(len(eval_data))]).astype(np.float32)
    y = np.concatenate([np.ravel(eval_data[i][1]) for i in range(len(eval_data))])
    for job, (option, level, dtype) in enumerate([("bf16_o2", "O2", "bfloat16"), ("fp16_o1", "O1", "float16")]):
        run_dir = sweep / str(job)
        metrics = json.loads((run_dir / "metrics.json").read_text())
        assert metrics["choices"]["amp"] == option
        assert {k: metrics["amp"][k] for k in ("option", "level", "dtype")} == {"option": option, "level": level,
                                                                              "dtype": dtype}
        assert metrics["test_accuracy"] > 0.85  # one epoch trains LeNet well enough in low precision too
        log = (run_dir / "oar-run.log").read_text()
        assert f"amp={option}: mixed precision at {level} in {dtype}" in log

        # O2 trained (and saved) low-precision weights; O1 kept float32 ones and a GradScaler's state.
        weights = oar.load(str(run_dir / "lenet.pdparams"))
        assert weights["fc.0.weight"].dtype.name == (dtype if level == "O2" else "float32")
        assert (run_dir / "lenet.pdscaler").is_file() == (dtype == "float16")
        assert (run_dir / "checkpoints" / "epoch_1" / "model.pdscaler").is_file() == (dtype == "float16")

        # The export ran under the block: it takes float32 images and scores what the run reported.
        assert metrics["export_checked"]
        exported = oar.jit.load(str(run_dir / "inference" / "lenet"))
        with oar.no_grad():
            logits = exported(oar.to_tensor(x)).numpy()
        assert logits.dtype.name == dtype  # the last Linear is on the white list
        assert float((logits.astype(np.float32).argmax(-1) == y).mean()) == pytest.approx(metrics["test_accuracy"],
                                                                                             abs=0.01)
