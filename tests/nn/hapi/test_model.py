"""oar.Model: the batch steps, the fit/evaluate/predict loops, gradient accumulation, num_iters,
checkpoints, and the errors that say what is missing."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.io import DataLoader, Dataset, IterableDataset, TensorDataset

from .helpers import SmallCNN, class_blobs, weights


# ----------------------------------------------------------------------------------------------
# construction and prepare
# ----------------------------------------------------------------------------------------------
def test_top_level_names_resolve_to_hapi():
    assert oar.Model is oar.hapi.Model
    assert oar.callbacks.EarlyStopping is oar.hapi.callbacks.EarlyStopping
    assert oar.summary is oar.hapi.summary


def test_model_rejects_what_is_not_a_layer():
    with pytest.raises(ArgumentError, match="oar.nn.Layer"):
        oar.Model(lambda x: x)


def test_prepare_checks_its_arguments():
    net = SmallCNN()
    model = oar.Model(net)
    with pytest.raises(ArgumentError, match="optimizer must be an oar.optimizer.Optimizer"):
        model.prepare(optimizer="adam")
    with pytest.raises(ArgumentError, match="loss must be"):
        model.prepare(loss=3)
    with pytest.raises(ArgumentError, match="Metric"):
        model.prepare(metrics=["acc"])


@pytest.mark.parametrize("amp", ["O1", "O2", {"level": "O1"}, {"level": "O2", "init_loss_scaling": 1024},
                                 {"dtype": "bfloat16"}])
def test_amp_configs_name_the_oar_amp_package_when_it_is_absent(amp, monkeypatch):
    # oar.amp is imported only when AMP is asked for; None in sys.modules makes it absent, with or without oar-amp.
    monkeypatch.setitem(sys.modules, "oar.amp", None)
    net = SmallCNN()
    model = oar.Model(net)
    with pytest.raises(NotImplementedError, match=r"oar-amp package.*pip install \./plugins/oar-amp") as info:
        model.prepare(oar.optimizer.SGD(parameters=net.parameters()), nn.CrossEntropyLoss(), amp_configs=amp)
    assert isinstance(info.value, oar.errors.OarError)
    assert model._optimizer is None and net.fc.weight.dtype == oar.float32  # nothing changed


@pytest.mark.parametrize("amp", [None, "O0", {"level": "O0"}, {}, {"level": "O0", "dtype": "bfloat16"}])
def test_float32_amp_configs_are_accepted(amp, monkeypatch):
    monkeypatch.setitem(sys.modules, "oar.amp", None)  # float32 training needs no oar-amp
    model = oar.Model(SmallCNN())
    model.prepare(amp_configs=amp)
    assert model._optimizer is None and model._metrics == []


@pytest.mark.parametrize(("amp", "message"), [
    ("O3", r"level of amp_configs should be 'O0', 'O1' or 'O2', got 'O3'"),
    ({"level": "OD"}, r"should be 'O0', 'O1' or 'O2', got 'OD'"),
    (["O1"], r"amp_configs must be None, a level .* or a dict, got list"),
    ({"level": "O1", "dtype": "float32"}, r"amp_configs\['dtype'\] should be 'float16' or 'bfloat16', got 'float32'"),
    ({"level": "O1", "use_fp16_guard": False}, r"amp_configs\['use_fp16_guard'\] is supported in Paddle's static"),
    ({"level": "O2", "use_pure_fp16": True}, r"'use_pure_fp16'\] is an invalid parameter"),
    ({"custom_black_varnames": ["x"]}, r"static-graph programs.*custom_black_list"),
    ({"level": "O1", "init_loss_scale": 1024}, r"keys \['init_loss_scale'\] that no mixed precision API accepts"),
])
def test_bad_amp_configs_are_named_before_oar_amp_is_needed(amp, message, monkeypatch):
    monkeypatch.setitem(sys.modules, "oar.amp", None)  # checked as Paddle checks them, with or without oar-amp
    with pytest.raises(ArgumentError, match=message):
        oar.Model(SmallCNN()).prepare(amp_configs=amp)


def test_fit_and_train_batch_need_prepare(blobs):
    model = oar.Model(SmallCNN())
    with pytest.raises(ArgumentError, match=r"prepare\(optimizer, loss"):
        model.fit(blobs, verbose=0)
    with pytest.raises(ArgumentError, match="the model has no optimizer"):
        model.train_batch([oar.rand([2, 1, 8, 8])], [oar.to_tensor([[0], [1]])])
    with pytest.raises(ArgumentError, match="train_data is required"):
        model.fit(None)


def test_parameters_are_the_networks():
    net = SmallCNN()
    assert [id(p) for p in oar.Model(net).parameters()] == [id(p) for p in net.parameters()]


# ----------------------------------------------------------------------------------------------
# batch steps
# ----------------------------------------------------------------------------------------------
def test_train_batch_steps_the_optimizer_and_returns_losses_and_metrics(make_model):
    model = make_model()
    x, y = class_blobs(12)
    before = weights(model.network)
    expected = float(nn.CrossEntropyLoss()(model.network(oar.to_tensor(x)), oar.to_tensor(y)))
    losses, metrics = model.train_batch([x], [y])
    assert len(losses) == 1 and isinstance(losses[0], np.ndarray) and losses[0].shape == ()
    assert float(losses[0]) == pytest.approx(expected, rel=1e-6)  # the loss before the step
    assert len(metrics) == 1 and 0.0 <= metrics[0] <= 1.0
    assert any(not np.array_equal(before[k], v) for k, v in weights(model.network).items())
    assert all(p.grad is None or not p.grad.numpy().any() for p in model.parameters())  # gradients cleared
    assert model.network.training


def test_train_batch_without_update_keeps_weights_and_gradients(make_model):
    model = make_model(metrics=False)
    x, y = class_blobs(6)
    before = weights(model.network)
    losses = model.train_batch(x, y, update=False)  # numpy inputs, no lists: both accepted
    assert isinstance(losses, list) and len(losses) == 1
    assert all(np.array_equal(before[k], v) for k, v in weights(model.network).items())
    assert any(p.grad is not None and p.grad.numpy().any() for p in model.parameters())


def test_eval_batch_returns_paddles_shapes(make_model):
    x, y = class_blobs(9)
    model = make_model()
    before = weights(model.network)
    losses, metrics = model.eval_batch([x], [y])
    logits = model.network(oar.to_tensor(x))
    assert float(losses[0]) == pytest.approx(float(nn.CrossEntropyLoss()(logits, oar.to_tensor(y))), rel=1e-6)
    assert metrics[0] == pytest.approx(float((logits.numpy().argmax(1) == y[:, 0]).mean()))
    assert not model.network.training
    assert all(np.array_equal(before[k], v) for k, v in weights(model.network).items())
    no_metrics = make_model(metrics=False)
    assert isinstance(no_metrics.eval_batch([x], [y]), list) and len(no_metrics.eval_batch([x], [y])) == 1
    only_metrics = oar.Model(SmallCNN())
    only_metrics.prepare(metrics=oar.metric.Accuracy())
    assert len(only_metrics.eval_batch([x], [y])) == 1  # [accuracy]


def test_predict_batch_is_the_networks_output(make_model):
    model = make_model()
    x, _ = class_blobs(5)
    (out,) = model.predict_batch([x])
    assert isinstance(out, np.ndarray) and out.shape == (5, 3)
    np.testing.assert_allclose(out, model.network(oar.to_tensor(x)).numpy(), rtol=1e-6)


def test_a_loss_returning_several_terms_is_summed_and_logged_per_term():
    net = SmallCNN()
    model = oar.Model(net)
    ce = nn.CrossEntropyLoss()
    model.prepare(oar.optimizer.SGD(learning_rate=0.0, parameters=net.parameters()),
                  lambda logits, label: [ce(logits, label), (logits * logits).mean()])
    x, y = class_blobs(6)
    losses = model.train_batch([x], [y])
    assert len(losses) == 2
    logits = net(oar.to_tensor(x))
    assert float(losses[1]) == pytest.approx(float((logits * logits).mean()), rel=1e-5)


# ----------------------------------------------------------------------------------------------
# fit, evaluate, predict
# ----------------------------------------------------------------------------------------------
def test_fit_learns_and_evaluate_returns_paddles_dict(make_model, blobs):
    model = make_model()
    model.fit(blobs, epochs=8, batch_size=8, verbose=0)
    result = model.evaluate(blobs, batch_size=16, verbose=0)
    assert list(result) == ["loss", "acc"]
    assert isinstance(result["loss"], list) and len(result["loss"]) == 1
    assert result["acc"] >= 0.9


def test_evaluate_loss_is_the_mean_over_all_samples(make_model, blobs):
    model = make_model()
    model.fit(blobs, epochs=1, batch_size=8, verbose=0)
    x, y = class_blobs()
    with oar.no_grad():
        model.network.eval()
        full = float(nn.CrossEntropyLoss()(model.network(oar.to_tensor(x)), oar.to_tensor(y)))
        accuracy = float((model.network(oar.to_tensor(x)).numpy().argmax(1) == y[:, 0]).mean())
    result = model.evaluate(blobs, batch_size=20, verbose=0)  # batches of 20, 20, 8
    assert result["loss"][0] == pytest.approx(full, rel=1e-5)
    assert result["acc"] == pytest.approx(accuracy)


def test_evaluate_num_iters_and_num_samples_limit_the_data(make_model, blobs):
    model = make_model()
    seen = []

    class Count(oar.callbacks.Callback):
        def on_eval_batch_end(self, step, logs=None):
            seen.append(logs["batch_size"])

    model.evaluate(blobs, batch_size=10, verbose=0, num_iters=2, callbacks=[Count()])
    assert seen == [10, 10]
    seen.clear()
    model.evaluate(blobs, batch_size=10, verbose=0, num_samples=25, callbacks=[Count()])
    assert seen == [10, 10, 5]


def test_predict_returns_batches_or_stacked_outputs(make_model, blobs):
    model = make_model()
    outputs = model.predict(blobs, batch_size=20, verbose=0)  # (x, label) samples: the label is not an input
    assert len(outputs) == 1 and [o.shape for o in outputs[0]] == [(20, 3), (20, 3), (8, 3)]
    (stacked,) = model.predict(blobs, batch_size=20, verbose=0, stack_outputs=True)
    x, _ = class_blobs()
    np.testing.assert_allclose(stacked, model.network(oar.to_tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_predict_on_a_dataset_of_inputs_only(make_model):
    class Images(Dataset):
        def __init__(self):
            self.x, _ = class_blobs(7)

        def __getitem__(self, i):
            return self.x[i]

        def __len__(self):
            return len(self.x)

    (out,) = make_model().predict(Images(), batch_size=4, verbose=0, stack_outputs=True)
    assert out.shape == (7, 3)


def test_fit_accepts_a_dataloader_and_an_iterable_dataset(make_model):
    x, y = class_blobs()
    model = make_model()
    loader = DataLoader(TensorDataset([oar.to_tensor(x), oar.to_tensor(y)]), batch_size=12, shuffle=True)
    model.fit(loader, loader, epochs=2, verbose=0)

    class Stream(IterableDataset):
        def __iter__(self):
            yield from zip(x, y)

    batches = []

    class Count(oar.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            batches.append(logs["batch_size"])

    model.fit(Stream(), batch_size=16, epochs=1, verbose=0, callbacks=[Count()])
    assert batches == [16, 16, 16]


def test_fit_takes_a_train_and_eval_batch_size_pair(make_model, blobs):
    sizes = {"train": set(), "eval": set()}

    class Sizes(oar.callbacks.Callback):
        def on_train_batch_end(self, step, logs=None):
            sizes["train"].add(logs["batch_size"])

        def on_eval_batch_end(self, step, logs=None):
            sizes["eval"].add(logs["batch_size"])

    make_model().fit(blobs, blobs, batch_size=(16, 48), epochs=1, verbose=0, callbacks=[Sizes()])
    assert sizes == {"train": {16}, "eval": {48}}


def test_fit_evaluates_every_eval_freq_epochs(make_model, blobs):
    epochs = []

    class Evals(oar.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.epoch = epoch

        def on_eval_end(self, logs=None):
            epochs.append(self.epoch)

    make_model().fit(blobs, blobs, batch_size=16, epochs=5, eval_freq=2, verbose=0, callbacks=[Evals()])
    assert epochs == [0, 2, 4]  # Paddle's rule: epoch % eval_freq == 0


def test_shuffle_and_drop_last_shape_the_batches(make_model, blobs):
    orders = []

    class Labels(oar.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            orders.append([])

    model = make_model(lr=0.0)
    original = model.train_batch

    def spy(inputs, labels=None, update=True):
        orders[-1].append(labels[0].numpy()[:, 0].tolist())
        return original(inputs, labels, update)

    model.train_batch = spy
    model.fit(blobs, batch_size=20, epochs=2, shuffle=False, drop_last=True, verbose=0, callbacks=[Labels()])
    assert [len(epoch) for epoch in orders] == [2, 2]  # 48 samples: two full batches of 20
    assert orders[0] == orders[1] == [[i % 3 for i in range(20)], [i % 3 for i in range(20, 40)]]
    orders.clear()
    model.fit(blobs, batch_size=48, epochs=2, shuffle=True, verbose=0, callbacks=[Labels()])
    assert sorted(orders[0][0]) == sorted(i % 3 for i in range(48)) and orders[0] != orders[1]


def test_inputs_are_counted_from_forward_or_from_inputs_specs():
    class TwoInputs(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(2, 3), nn.Linear(4, 3)

        def forward(self, x, z, scale=1.0):
            return (self.a(x) + self.b(z)) * scale

    net = TwoInputs()
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(parameters=net.parameters()), nn.CrossEntropyLoss())
    data = TensorDataset([oar.rand([8, 2]), oar.rand([8, 4]), oar.randint(0, 3, [8, 1])])
    model.fit(data, batch_size=4, verbose=0)  # two inputs, one label
    assert model.evaluate(data, batch_size=8, verbose=0)["loss"][0] > 0

    class Spec:
        def __init__(self, shape, name):
            self.shape, self.dtype, self.name = shape, "float32", name

    specs = oar.Model(net, inputs=[Spec([None, 2], "x"), Spec([None, 4], "z")])
    assert specs._num_inputs == 2
    assert oar.Model(net, inputs={"x": Spec([None, 2], "x")})._num_inputs == 1
    with pytest.raises(ArgumentError, match="InputSpec"):
        oar.Model(net, inputs=[oar.rand([2, 2])])


def test_dict_samples_are_flattened_by_key():
    class Named(Dataset):
        def __getitem__(self, i):
            x, y = class_blobs(6)
            return {"a_image": x[i], "b_label": y[i]}

        def __len__(self):
            return 6

    oar.seed(0)
    net = SmallCNN()
    model = oar.Model(net)
    model.prepare(oar.optimizer.Adam(parameters=net.parameters()), nn.CrossEntropyLoss(), oar.metric.Accuracy())
    assert set(model.evaluate(Named(), batch_size=3, verbose=0)) == {"loss", "acc"}


# ----------------------------------------------------------------------------------------------
# gradient accumulation and num_iters
# ----------------------------------------------------------------------------------------------
def _sgd_model(reduction: str, lr: float):
    oar.seed(3)
    net = SmallCNN()
    model = oar.Model(net)
    model.prepare(oar.optimizer.SGD(learning_rate=lr, parameters=net.parameters()), nn.CrossEntropyLoss(reduction=reduction))
    return model


def test_two_accumulated_batches_of_8_equal_one_batch_of_16():
    x, y = class_blobs(16)
    data = TensorDataset([oar.to_tensor(x), oar.to_tensor(y)])
    # Paddle sums the gradients of the accumulated batches: with a summed loss that is exactly the
    # gradient of the large batch.
    accumulated, single = _sgd_model("sum", 0.01), _sgd_model("sum", 0.01)
    assert all(np.array_equal(a, b) for a, b in zip(weights(accumulated.network).values(), weights(single.network).values()))
    accumulated.fit(data, batch_size=8, accumulate_grad_batches=2, shuffle=False, verbose=0)
    single.fit(data, batch_size=16, shuffle=False, verbose=0)
    start = weights(_sgd_model("sum", 0.01).network)
    for key, value in weights(single.network).items():
        assert not np.allclose(value, start[key])  # the step did something
        np.testing.assert_allclose(weights(accumulated.network)[key], value, rtol=1e-5, atol=1e-6)
    # With a mean loss the sum of two half-batch gradients is twice the large batch's.
    accumulated, single = _sgd_model("mean", 0.01), _sgd_model("mean", 0.02)
    accumulated.fit(data, batch_size=8, accumulate_grad_batches=2, shuffle=False, verbose=0)
    single.fit(data, batch_size=16, shuffle=False, verbose=0)
    for key, value in weights(single.network).items():
        np.testing.assert_allclose(weights(accumulated.network)[key], value, rtol=1e-5, atol=1e-6)


def test_accumulation_updates_at_the_end_of_an_epoch():
    x, y = class_blobs(24)
    data = TensorDataset([oar.to_tensor(x), oar.to_tensor(y)])
    model = _sgd_model("sum", 0.01)
    steps = []
    original = model._optimizer.step

    def counting_step():
        steps.append(1)
        original()

    model._optimizer.step = counting_step
    model.fit(data, batch_size=8, accumulate_grad_batches=2, shuffle=False, verbose=0)  # 3 batches
    assert len(steps) == 2  # after batch 2, and after the last batch of the epoch
    assert all(p.grad is None or not p.grad.numpy().any() for p in model.parameters())


def test_num_iters_stops_after_that_many_batches(make_model, blobs):
    batches, epochs = [], []

    class Count(oar.callbacks.Callback):
        def on_train_begin(self, logs=None):
            epochs.append(self.params["epochs"])

        def on_train_batch_end(self, step, logs=None):
            batches.append(step)

    model = make_model()
    model.fit(blobs, batch_size=16, epochs=10, num_iters=5, verbose=0, callbacks=[Count()])  # 3 batches per epoch
    assert batches == [0, 1, 2, 0, 1]
    assert epochs == [2]
    assert model.stop_training
    batches.clear()
    model.fit(blobs, batch_size=16, epochs=2, verbose=0, callbacks=[Count()])  # stop_training is reset
    assert len(batches) == 6


def test_fit_validates_its_counts(make_model, blobs):
    model = make_model()
    for kwargs in ({"epochs": 0}, {"batch_size": 0}, {"eval_freq": 0}, {"accumulate_grad_batches": 0},
                   {"num_iters": -1}, {"batch_size": (8, 8, 8)}):
        with pytest.raises(ArgumentError):
            model.fit(blobs, verbose=0, **kwargs)


# ----------------------------------------------------------------------------------------------
# save and load
# ----------------------------------------------------------------------------------------------
def test_save_writes_safetensors_params_and_optimizer_state(make_model, blobs, tmp_path):
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    prefix = tmp_path / "ckpt" / "model"
    model.save(prefix)
    assert sorted(os.listdir(tmp_path / "ckpt")) == ["model.pdopt", "model.pdparams"]
    for suffix in (".pdparams", ".pdopt"):
        data = (tmp_path / "ckpt" / f"model{suffix}").read_bytes()
        assert data[8:9] == b"{" and b"oar.save" in data[:4096]  # a safetensors header, never a pickle
    params = oar.load(str(prefix) + ".pdparams")
    assert set(params) == set(model.network.state_dict())
    assert any(k.endswith("_moment1_0") for k in oar.load(str(prefix) + ".pdopt"))


def test_save_load_round_trip_gives_identical_predictions_and_optimizer_state(make_model, blobs, tmp_path):
    model = make_model(seed=1)
    model.fit(blobs, batch_size=16, epochs=2, verbose=0)
    model.save(tmp_path / "m")
    expected = model.predict(blobs, batch_size=48, verbose=0, stack_outputs=True)[0]
    fresh = make_model(seed=2)  # another init, and parameters with other names
    assert not np.allclose(fresh.predict(blobs, batch_size=48, verbose=0, stack_outputs=True)[0], expected)
    fresh.load(tmp_path / "m")
    np.testing.assert_array_equal(fresh.predict(blobs, batch_size=48, verbose=0, stack_outputs=True)[0], expected)
    # The optimizer continues the same trajectory: one more identical step on both.
    x, y = class_blobs(8, seed=5)
    model.train_batch([x], [y])
    fresh.train_batch([x], [y])
    for key, value in weights(model.network).items():
        np.testing.assert_allclose(weights(fresh.network)[key], value, rtol=1e-6, atol=1e-7)


def test_load_accepts_a_suffix_and_can_reset_the_optimizer(make_model, blobs, tmp_path):
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "m")
    fresh = make_model(seed=4)
    fresh.load(str(tmp_path / "m.pdparams"), reset_optimizer=True)
    assert fresh._optimizer.state_dict() == {}
    fresh.load(str(tmp_path / "m.pdopt"))
    assert set(fresh._optimizer.state_dict()) == {
        key.replace(p_old.name, p_new.name)
        for key in model._optimizer.state_dict()
        for p_old, p_new in zip(model.parameters(), fresh.parameters()) if key.startswith(p_old.name + "_")
    }


def test_load_mismatch_is_an_error_unless_skipped(make_model, blobs, tmp_path):
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "m")
    oar.seed(7)
    other = SmallCNN(num_classes=5)  # fc has another shape
    other_model = oar.Model(other)
    other_model.prepare(oar.optimizer.Adam(parameters=other.parameters()), nn.CrossEntropyLoss())
    before = weights(other)
    with pytest.raises(ArgumentError, match=r"fc.weight has shape \[64, 3\] in the file, \[64, 5\]") as info:
        other_model.load(tmp_path / "m")
    assert "skip_mismatch=True" in str(info.value) and "nothing was loaded" in str(info.value)
    assert all(np.array_equal(before[k], v) for k, v in weights(other).items())
    with pytest.warns(UserWarning) as record:
        other_model.load(tmp_path / "m", skip_mismatch=True)
    assert sorted(str(w.message).split(" has shape")[0] for w in record) == [
        "Model.load: skipped fc.bias", "Model.load: skipped fc.weight"]
    after, saved = weights(other), weights(model.network)
    np.testing.assert_array_equal(after["features.0.weight"], saved["features.0.weight"])
    np.testing.assert_array_equal(after["fc.weight"], before["fc.weight"])
    assert other_model._optimizer.state_dict() == {}  # a mismatch resets the optimizer, as in Paddle


def test_load_reports_a_missing_file(make_model, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pdparams"):
        make_model().load(tmp_path / "nope")


def test_save_without_optimizer_state_removes_a_stale_pdopt(make_model, blobs, tmp_path):
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "m")
    sgd = make_model(optimizer="sgd")  # SGD keeps no state
    sgd.save(tmp_path / "m")
    assert sorted(os.listdir(tmp_path)) == ["m.pdparams"]


def test_save_for_inference_says_what_it_needs_without_jit(make_model, tmp_path, monkeypatch):
    monkeypatch.setattr(oar.hapi.model, "_jit_save", lambda: None)
    with pytest.raises(NotImplementedError, match=r"oar\.jit.*not yet available"):
        make_model().save(tmp_path / "infer", training=False)
    assert os.listdir(tmp_path) == []


def test_save_for_inference_calls_jit_save_in_eval_mode(make_model, blobs, tmp_path, monkeypatch):
    calls = []

    def fake_save(layer, path, input_spec=None):
        calls.append((layer, path, input_spec, layer.training))

    monkeypatch.setattr(oar.hapi.model, "_jit_save", lambda: fake_save)
    model = make_model()
    with pytest.raises(ArgumentError, match="input shapes are unknown"):
        model.save(tmp_path / "infer", training=False)
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "infer", training=False)
    ((layer, path, specs, training),) = calls
    assert layer is model.network and path == str(tmp_path / "infer") and training is False
    assert [list(s.shape) for s in specs] == [[-1, 1, 8, 8]]
    assert model.network.training  # the mode is restored


def test_save_for_inference_through_the_real_jit(make_model, blobs, tmp_path):
    if oar.hapi.model._jit_save() is None:
        pytest.skip("this oar-core has no oar.jit.save yet")
    model = make_model()
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    model.save(tmp_path / "infer", training=False)
    loaded = oar.jit.load(str(tmp_path / "infer"))
    x, _ = class_blobs(5)
    np.testing.assert_allclose(loaded(oar.to_tensor(x)).numpy(), model.predict_batch([x])[0], rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# summary
# ----------------------------------------------------------------------------------------------
def test_summary_uses_input_size_then_specs_then_seen_inputs(make_model, blobs, capsys):
    model = make_model()
    with pytest.raises(ArgumentError, match="give input_size"):
        model.summary()
    total = sum(p.size for p in model.parameters())
    assert model.summary((1, 1, 8, 8)) == {"total_params": total, "trainable_params": total}
    model.fit(blobs, batch_size=16, epochs=1, verbose=0)
    capsys.readouterr()
    assert model.summary()["total_params"] == total
    assert "[[1, 1, 8, 8]]" in capsys.readouterr().out


def test_warns_when_eval_callbacks_have_no_eval_data(make_model, blobs):
    with pytest.warns(UserWarning, match="EarlyStopping acts on evaluation results"):
        make_model().fit(blobs, batch_size=16, verbose=0, callbacks=[oar.callbacks.EarlyStopping()])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_model().fit(blobs, blobs, batch_size=16, verbose=0, callbacks=[oar.callbacks.EarlyStopping(patience=5)])


def test_paddles_input_specs_give_the_input_count_and_the_summary_shape(blobs, capsys):
    static = pytest.importorskip("oar.static", reason="oar.static.InputSpec comes with the static-graph oar-core")
    image = static.InputSpec([None, 1, 8, 8], "float32", "image")
    label = static.InputSpec([None, 1], "int64", "label")
    oar.seed(0)
    net = SmallCNN()
    model = oar.Model(net, image, label)
    model.prepare(oar.optimizer.Adam(parameters=net.parameters()), nn.CrossEntropyLoss(), oar.metric.Accuracy())
    model.fit(blobs, batch_size=16, verbose=0)
    capsys.readouterr()
    assert model.summary()["total_params"] == sum(p.size for p in net.parameters())
    assert "[[1, 1, 8, 8]]" in capsys.readouterr().out
