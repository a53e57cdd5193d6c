"""to_static capture on core functions: printing, the cache and its guards, dynamic dims, graph
breaks, enable_to_static, in-place ops, detach/no_grad, random ops, outputs, methods."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.jit import GraphBreakError, StaticFunction, to_static
from oar.static import BuildStrategy, InputSpec
from oar.testing import line_of

THIS_FILE = __file__



# -- printing -----------------------------------------------------------------------------------
def test_print_shows_one_op_per_line_with_types():
    @to_static(input_spec=[InputSpec([None, 3], name="x"), InputSpec([3], name="w")])
    def f(x, w):
        return oar.tanh(x * w).sum(axis=1)

    assert str(f.concrete_program) == "\n".join([
        "program(%x: float32[?, 3], %w: float32[3]) {",
        "  %2: float32[?, 3] = multiply(%x, %w)",
        "  %3: float32[?, 3] = tanh(%2)",
        "  %4: float32[?] = sum(%3) {axis: [1], keepdim: False}",
        "  return %4",
        "}",
    ])


def test_concrete_program_needs_a_call_or_an_input_spec():
    f = to_static(lambda x: x + 1.0)
    with pytest.raises(ArgumentError, match="input_spec"):
        _ = f.concrete_program
    f(oar.ones([2]))
    assert [n.op for n in f.concrete_program.nodes] == ["add"]


# -- the cache ----------------------------------------------------------------------------------
class Counter:
    def __init__(self):
        self.calls = 0


def counted(body):
    counter = Counter()

    def f(*args, **kwargs):
        counter.calls += 1
        return body(*args, **kwargs)

    return to_static(f), counter


def test_same_shapes_hit_the_cache_and_python_does_not_run_again():
    f, counter = counted(lambda x, y: oar.exp(x) - y)
    x, y = oar.rand([2, 3]), oar.rand([2, 3])
    expected = (oar.exp(x) - y).numpy()
    for _ in range(3):
        np.testing.assert_array_equal(f(x, y).numpy(), expected)
    assert counter.calls == 1 and len(f.program_cache) == 1
    np.testing.assert_array_equal(f(y, x).numpy(), (oar.exp(y) - x).numpy())  # other tensors, same key
    assert counter.calls == 1


def test_shape_dtype_and_python_arguments_are_guards():
    f, counter = counted(lambda x, k: x * k)
    x = oar.ones([2])
    assert f(x, 2).tolist() == [2.0, 2.0]
    assert f(x, 3).tolist() == [3.0, 3.0]  # another Python value: captured again, not the old one
    assert f(oar.ones([3]), 3).tolist() == [3.0, 3.0, 3.0]  # another shape
    assert f(oar.ones([3], dtype="float64"), 3).dtype is oar.float64  # another dtype
    assert counter.calls == 4 and len(f.program_cache) == 4
    f(x, 2)
    assert counter.calls == 4


def test_the_same_tensor_twice_is_a_guard():
    f, counter = counted(lambda a, b: a * 2.0 + b)
    x, y = oar.ones([2]), oar.full([2], 5.0)
    assert f(x, x).tolist() == [3.0, 3.0]
    assert f(x, y).tolist() == [7.0, 7.0]  # not the program that read one input twice
    assert f(y, y).tolist() == [15.0, 15.0]
    assert counter.calls == 2


def test_nested_arguments_and_keywords():
    f, counter = counted(lambda pair, scale=1.0, extra=None: (pair[0] + pair[1]) * scale + extra["b"])
    a, b, c = oar.ones([2]), oar.full([2], 2.0), oar.full([2], 10.0)
    assert f([a, b], scale=2.0, extra={"b": c}).tolist() == [16.0, 16.0]
    assert f([b, a], scale=2.0, extra={"b": oar.ones([2])}).tolist() == [7.0, 7.0]
    assert counter.calls == 1
    assert f([a, b], scale=3.0, extra={"b": c}).tolist() == [19.0, 19.0]
    assert counter.calls == 2


def test_dynamic_batch_dim_serves_every_batch_size():
    f = to_static(lambda x, w: oar.matmul(x, w) + 1.0, input_spec=[InputSpec([None, 4]), InputSpec([4, 2])])
    w = oar.rand([4, 2])
    for n in (1, 2, 5, 7):
        x = oar.rand([n, 4])
        np.testing.assert_array_equal(f(x, w).numpy(), (oar.matmul(x, w) + 1.0).numpy())
    assert len(f.program_cache) == 1
    assert f.concrete_program.feed_values[0].shape == (None, 4)
    assert "  %2: float32[?, 2] = matmul(%x, %w) {transpose_x: False, transpose_y: False}" in \
        str(f.concrete_program).splitlines()


def test_input_spec_that_does_not_fit_captures_for_the_call():
    f = to_static(lambda x: x.sum(axis=0), input_spec=[InputSpec([None, 4])])
    assert f(oar.ones([3, 4])).tolist() == [3.0] * 4
    assert f(oar.ones([2, 5])).tolist() == [2.0] * 5  # another static dim: its own program
    assert len(f.program_cache) == 2


def test_a_size_baked_into_the_program_is_captured_per_size():
    def f(x):
        return oar.reshape(x, [x.shape[0], 2, 2]) + oar.zeros([x.shape[0], 2, 2])

    static = to_static(f, input_spec=[InputSpec([None, 4])])
    with pytest.warns(UserWarning, match="captured again for each size"):
        assert static(oar.ones([3, 4])).shape == [3, 2, 2]
    for n in (1, 3, 6):
        x = oar.rand([n, 4])
        np.testing.assert_array_equal(static(x).numpy(), f(x).numpy())
    assert len(static.program_cache) == 3


def test_the_second_trace_of_a_dynamic_dim_has_no_side_effects():
    state = oar.zeros([3])
    state.persistable = True  # a buffer the function updates in place

    def f(x):
        state.add_(x.sum(axis=0))
        return oar.randn([3]) + state

    static = to_static(f, input_spec=[InputSpec([None, 3])])
    oar.seed(5)
    eager_state = oar.zeros([3])
    x = oar.ones([4, 3])
    static(x)
    assert state.tolist() == [4.0, 4.0, 4.0]  # updated once, not twice
    after_static = oar.get_rng_state()
    oar.seed(5)
    eager_state.add_(x.sum(axis=0))
    oar.randn([3])
    assert oar.get_rng_state() == after_static  # one draw, as eager


# -- graph breaks -------------------------------------------------------------------------------
def branchy(x):
    if float(x.sum()) > 0:  # data-dependent Python (a value read into Python): cannot be captured
        return x * 2.0
    return x - 1.0


def test_data_dependent_python_falls_back_with_one_warning_naming_the_line():
    f = to_static(branchy)
    line = line_of(branchy, "if float(x.sum()) > 0")
    with pytest.warns(UserWarning, match=rf"runs eagerly.*test_capture\.py:{line}\)") as caught:
        assert f(oar.ones([2])).tolist() == [2.0, 2.0]
    assert caught[0].filename == THIS_FILE and caught[0].lineno == line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(-oar.ones([2])).tolist() == [-2.0, -2.0]  # the other branch: eager, right
        assert f(oar.ones([2])).tolist() == [2.0, 2.0]


def test_full_graph_raises_with_the_line():
    f = to_static(branchy, full_graph=True)
    line = line_of(branchy, "if float(x.sum()) > 0")
    with pytest.raises(GraphBreakError, match=rf"test_capture\.py:{line}: Python reads the values"):
        f(oar.ones([2]))


@pytest.mark.parametrize("read", [
    lambda t: float(t.sum()), lambda t: int(t.sum()), lambda t: t.sum().item(), lambda t: t.numpy(),
    lambda t: t.tolist(), lambda t: np.asarray(t), lambda t: repr(t), lambda t: bool(t.sum() > 0),
], ids=["float", "int", "item", "numpy", "tolist", "asarray", "repr", "bool"])
def test_every_way_of_reading_a_traced_tensor_breaks(read):
    with pytest.raises(GraphBreakError):
        to_static(lambda x: (read(x), x + 1.0)[1], full_graph=True)(oar.ones([2]))


def test_reading_a_constant_or_a_shape_is_fine():
    def f(x):
        c = oar.to_tensor([3.0])
        return x * float(c) + x.shape[0] + len(x)

    static = to_static(f, full_graph=True)
    assert static(oar.ones([2])).tolist() == [7.0, 7.0]
    assert static(oar.ones([2])).tolist() == [7.0, 7.0]


def test_reading_a_parameter_into_python_breaks():
    w = oar.to_tensor([2.0], stop_gradient=False)
    with pytest.raises(GraphBreakError):
        to_static(lambda x: x * float(w), full_graph=True)(oar.ones([2]))


def test_reseeding_inside_the_function_breaks():
    def f(x):
        oar.seed(3)
        return x + oar.rand([2])

    with pytest.raises(GraphBreakError, match="random generator"):
        to_static(f, full_graph=True)(oar.ones([2]))


def test_returning_an_object_a_program_cannot_hold_breaks():
    with pytest.raises(GraphBreakError, match="returns a Counter"):
        to_static(lambda x: Counter(), full_graph=True)(oar.ones([2]))


def test_a_caught_graph_break_still_falls_back():
    def f(x):
        try:
            float(x.sum())
        except Exception:  # noqa: BLE001 - user code swallowing everything
            pass
        return x + 1.0

    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        static(oar.ones([2]))
    assert static._fallback is not None and not static.program_cache


def test_enable_to_static_false_runs_python():
    f, counter = counted(lambda x: x * 2.0)
    try:
        oar.jit.enable_to_static(False)
        f(oar.ones([2]))
        f(oar.ones([2]))
        assert counter.calls == 2 and not f.program_cache
    finally:
        oar.jit.enable_to_static(True)
    f(oar.ones([2]))
    f(oar.ones([2]))
    assert counter.calls == 3
    with pytest.raises(ArgumentError):
        oar.jit.enable_to_static(1)


# -- semantics ----------------------------------------------------------------------------------
def test_in_place_ops_on_inputs_and_intermediates():
    def f(x):
        y = x * 2.0
        y.add_(1.0)
        y[0] = 0.0
        x.multiply_(oar.full([2], 3.0))
        return y + x

    static = to_static(f)
    for _ in range(3):
        a, b = oar.ones([2]), oar.ones([2])
        got, expected = static(a), f(b)
        assert got.tolist() == expected.tolist() and a.tolist() == b.tolist() == [3.0, 3.0]
    assert [kind for kind, _, _ in static.concrete_program.updates] == ["feed"]


def test_detach_and_no_grad_block_gradients_as_in_eager():
    def f(x, w):
        y = (x * w).detach()
        with oar.no_grad():
            z = x * w * 3.0
        return (y + z + x * w * w).sum()

    static = to_static(f)
    x = oar.to_tensor([1.0, 2.0])
    grads = []
    for fn in (f, static, static):
        w = oar.to_tensor([2.0, 3.0], stop_gradient=False)
        fn(x, w).backward()
        grads.append(w.grad.tolist())
    assert grads[0] == grads[1] == grads[2] == [4.0, 12.0]


def test_random_ops_are_replayed_not_baked():
    def f(x):
        return x + oar.randn(x.shape) + oar.uniform([2], min=0.0, max=1.0)

    static = to_static(f)
    for seed in (1, 2, 3):
        oar.seed(seed)
        got = static(oar.ones([2])).numpy()
        oar.seed(seed)
        np.testing.assert_array_equal(got, f(oar.ones([2])).numpy())
    assert {"gaussian", "uniform"} <= {n.op for n in static.concrete_program.nodes}


def test_outputs_keep_their_structure():
    def f(x):
        return {"sum": x.sum(), "pair": (x, x * 2.0), "list": [x + 1.0, None, 3, "s"], "same": x}

    static = to_static(f)
    x = oar.ones([2])
    static(x)
    out = static(x)
    assert out["pair"][0] is x and out["same"] is x  # an input comes back as itself, as in eager
    assert out["sum"].item() == 2.0 and out["pair"][1].tolist() == [2.0, 2.0]
    assert out["list"][0].tolist() == [2.0, 2.0] and out["list"][1:] == [None, 3, "s"]


def test_a_returned_constant_is_a_copy():
    static = to_static(lambda x: (x + 1.0, oar.to_tensor([5.0])))
    static(oar.ones([1]))
    _, c = static(oar.ones([1]))
    c.add_(1.0)
    assert static(oar.ones([1]))[1].tolist() == [5.0]


def test_methods_bind_their_instance():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @to_static
        def apply(self, x):
            return x * self.k

    a, b = Scaler(2.0), Scaler(3.0)
    assert a.apply(oar.ones([2])).tolist() == [2.0, 2.0]
    assert b.apply(oar.ones([2])).tolist() == [3.0, 3.0]
    assert a.apply is a.apply and isinstance(Scaler.apply, StaticFunction)
    assert to_static(b.apply)(oar.ones([1])).tolist() == [3.0]


def test_a_static_function_called_inside_another_is_inlined():
    inner = to_static(lambda x: oar.exp(x))
    outer = to_static(lambda x: inner(x) + 1.0)
    outer(oar.zeros([2]))
    assert outer(oar.zeros([2])).tolist() == [2.0, 2.0]
    assert [n.op for n in outer.concrete_program.nodes] == ["exp", "add"]


def test_get_concrete_program_runs_nothing_visible():
    state = oar.zeros([2])
    state.persistable = True

    @to_static(input_spec=[InputSpec([None, 2], name="x")])
    def f(x):
        state.add_(1.0)
        return x + oar.rand([2])

    before = oar.get_rng_state()
    program = f.get_concrete_program()
    assert oar.get_rng_state() == before and state.tolist() == [0.0, 0.0]
    assert program.feed_values[0].name == "x" and program.updates


def test_rollback_and_not_to_static():
    def g(x):
        return x + 1.0

    f = to_static(g)
    assert f.rollback() is g and f.dygraph_function is g
    assert oar.jit.not_to_static(g) is g


def test_to_static_arguments_are_checked():
    with pytest.raises(ArgumentError, match="backend"):
        to_static(lambda x: x, backend="tvm")
    with pytest.raises(ArgumentError, match="input_spec"):
        to_static(lambda x: x, input_spec=InputSpec([2]))
    with pytest.raises(ArgumentError, match="unexpected"):
        to_static(lambda x: x, fuse=True)
    with pytest.raises(ArgumentError, match="build_strategy"):
        to_static(lambda x: x, build_strategy="fast")
    assert to_static(lambda x: x, backend="CINN", build_strategy=BuildStrategy(1))(oar.ones([1])).tolist() == [1.0]


# -- InputSpec ----------------------------------------------------------------------------------
def test_input_spec_api():
    spec = InputSpec([None, 784], "float32", "x")
    assert spec.shape == (-1, 784) and spec.dtype is oar.float32 and spec.name == "x"
    assert repr(spec) == "InputSpec(shape=(-1, 784), dtype=oar.float32, name=x, stop_gradient=False)"
    t = oar.ones([2, 3], dtype="int64")
    assert InputSpec.from_tensor(t, name="t") == InputSpec([2, 3], "int64", "t")
    assert InputSpec.from_numpy(np.zeros([4], np.float64)).dtype is oar.float64
    assert InputSpec([3]).batch(8).shape == (8, 3)
    assert InputSpec([3]).batch([None]).shape == (-1, 3)
    assert InputSpec([8, 3]).unbatch().shape == (3,)
    assert InputSpec([-1, 2]).fits(oar.ones([5, 2])) and not InputSpec([-1, 2]).fits(oar.ones([5, 3]))
    for bad in ([2.5], "x", [-2]):
        with pytest.raises(ArgumentError):
            InputSpec(bad)
    with pytest.raises(ArgumentError):
        InputSpec([]).unbatch()
    with pytest.raises(ArgumentError):
        InputSpec([2]).batch([1, 2])
    assert hash(InputSpec([2], name="a")) == hash(InputSpec([2], name="a"))


def test_build_strategy_coercion():
    assert BuildStrategy.coerce(None).optimization_level == 2
    assert BuildStrategy.coerce(0).optimization_level == 0
    assert BuildStrategy.coerce({"disable_passes": ["constant_folding"]}).disable_passes == ["constant_folding"]
    with pytest.raises(ArgumentError):
        BuildStrategy(optimization_level=-1)


def test_backward_or_an_optimizer_step_inside_the_function_breaks():
    w = oar.to_tensor([1.0, 2.0], stop_gradient=False)

    def step(x):
        loss = (x * w).sum()
        loss.backward()
        return loss

    with pytest.raises(GraphBreakError, match="loss.backward\\(\\) and the optimizer outside"):
        to_static(step, full_graph=True)(oar.ones([2]))

    def update(x):
        loss = (x * w).sum()
        w._data -= 0.1  # what an optimizer does: raw arrays, a version bump
        w._bump_version()
        return loss

    with pytest.raises(GraphBreakError, match="optimizer step"):
        to_static(update, full_graph=True)(oar.ones([2]))

    def clear(x):
        y = x * w
        w.clear_grad()
        return y

    w.grad = oar.ones([2])
    with pytest.raises(GraphBreakError, match="clear_grad"):
        to_static(clear, full_graph=True)(oar.ones([2]))


def test_clearing_a_layer_parameter_gradient_inside_forward_breaks():
    class Model:
        def __init__(self):
            self.w = oar.to_tensor([1.0], stop_gradient=False)

        def named_parameters(self):
            return [("w", self.w)]

        def named_buffers(self):
            return []

        @to_static(full_graph=True)
        def forward(self, x):
            self.w.clear_grad()  # before the parameter is read: the layer's state is watched from the start
            return x * self.w

    m = Model()
    m.w.grad = oar.ones([1])
    with pytest.raises(GraphBreakError, match="clear_grad"):
        m.forward(oar.ones([1]))


def test_a_decorated_method_does_not_keep_its_instance_alive():
    import gc
    import weakref

    class Model:
        @to_static
        def forward(self, x):
            return x * 2.0

    m = Model()
    m.forward(oar.ones([2]))
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None and len(Model.forward._bound) == 0


# -- the hot path: the last hit's guards ---------------------------------------------------------
def test_the_last_hit_is_reused_only_for_calls_its_guards_match():
    calls = []

    @to_static
    def f(x, y):
        calls.append(1)  # runs only when capturing
        return x * 2.0 + y

    a, b = oar.ones([3]), oar.full([3], 0.5)
    with oar.no_grad():
        f(a, b)
        f(a, b)  # the cache hit that arms the hot path
        assert f._fast is not None
        captures = len(calls)
        for x, y in [(a, b), (oar.ones([4]), oar.ones([4])), (a, b), (a.astype("float64"), b.astype("float64")),
                     (a, a), (a, b)]:
            got = f(x, y).numpy()  # another shape, another dtype, one tensor twice: other entries
            np.testing.assert_allclose(got, x.numpy() * 2.0 + y.numpy())
            assert got.dtype == x.numpy().dtype
        assert len(calls) == captures + 3 and len(f.program_cache) == 4
    f.clear_cache()
    assert f._fast is None


def _state_writers():
    """A trained weight and a persistable buffer the function only overwrites (a quantizer's
    observed scale), by apply_inplace and by oar.assign(output=)."""
    from oar.ops import apply_inplace

    weight = oar.to_tensor(np.linspace(-1, 1, 9, dtype=np.float32).reshape(3, 3), stop_gradient=False)
    scale = oar.zeros([])
    scale.persistable = True

    def by_apply_inplace(x):
        y = oar.matmul(x, weight)
        with oar.no_grad():
            apply_inplace(scale, y.abs().max())
        return y * 2.0

    def by_assign(x):
        y = oar.matmul(x, weight)
        oar.assign(y.abs().max(), output=scale)
        return y * 2.0

    return weight, scale, {"apply_inplace": by_apply_inplace, "assign": by_assign}


@pytest.mark.parametrize("writer", ["apply_inplace", "assign"])
def test_a_buffer_the_function_only_overwrites_is_updated_on_every_training_call(writer):
    inputs = [np.random.default_rng(i).standard_normal([4, 3]).astype(np.float32) for i in range(4)]
    seen = {}
    for static in (False, True):
        weight, scale, writers = _state_writers()
        fn = to_static(writers[writer]) if static else writers[writer]
        values = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # assign's buffer swap sends the function back to eager, with a warning
            for x in inputs:
                fn(oar.to_tensor(x)).sum().backward()
                values.append(float(scale))
        seen[static] = values
        assert weight.grad is not None
    assert seen[True] == seen[False] and len(set(seen[False])) == len(inputs)
