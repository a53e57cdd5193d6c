"""``oar.callbacks.WandbCallback`` with a fake ``wandb`` module that records what it is asked to do
(wandb itself is not a dependency)."""

from __future__ import annotations

import sys
import types

import pytest

import oar


class FakeRun:
    def __init__(self, calls):
        self.calls = calls

    def define_metric(self, name, **kwargs):
        self.calls.append(("define_metric", name, kwargs))

    def log(self, values):
        self.calls.append(("log", dict(values)))

    def finish(self):
        self.calls.append(("finish",))


@pytest.fixture
def fake_wandb(monkeypatch):
    calls = []
    module = types.ModuleType("wandb")
    module.run = None

    def init(**kwargs):
        calls.append(("init", kwargs))
        return FakeRun(calls)

    module.init = init
    monkeypatch.setitem(sys.modules, "wandb", module)
    return module, calls


def _model():
    oar.seed(0)
    net = oar.nn.Linear(4, 2)
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(parameters=net.parameters()), oar.nn.CrossEntropyLoss(), oar.metric.Accuracy())
    data = oar.io.TensorDataset([oar.rand([6, 4]), oar.randint(0, 2, [6, 1])])
    return model, data


def test_without_wandb_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` fails, installed or not
    with pytest.raises(ImportError, match="pip install wandb"):
        oar.callbacks.WandbCallback(project="p")


def test_fit_logs_train_steps_and_eval_epochs(fake_wandb):
    _, calls = fake_wandb
    callback = oar.callbacks.WandbCallback(project="demo", name="run-1", mode="offline", tags=["x"])
    assert calls[0] == ("init", {"project": "demo", "name": "run-1", "entity": None, "dir": None,
                                 "mode": "offline", "job_type": None, "tags": ["x"]})
    model, data = _model()
    model.fit(data, data, batch_size=3, epochs=2, verbose=0, callbacks=[callback])
    defined = [c[1] for c in calls if c[0] == "define_metric"]
    assert defined == ["train/step", "train/*", "epoch", "eval/*"]
    logged = [c[1] for c in calls if c[0] == "log"]
    train = [entry for entry in logged if "train/step" in entry]
    assert [entry["train/step"] for entry in train] == [1, 2, 3, 4]
    assert all(isinstance(entry["train/loss"], float) and "train/acc" in entry for entry in train)
    evals = [entry for entry in logged if "epoch" in entry]
    assert [entry["epoch"] for entry in evals] == [0, 1] and all("eval/loss" in entry for entry in evals)
    assert calls[-1] == ("finish",)


def test_a_run_in_progress_is_reused_with_a_warning(fake_wandb):
    module, calls = fake_wandb
    module.run = FakeRun(calls)
    with pytest.warns(UserWarning, match="already in progress"):
        callback = oar.callbacks.WandbCallback()
    assert callback.run is module.run and not any(c[0] == "init" for c in calls)
