"""oar.static.nn.cond / while_loop: eager semantics, capture into cond / while nodes, one program
right for every input, gradients, passes, printing, JSON and jit.save / jit.load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import oar
from oar._graph.executor import Executor
from oar._graph.passes import optimize
from oar._graph.program import SCHEMA_VERSION, Program
from oar._graph.tracing import GraphBreakError
from oar.errors import ArgumentError, DTypeError, SerializationError, ShapeError
from oar.jit import to_static
from oar.static import InputSpec
from oar.static.nn import cond, while_loop


def t(values, dtype="float32", stop_gradient=True):
    return oar.to_tensor(np.asarray(values, dtype=dtype), stop_gradient=stop_gradient)


def control_nodes(program: Program) -> list[str]:
    return [n.op for n in program.walk() if n.op in ("cond", "while")]


# ------------------------------------------------------------------------------------------
# eager
# ------------------------------------------------------------------------------------------
def test_eager_cond_runs_only_the_taken_branch():
    ran = []
    x = t([1.0, -2.0])

    def yes():
        ran.append("true")
        return x * 2.0

    def no():
        ran.append("false")
        return x - 1.0

    assert cond(x.sum() < 0, yes, no).tolist() == [2.0, -4.0]
    assert cond(x.sum() > 0, yes, no).tolist() == [0.0, -3.0]
    assert ran == ["true", "false"]


def test_eager_cond_structures_none_and_python_predicates():
    x = t([1.0, 2.0])
    out = cond(t(True, "bool"), lambda: {"a": [x, x * 2.0], "b": 3}, lambda: None)
    assert out["a"][1].tolist() == [2.0, 4.0] and out["b"] == 3
    assert cond(t([False], "bool"), lambda: x) is None  # a missing branch returns None
    assert cond(True, lambda: 1, lambda: 2) == 1  # a Python bool: a Python if
    assert cond(0, lambda: 1, lambda: 2) == 2


def test_cond_rejects_bad_predicates_and_branches():
    x = t([1.0, 2.0])
    with pytest.raises(DTypeError, match=r"cond: pred must be a bool tensor .*float32\[2\]"):
        cond(x, lambda: x, lambda: x)
    with pytest.raises(ShapeError, match=r"one element .*bool\[2\]"):
        cond(x > 0, lambda: x, lambda: x)
    with pytest.raises(ArgumentError, match="true_fn must be a callable"):
        cond(x.sum() > 0, x, lambda: x)


def test_eager_while_loop_and_errors():
    i, s = while_loop(lambda i, s: i < 4, lambda i, s: [i + 1, s + i.astype("float32")], [t(0, "int64"), t(0.0)])
    assert i.item() == 4 and s.item() == 6.0
    # one loop variable: body may return the tensor itself
    (y,) = while_loop(lambda y: y.sum() < 10.0, lambda y: y * 2.0, [t([1.0, 1.0])])
    assert y.tolist() == [8.0, 8.0]
    with pytest.raises(ArgumentError, match="loop_vars must not be empty"):
        while_loop(lambda: t(False, "bool"), lambda: [], [])
    with pytest.raises(ArgumentError, match=r"body must return the loop variables' structure \(2 values"):
        while_loop(lambda i, s: i < 3, lambda i, s: [i + 1], [t(0, "int64"), t(0.0)])
    with pytest.raises(DTypeError, match="the value cond returns must be a bool tensor"):
        while_loop(lambda i: i + 1, lambda i: i + 1, [t(0, "int64")])


def test_eager_gradients_follow_the_taken_branch_and_every_iteration():
    x = t([0.5, -1.5], stop_gradient=False)
    y = cond(x.sum() < 0, lambda: (x * x).sum(), lambda: x.sum())
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [1.0, -3.0])
    x = t([0.5, 2.0], stop_gradient=False)
    _, y = while_loop(lambda i, y: i < 3, lambda i, y: [i + 1, y * x], [t(0, "int64"), t([1.0, 1.0])])
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.array([0.5, 2.0]) ** 2, rtol=1e-6)


# ------------------------------------------------------------------------------------------
# one captured program, right for every input
# ------------------------------------------------------------------------------------------
def branchy(x):
    return cond(x.sum() > 0, lambda: oar.exp(x) * 2.0, lambda: x - 1.0)


def looping(x, n):
    i = oar.zeros([], "int64")
    _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, y * 0.5 + 1.0], [i, x])
    return y


def test_cond_program_takes_either_branch():
    f = to_static(branchy, input_spec=[InputSpec([None, 3], name="x")])
    inputs = [np.array([[1.0, 2.0, 3.0]]), np.array([[-1.0, -2.0, 0.5], [0.1, 0.1, -3.0]]), np.array([[2.0, -1.0, 0.0]])]
    for a in inputs:
        x = t(a)
        np.testing.assert_allclose(f(x).numpy(), branchy(x).numpy(), rtol=1e-6)
    assert len(f.program_cache) == 1
    assert control_nodes(f.concrete_program) == ["cond"]
    with oar.no_grad():  # the inference executor
        for a in inputs:
            np.testing.assert_allclose(f(t(a)).numpy(), branchy(t(a)).numpy(), rtol=1e-6)


def test_while_program_runs_as_many_iterations_as_each_input_needs():
    f = to_static(looping)
    for n in (3, 0, 1, 7):
        x, nt = t([1.0, -4.0]), t(n, "int64")
        np.testing.assert_allclose(f(x, nt).numpy(), looping(x, nt).numpy(), rtol=1e-6)
    assert len(f.program_cache) == 1
    assert control_nodes(f.concrete_program) == ["while"]


def test_nested_cond_in_while_and_while_in_cond():
    w = t([0.5, 1.5, -1.0], stop_gradient=False)
    w.name = "w"

    def f(x, n):
        def body(i, y):
            return [i + 1, cond(y.sum() > 4.0, lambda: y * 0.5, lambda: y + w)]

        _, y = while_loop(lambda i, y: i < n, body, [oar.zeros([], "int64"), x])

        def count_down():
            (k, z) = while_loop(lambda k, z: k > 0, lambda k, z: [k - 1, z - w], [n, y])
            return z

        return cond(y.mean() > 1.0, count_down, lambda: y * w)

    sf = to_static(f)
    for xs, n in [([1.0, 2.0, 3.0], 3), ([0.1, 0.2, 0.1], 1), ([0.1, 0.2, 0.1], 0), ([5.0, 5.0, 5.0], 6)]:
        x, nt = t(xs), t(n, "int64")
        np.testing.assert_allclose(sf(x, nt).numpy(), f(x, nt).numpy(), rtol=1e-6)
    assert len(sf.program_cache) == 1
    assert control_nodes(sf.concrete_program) == ["while", "cond", "cond", "while"]
    assert "w" in sf.concrete_program.params  # read inside blocks, still a named parameter


def test_loop_variable_whose_size_changes_becomes_dynamic():
    def grow(x, n):
        i = oar.zeros([], "int64")
        _, y = while_loop(lambda i, y: i < n, lambda i, y: [i + 1, oar.concat([y, y[:1] * 2.0])], [i, x])
        return y

    f = to_static(grow)
    for n in (3, 0, 5):
        x, nt = t([1.0, 2.0]), t(n, "int64")
        assert f(x, nt).tolist() == grow(x, nt).tolist()
    assert len(f.program_cache) == 1
    node = f.concrete_program.nodes[-1]
    assert node.op == "while" and f.concrete_program.values[node.outputs[1]].shape == (None,)


def test_branches_of_different_sizes_give_a_dynamic_dim():
    def f(x):
        return cond(x.sum() > 0, lambda: x[:2], lambda: x * 2.0)

    sf = to_static(f)
    for a in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]):
        assert sf(t(a)).tolist() == f(t(a)).tolist()
    node = sf.concrete_program.nodes[-1]
    assert sf.concrete_program.values[node.outputs[0]].shape == (None,)


def test_structure_and_dtype_mismatches_name_both_branches():
    def f(x):
        return cond(x.sum() > 0, lambda: (x, x), lambda: x)

    with pytest.raises(ArgumentError, match=r"true_fn returned \(Tensor\(float32\[2\]\), Tensor\(float32\[2\]\)\) "
                                            r"and false_fn returned Tensor\(float32\[2\]\) \(at .*test_control_flow.py:\d+\)"):
        to_static(f)(t([1.0, 2.0]))

    def g(x):
        return cond(x.sum() > 0, lambda: x, lambda: x.astype("int64"))

    with pytest.raises(ArgumentError, match=r"output tensor 0 .*Tensor\(float32\[2\]\).*Tensor\(int64\[2\]\)"):
        to_static(g)(t([1.0, 2.0]))

    def h(x):
        return while_loop(lambda y: y.sum() < 5.0, lambda y: [y.astype("float64")], [x])[0]

    with pytest.raises(ArgumentError, match="loop variable 0 is float32.*body returns Tensor\\(float64.*"
                                            "test_control_flow.py:"):
        to_static(h)(t([1.0, 2.0]))


def test_the_untaken_branch_leaves_no_trace():
    oar.seed(7)
    rng_before = oar.get_rng_state()

    def f(x):
        return cond(x.sum() > 0, lambda: x * 2.0, lambda: x + oar.rand([2]))

    out = to_static(f)(t([1.0, 1.0]))
    assert out.tolist() == [2.0, 2.0]
    # the false branch (a random draw) was traced but not taken: the generator did not move
    assert np.array_equal(oar.rand([3]).numpy(), (oar.set_rng_state(rng_before), oar.rand([3]))[1].numpy())


def test_tensor_leaked_out_of_a_branch_breaks_the_graph():
    leaked = []

    def f(x):
        def yes():
            y = x * 2.0
            leaked.append(y)
            return y + 1.0

        out = cond(x.sum() > 0, yes, lambda: x)
        return out + leaked[-1]

    with pytest.raises(GraphBreakError, match="computed inside a cond branch"):
        to_static(f, full_graph=True)(t([1.0, 2.0]))
    leaked.clear()
    sf = to_static(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sf(t([1.0, 2.0])).tolist() == [5.0, 9.0]
    assert any("runs eagerly" in str(w.message) for w in caught)


def test_in_place_write_to_an_outer_tensor_breaks_the_graph_and_is_undone_when_untaken():
    state = t([0.0, 0.0])

    def f(x):
        def bump():
            state.add_(x)
            return x * 1.0

        return cond(x.sum() < 0, bump, lambda: x * 3.0)

    sf = to_static(f)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert sf(t([1.0, 2.0])).tolist() == [3.0, 6.0]
    assert any("writes in place" in str(w.message) for w in caught)
    assert state.tolist() == [0.0, 0.0]  # the untaken branch's write was undone
    assert sf(t([-1.0, -2.0])).tolist() == [-1.0, -2.0]  # eager from now on
    assert state.tolist() == [-1.0, -2.0]


# ------------------------------------------------------------------------------------------
# gradients through to_static
# ------------------------------------------------------------------------------------------
def _grads(fn, xs, w):
    x = t(xs, stop_gradient=False)
    w.clear_grad()
    (fn(x) ** 2).sum().backward()
    return x.grad.numpy(), w.grad.numpy()


def test_gradients_through_the_program_equal_eager_and_finite_differences():
    w = t([0.3, -0.7, 1.1], stop_gradient=False)

    def f(x):
        def body(i, y):
            return [i + 1, cond(y.sum() > 0, lambda: y * w, lambda: oar.tanh(y) + w)]

        _, y = while_loop(lambda i, y: i < 3, body, [oar.zeros([], "int64"), x])
        return y

    sf = to_static(f)
    for xs in ([0.5, 1.0, 2.0], [-2.0, 0.1, -0.4]):
        got = _grads(sf, xs, w)
        want = _grads(f, xs, w)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    assert len(sf.program_cache) == 1

    def loss(a):
        return float((f(t(a)) ** 2).sum().item())

    a = np.array([0.5, 1.0, 2.0])
    numeric = [(loss(a + e) - loss(a - e)) / 2e-3 for e in np.eye(3) * 1e-3]
    np.testing.assert_allclose(_grads(sf, a, w)[0], numeric, rtol=2e-2, atol=2e-3)


# ------------------------------------------------------------------------------------------
# the IR: passes, printing, JSON
# ------------------------------------------------------------------------------------------
def captured(fn, *args):
    sf = to_static(fn)
    sf(*args)
    return sf.concrete_program


def nested(x, n):
    def body(i, y):
        return [i + 1, cond(y.sum() > 4.0, lambda: y * 0.5, lambda: y + 1.0)]

    _, y = while_loop(lambda i, y: i < n, body, [oar.zeros([], "int64"), x])
    unused = cond(y.sum() > 0, lambda: y * 3.0, lambda: y)  # noqa: F841 - dead code for DCE
    return y * (oar.ones([3]) + 1.0)


def test_passes_on_and_off_give_the_same_results_and_keep_block_inputs():
    program = captured(nested, t([1.0, 2.0, 3.0]), t(2, "int64"))
    program.validate()
    for level in (0, 1, 2, 3):
        opt = optimize(program, level)
        opt.validate()
        for xs, n in [([1.0, 2.0, 3.0], 4), ([0.1, 0.1, 0.1], 1), ([9.0, 9.0, 9.0], 0)]:
            feeds = [t(xs), t(n, "int64")]
            np.testing.assert_allclose(Executor(opt).run(feeds).numpy(), nested(*feeds).numpy(), rtol=1e-6)
    assert "while" in control_nodes(optimize(program, 2))


def test_passes_run_inside_blocks():
    def f(x):
        return cond(x.sum() > 0, lambda: x * (oar.ones([3]) + 1.0), lambda: x - (oar.ones([3]) * 3.0))

    program = captured(f, t([1.0, 2.0, 3.0]))
    before = [n.op for n in program.walk()]
    assert before.count("add") == 1 and before.count("multiply") == 2
    opt = optimize(program, 1)
    node = next(n for n in opt.nodes if n.op == "cond")
    assert [n.op for n in node.attrs["true_block"].nodes] == ["multiply"]  # ones + 1 folded
    assert [n.op for n in node.attrs["false_block"].nodes] == ["subtract"]
    for a in ([1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]):
        np.testing.assert_allclose(Executor(opt).run([t(a)]).numpy(), f(t(a)).numpy())


def test_printing_shows_blocks_indented():
    text = str(captured(branchy, t([1.0, 2.0, 3.0])))
    assert "= cond(" in text
    assert "\n    true_block(%" in text and "\n    false_block(%" in text
    assert "\n      %" in text  # the blocks' ops, one level deeper
    assert "exp(" in text.split("false_block")[0] and "subtract(" in text.split("false_block")[1]


def test_json_round_trip_keeps_the_blocks_and_says_version_2():
    program = captured(nested, t([1.0, 2.0, 3.0]), t(2, "int64"))
    data = json.loads(json.dumps(program.to_json()))
    assert data["version"] == 2 == SCHEMA_VERSION
    back = Program.from_json(data)
    assert str(back) == str(program)
    assert back.to_json() == data
    for xs, n in [([1.0, 2.0, 3.0], 4), ([0.1, 0.1, 0.1], 1)]:
        feeds = [t(xs), t(n, "int64")]
        np.testing.assert_allclose(Executor(back).run(feeds).numpy(), nested(*feeds).numpy(), rtol=1e-6)
    clone = program.clone()
    clone.nodes[0].attrs["body_block"].nodes.clear()  # a clone's blocks are its own
    assert program.nodes[0].attrs["body_block"].nodes
    # a program without control flow is still written as version 1
    assert captured(lambda x: x * 2.0, t([1.0])).to_json()["version"] == 1
    newer = dict(data, version=SCHEMA_VERSION + 1)
    with pytest.raises(SerializationError, match="newer than this oar reads"):
        Program.from_json(newer)


def test_validate_catches_a_block_reading_an_outer_value():
    program = captured(branchy, t([1.0, 2.0, 3.0]))
    node = next(n for n in program.nodes if n.op == "cond")
    block = node.attrs["true_block"]
    block.nodes[0].inputs[0] = program.feeds[0]  # not a value of the block
    with pytest.raises(ValueError, match="true_block: .* reads %"):
        program.validate()


# ------------------------------------------------------------------------------------------
# jit.save / jit.load in a fresh process
# ------------------------------------------------------------------------------------------
def model(x, n):
    def body(i, y):
        return [i + 1, cond(y.sum() > 4.0, lambda: y * 0.5, lambda: y + 1.0)]

    _, y = while_loop(lambda i, y: i < n, body, [oar.zeros([], "int64"), x])
    return cond(y.mean() > 2.0, lambda: y - 2.0, lambda: y * 3.0)


CASES = [([1.0, 2.0, 3.0], 4), ([0.1, 0.2, 0.3], 1), ([0.1, 0.2, 0.3], 0), ([3.0, 3.0, 3.0], 2)]


def test_saved_model_with_cond_and_while_matches_eager_in_a_fresh_process(tmp_path):
    f = to_static(model, input_spec=[InputSpec([None], name="x"), InputSpec([], "int64", name="n")])
    prefix = str(tmp_path / "cf")
    oar.jit.save(f, prefix)
    expected = [model(t(x), t(n, "int64")).numpy().tolist() for x, n in CASES]
    script = textwrap.dedent(f"""
        import json, numpy as np, oar
        layer = oar.jit.load({prefix!r})
        out = []
        for x, n in {CASES!r}:
            out.append(layer(oar.to_tensor(np.array(x, np.float32)), oar.to_tensor(n)).numpy().tolist())
        print(json.dumps(out))
    """)
    env = dict(os.environ)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout.strip().splitlines()[-1])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    assert len({json.dumps(e) for e in expected}) == len(expected)  # the cases take different paths


def test_a_damaged_block_in_a_file_is_a_clear_error():
    data = captured(branchy, t([1.0, 2.0, 3.0])).to_json()
    node = next(n for n in data["nodes"] if n["op"] == "cond")
    node["inputs"] = node["inputs"][:1]  # the operands the blocks read are gone
    with pytest.raises(SerializationError, match=r"cond.*does not fit its blocks: cond: true_block takes 1 inputs"):
        Program.from_json(json.loads(json.dumps(data)))


def test_an_error_inside_a_block_says_which_block():
    program = captured(branchy, t([1.0, 2.0, 3.0]))
    node = next(n for n in program.nodes if n.op == "cond")
    node.attrs["false_block"].nodes[0].attrs["bogus"] = 1  # subtract gets an argument it does not take
    with pytest.raises(oar.errors.KernelError, match="in cond's false_block: .*subtract"):
        Executor(program).run([t([-1.0, -2.0, -3.0])])


def test_in_place_updates_of_loop_variables_stay_inside_the_loop():
    def f(x, n):
        i = oar.zeros([], "int64")

        def body(i, y):
            i += 1  # in place on the loop's own tensor
            y = y * 1.5
            y += 1.0
            return [i, y]

        out = while_loop(lambda i, y: i < n, body, [i, x])
        return out[1], i  # the caller's i is unchanged

    sf = to_static(f, full_graph=True)
    for n in (0, 2, 5):
        x, nt = t([1.0, 2.0]), t(n, "int64")
        (y, i), (ey, ei) = sf(x, nt), f(x, nt)
        np.testing.assert_allclose(y.numpy(), ey.numpy(), rtol=1e-6)
        assert i.item() == ei.item() == 0
    assert len(sf.program_cache) == 1
