"""jit.save of a SimpleCNN, jit.load in a fresh process, fine-tuning the loaded model, and a
missing plugin named when loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.jit import to_static

from .test_layers import SPEC, trained_cnn


@pytest.fixture
def saved(tmp_path):
    model = trained_cnn(4)
    to_static(model, input_spec=SPEC)
    prefix = str(tmp_path / "cnn")
    oar.jit.save(model, prefix)
    return model, prefix


def test_a_fresh_process_gives_the_same_outputs(saved):
    model, prefix = saved
    x = np.random.default_rng(0).standard_normal((3, 1, 16, 16)).astype(np.float32)
    with oar.no_grad():
        expected = model(oar.to_tensor(x)).numpy()
    np.save(prefix + ".x.npy", x)
    script = textwrap.dedent(f"""
        import sys, numpy as np, oar
        loaded = oar.jit.load({prefix!r})
        assert isinstance(loaded, oar.nn.Layer) and type(loaded).__name__ == "TranslatedLayer"
        assert not any(m.startswith("tests") for m in sys.modules)  # no test code, no SimpleCNN class
        with oar.no_grad():
            np.save({prefix + ".y.npy"!r}, loaded(oar.to_tensor(np.load({prefix + ".x.npy"!r}))).numpy())
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120, cwd=os.path.dirname(prefix))
    np.testing.assert_allclose(np.load(prefix + ".y.npy"), expected, rtol=1e-6, atol=1e-7)


def test_loaded_layer_keeps_names_and_fine_tunes(saved):
    model, prefix = saved
    loaded = oar.jit.load(prefix)
    assert isinstance(loaded, oar.nn.Layer) and isinstance(loaded, oar.jit.TranslatedLayer)
    assert list(loaded.state_dict()) == list(model.state_dict())
    assert not loaded.training  # saved in eval mode
    x = oar.randn([4, 1, 16, 16])
    with oar.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)
    y = oar.to_tensor([0, 1, 2, 3])
    opt = oar.optimizer.Adam(parameters=loaded.parameters(), learning_rate=0.01)
    losses = []
    for _ in range(5):
        loss = F.cross_entropy(loaded(x), y)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    loaded.set_state_dict(model.state_dict())  # the original weights load back by name
    with oar.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)


def test_a_missing_plugin_is_named(saved):
    _, prefix = saved
    with open(prefix + ".json") as fh:
        doc = json.load(fh)
    assert doc["requires"]["ops"]["conv"] == "nn" and doc["requires"]["plugins"]["nn"]["package"] == "oar-nn"
    script = f"import oar; oar.jit.load({prefix!r})"
    env = dict(os.environ, OAR_DISABLE_PLUGINS="nn")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode != 0
    assert "RegistryError" in result.stderr and "(from oar-nn: pip install oar-nn)" in result.stderr
    assert "'conv'" in result.stderr and "'batch_norm_infer'" in result.stderr


class _Classifier(oar.nn.Layer):
    """A model trained through to_static without input_spec, with a second @to_static method."""

    def __init__(self):
        super().__init__()
        self.body = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.BatchNorm1D(8), oar.nn.ReLU(), oar.nn.Dropout(0.3))
        self.head = oar.nn.Linear(8, 3)

    @to_static
    def forward(self, x):
        return self.head(self.body(x)).reshape([-1, 3])

    @to_static
    def predict(self, x):
        return F.softmax(self.forward(x), axis=-1).argmax(-1)


def test_a_model_trained_without_input_spec_saves_with_any_batch_size_and_every_static_method(tmp_path):
    oar.seed(0)
    model = _Classifier()
    opt = oar.optimizer.SGD(parameters=model.parameters(), learning_rate=0.1)
    for _ in range(3):  # trained at batch 8, in training mode
        loss = F.cross_entropy(model(oar.randn([8, 4])), oar.randint(0, 3, [8]))
        loss.backward()
        opt.step()
        opt.clear_grad()
    model.eval()
    model.predict(oar.randn([2, 4]))
    prefix = str(tmp_path / "classifier")
    oar.jit.save(model, prefix)
    loaded = oar.jit.load(prefix)
    assert [list(s.shape) for s in loaded.input_spec] == [[-1, 4]]
    for batch in (1, 5, 8):  # Paddle's saved model takes any batch size: so does oar's
        x = oar.randn([batch, 4])
        with oar.no_grad():
            np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-7)
            assert loaded.predict(x).tolist() == model.predict(x).tolist()  # eval mode: no dropout
    assert loaded.program("predict") is not loaded.program()


class _SizeDecides(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.fc = oar.nn.Linear(4, 3)

    @to_static
    def forward(self, x):
        if x.shape[0] == 5:  # Python decides on the batch size: the program holds one branch
            return self.fc(x) * 2.0
        return self.fc(x)


def test_a_program_that_depends_on_the_batch_size_is_saved_for_that_size_with_a_warning(tmp_path):
    model = _SizeDecides()
    model.eval()
    x = oar.randn([5, 4])
    model(x)
    prefix = str(tmp_path / "fixed")
    with pytest.warns(UserWarning, match=r"saved for batch size 5 only") as caught:
        oar.jit.save(model, prefix)
    assert caught[0].filename == __file__
    loaded = oar.jit.load(prefix)
    np.testing.assert_allclose(loaded(x).numpy(), model(x).numpy(), rtol=1e-6)
    with pytest.raises(oar.errors.ArgumentError, match=r"float32\[5, 4\]"):
        loaded(oar.randn([3, 4]))


def test_a_static_method_never_called_is_left_out_with_a_warning(tmp_path):
    model = _Classifier()
    model.eval()
    model(oar.randn([2, 4]))
    with pytest.warns(UserWarning, match=r"_Classifier.predict is not saved"):
        oar.jit.save(model, str(tmp_path / "m"))
    assert not hasattr(oar.jit.load(str(tmp_path / "m")), "predict")
