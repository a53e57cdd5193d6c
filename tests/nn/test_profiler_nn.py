"""oar.profiler with oar-nn: each Layer's forward (a per-layer table), the optimizer's step, the
DataLoader's waits (step_info's reader cost), per-layer memory, and oar.Model.fit profiled the way
Paddle's users profile hapi training (a Callback that starts, steps and stops the Profiler)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.profiler as profiler
from oar import nn
from oar.io import DataLoader, Dataset


@pytest.fixture(autouse=True)
def _nothing_left_recording():
    yield
    assert not profiler.RECORDERS, "a profiler was left recording"


def _rows(text: str, title: str) -> dict[str, list[str]]:
    """A summary table's rows by name, cut at the columns of its rule line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line)
    rules = [i for i in range(start + 1, len(lines)) if set(lines[i]) <= {"-", " "} and lines[i].strip()][:3]
    spans = [m.span() for m in re.finditer(r"-+", lines[rules[0]])]
    rows = [[line[a:b].strip() for a, b in spans] for line in lines[rules[1] + 1:rules[2]]]
    return {row[0]: row for row in rows}


class _Slow(Dataset):
    """A dataset whose samples take a while to load, so that the DataLoader's waits show."""

    def __init__(self, n: int, delay: float = 0.0):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 8)).astype(np.float32)
        self.y = rng.integers(0, 3, (n, 1)).astype(np.int64)
        self.delay = delay

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)
        return self.x[i], self.y[i]


def _model() -> nn.Sequential:
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def test_each_layer_forward_is_a_span_and_the_layer_table_falls_out():
    model = _model()
    x = oar.ones([4, 8])
    with profiler.Profiler(on_trace_ready=None) as prof:
        for _ in range(3):
            model(x)
            prof.step()
    forwards = [e for e in prof.events() if e.kind == "Forward"]
    names = [layer.full_name() for layer in (model, model[0], model[1], model[2])]
    assert sorted({e.name for e in forwards}) == sorted(names)
    outer = next(e for e in forwards if e.name == model.full_name())
    inner = [e for e in forwards if e.name == model[0].full_name()][0]
    assert outer.start <= inner.start and inner.end <= outer.end  # a sublayer inside its parent
    layers = _rows(prof.summary_text(), "Layer Summary")
    assert {name: layers[name][1] for name in names} == dict.fromkeys(names, "3")
    model_table = _rows(prof.summary_text(), "Model Summary")
    assert model_table["Forward"][1] == "3"  # the outermost forward only: sublayers are inside it


def test_a_layer_forward_that_raises_leaves_no_span_open():
    class Broken(nn.Layer):
        def forward(self, x):
            raise ValueError("broken")

    layer = Broken()
    with profiler.Profiler(on_trace_ready=None) as prof:
        with pytest.raises(ValueError, match="broken"):
            layer(oar.ones([1]))
        _model()(oar.ones([1, 8]))
    assert all(e.end >= e.start for e in prof.events())


def test_optimizer_step_backward_and_dataloader_waits_are_recorded():
    model = _model()
    opt = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=0.01)
    loader = DataLoader(_Slow(24, delay=0.002), batch_size=8)
    loss_fn = nn.CrossEntropyLoss()
    with profiler.Profiler(on_trace_ready=None) as prof:
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            opt.clear_grad()
            prof.step(num_samples=8)
    kinds = {e.kind for e in prof.events()}
    assert {"Forward", "Backward", "Optimization", "Dataloader"} <= kinds
    assert [e.name for e in prof.events() if e.kind == "Optimization"] == ["Adam.step"] * 3
    waits = [e for e in prof.events() if e.kind == "Dataloader"]
    assert len(waits) >= 3 and all(e.end - e.start >= 8 * 0.002 * 1e9 * 0.9 for e in waits[:3])
    model_table = _rows(prof.summary_text(), "Model Summary")
    assert model_table["Optimization"][1] == "3" and model_table["Backward"][1] == "3"
    assert int(model_table["Dataloader"][1]) >= 3
    reader = float(re.search(r"reader_cost: ([0-9.]+) s", prof.step_info()).group(1))
    assert reader >= 0.8 * 8 * 0.002  # each step waited for eight slow samples


def test_profile_memory_gives_each_layer_its_peak_increase():
    layer = nn.Linear(256, 256)
    x = oar.ones([64, 256])
    with profiler.Profiler(on_trace_ready=None, profile_memory=True) as prof:
        with oar.no_grad():
            layer(x)
    rows = _rows(prof.summary_text(), "Layer Summary")
    peak = rows[layer.full_name()][-1]
    value, unit = peak.split()
    assert unit == "KiB" and float(value) >= 64.0  # the output: 64 x 256 float32


def test_no_profiler_no_span_objects():
    model = _model()
    assert not profiler.RECORDERS
    out = model(oar.ones([2, 8]))  # the layer's check is one test of an empty list
    assert out.shape == [2, 3]


class _ProfilerCallback(oar.callbacks.Callback):
    """Paddle's way of profiling hapi training: the Profiler driven from a Callback."""

    def __init__(self, prof: profiler.Profiler):
        super().__init__()
        self.prof = prof

    def on_train_begin(self, logs=None):
        self.prof.start()

    def on_train_batch_end(self, step, logs=None):
        self.prof.step(num_samples=8)

    def on_train_end(self, logs=None):
        self.prof.stop()


def test_model_fit_profiled_through_a_callback(tmp_path):
    network = _model()
    model = oar.Model(network)
    model.prepare(oar.optimizer.SGD(parameters=network.parameters(), learning_rate=0.1), nn.CrossEntropyLoss())
    prof = profiler.Profiler(scheduler=(1, 3), on_trace_ready=profiler.export_chrome_tracing(str(tmp_path)))
    model.fit(_Slow(40), batch_size=8, epochs=1, verbose=0, callbacks=[_ProfilerCallback(prof)])
    steps = sorted(e.name for e in prof.events() if e.kind == "ProfileStep")
    assert steps == ["ProfileStep#1", "ProfileStep#2"]
    kinds = {e.kind for e in prof.events()}
    assert {"Forward", "Backward", "Optimization", "Dataloader", "Operator"} <= kinds
    assert len(list(tmp_path.glob("*.paddle_trace.json"))) == 1


def test_the_profiling_page_example_runs(tmp_path, monkeypatch, capsys):
    doc = Path(__file__).resolve().parents[2] / "docs" / "profiling.md"
    block = re.findall(r"^```python\n(.*?)^```$", doc.read_text(), re.MULTILINE | re.DOTALL)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(doc), "exec"), {})
    out = capsys.readouterr().out
    for title in ("Overview Summary", "Model Summary", "Operator Summary", "Layer Summary", "Memory Summary"):
        assert f" {title} " in out
    assert _rows(out, "Overview Summary")["ProfileStep"][1] == "4"  # scheduler=(1, 5)
    assert {"conv", "conv_grad", "batch_norm"} <= set(_rows(out, "Operator Summary"))
    assert len(list((tmp_path / "profiler_log").glob("*.paddle_trace.json"))) == 1
