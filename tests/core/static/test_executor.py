"""The executor: kernels looked up once, dead values freed, buffers reused, the parameter prelude
cached per parameter version, no autograd at inference, the tape recorded in replay."""

from __future__ import annotations

import contextlib
import tracemalloc
import types
import weakref

import numpy as np
import pytest

import oar
from oar._graph.executor import Executor
from oar.errors import KernelError
from oar.jit import to_static


@contextlib.contextmanager
def kernel_plugin(name: str, op: str, fn, dtypes):
    plugin = types.ModuleType(name)

    @oar.hookimpl
    def oar_register_kernels(kernels):
        kernels.register(op, "cpu", fn, dtypes=dtypes, priority=1000)

    plugin.oar_register_kernels = oar_register_kernels
    oar.plugins.register(plugin, name=name)
    try:
        yield
    finally:
        oar.plugins.unregister(name)


def test_dead_values_are_freed_as_soon_as_they_are_dead():
    made: list = []
    alive: list = []

    def exp_kernel(x):
        alive.append([r() is not None for r in made])
        out = np.exp(x)
        made.append(weakref.ref(out))
        return out

    def chain(x):
        values = [x]
        for _ in range(5):
            values.append(oar.exp(values[-1] * 0.5))  # eager keeps every one alive in the list
        return values[-1]

    with kernel_plugin("test_memory_plan", "exp", exp_kernel, ["float64"]):
        f = to_static(chain, build_strategy={"disable_passes": ["fuse_elementwise"]})  # exp's kernel must run
        x = oar.to_tensor(np.linspace(0, 1, 8))
        f(x)
        made.clear()
        alive.clear()
        with oar.no_grad():
            got = f(x)
    np.testing.assert_array_equal(got.numpy(), chain(x).numpy())
    # When exp runs for the k-th time, the exp outputs before the previous one are gone.
    assert alive == [[], [True], [False, True], [False, False, True], [False, False, False, True]]


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_elementwise_results_reuse_dead_buffers():
    def f(x):
        return (((x + 1.0) * 2.0) - 3.0) / 4.0

    static = to_static(f)
    x = oar.to_tensor(np.linspace(0, 1, 1_000_000))
    static(x)
    program = static.concrete_program
    planned, plain = Executor(program), Executor(program, reuse_buffers=False)
    expected = f(x).numpy()
    for ex in (planned, plain):
        np.testing.assert_array_equal(ex.run([x]).numpy(), expected)
    megabytes = 8_000_000
    assert _peak(lambda: planned.run([x])) < 1.5 * megabytes <= _peak(lambda: plain.run([x]))


def test_a_buffer_another_value_views_is_not_overwritten():
    def f(x):
        y = x + 1.0
        v = oar.reshape(y, [-1])  # a view of y's buffer, returned
        w = y * 2.0  # y dies here, but v still reads its buffer
        return v, w

    static = to_static(f)
    x = oar.rand([2, 3])
    static(x)
    with oar.no_grad():
        v, w = static(x)
    np.testing.assert_array_equal(v.numpy(), (x + 1.0).numpy().reshape(-1))
    np.testing.assert_array_equal(w.numpy(), ((x + 1.0) * 2.0).numpy())


def test_parameter_only_nodes_run_once_per_parameter_version():
    calls = []

    def multiply(a, b):
        calls.append(a.shape)
        return np.multiply(a, b)

    w = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)

    def f(x):
        return oar.matmul(x, w * 2.0 + 1.0)

    with kernel_plugin("test_prelude", "multiply", multiply, ["float32"]):
        static = to_static(f, build_strategy={"disable_passes": ["fuse_elementwise"]})  # multiply's kernel must run
        x = oar.ones([3, 2])
        with oar.no_grad():
            static(x)
            calls.clear()
            for _ in range(3):
                np.testing.assert_array_equal(static(x).numpy(), f(x).numpy())
            assert len(calls) == 1 + 3  # the prelude once, eager's f three times
            calls.clear()
            w.add_(1.0)  # a new parameter version
            np.testing.assert_array_equal(static(x).numpy(), f(x).numpy())
            assert len(calls) == 2
            executor = static._last.inference_executor
            assert executor.prelude and executor.prelude_params[0][1] is w


def test_inference_records_no_tape_and_replay_does():
    w = oar.to_tensor([2.0, 3.0], stop_gradient=False)
    static = to_static(lambda x: (x * w).sum())
    x = oar.ones([2])
    static(x)
    with oar.no_grad():
        out = static(x)
    assert out.stop_gradient and out._node is None
    out = static(x)
    assert not out.stop_gradient and out._node is not None
    out.backward()
    assert w.grad.tolist() == [1.0, 1.0]


def test_a_failing_kernel_names_the_op_and_the_inputs():
    static = to_static(lambda x, i: oar.gather(x, i) * 2.0)
    x = oar.rand([3, 2])
    static(x, oar.to_tensor([0, 2]))
    with pytest.raises(Exception, match="gather"):
        static(x, oar.to_tensor([0, 7]))


def test_kernel_errors_from_the_executor_are_kernel_errors():
    def boom(x):
        raise RuntimeError("no")

    static = to_static(lambda x: oar.exp(x) + 1.0)
    static(oar.ones([2]))
    with kernel_plugin("test_boom", "exp", boom, ["float32"]):
        executor = Executor(static.concrete_program)
        with pytest.raises(KernelError, match=r"program op #0 'exp' failed on inputs \(oar.float32\[2\]\)"):
            executor.run([oar.ones([2])])


def test_a_kernel_with_bind_is_specialised_once_per_node():
    """``kernel.bind(attrs)`` runs once per node; its callable then gets the arrays alone. Eager
    calls and a bind that declines (None) use the kernel itself."""
    bound_for: list = []

    def scale(x, scale=1.0, bias=0.0, bias_after_scale=True):
        return (x * scale + bias).astype(x.dtype)

    def bind(attrs):
        bound_for.append(dict(attrs))
        if attrs["scale"] == 3.0:
            return None
        return lambda x: (x * attrs["scale"] + 100.0).astype(x.dtype)  # tells the bound call apart

    scale.bind = bind
    static = to_static(lambda x: oar.scale(oar.scale(x, 2.0), 3.0))
    static(oar.ones([2]))
    with kernel_plugin("test_bind", "scale", scale, ["float32"]):
        executor = Executor(static.concrete_program)
        for _ in range(3):
            np.testing.assert_array_equal(executor.run([oar.ones([2])]).numpy(), [306.0, 306.0])
        np.testing.assert_array_equal(oar.scale(oar.ones([2]), 2.0).numpy(), [2.0, 2.0])  # eager: fn itself
    assert [a["scale"] for a in bound_for] == [2.0, 3.0]  # once per node, not per run


def test_state_updates_are_written_back():
    state = oar.zeros([2])
    state.persistable = True

    def f(x):
        state.add_(x)
        return state * 1.0

    static = to_static(f)
    with oar.no_grad():
        for i in range(1, 4):
            assert static(oar.ones([2])).tolist() == [float(i)] * 2
    assert state.tolist() == [3.0, 3.0] and state.inplace_version >= 3


def test_a_returned_parameter_only_value_is_a_copy():
    w = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    static = to_static(lambda x: (x + 1.0, w * 2.0))
    with oar.no_grad():
        static(oar.ones([2]))
        _, doubled = static(oar.ones([2]))
        doubled.add_(100.0)
        assert static(oar.ones([2]))[1].tolist() == [2.0, 4.0]
    single = to_static(lambda x: w * 3.0)
    with oar.no_grad():
        single(oar.ones([2]))
        single(oar.ones([2])).add_(100.0)
        assert single(oar.ones([2])).tolist() == [3.0, 6.0]


def test_run_arrays_gives_the_outputs_arrays_and_copies_what_runs_share():
    @to_static
    def f(x):
        return [oar.exp(x) + 1.0, x, oar.to_tensor([5.0, 6.0])]  # computed, a feed, a constant

    x = oar.to_tensor([0.5, -1.0])
    with oar.no_grad():
        expected = [t.numpy() for t in f(x)]
    executor = Executor(f.concrete_program)
    got = executor.run_arrays([x.numpy()])
    assert [type(a) for a in got] == [np.ndarray] * 3
    for a, e in zip(got, expected):
        np.testing.assert_allclose(a, e, rtol=1e-6)
    got[2][0] = 99.0  # the caller's copy: the program's constant stays
    np.testing.assert_allclose(executor.run_arrays([x.numpy()])[2], [5.0, 6.0])


@pytest.mark.parametrize("batch", [0, 1, 3])
def test_flatten_of_all_but_the_batch_runs_as_a_reshape_at_any_batch(batch):
    f = to_static(lambda x: oar.flatten(x * 2.0, start_axis=1, stop_axis=-1),
                  input_spec=[oar.static.InputSpec([None, 2, 3], "float32")])
    x = np.arange(batch * 6, dtype=np.float32).reshape(batch, 2, 3)
    executor = Executor(f.get_concrete_program(oar.to_tensor(x)))
    got = executor.run([oar.to_tensor(x)])
    np.testing.assert_array_equal(got.numpy(), (x * 2.0).reshape(batch, 6))
    assert [step[0].__name__ for step in executor._steps][-1] == "flatten"  # the bound reshape, not the op's kernel
