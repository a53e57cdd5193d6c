"""``fleet.utils.recompute``: the same gradients as without it (dropout included, through the saved
RNG state), and less activation memory during forward + backward."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.distributed.fleet.utils import recompute, recompute_sequential
from oar.errors import ArgumentError
from oar.testing import sum_tolerance

WIDTH, DEPTH = 64, 6


def make_blocks(dropout: float = 0.0, width: int = WIDTH, depth: int = DEPTH) -> list:
    oar.seed(7)
    return [nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Dropout(dropout), nn.Linear(width, width), nn.Tanh())
            for _ in range(depth)]


def run(blocks, x, use_recompute: bool, **kwargs):
    """Gradients of every parameter (and of x) after one forward + backward."""
    for block in blocks:
        for p in block.parameters():
            p.clear_gradient(False)
    h = x
    for block in blocks:
        h = recompute(block, h, **kwargs) if use_recompute else block(h)
    (h * h).mean().backward()
    grads = [p.grad.numpy() for block in blocks for p in block.parameters()]
    return grads, (None if x.grad is None else x.grad.numpy())


def assert_grads_close(got, expected):
    rtol, atol = sum_tolerance("float32", terms=WIDTH * DEPTH, scale=max(np.abs(e).max() for e in expected))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


@pytest.mark.parametrize("input_needs_grad", [False, True])
def test_gradients_equal_without_recompute(input_needs_grad):
    blocks = make_blocks()
    x = oar.to_tensor(np.random.default_rng(0).standard_normal((8, WIDTH)).astype("float32"),
                      stop_gradient=not input_needs_grad)
    expected, expected_x = run(blocks, x, False)
    x.clear_gradient(False)
    got, got_x = run(blocks, x, True)
    assert_grads_close(got, expected)
    if input_needs_grad:
        assert_grads_close([got_x], [expected_x])
    else:
        assert got_x is None


def test_dropout_replays_the_same_units():
    blocks = make_blocks(dropout=0.5)
    for b in blocks:
        b.train()
    x = oar.to_tensor(np.random.default_rng(1).standard_normal((8, WIDTH)).astype("float32"))
    state = oar.get_rng_state()
    expected, _ = run(blocks, x, False)
    oar.set_rng_state(state)
    got, _ = run(blocks, x, True)
    assert_grads_close(got, expected)
    # Without the saved state the recomputation draws other masks: the gradients differ.
    oar.set_rng_state(state)
    other, _ = run(blocks, x, True, preserve_rng_state=False)
    assert not all(np.allclose(o, e) for o, e in zip(other, expected))


def test_plain_function_uses_the_reentrant_backward():
    # A closure hides its parameters: gradients reach them through a nested backward, as Paddle's.
    blocks = make_blocks()
    x = oar.to_tensor(np.random.default_rng(2).standard_normal((4, WIDTH)).astype("float32"), stop_gradient=False)
    expected, expected_x = run(blocks, x, False)
    x.clear_gradient(False)
    for block in blocks:
        for p in block.parameters():
            p.clear_gradient(False)
    h = recompute(lambda t, scale=1.0: blocks[1](blocks[0](t)) * scale, x, scale=1.0)
    for block in blocks[2:]:
        h = block(h)
    (h * h).mean().backward()
    assert_grads_close([p.grad.numpy() for b in blocks for p in b.parameters()], expected)
    assert_grads_close([x.grad.numpy()], [expected_x])


def test_recompute_sequential_matches_plain_run():
    model = nn.Sequential(*make_blocks())
    x = oar.to_tensor(np.random.default_rng(3).standard_normal((4, WIDTH)).astype("float32"))
    (model(x) ** 2).mean().backward()
    expected = [p.grad.numpy() for p in model.parameters()]
    model.clear_gradients()
    (recompute_sequential({"segments": 3}, model, x) ** 2).mean().backward()
    assert_grads_close([p.grad.numpy() for p in model.parameters()], expected)


def peak_bytes(blocks, x, use_recompute: bool) -> int:
    gc.collect()  # what earlier tests left for the collector is not freed inside the measurement
    for block in blocks:
        for p in block.parameters():
            p.clear_gradient(False)
    oar.device.reset_max_memory_allocated()
    start = oar.device.memory_allocated()
    h = x
    for block in blocks:
        h = recompute(block, h) if use_recompute else block(h)
    loss = (h * h).mean()
    del h
    loss.backward()
    return oar.device.max_memory_allocated() - start


def test_activation_memory_falls():
    # A batch much larger than the width: activations, not weight gradients, dominate the peak.
    batch, width, depth = 1024, 128, 8
    blocks = make_blocks(width=width, depth=depth)
    x = oar.to_tensor(np.random.default_rng(4).standard_normal((batch, width)).astype("float32"))
    plain = peak_bytes(blocks, x, False)
    recomputed = peak_bytes(blocks, x, True)
    activation = batch * width * 4
    # Plain keeps 4 activations per block alive until backward reaches it (32 in all); recompute
    # keeps each block's input (8) and one block's activations at a time.
    assert plain >= 4 * depth * activation, plain / activation
    assert recomputed < 0.6 * plain, (plain / activation, recomputed / activation)


def test_no_grad_runs_the_function_plainly():
    blocks = make_blocks(depth=1)
    x = oar.ones([2, WIDTH])
    with oar.no_grad():
        y = recompute(blocks[0], x)
    assert y.stop_gradient
    np.testing.assert_allclose(y.numpy(), blocks[0](x).numpy(), rtol=1e-6)


def test_bad_arguments_are_named():
    with pytest.raises(ArgumentError, match="callable"):
        recompute(3, oar.ones([1]))
    with pytest.raises(ArgumentError, match="preserve_rng_state"):
        recompute(nn.ReLU(), oar.ones([1]), preserve_rng_state="yes")
    with pytest.raises(ArgumentError, match="segments"):
        recompute_sequential({"segments": 0}, nn.Sequential(nn.ReLU()), oar.ones([1]))
    with pytest.raises(ArgumentError, match="unknown ctx"):
        recompute_sequential({"segment": 2}, nn.Sequential(nn.ReLU()), oar.ones([1]))
