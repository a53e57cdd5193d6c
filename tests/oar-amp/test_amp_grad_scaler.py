"""``oar.amp.GradScaler`` against a reference of Paddle's dynamic loss-scaling rule, on gradients
with planted infs and nans: a bad step is skipped (parameters and optimizer state bit-identical),
a good one is the plain step on the unscaled gradients, and the scale moves as the rule says."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar as paddle
from oar.errors import ArgumentError


def reference_scales(outcomes, init, incr_ratio, decr_ratio, incr_every_n_steps, decr_every_n_nan_or_inf):
    """Paddle's rule: the scale after each step, from whether its gradients were finite."""
    scale, good, bad, scales = init, 0, 0, []
    for finite in outcomes:
        if finite:
            bad, good = 0, good + 1
            if good == incr_every_n_steps:
                scale, good = scale * incr_ratio, 0
        else:
            good, bad = 0, bad + 1
            if bad == decr_every_n_nan_or_inf:
                scale, bad = scale * decr_ratio, 0
        scales.append(scale)
    return scales


# good (True) and bad (False) steps: runs of both, long enough to move the scale both ways
OUTCOMES = [True, True, True, False, True, False, False, False, True, True, True, True, False, True]
PLANTS = [None, None, None, "inf", None, "nan", "-inf", "nan", None, None, None, None, "inf", None]


def planted(grad: oar.Tensor, plant: str | None) -> oar.Tensor:
    if plant is None:
        return grad
    values = grad.numpy()
    values.flat[1] = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}[plant]
    return oar.to_tensor(values)


@pytest.fixture
def problem():
    oar.seed(0)
    layer = oar.nn.Linear(4, 1, bias_attr=False)
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32))
    return layer, x


@pytest.mark.parametrize("use_step_and_update", [False, True])
def test_the_scale_follows_paddles_rule_and_bad_steps_are_skipped(problem, use_step_and_update):
    layer, x = problem
    optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    settings = dict(init_loss_scaling=1024.0, incr_ratio=2.0, decr_ratio=0.5, incr_every_n_steps=3,
                    decr_every_n_nan_or_inf=2)
    scaler = oar.amp.GradScaler(**settings)
    expected = reference_scales(OUTCOMES, settings["init_loss_scaling"], settings["incr_ratio"],
                                settings["decr_ratio"], settings["incr_every_n_steps"],
                                settings["decr_every_n_nan_or_inf"])
    for step, plant in enumerate(PLANTS):
        scale = float(scaler.get_loss_scaling().numpy()[0])
        before = layer.weight.numpy()
        with oar.amp.auto_cast():
            loss = layer(x).astype("float32").mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        true_grad = layer.weight.grad.numpy().astype(np.float32) / np.float32(scale)
        layer.weight.grad = planted(layer.weight.grad, plant)
        if use_step_and_update:
            scaler.step(optimizer)
            scaler.update()
        else:
            scaler.minimize(optimizer, scaled)
        optimizer.clear_grad()
        after = layer.weight.numpy()
        if plant is None:
            np.testing.assert_allclose(after, before - np.float32(0.1) * true_grad, rtol=1e-6, atol=1e-7)
        else:
            np.testing.assert_array_equal(after, before)  # skipped: bit-identical
        assert float(scaler.get_loss_scaling().numpy()[0]) == expected[step], step
    state = scaler.state_dict()
    assert (state["incr_count"], state["decr_count"]) == (1, 0)


def test_a_skipped_step_leaves_the_optimizer_state_untouched(problem):
    layer, x = problem
    optimizer = oar.optimizer.Adam(learning_rate=0.01, parameters=layer.parameters())
    scaler = oar.amp.GradScaler(init_loss_scaling=256.0)

    def step(plant):
        with oar.amp.auto_cast():
            loss = layer(x).astype("float32").mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        layer.weight.grad = planted(layer.weight.grad, plant)
        scaler.minimize(optimizer, scaled)
        optimizer.clear_grad()

    step(None)
    state = {k: v.numpy().copy() for k, v in optimizer.state_dict().items()}
    weight = layer.weight.numpy()
    step("nan")
    after = optimizer.state_dict()
    assert sorted(after) == sorted(state)
    for key, value in state.items():
        np.testing.assert_array_equal(after[key].numpy(), value)
    np.testing.assert_array_equal(layer.weight.numpy(), weight)
    assert float(scaler.get_loss_scaling().numpy()[0]) == 128.0  # decr_every_n_nan_or_inf=1


def test_unscale_then_step_unscales_once_and_the_order_is_checked(problem):
    layer, x = problem
    optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = oar.amp.GradScaler(init_loss_scaling=64.0)
    with oar.amp.auto_cast():
        loss = layer(x).astype("float32").mean()
    scaler.scale(loss).backward()
    scaled_grad = layer.weight.grad.numpy()
    scaler.unscale_(optimizer)
    np.testing.assert_allclose(layer.weight.grad.numpy(), scaled_grad / 64.0, rtol=1e-7)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) has already been called"):
        scaler.unscale_(optimizer)
    before = layer.weight.numpy()
    scaler.step(optimizer)
    np.testing.assert_allclose(layer.weight.numpy(), before - 0.1 * scaled_grad / 64.0, rtol=1e-6)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(optimizer)
    with pytest.raises(RuntimeError, match="unscale_\\(\\) is being called after step\\(\\)"):
        scaler.unscale_(optimizer)
    scaler.update()
    scaler.unscale_(optimizer)  # a new step may unscale again


def test_getters_setters_and_defaults():
    scaler = oar.amp.GradScaler()
    assert scaler.is_enable() and scaler.is_use_dynamic_loss_scaling()
    assert (scaler.get_init_loss_scaling(), scaler.get_incr_ratio(), scaler.get_decr_ratio(),
            scaler.get_incr_every_n_steps(), scaler.get_decr_every_n_nan_or_inf()) == (65536.0, 2.0, 0.5, 2000, 1)
    scaler.set_init_loss_scaling(1000)
    scaler.set_incr_ratio(3.0)
    scaler.set_decr_ratio(0.1)
    scaler.set_incr_every_n_steps(7)
    scaler.set_decr_every_n_nan_or_inf(3)
    assert (scaler.get_init_loss_scaling(), scaler.get_incr_ratio(), scaler.get_decr_ratio(),
            scaler.get_incr_every_n_steps(), scaler.get_decr_every_n_nan_or_inf()) == (1000.0, 3.0, 0.1, 7, 3)
    assert scaler.get_loss_scaling().numpy().tolist() == [1000.0]
    with pytest.raises(ArgumentError, match="must be > 1.0"):
        scaler.set_incr_ratio(1.0)
    with pytest.raises(ArgumentError, match="must be < 1.0"):
        scaler.set_decr_ratio(1.5)
    with pytest.raises(ArgumentError, match="incr_ratio must be > 1.0"):
        oar.amp.GradScaler(incr_ratio=0.5)


def test_state_dict_round_trips_through_oar_save(tmp_path, problem):
    layer, x = problem
    optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = oar.amp.GradScaler(init_loss_scaling=512.0, incr_every_n_steps=5)
    for _ in range(2):
        with oar.amp.auto_cast():
            loss = layer(x).astype("float32").mean()
        scaled = scaler.scale(loss)
        scaled.backward()
        scaler.minimize(optimizer, scaled)
        optimizer.clear_grad()
    state = scaler.state_dict()
    assert sorted(state) == ["decr_count", "decr_every_n_nan_or_inf", "decr_ratio", "incr_count",
                             "incr_every_n_steps", "incr_ratio", "scale", "use_dynamic_loss_scaling"]
    assert state["incr_count"] == 2 and state["scale"].tolist() == [512.0] and state["scale"].dtype == np.float32
    path = str(tmp_path / "scaler.pdopt")
    oar.save(state, path)
    restored = oar.amp.GradScaler()
    restored.load_state_dict(oar.load(path))
    assert {k: np.asarray(v).tolist() for k, v in restored.state_dict().items()} == \
        {k: np.asarray(v).tolist() for k, v in state.items()}
    with pytest.raises(RuntimeError, match="state dict is empty"):
        restored.load_state_dict({})


def test_a_disabled_scaler_passes_everything_through(problem):
    layer, x = problem
    optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=layer.parameters())
    scaler = oar.amp.GradScaler(enable=False)
    loss = layer(x).mean()
    assert scaler.scale(loss) is loss and scaler.state_dict() == {}
    before = layer.weight.numpy()
    scaler.minimize(optimizer, loss)
    assert not np.array_equal(layer.weight.numpy(), before)


def test_bfloat16_turns_dynamic_loss_scaling_off_with_paddles_warning(problem):
    layer, x = problem
    scaler = oar.amp.GradScaler()
    with oar.amp.auto_cast(dtype="bfloat16"):
        loss = layer(x).mean()
    with pytest.warns(UserWarning, match="not recommended to use dynamic loss scaling for bfloat16"):
        scaled = scaler.scale(loss)
    assert scaled is loss and not scaler.is_enable()
    with oar.amp.auto_cast(dtype="float16"):  # later blocks read float16 again
        pass


def test_the_snippet_of_paddles_users_runs_unchanged():
    model = paddle.nn.Sequential(paddle.nn.Conv2D(3, 4, 3), paddle.nn.ReLU(), paddle.nn.Flatten(),
                                 paddle.nn.Linear(4 * 6 * 6, 10))
    optimizer = paddle.optimizer.Adam(parameters=model.parameters(), learning_rate=1e-3)
    loss_fn = paddle.nn.CrossEntropyLoss()
    data, label = paddle.rand([8, 3, 8, 8]), paddle.randint(0, 10, [8, 1])
    weight = model[0].weight.numpy()

    scaler = paddle.amp.GradScaler(init_loss_scaling=1024)
    with paddle.amp.auto_cast():
        output = model(data)
        loss = loss_fn(output, label)
    scaled = scaler.scale(loss)
    scaled.backward()
    scaler.minimize(optimizer, scaled)

    assert output.dtype == paddle.float16 and loss.dtype == paddle.float32
    assert not np.array_equal(model[0].weight.numpy(), weight)
    assert model[0].weight.dtype == paddle.float32
