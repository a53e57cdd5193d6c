"""Elementwise-chain fusion: which nodes fuse, and the outputs before and after (core only)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
from oar._graph.executor import Executor
from oar._graph.fusion import fuse_elementwise
from oar._graph.passes import optimize, select_passes
from oar._graph.program import Program
from oar.jit import to_static
from oar.ops import evaluate_chain
from oar.static import BuildStrategy, InputSpec


def capture(fn, *args):
    f = to_static(fn)
    with oar.no_grad():
        f(*args)
    return f.concrete_program


def run(program, *args):
    with oar.no_grad():
        out = Executor(program.clone()).run(list(args))
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]


def ops(program):
    return [n.op for n in program.nodes]


def fused(program):
    return fuse_elementwise(program.clone())


def assert_same(before, after, *args, rtol=1e-6, atol=1e-7):
    for a, b in zip(run(before, *args), run(after, *args)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(b, a, rtol=rtol, atol=atol)


def rand(*shape, dtype="float32", seed=0):
    return oar.to_tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


def test_a_chain_becomes_one_node_with_the_same_outputs():
    def f(x, b):
        return oar.tanh(x * 2.0 + b).exp() - 1.0

    x, b = rand(4, 5), rand(5, seed=1)
    program = capture(f, x, b)
    after = fused(program)
    assert ops(after) == ["fused_elementwise"]
    chain = after.nodes[0].attrs["chain"]
    assert [step[0] for step in chain] == ["multiply", "add", "tanh", "exp", "subtract"]
    assert_same(program, after, x, b)
    np.testing.assert_allclose(run(after, x, b)[0], np.exp(np.tanh(x.numpy() * 2 + b.numpy())) - 1, rtol=1e-6)


@pytest.mark.parametrize("shapes", [[(3, 1, 4), (5, 1), ()], [(1,), (2, 3), (2, 1)], [(6,), (6,), (6,)]])
def test_broadcasting_chains(shapes):
    def f(x, y, z):
        return (x - y) * z / (y * y + 1.0)

    args = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    program = capture(f, *args)
    after = fused(program)
    assert ops(after) == ["fused_elementwise"]
    assert_same(program, after, *args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dtypes_are_kept(dtype):
    def f(x):
        return oar.sqrt(oar.abs(x) + 0.5) * x

    x = rand(3, 4, dtype=dtype)
    program = capture(f, x)
    after = fused(program)
    assert ops(after) == ["fused_elementwise"]
    assert after.values[after.nodes[0].outputs[0]].dtype.name == dtype
    assert_same(program, after, x)


def test_a_value_read_outside_the_chain_is_still_computed():
    def f(x):
        h = x * 3.0
        g = h + 1.0  # h is read here and returned: it must stay a value of the program
        return oar.tanh(g) * 2.0, h

    x = rand(2, 3)
    program = capture(f, x)
    after = fused(program)
    produced = {v for n in after.nodes for v in n.outputs}
    assert all(r.id in produced for r in (after.outputs[0], after.outputs[1]))
    assert ops(after) == ["multiply", "fused_elementwise"]
    assert_same(program, after, x)


def test_a_value_read_twice_inside_one_group_fuses_into_it():
    def f(x):
        t = oar.tanh(x + 1.0)
        return (t - 1.0) * t  # t has two readers, both in the group of the final multiply

    x = rand(5)
    program = capture(f, x)
    after = fused(program)
    assert ops(after) == ["fused_elementwise"]
    chain = after.nodes[0].attrs["chain"]
    assert [step[0] for step in chain] == ["add", "tanh", "subtract", "multiply"]
    assert chain[-1][1] == [len(after.nodes[0].inputs) + 2, len(after.nodes[0].inputs) + 1]  # (t - 1) * t
    assert_same(program, after, x)


def test_a_value_read_by_two_groups_splits_them():
    def f(x):
        t = oar.tanh(x + 1.0)
        a = (t - 1.0).sum()  # the reduction ends this reader's group
        return (t * 2.0).exp() + a

    x = rand(6)
    program = capture(f, x)
    after = fused(program)
    assert ops(after) == ["fused_elementwise", "subtract", "sum", "fused_elementwise"]
    assert_same(program, after, x)


def test_mixed_dtypes_and_non_elementwise_ops_stay_apart():
    def f(x, i):
        y = x * 2.0 + 1.0
        s = y.sum(axis=1, keepdim=True)  # a reduction ends the chain
        return (s * 3.0).exp() + oar.cast(i, "float32")

    x, i = rand(2, 3), oar.to_tensor(np.arange(3, dtype="int64"))
    program = capture(f, x, i)
    after = fused(program)
    assert ops(after).count("fused_elementwise") == 2
    assert "sum" in ops(after) and "cast" in ops(after)
    assert_same(program, after, x, i)


def test_single_ops_are_left_alone():
    program = capture(lambda x: x.sum() * 2.0, rand(3))
    assert ops(fused(program)) == ops(program)


def test_evaluate_chain_reuses_buffers_and_leaves_inputs_untouched():
    x = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    keep = x.copy()
    chain = [["add", [0, 0], {}], ["exp", [1], {}], ["multiply", [2, 0], {}]]
    out = evaluate_chain((x,), chain)
    np.testing.assert_array_equal(x, keep)
    np.testing.assert_allclose(out, np.exp(x + x) * x, rtol=1e-6)
    assert out.dtype == np.float32


def test_the_pass_runs_at_level_2_for_inference_only():
    names = lambda **kw: [p.name for p in select_passes(**kw)]  # noqa: E731
    assert "fuse_elementwise" in names(level=2, inference=True)
    assert "fuse_elementwise" not in names(level=2, inference=False)
    assert "fuse_elementwise" not in names(level=1, inference=True)
    chosen = select_passes(level=2, inference=True)
    # after the simplifications: only other passes of its phase (a plugin's, such as oar-slim's) follow it
    assert all(p.phase == "fuse_elementwise" for p in chosen[names(level=2, inference=True).index("fuse_elementwise"):])


def test_to_static_runs_the_fused_program_and_matches_eager():
    def f(x):
        return oar.tanh(x * 0.5 + 1.0) * x - x / 3.0

    x = rand(8, 16)
    expected = f(x).numpy()
    static = to_static(f, input_spec=[InputSpec([None, 16], "float32")])
    with oar.no_grad():
        got = static(x).numpy()
    assert "fused_elementwise" in ops(static._last.inference_executor.program)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    plain = to_static(f, input_spec=[InputSpec([None, 16], "float32")],
                      build_strategy=BuildStrategy(disable_passes=["fuse_elementwise"]))
    with oar.no_grad():
        np.testing.assert_allclose(plain(x).numpy(), got, rtol=1e-6, atol=1e-6)
    assert "fused_elementwise" not in ops(plain._last.inference_executor.program)


def test_the_fused_program_round_trips_through_json():
    def f(x, b):
        return oar.clip(x * b - 0.25, -1.0, 1.0).abs() ** 2

    x, b = rand(3, 4), rand(4, seed=3)
    program = optimize(capture(f, x, b))
    assert "fused_elementwise" in ops(program)
    text = json.dumps(program.to_json())
    loaded = Program.from_json(json.loads(text))
    assert str(loaded) == str(program)
    assert_same(program, loaded, x, b)


def test_jit_save_and_load_run_fused_at_inference(tmp_path):
    def f(x):
        return oar.exp(-(x * x)) * 2.0 + x

    x = rand(2, 5)
    static = to_static(f, input_spec=[InputSpec([None, 5], "float32", name="x")])
    oar.jit.save(static, str(tmp_path / "m"))
    loaded = oar.jit.load(str(tmp_path / "m"))
    assert "fused_elementwise" not in ops(loaded.program())  # the file holds the unfused ops ...
    with oar.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), f(x).numpy(), rtol=1e-6, atol=1e-6)
    assert ops(loaded._capture.inference_executor.program) == ["fused_elementwise"]  # ... fused to run


def test_the_fused_op_has_the_gradient_of_its_chain():
    from oar.ops import fused_elementwise

    x = oar.to_tensor(np.linspace(-1, 1, 6).reshape(2, 3), stop_gradient=False)
    y = oar.to_tensor(np.linspace(0.5, 1.5, 3), stop_gradient=False)
    chain = [["multiply", [0, 1], {}], ["tanh", [2], {}], ["add", [3, 0], {}]]
    fused_elementwise(x, y, chain=chain).sum().backward()
    gx, gy = x.grad.numpy(), y.grad.numpy()
    x.clear_gradient()
    y.clear_gradient()
    (oar.tanh(x * y) + x).sum().backward()
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gy, y.grad.numpy(), rtol=1e-12)


def test_a_chain_that_reads_a_step_twice_or_names_an_unknown_op_is_rejected():
    from oar.errors import ArgumentError
    from oar.ops import fused_elementwise

    with pytest.raises(ArgumentError, match="not fusible"):
        fused_elementwise(rand(2), chain=[["matmul", [0, 0], {}]])
    with pytest.raises(ArgumentError, match="reads"):
        fused_elementwise(rand(2), chain=[["add", [0, 3], {}]])


def test_identity_ops_are_removed_with_the_same_outputs():
    from oar._graph.passes import remove_identity_ops

    def f(x):
        y = x.reshape([2, 6]).reshape([2, 6])  # the second reshape changes nothing
        z = y.flatten(1, 1) * 2.0  # one axis: no change either
        return oar.scale(z, 1.0, 0.0) + oar.scale(z, 2.0, 0.0)

    x = rand(3, 4)
    program = capture(f, x)
    after = remove_identity_ops(program.clone())
    assert ops(after) == ["reshape", "multiply", "scale", "add"]
    assert_same(program, after, x)


def test_an_identity_op_on_an_input_that_is_returned_stays():
    from oar._graph.passes import remove_identity_ops

    x = rand(2, 3)
    program = capture(lambda x: oar.scale(x, 1.0, 0.0), x)
    after = remove_identity_ops(program.clone())
    assert ops(after) == ["scale"]  # else the caller would get its own tensor back
    with oar.no_grad():
        out = Executor(after).run([x])
    assert out is not x

