"""oar.callbacks: the hook order, EarlyStopping, ModelCheckpoint, LRScheduler, ReduceLROnPlateau,
VisualDL (event files read back record by record) and TrainingCurves (a real PNG)."""

from __future__ import annotations

import importlib.util
import os
import struct
import zlib

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError

from .helpers import SmallCNN, weights


class Recorder(oar.callbacks.Callback):
    """Records every hook call as ``(hook, arg)``, and the network's weights after each evaluation."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.eval_weights = []

    def on_train_begin(self, logs=None):
        self.calls.append(("train_begin", None))

    def on_train_end(self, logs=None):
        self.calls.append(("train_end", None))

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(("epoch_begin", epoch))

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(("epoch_end", epoch))

    def on_train_batch_begin(self, step, logs=None):
        self.calls.append(("train_batch_begin", step))

    def on_train_batch_end(self, step, logs=None):
        self.calls.append(("train_batch_end", step))

    def on_eval_begin(self, logs=None):
        self.calls.append(("eval_begin", logs["steps"]))

    def on_eval_batch_begin(self, step, logs=None):
        self.calls.append(("eval_batch_begin", step))

    def on_eval_batch_end(self, step, logs=None):
        self.calls.append(("eval_batch_end", step))

    def on_eval_end(self, logs=None):
        self.calls.append(("eval_end", dict(logs)))
        self.eval_weights.append(weights(self.model.network))

    def on_predict_begin(self, logs=None):
        self.calls.append(("predict_begin", logs["steps"]))

    def on_predict_batch_end(self, step, logs=None):
        self.calls.append(("predict_batch_end", step))

    def on_predict_end(self, logs=None):
        self.calls.append(("predict_end", None))


class Scripted(oar.metric.Metric):
    """A metric named ``score`` whose value at the n-th evaluation is ``script[n]``; ``ScriptClock``
    advances it."""

    def __init__(self, script):
        self.script = list(script)
        self.evaluation = -1

    def name(self):
        return "score"

    def reset(self):
        pass

    def update(self, *args):
        return None

    def accumulate(self):
        return self.script[min(max(self.evaluation, 0), len(self.script) - 1)]


class ScriptClock(oar.callbacks.Callback):
    def __init__(self, metric: Scripted):
        super().__init__()
        self.metric = metric

    def on_eval_begin(self, logs=None):
        self.metric.evaluation += 1


def scripted_model(script, lr=0.05, optimizer=None):
    oar.seed(0)
    net = SmallCNN()
    model = oar.Model(net)
    metric = Scripted(script)
    opt = optimizer(net) if optimizer else oar.optimizer.SGD(learning_rate=lr, parameters=net.parameters())
    model.prepare(opt, nn.CrossEntropyLoss(), metric)
    return model, ScriptClock(metric)


# ----------------------------------------------------------------------------------------------
# the protocol
# ----------------------------------------------------------------------------------------------
def test_fit_calls_the_hooks_in_paddles_order(make_model, blobs):
    recorder = Recorder()
    make_model().fit(blobs, blobs, batch_size=24, epochs=2, verbose=0, callbacks=recorder)
    names = [(name, arg) for name, arg in recorder.calls if name != "eval_end"]
    epoch = [("train_batch_begin", 0), ("train_batch_end", 0), ("train_batch_begin", 1), ("train_batch_end", 1)]
    evaluation = [("eval_begin", 2), ("eval_batch_begin", 0), ("eval_batch_end", 0), ("eval_batch_begin", 1),
                  ("eval_batch_end", 1)]
    assert names == [("train_begin", None),
                     ("epoch_begin", 0), *epoch, ("epoch_end", 0), *evaluation,
                     ("epoch_begin", 1), *epoch, ("epoch_end", 1), *evaluation,
                     ("train_end", None)]
    assert recorder.params == {"batch_size": 24, "epochs": 2, "steps": 2, "verbose": 0, "metrics": ["loss", "acc"]}
    eval_logs = [arg for name, arg in recorder.calls if name == "eval_end"]
    assert len(eval_logs) == 2 and set(eval_logs[0]) >= {"loss", "acc", "step", "batch_size"}


def test_predict_calls_the_predict_hooks(make_model, blobs):
    recorder = Recorder()
    make_model().predict(blobs, batch_size=20, verbose=0, callbacks=[recorder])
    assert recorder.calls == [("predict_begin", 3), ("predict_batch_end", 0), ("predict_batch_end", 1),
                              ("predict_batch_end", 2), ("predict_end", None)]


def test_callbacks_must_be_callbacks(make_model, blobs):
    with pytest.raises(ArgumentError, match="Callback instances"):
        make_model().fit(blobs, verbose=0, callbacks=[print])


def test_fit_adds_the_default_callbacks(make_model, blobs, tmp_path):
    from oar.hapi.callbacks import config_callbacks

    model = make_model()
    kinds = [type(c).__name__ for c in config_callbacks(None, model=model, verbose=2, save_dir=str(tmp_path))]
    expected = ["ProgBarLogger", "ModelCheckpoint", "LRScheduler"]
    if importlib.util.find_spec("matplotlib") is not None:
        expected.append("TrainingCurves")
    assert kinds == expected
    mine = oar.callbacks.ModelCheckpoint(save_freq=3)
    kinds = [c for c in config_callbacks([mine], model=model, verbose=0)]
    assert [type(c).__name__ for c in kinds] == ["ModelCheckpoint", "LRScheduler"] and kinds[0] is mine


# ----------------------------------------------------------------------------------------------
# EarlyStopping
# ----------------------------------------------------------------------------------------------
def test_early_stopping_stops_and_restores_the_best_weights(blobs, tmp_path, capsys):
    model, clock = scripted_model([0.5, 0.7, 0.6, 0.65, 0.9, 0.95])
    recorder = Recorder()
    early = oar.callbacks.EarlyStopping(monitor="score", mode="max", patience=1)
    model.fit(blobs, blobs, batch_size=16, epochs=6, verbose=0, save_dir=str(tmp_path),
              callbacks=[clock, recorder, early])
    # Evaluations 0.5, 0.7 (best), 0.6, 0.65: two without improvement > patience=1 -> stop after the 4th.
    assert [name for name, _ in recorder.calls].count("epoch_begin") == 4
    assert model.stop_training and early.best_value == 0.7
    best = recorder.eval_weights[1]
    assert any(not np.array_equal(best[k], v) for k, v in recorder.eval_weights[3].items())  # training moved on
    for key, value in weights(model.network).items():
        np.testing.assert_array_equal(value, best[key])
    saved = oar.load(str(tmp_path / "best_model.pdparams"))
    for key, value in best.items():
        np.testing.assert_array_equal(saved[key].numpy(), value)
    out = capsys.readouterr().out
    assert "Epoch 4: Early stopping." in out and "Best checkpoint has been saved at" in out
    # The final checkpoint holds the restored, best weights.
    final = oar.load(str(tmp_path / "final.pdparams"))
    np.testing.assert_array_equal(final["fc.weight"].numpy(), best["fc.weight"])


def test_early_stopping_modes_min_delta_and_baseline(blobs):
    assert oar.callbacks.EarlyStopping(monitor="acc").mode == "max"
    assert oar.callbacks.EarlyStopping(monitor="loss").mode == "min"
    with pytest.warns(UserWarning, match="unknown"):
        assert oar.callbacks.EarlyStopping(mode="sideways").mode == "min"
    # min_delta: improvements of 0.01 do not count when min_delta is 0.05.
    model, clock = scripted_model([0.50, 0.51, 0.52, 0.53, 0.54])
    early = oar.callbacks.EarlyStopping(monitor="score", mode="max", patience=1, min_delta=0.05, verbose=0)
    recorder = Recorder()
    model.fit(blobs, blobs, batch_size=48, epochs=5, verbose=0, callbacks=[clock, recorder, early])
    assert [name for name, _ in recorder.calls].count("epoch_begin") == 3
    # baseline: a value that never beats it stops after patience + 1 evaluations, restoring nothing.
    model, clock = scripted_model([0.9, 0.95, 0.97])
    early = oar.callbacks.EarlyStopping(monitor="score", mode="max", patience=0, baseline=0.99, verbose=0)
    recorder = Recorder()
    model.fit(blobs, blobs, batch_size=48, epochs=3, verbose=0, callbacks=[clock, recorder, early])
    assert [name for name, _ in recorder.calls].count("epoch_begin") == 1 and early.best_weights is None
    for key, value in weights(model.network).items():
        np.testing.assert_array_equal(value, recorder.eval_weights[0][key])


def test_early_stopping_warns_about_an_unknown_monitor(make_model, blobs):
    early = oar.callbacks.EarlyStopping(monitor="f1", verbose=0)
    with pytest.warns(UserWarning, match="no 'f1'"):
        make_model().fit(blobs, blobs, batch_size=48, epochs=1, verbose=0, callbacks=[early])


# ----------------------------------------------------------------------------------------------
# ModelCheckpoint
# ----------------------------------------------------------------------------------------------
def test_model_checkpoint_saves_every_save_freq_epochs_and_at_the_end(make_model, blobs, tmp_path, capsys):
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=4, save_dir=str(tmp_path), save_freq=2, verbose=1)
    files = sorted(f for f in os.listdir(tmp_path) if f.endswith((".pdparams", ".pdopt")))
    assert files == ["0.pdopt", "0.pdparams", "2.pdopt", "2.pdparams", "final.pdopt", "final.pdparams"]
    assert f"save checkpoint at {tmp_path / 'final'}" in capsys.readouterr().out
    final = oar.load(str(tmp_path / "final.pdparams"))
    for key, value in weights(model.network).items():
        np.testing.assert_array_equal(final[key].numpy(), value)
    epoch0 = oar.load(str(tmp_path / "0.pdparams"))
    assert not np.array_equal(epoch0["fc.weight"].numpy(), final["fc.weight"].numpy())


def test_model_checkpoint_without_save_dir_writes_nothing(make_model, blobs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_model().fit(blobs, batch_size=16, epochs=2, verbose=0, callbacks=[oar.callbacks.ModelCheckpoint()])
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------------------------
# learning rate
# ----------------------------------------------------------------------------------------------
def _scheduled_model(scheduler):
    oar.seed(0)
    net = SmallCNN()
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(learning_rate=scheduler, parameters=net.parameters()), nn.CrossEntropyLoss())
    return model


def test_lr_scheduler_steps_after_every_batch_by_default(blobs):
    scheduler = oar.optimizer.lr.StepDecay(learning_rate=0.1, step_size=2, gamma=0.5)
    model = _scheduled_model(scheduler)
    lrs = []

    class LearningRates(oar.callbacks.Callback):
        def on_train_batch_begin(self, step, logs=None):
            lrs.append(self.model._optimizer.get_lr())

    model.fit(blobs, batch_size=16, epochs=2, verbose=0, callbacks=[LearningRates()])  # 6 batches
    assert scheduler.last_epoch == 6
    assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025, 0.025])


def test_lr_scheduler_by_epoch(blobs):
    scheduler = oar.optimizer.lr.ExponentialDecay(learning_rate=0.1, gamma=0.5)
    model = _scheduled_model(scheduler)
    model.fit(blobs, batch_size=16, epochs=3, verbose=0, callbacks=[oar.callbacks.LRScheduler(by_step=False, by_epoch=True)])
    assert scheduler.last_epoch == 3 and model._optimizer.get_lr() == pytest.approx(0.1 * 0.5 ** 3)
    with pytest.raises(ArgumentError, match="mutually exclusive"):
        oar.callbacks.LRScheduler(by_step=True, by_epoch=True)


def test_reduce_lr_on_plateau_lowers_the_learning_rate(blobs, capsys):
    model, clock = scripted_model([1.0, 1.0, 1.0, 1.0, 1.0, 1.0], lr=0.1)
    reduce = oar.callbacks.ReduceLROnPlateau(monitor="score", mode="max", factor=0.5, patience=2, min_lr=0.02)
    lrs = []

    class LearningRates(oar.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            lrs.append(self.model._optimizer.get_lr())

    model.fit(blobs, blobs, batch_size=48, epochs=6, verbose=0, callbacks=[clock, reduce, LearningRates()])
    # Eval 1 sets the best; evals 2 and 3 do not improve -> halve; evals 4 and 5 -> halve; floor 0.02.
    assert lrs == pytest.approx([0.1, 0.1, 0.1, 0.05, 0.05, 0.025])
    assert model._optimizer.get_lr() == pytest.approx(0.025)
    assert "ReduceLROnPlateau reducing learning rate to 0.05" in capsys.readouterr().out
    with pytest.raises(ArgumentError, match="factor must be < 1.0"):
        oar.callbacks.ReduceLROnPlateau(factor=1.5)


def test_reduce_lr_on_plateau_cooldown_and_min_lr(blobs):
    model, clock = scripted_model([0.3], lr=0.1)
    reduce = oar.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.1, patience=1, cooldown=2, min_lr=0.005,
                                             verbose=0)

    class Freeze(oar.callbacks.Callback):
        def on_eval_end(self, logs=None):
            logs["loss"] = [1.0]  # the loss never improves

    lrs = []

    class LearningRates(oar.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            lrs.append(self.model._optimizer.get_lr())

    model.fit(blobs, blobs, batch_size=48, epochs=8, verbose=0, callbacks=[clock, Freeze(), reduce, LearningRates()])
    # Eval 0 is the best; eval 1 reduces (patience 1) and starts a cooldown of 2: eval 2 cools down,
    # eval 3 ends the cooldown and reduces again, to the floor min_lr.
    assert lrs == pytest.approx([0.1, 0.1, 0.01, 0.01, 0.005, 0.005, 0.005, 0.005])


def test_reduce_lr_on_plateau_leaves_a_scheduler_alone(blobs):
    scheduler = oar.optimizer.lr.StepDecay(learning_rate=0.1, step_size=100)
    model, clock = scripted_model([1.0], optimizer=lambda net: oar.optimizer.SGD(learning_rate=scheduler,
                                                                                  parameters=net.parameters()))
    with pytest.warns(UserWarning, match="not a float"):
        model.fit(blobs, blobs, batch_size=48, epochs=1, verbose=0,
                  callbacks=[clock, oar.callbacks.ReduceLROnPlateau(monitor="score", patience=0)])


# ----------------------------------------------------------------------------------------------
# VisualDL: TensorBoard event files, read back with their CRCs checked
# ----------------------------------------------------------------------------------------------
def _crc32c_table() -> list[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _CRC32C[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def read_tfrecords(path) -> list[bytes]:
    """The records of a TFRecord file: uint64 length, masked CRC-32C of the length, the data,
    masked CRC-32C of the data; every CRC is checked."""
    data = open(path, "rb").read()
    records, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert length_crc == masked_crc(header), f"bad length CRC at byte {pos}"
        body = data[pos + 12:pos + 12 + length]
        (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert body_crc == masked_crc(body), f"bad data CRC at byte {pos}"
        records.append(body)
        pos += 16 + length
    assert pos == len(data)
    return records


def test_crc32c_matches_the_published_check_value():
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)


def read_scalars(log_dir) -> dict[str, list[tuple[int, float]]]:
    from tensorboardX.proto import event_pb2

    (name,) = [f for f in os.listdir(log_dir) if f.startswith("events.out.tfevents.")]
    scalars: dict[str, list[tuple[int, float]]] = {}
    records = read_tfrecords(os.path.join(log_dir, name))
    first = event_pb2.Event.FromString(records[0])
    assert first.file_version.startswith("brain.Event:")
    for record in records[1:]:
        event = event_pb2.Event.FromString(record)
        for value in event.summary.value:
            scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_visualdl_writes_tensorboard_scalars(make_model, blobs, tmp_path):
    pytest.importorskip("tensorboardX", reason="VisualDL writes through tensorboardX (oar-nn[vis])")
    recorder = Recorder()
    losses = []

    class Losses(oar.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            losses.append(logs["loss"][0])

    model = make_model()
    model.fit(blobs, blobs, batch_size=16, epochs=2, verbose=0,
              callbacks=[oar.callbacks.VisualDL(tmp_path / "vdl"), recorder, Losses()])
    scalars = read_scalars(tmp_path / "vdl")
    assert set(scalars) == {"train/loss", "train/acc", "train/lr", "eval/loss", "eval/acc"}
    assert [step for step, _ in scalars["train/loss"]] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose([v for _, v in scalars["train/loss"]], losses, rtol=1e-6)
    assert [v for _, v in scalars["train/lr"]] == pytest.approx([0.01] * 6)
    evals = [arg for name, arg in recorder.calls if name == "eval_end"]
    assert [step for step, _ in scalars["eval/acc"]] == [0, 1]
    np.testing.assert_allclose([v for _, v in scalars["eval/acc"]], [e["acc"] for e in evals], rtol=1e-6)
    np.testing.assert_allclose([v for _, v in scalars["eval/loss"]], [e["loss"][0] for e in evals], rtol=1e-6)


def test_visualdl_after_evaluate_alone(make_model, blobs, tmp_path):
    pytest.importorskip("tensorboardX", reason="VisualDL writes through tensorboardX (oar-nn[vis])")
    model = make_model()
    result = model.evaluate(blobs, batch_size=16, verbose=0, callbacks=[oar.callbacks.VisualDL(tmp_path)])
    scalars = read_scalars(tmp_path)
    assert scalars["eval/acc"] == [(0, pytest.approx(result["acc"]))]


def test_vis_callbacks_say_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("tensorboardX", "matplotlib") else real(name, *a))
    with pytest.raises(ImportError, match=r"oar-nn\[vis\]"):
        oar.callbacks.VisualDL("logs")
    with pytest.raises(ImportError, match=r"oar-nn\[vis\]"):
        oar.callbacks.TrainingCurves("curves.png")
    from oar.hapi.callbacks import config_callbacks

    kinds = [type(c).__name__ for c in config_callbacks(None, verbose=0, save_dir="somewhere")]
    assert "TrainingCurves" not in kinds  # fit leaves the curves out without matplotlib


# ----------------------------------------------------------------------------------------------
# TrainingCurves: a PNG
# ----------------------------------------------------------------------------------------------
def png_size(path) -> tuple[int, int]:
    """Width and height of a PNG, after checking its signature, its IHDR chunk's CRC and its IEND."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    body = data[16:16 + length]
    (crc,) = struct.unpack(">I", data[16 + length:20 + length])
    assert crc == zlib.crc32(kind + body)
    assert data[-12:] == b"\x00\x00\x00\x00IEND\xaeB`\x82"
    width, height = struct.unpack(">II", body[:8])
    return width, height


def test_fit_with_save_dir_draws_the_training_curves(make_model, blobs, tmp_path):
    pytest.importorskip("matplotlib", reason="the curves are drawn with matplotlib (oar-nn[vis])")
    make_model().fit(blobs, blobs, batch_size=16, epochs=3, verbose=0, save_dir=str(tmp_path))
    path = tmp_path / "curves.png"
    width, height = png_size(path)
    assert 600 <= width <= 3000 and 200 <= height <= 1500  # two panels (loss, acc) side by side
    assert path.stat().st_size > 10_000


def test_training_curves_history_matches_the_logs(make_model, blobs, tmp_path):
    pytest.importorskip("matplotlib", reason="the curves are drawn with matplotlib (oar-nn[vis])")
    curves = oar.callbacks.TrainingCurves(tmp_path / "sub" / "my.png")
    epoch_logs, eval_logs = [], []

    class Logs(oar.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            epoch_logs.append(dict(logs))

        def on_eval_end(self, logs=None):
            eval_logs.append(dict(logs))

    make_model().fit(blobs, blobs, batch_size=16, epochs=4, eval_freq=2, verbose=0, callbacks=[curves, Logs()])
    history = curves.history
    assert history["epoch"] == [1, 2, 3, 4] and history["eval_epoch"] == [1, 3]
    assert history["train"]["loss"] == pytest.approx([e["loss"][0] for e in epoch_logs])
    assert history["train"]["acc"] == pytest.approx([e["acc"] for e in epoch_logs])
    assert history["eval"]["acc"] == pytest.approx([e["acc"] for e in eval_logs])
    assert history["train"]["loss"][-1] < history["train"]["loss"][0]
    assert png_size(tmp_path / "sub" / "my.png")[0] > 0
    assert not [f for f in os.listdir(tmp_path / "sub") if f.endswith(".tmp")]
