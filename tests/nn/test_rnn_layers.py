"""Recurrent layers against a numpy implementation of Paddle's formulas, plus Paddle's parameter
names, shapes and initialisation, sequence_length masking and gradients through time."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError, ShapeError
from oar.testing import OpCase, check_grad, check_output

GATES = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- numpy reference: Paddle's documented cell formulas ------------------------------------------
def np_cell(mode, p, x, state):
    """One step of a cell with numpy weights ``p`` (weight_ih, weight_hh, bias_ih, bias_hh[, weight_ho])."""
    xw = x @ p["weight_ih"].T + p["bias_ih"]
    if mode == "LSTM":
        h, c = state
        i, f, g, o = np.split(xw + h @ p["weight_hh"].T + p["bias_hh"], 4, axis=-1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
        h = sigmoid(o) * np.tanh(c)
        if "weight_ho" in p:
            h = h @ p["weight_ho"]
        return h, (h, c)
    if mode == "GRU":
        h = state
        x_r, x_z, x_c = np.split(xw, 3, axis=-1)
        h_r, h_z, h_c = np.split(h @ p["weight_hh"].T + p["bias_hh"], 3, axis=-1)
        r, z = sigmoid(x_r + h_r), sigmoid(x_z + h_z)
        c = np.tanh(x_c + r * h_c)  # the reset gate multiplies the recurrent product, bias included
        h = z * h + (1 - z) * c
        return h, h
    z = xw + state @ p["weight_hh"].T + p["bias_hh"]
    h = np.tanh(z) if mode == "RNN_TANH" else np.maximum(z, 0)
    return h, h


def np_network(mode, params, x, states, num_layers, num_directions, time_major=False, lengths=None):
    """A stacked (bi)directional RNN; ``states`` per component ``[layers * dirs, batch, size]``.

    Past a sequence's length the state is held and the output is zero (Paddle's rnn kernel).
    """
    if not time_major:
        x = x.transpose(1, 0, 2)
    steps, batch = x.shape[:2]
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    finals = []
    for layer in range(num_layers):
        outs = []
        for d in range(num_directions):
            suffix = "_reverse" if d else ""
            p = {k: params[f"{k}_l{layer}{suffix}"] for k in ("weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_ho")
                 if f"{k}_l{layer}{suffix}" in params}
            idx = layer * num_directions + d
            state = tuple(s[idx] for s in states) if mode == "LSTM" else states[0][idx]
            out = np.zeros((steps, batch, (p["weight_ho"].shape[1] if "weight_ho" in p else p["weight_hh"].shape[0] // GATES[mode])))
            for t in (range(steps - 1, -1, -1) if d else range(steps)):
                y, new = np_cell(mode, p, x[t], state)
                valid = (t < lengths)[:, None]
                state = tuple(np.where(valid, n, o) for n, o in zip(new, state)) if mode == "LSTM" else np.where(valid, new, state)
                out[t] = np.where(valid, y, 0.0)
            outs.append(out)
            finals.append(state)
        x = np.concatenate(outs, axis=-1)
    if not time_major:
        x = x.transpose(1, 0, 2)
    if mode == "LSTM":
        return x, (np.stack([f[0] for f in finals]), np.stack([f[1] for f in finals]))
    return x, np.stack(finals)


def make(mode, *args, **kwargs):
    if mode == "LSTM":
        return nn.LSTM(*args, **kwargs)
    if mode == "GRU":
        return nn.GRU(*args, **kwargs)
    return nn.SimpleRNN(*args, activation="tanh" if mode == "RNN_TANH" else "relu", **kwargs)


def numpy_params(layer):
    return {name: p.numpy().astype(np.float64) for name, p in layer.named_parameters()}


def as_tuple(states):
    return tuple(states) if isinstance(states, (tuple, list)) else (states,)


CONFIGS = [  # num_layers, direction, time_major
    (1, "forward", False),
    (2, "forward", True),
    (2, "bidirect", False),
    (2, "bidirectional", True),
]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
@pytest.mark.parametrize(("num_layers", "direction", "time_major"), CONFIGS)
def test_network_matches_numpy(mode, num_layers, direction, time_major):
    oar.seed(1)
    rng = np.random.default_rng(0)
    layer = make(mode, 3, 5, num_layers=num_layers, direction=direction, time_major=time_major).to(dtype="float64")
    dirs = 1 if direction == "forward" else 2
    x = rng.standard_normal((6, 4, 3) if time_major else (4, 6, 3))
    states = tuple(rng.standard_normal((num_layers * dirs, 4, 5)) for _ in range(2 if mode == "LSTM" else 1))
    want_out, want_states = np_network(mode, numpy_params(layer), x, states, num_layers, dirs, time_major)

    given = tuple(oar.to_tensor(s) for s in states)
    out, got_states = layer(oar.to_tensor(x), given if mode == "LSTM" else given[0])
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    for got, want in zip(as_tuple(got_states), as_tuple(want_states)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)

    # No initial states: zeros.
    zeros = tuple(np.zeros_like(s) for s in states)
    want_out, _ = np_network(mode, numpy_params(layer), x, zeros, num_layers, dirs, time_major)
    np.testing.assert_allclose(layer(oar.to_tensor(x))[0].numpy(), want_out, rtol=1e-10, atol=1e-12)


def test_float32_network_and_output_shapes():
    lstm = nn.LSTM(3, 5, num_layers=2, direction="bidirect")
    x = np.random.default_rng(0).standard_normal((4, 7, 3)).astype(np.float32)
    out, (h, c) = lstm(oar.to_tensor(x))
    assert (out.shape, h.shape, c.shape) == ([4, 7, 10], [4, 4, 5], [4, 4, 5])
    assert out.dtype == oar.float32 and h.dtype == oar.float32
    zeros = (np.zeros((4, 4, 5)),) * 2
    want, _ = np_network("LSTM", numpy_params(lstm), x.astype(np.float64), zeros, 2, 2)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("mode", "time_major"), [("LSTM", False), ("GRU", True), ("RNN_TANH", False)])
def test_sequence_length_holds_states_and_zeroes_padded_outputs(mode, time_major):
    oar.seed(2)
    rng = np.random.default_rng(3)
    layer = make(mode, 3, 4, num_layers=2, direction="bidirect", time_major=time_major).to(dtype="float64")
    x = rng.standard_normal((3, 5, 3))  # batch major here; transposed for a time-major layer
    lengths = np.array([5, 2, 4])
    zeros = tuple(np.zeros((4, 3, 4)) for _ in range(2 if mode == "LSTM" else 1))
    given = x.transpose(1, 0, 2) if time_major else x
    out, states = layer(oar.to_tensor(given), sequence_length=oar.to_tensor(lengths))
    out = out.numpy().transpose(1, 0, 2) if time_major else out.numpy()
    want_out, want_states = np_network(mode, numpy_params(layer), x, zeros, 2, 2, lengths=lengths)
    np.testing.assert_allclose(out, want_out, rtol=1e-10, atol=1e-12)
    for got, want in zip(as_tuple(states), as_tuple(want_states)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    # Each sequence alone, cut to its length, gives the same valid outputs and final states.
    for b, n in enumerate(lengths):
        alone = x[b:b + 1, :n].transpose(1, 0, 2) if time_major else x[b:b + 1, :n]
        alone_out, alone_states = layer(oar.to_tensor(alone))
        alone_out = alone_out.numpy()[:, 0] if time_major else alone_out.numpy()[0]
        np.testing.assert_allclose(out[b, :n], alone_out, rtol=1e-10, atol=1e-12)
        assert not out[b, n:].any()
        for got, alone_state in zip(as_tuple(states), as_tuple(alone_states)):
            np.testing.assert_allclose(got.numpy()[:, b], alone_state.numpy()[:, 0], rtol=1e-10, atol=1e-12)


def test_lstm_proj_size():
    oar.seed(4)
    lstm = nn.LSTM(3, 6, num_layers=2, direction="bidirect", proj_size=2).to(dtype="float64")
    shapes = {name: p.shape for name, p in lstm.named_parameters()}
    assert shapes["weight_hh_l0"] == [24, 2] and shapes["weight_ho_l0"] == [6, 2]
    assert shapes["weight_ih_l1"] == [24, 4] and shapes["weight_ho_l1_reverse"] == [6, 2]
    x = np.random.default_rng(5).standard_normal((2, 4, 3))
    out, (h, c) = lstm(oar.to_tensor(x))
    assert (out.shape, h.shape, c.shape) == ([2, 4, 4], [4, 2, 2], [4, 2, 6])
    want_out, (want_h, want_c) = np_network("LSTM", numpy_params(lstm), x, (np.zeros((4, 2, 2)), np.zeros((4, 2, 6))), 2, 2)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-10, atol=1e-12)


# -- cells and wrappers ------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"])
def test_cells_match_numpy(mode):
    oar.seed(6)
    rng = np.random.default_rng(6)
    if mode == "LSTM":
        cell = nn.LSTMCell(3, 4)
    elif mode == "GRU":
        cell = nn.GRUCell(3, 4)
    else:
        cell = nn.SimpleRNNCell(3, 4, activation="tanh" if mode == "RNN_TANH" else "relu")
    cell.to(dtype="float64")
    p = {name: v.numpy() for name, v in cell.named_parameters()}
    x = rng.standard_normal((2, 3))
    state = (rng.standard_normal((2, 4)), rng.standard_normal((2, 4))) if mode == "LSTM" else rng.standard_normal((2, 4))
    want_y, want_state = np_cell(mode, p, x, state)
    given = tuple(oar.to_tensor(s) for s in state) if mode == "LSTM" else oar.to_tensor(state)
    y, new_state = cell(oar.to_tensor(x), given)
    np.testing.assert_allclose(y.numpy(), want_y, rtol=1e-12)
    for got, want in zip(as_tuple(new_state), as_tuple(want_state)):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    # Without states the cell starts from zeros.
    zeros = (np.zeros((2, 4)),) * 2 if mode == "LSTM" else np.zeros((2, 4))
    np.testing.assert_allclose(cell(oar.to_tensor(x))[0].numpy(), np_cell(mode, p, x, zeros)[0], rtol=1e-12)


def test_gru_reset_gate_applies_after_the_recurrent_matmul():
    # With reset = 0 the candidate ignores W_hc h + b_hc entirely; the "reset before the matmul"
    # variant would still add b_hc. Drive r to 0 with a large negative reset bias.
    cell = nn.GRUCell(1, 1).to(dtype="float64")
    cell.set_state_dict({"weight_ih": np.zeros((3, 1)), "weight_hh": np.array([[0.0], [0.0], [1.0]]),
                         "bias_ih": np.array([-50.0, 0.0, 0.0]), "bias_hh": np.array([0.0, 0.0, 3.0])})
    h, _ = cell(oar.zeros([1, 1], dtype="float64"), oar.ones([1, 1], dtype="float64"))
    z = sigmoid(0.0)
    np.testing.assert_allclose(h.numpy(), [[z * 1.0 + (1 - z) * np.tanh(0.0)]], atol=1e-12)


class ScaledTanhCell(nn.RNNCellBase):
    """A user-defined cell: the generic (unfused) path of RNN."""

    def __init__(self, size):
        super().__init__()
        self.input_size = self.hidden_size = size
        self.weight = self.create_parameter([size, size])

    def forward(self, inputs, states=None, scale=1.0):
        if states is None:
            states = self.get_initial_states(inputs, self.state_shape)
        h = oar.tanh(oar.matmul(inputs + states, self.weight)) * scale
        return h, h

    @property
    def state_shape(self):
        return (self.hidden_size,)


def test_rnn_wrapper_runs_user_cells_and_passes_kwargs():
    cell = ScaledTanhCell(3).to(dtype="float64")
    w = cell.weight.numpy()
    x = np.random.default_rng(8).standard_normal((2, 4, 3))
    out, h = nn.RNN(cell)(oar.to_tensor(x), scale=0.5)
    state = np.zeros((2, 3))
    for t in range(4):
        state = np.tanh((x[:, t] + state) @ w) * 0.5
        np.testing.assert_allclose(out.numpy()[:, t], state, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), state, rtol=1e-12)


def test_rnn_wrapper_fused_path_equals_stepping_the_cell():
    cell = nn.LSTMCell(3, 4).to(dtype="float64")
    x = oar.to_tensor(np.random.default_rng(9).standard_normal((2, 5, 3)))
    out, (h, c) = nn.RNN(cell, is_reverse=True)(x)
    state = None
    for t in range(4, -1, -1):
        y, state = cell(x[:, t], state)
        np.testing.assert_allclose(out.numpy()[:, t], y.numpy(), rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), state[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), state[1].numpy(), rtol=1e-12)


def test_rnn_wrapper_sequence_length_holds_states_but_keeps_outputs():
    # paddle.nn.RNN (unlike the fused LSTM/GRU layers) leaves outputs past the end unmasked.
    cell = nn.GRUCell(2, 3).to(dtype="float64")
    x = oar.to_tensor(np.random.default_rng(10).standard_normal((2, 4, 2)))
    out, h = nn.RNN(cell)(x, sequence_length=oar.to_tensor([4, 2]))
    np.testing.assert_allclose(h.numpy()[1], out.numpy()[1, 1], rtol=1e-12)
    assert np.abs(out.numpy()[1, 2:]).min() > 0


def test_birnn_wrapper():
    fw, bw = nn.SimpleRNNCell(2, 3).to(dtype="float64"), nn.SimpleRNNCell(2, 3).to(dtype="float64")
    x = oar.to_tensor(np.random.default_rng(11).standard_normal((2, 4, 2)))
    out, (h_fw, h_bw) = nn.BiRNN(fw, bw)(x)
    out_fw, last_fw = nn.RNN(fw)(x)
    out_bw, last_bw = nn.RNN(bw, is_reverse=True)(x)
    np.testing.assert_allclose(out.numpy(), np.concatenate([out_fw.numpy(), out_bw.numpy()], -1), rtol=1e-12)
    np.testing.assert_allclose(h_bw.numpy(), out_bw.numpy()[:, 0], rtol=1e-12)
    with pytest.raises(ArgumentError, match="input size"):
        nn.BiRNN(nn.GRUCell(2, 3), nn.GRUCell(4, 3))


# -- Paddle's parameters ---------------------------------------------------------------------
@pytest.mark.parametrize(("mode", "gates"), [("LSTM", 4), ("GRU", 3), ("RNN_TANH", 1)])
def test_parameter_names_and_shapes_follow_paddle(mode, gates):
    layer = make(mode, 3, 5, num_layers=2, direction="bidirect")
    expected = []
    for k in range(2):
        for suffix in ("", "_reverse"):
            in_size = 3 if k == 0 else 10
            expected += [(f"weight_ih_l{k}{suffix}", [gates * 5, in_size]), (f"weight_hh_l{k}{suffix}", [gates * 5, 5]),
                         (f"bias_ih_l{k}{suffix}", [gates * 5]), (f"bias_hh_l{k}{suffix}", [gates * 5])]
    assert [(n, p.shape) for n, p in layer.named_parameters()] == expected
    assert list(layer.state_dict()) == [name for name, _ in expected]  # each tensor once, network names
    # A Paddle checkpoint lists every parameter under both names (network's and cell's): it loads.
    cell_keys = [f"{k}.{cell}.{name}" for k in range(2) for cell in ("cell_fw", "cell_bw")
                 for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    values = [np.full(shape, i, dtype=np.float32) for i, (_, shape) in enumerate(expected)]
    paddle_dict = dict(zip([name for name, _ in expected], values)) | dict(zip(cell_keys, values))
    layer.set_state_dict(paddle_dict)
    assert float(layer.bias_hh_l1_reverse.numpy()[0]) == 15.0
    # Paddle's sublayer structure: the same parameters under 0.cell_fw / 0.cell_bw ...
    assert layer[0].cell_fw.weight_ih is layer.weight_ih_l0
    assert layer[1].cell_bw.bias_hh is layer.bias_hh_l1_reverse
    forward = make(mode, 3, 5)
    assert forward[0].cell.weight_hh is forward.weight_hh_l0
    assert [n for n, _ in forward.named_sublayers()] == ["0", "0.cell"]


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_default_initialisation_is_uniform_within_one_over_sqrt_hidden(mode):
    oar.seed(12)
    layer = make(mode, 64, 64)
    bound = 1 / np.sqrt(64)
    values = np.concatenate([p.numpy().ravel() for p in layer.parameters()])
    assert np.abs(values).max() <= bound
    assert np.abs(values).max() > 0.97 * bound
    np.testing.assert_allclose(values.std(), bound / np.sqrt(3), rtol=0.05)  # a uniform's std
    assert abs(values.mean()) < 0.05 * bound


def test_false_attrs_give_frozen_constant_parameters_as_paddle():
    cell = nn.LSTMCell(2, 3, bias_ih_attr=False, weight_hh_attr=False)
    assert not cell.bias_ih.numpy().any() and not cell.bias_ih.trainable and cell.bias_ih.stop_gradient
    assert (cell.weight_hh.numpy() == 1).all() and cell.weight_hh.stop_gradient
    assert cell.weight_ih.trainable and cell.bias_hh.trainable


def test_param_attr_initializer_is_used():
    attr = nn.ParamAttr(initializer=nn.initializer.Constant(0.25))
    gru = nn.GRU(2, 3, weight_ih_attr=attr)
    assert (gru.weight_ih_l0.numpy() == 0.25).all()
    assert not (gru.weight_hh_l0.numpy() == 0.25).all()


def test_state_dict_round_trip():
    a, b = nn.GRU(2, 3, num_layers=2), nn.GRU(2, 3, num_layers=2)
    b.set_state_dict(a.state_dict())
    x = oar.rand([2, 4, 2])
    np.testing.assert_array_equal(a(x)[0].numpy(), b(x)[0].numpy())


# -- dropout between layers, modes, errors ------------------------------------------------------
def test_dropout_applies_between_layers_in_training_only():
    oar.seed(13)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5).to(dtype="float64")
    x = np.random.default_rng(14).standard_normal((2, 5, 3))
    zeros = (np.zeros((2, 2, 4)),) * 2
    want, _ = np_network("LSTM", numpy_params(lstm), x, zeros, 2, 1)
    lstm.eval()
    np.testing.assert_allclose(lstm(oar.to_tensor(x))[0].numpy(), want, rtol=1e-10)
    lstm.train()
    trained = lstm(oar.to_tensor(x))[0].numpy()
    assert np.abs(trained - want).max() > 1e-3
    # The first layer sees the inputs undropped: a one-layer network ignores dropout.
    single = nn.GRU(3, 4, dropout=0.5).to(dtype="float64")
    want, _ = np_network("GRU", numpy_params(single), x, (np.zeros((1, 2, 4)),), 1, 1)
    np.testing.assert_allclose(single(oar.to_tensor(x))[0].numpy(), want, rtol=1e-10)


def test_errors_name_the_problem():
    with pytest.raises(ArgumentError, match="direction"):
        nn.LSTM(3, 4, direction="backward")
    with pytest.raises(ArgumentError, match="activation"):
        nn.SimpleRNN(3, 4, activation="sigmoid")
    with pytest.raises(ArgumentError, match="hidden_size"):
        nn.GRUCell(3, 0)
    with pytest.raises(ArgumentError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=4)
    lstm = nn.LSTM(3, 4, num_layers=2)
    with pytest.raises(ShapeError, match="input_size=3"):
        lstm(oar.rand([2, 5, 7]))
    with pytest.raises(ShapeError, match="3-D"):
        lstm(oar.rand([5, 3]))
    with pytest.raises(ShapeError, match=r"\[2, 2, 4\]"):
        lstm(oar.rand([2, 5, 3]), (oar.zeros([1, 2, 4]), oar.zeros([2, 2, 4])))
    with pytest.raises(ArgumentError, match="pair"):
        lstm(oar.rand([2, 5, 3]), oar.zeros([2, 2, 4]))


def test_repr_is_paddle_like():
    assert repr(nn.LSTMCell(3, 4)) == "LSTMCell(3, 4)"
    assert repr(nn.SimpleRNNCell(3, 4, activation="relu")) == "SimpleRNNCell(3, 4, activation=relu)"
    assert repr(nn.GRU(3, 4, num_layers=2)).startswith("GRU(3, 4, num_layers=2\n  (0): RNN(")


# -- gradients --------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_TANH"])
def test_gradients_wrt_inputs_and_initial_states_match_finite_differences(mode):
    oar.seed(15)
    layer = make(mode, 2, 2, num_layers=2, direction="bidirect").to(dtype="float64")
    rng = np.random.default_rng(16)
    x = rng.standard_normal((2, 3, 2))
    states = [rng.standard_normal((4, 2, 2)) for _ in range(2 if mode == "LSTM" else 1)]
    params = numpy_params(layer)

    def fn(x, *states):
        out, final = layer(x, tuple(states) if mode == "LSTM" else states[0])
        return (out, *as_tuple(final))

    def ref(x, *states):
        out, final = np_network(mode, params, x, states, 2, 2)
        return (out, *as_tuple(final))

    case = OpCase("matmul", fn, ref, [x, *states], dtypes=("float64",), id=f"{mode.lower()}_network")
    check_output(case, "float64")
    check_grad(case)


@pytest.mark.parametrize("mode", ["LSTM", "GRU", "RNN_RELU"])
def test_parameter_gradients_match_finite_differences(mode):
    oar.seed(17)
    layer = make(mode, 2, 2, direction="bidirect").to(dtype="float64")
    rng = np.random.default_rng(18)
    x = oar.to_tensor(rng.standard_normal((2, 3, 2)))
    lengths = oar.to_tensor([3, 2])
    weights = [oar.to_tensor(rng.standard_normal(shape)) for shape in ([2, 3, 4], [2, 2, 2])]

    def loss():
        out, final = layer(x, sequence_length=lengths)
        return (out * weights[0]).sum() + (as_tuple(final)[0] * weights[1]).sum()

    loss().backward()
    eps = 1e-6
    for name, p in layer.named_parameters():
        analytic = p.grad.numpy()
        numeric = np.zeros_like(analytic)
        flat = p._data.reshape(-1)
        for i in range(flat.size):
            original = flat[i]
            with oar.no_grad():
                flat[i] = original + eps
                up = float(loss())
                flat[i] = original - eps
                down = float(loss())
            flat[i] = original
            numeric.reshape(-1)[i] = (up - down) / (2 * eps)
        np.testing.assert_allclose(analytic, numeric, rtol=1e-5, atol=1e-7, err_msg=name)


def test_docstring_examples_run():
    from oar.nn.layer import rnn

    result = doctest.testmod(rnn, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("make", [lambda: nn.LSTM(4, 6, num_layers=2), lambda: nn.GRU(4, 6, direction="bidirect"),
                                  lambda: nn.RNN(nn.LSTMCell(4, 6))], ids=["LSTM", "GRU", "RNN(LSTMCell)"])
def test_default_initial_states_keep_a_dynamic_batch_dynamic_under_to_static(make, recwarn):
    # Zeros made from the input's batch by ops, not from a number read at capture: one program
    # serves every batch size (and an exported model keeps its batch symbolic).
    from oar.static import InputSpec

    oar.seed(0)
    layer = make()
    layer.eval()
    inputs = [oar.to_tensor(np.random.default_rng(b).standard_normal([b, 5, 4]).astype(np.float32)) for b in (1, 3, 7)]
    with oar.no_grad():
        expected = [layer(x)[0].numpy() for x in inputs]
    static = oar.jit.to_static(layer, input_spec=[InputSpec([None, 5, 4], "float32", "x")])
    for x, want in zip(inputs, expected):
        with oar.no_grad():
            np.testing.assert_allclose(static(x)[0].numpy(), want, rtol=1e-5, atol=1e-6)
    assert not [w for w in recwarn if "captured again for each size" in str(w.message)]
    assert len(static.forward.program_cache) == 1
