"""to_static never silently differs from eager (#24): what the captured Python decided is guarded,
what a program cannot repeat is refused, and errors name the user's line. Core only (no oar.nn,
except the one test that says so).

- Python decisions on dynamic dims (``if x.shape[0] > 2``, ``len(x)``): captured per outcome;
- Python values read at capture (globals, closure cells, ``self.`` attributes of the layer and
  its sublayers): captured again when they change;
- ``random`` / ``numpy.random`` inside the function, attributes / globals assigned inside it:
  refused with one warning naming the line;
- an error at capture or in a later run of the program names the line in its message.
"""

from __future__ import annotations

import os
import random
import warnings

import numpy as np
import pytest

import oar
from oar.errors import ShapeError
from oar.jit import GraphBreakError, to_static
from oar.static import InputSpec
from oar.testing import line_of

HERE = os.path.basename(__file__)



def rows(n: int, width: int = 3) -> oar.Tensor:
    return oar.to_tensor(np.arange(n * width, dtype=np.float32).reshape(n, width) / 7.0)


def assert_same(static_result, eager_result) -> None:
    np.testing.assert_array_equal(static_result.numpy(), eager_result.numpy())


class Layer:
    """The least of a layer that to_static relies on (core only): a training flag, sublayers,
    parameters and buffers (none here), a forward called through ``__call__``."""

    def __init__(self, *children):
        self.training = True
        self.children = list(children)

    def sublayers(self, include_self: bool = False) -> list:
        found = [self] if include_self else []
        for child in self.children:
            found += child.sublayers(include_self=True)
        return found

    def named_parameters(self):
        return []

    def named_buffers(self):
        return []

    def __call__(self, *args):
        return self.forward(*args)


def one_warning(record, needle: str):
    found = [w for w in record if needle in str(w.message)]
    assert len(found) == 1, [str(w.message) for w in record]
    return found[0]


# ------------------------------------------------------------------------------------------
# 1. Python decisions on dynamic dims
# ------------------------------------------------------------------------------------------
def branch_on_batch(x):
    if x.shape[0] > 2:
        return x * 2.0
    return x * 3.0


def branch_on_len(x):
    return x * 2.0 if len(x) >= 3 else x - 1.0


def branch_on_arithmetic(x):
    n = x.shape[0] * 2 - 1
    if n % 3 == 0:  # batches 2, 5, 8, ...
        return x + 1.0
    return x * 0.5


def branch_on_an_intermediate(x):
    h = oar.tanh(x) + 1.0
    if h.shape[0] == 1:  # the dim of a computed value, tied to the input's batch
        return h.sum(axis=1)
    return h.mean(axis=1)


def branch_on_bool_and_min(x):
    extra = min(x.shape[0], 3)  # decides on the batch too
    y = x * 2.0 if bool(x.shape[0] - 1) and extra == 3 else -x
    return y


# The first batch, and the size the second trace tries after it, decide alike: the check that
# compares two traces alone would take the program for every size.
@pytest.mark.parametrize("fn, batches", [
    (branch_on_batch, (1, 4, 2, 3, 5, 1, 8)),
    (branch_on_len, (1, 4, 2, 3, 5, 1, 8)),
    (branch_on_arithmetic, (5, 3, 2, 8, 1, 4)),
    (branch_on_an_intermediate, (3, 1, 2, 5, 1)),
    (branch_on_bool_and_min, (1, 3, 2, 4, 1, 5)),
])
def test_a_python_decision_on_a_dynamic_dim_equals_eager_at_every_batch(fn, batches):
    static = to_static(fn, input_spec=[InputSpec([None, 3])])
    with oar.no_grad():
        for n in batches:
            assert_same(static(rows(n)), fn(rows(n)))


def test_sizes_that_decide_alike_share_one_capture():
    static = to_static(branch_on_batch, input_spec=[InputSpec([None, 3])])
    with oar.no_grad():
        static(rows(3))
        captured = static.concrete_program
        static(rows(5))  # 5 > 2 as 3 > 2: the same program
        assert static.concrete_program is captured
        static(rows(1))  # the other outcome: captured again, kept beside the first
        other = static.concrete_program
        assert other is not captured
        static(rows(7))
        assert static.concrete_program is captured
        static(rows(2))
        assert static.concrete_program is other


def test_a_decision_comparing_two_dynamic_dims():
    def f(x, y):
        if x.shape[0] == y.shape[0]:
            return x + y
        return x.sum(axis=0) + y.sum(axis=0)

    static = to_static(f, input_spec=[InputSpec([None, 3]), InputSpec([None, 3])])
    with oar.no_grad():
        for a, b in ((2, 2), (2, 3), (4, 4), (1, 5), (3, 3)):
            assert_same(static(rows(a), rows(b)), f(rows(a), rows(b)))


def test_a_decision_on_a_dim_inside_a_method_of_a_layer():
    class Net(Layer):
        def forward(self, x):
            if x.shape[0] < 4:
                return x + 10.0
            return x - 10.0

    net = Net()
    static = to_static(net.forward, input_spec=[InputSpec([None, 3])])
    with oar.no_grad():
        for n in (2, 5, 3, 6):
            assert_same(static(rows(n)), net.forward(rows(n)))


# ------------------------------------------------------------------------------------------
# 2. Python values read at capture
# ------------------------------------------------------------------------------------------
GLOBAL_FACTOR = 2


def scaled_by_a_global(x):
    return x * GLOBAL_FACTOR


def test_a_changed_module_global_is_seen():
    global GLOBAL_FACTOR
    static = to_static(scaled_by_a_global)
    try:
        with oar.no_grad():
            assert_same(static(rows(2)), scaled_by_a_global(rows(2)))
            GLOBAL_FACTOR = 5
            assert_same(static(rows(2)), scaled_by_a_global(rows(2)))
            GLOBAL_FACTOR = 2.5  # a float now: another dtype of multiplier, another program
            assert_same(static(rows(2)), scaled_by_a_global(rows(2)))
    finally:
        GLOBAL_FACTOR = 2


def test_a_changed_closure_variable_is_seen():
    offset = 1.0

    def f(x):
        return x + offset

    static = to_static(f)
    with oar.no_grad():
        assert_same(static(rows(2)), f(rows(2)))
        offset = -4.0
        assert_same(static(rows(2)), f(rows(2)))


class Scaled(Layer):
    def __init__(self, *children):
        super().__init__(*children)
        self.scale = 2.0
        self.mode = "scale"

    def forward(self, x):
        if self.mode == "scale":
            y = x * self.scale
        else:
            y = x - self.scale
        for child in self.children:
            y = child(y)
        return y


class Shift(Layer):
    def __init__(self):
        super().__init__()
        self.shift = 1.0

    def forward(self, x):
        return x + self.shift


def test_changed_attributes_of_the_layer_and_its_sublayers_are_seen():
    shift = Shift()
    model = Scaled(shift)
    static = to_static(model.forward)
    x = rows(2)
    with oar.no_grad():
        assert_same(static(x), model.forward(x))
        model.scale = 3.0
        assert_same(static(x), model.forward(x))
        model.mode = "shift"
        assert_same(static(x), model.forward(x))
        shift.shift = -2.5  # a sublayer's
        assert_same(static(x), model.forward(x))
        model.mode = "scale"  # back: the earlier capture serves again
        assert_same(static(x), model.forward(x))
        captured = static.concrete_program
        model.scale = 3.0  # reassigned, equal: nothing to capture again
        assert_same(static(x), model.forward(x))
        assert static.concrete_program is captured


def test_a_changed_attribute_is_seen_when_training_through_the_program():
    model = Scaled()
    w = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)

    def f(x):
        return (model.forward(x) * w).sum()

    static = to_static(f)
    for scale in (2.0, 4.0):
        model.scale = scale
        w.clear_grad()
        static(rows(2)).backward()
        got = w.grad.numpy()
        w.clear_grad()
        f(rows(2)).backward()
        np.testing.assert_array_equal(got, w.grad.numpy())


def test_a_changed_attribute_of_an_nn_sublayer_is_seen():
    nn = pytest.importorskip("oar.nn")

    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.5, mode="downscale_in_infer")  # x * (1 - p) in eval

        def forward(self, x):
            return self.drop(x - 1.0)

    net = oar.jit.to_static(Net())
    net.eval()
    x = rows(2)
    with oar.no_grad():
        assert_same(net(x), (x - 1.0) * 0.5)
        net.drop.p = 0.25  # read by Dropout.forward: guarded
        assert_same(net(x), (x - 1.0) * 0.75)


# ------------------------------------------------------------------------------------------
# 3. Python-side randomness
# ------------------------------------------------------------------------------------------
def noisy_python(x):
    return x * random.random()


def noisy_numpy(x):
    return x + float(np.random.rand())


@pytest.mark.parametrize("fn, call", [(noisy_python, "random.random()"), (noisy_numpy, "np.random.rand()")])
def test_python_randomness_runs_eagerly_with_one_warning(fn, call):
    static = to_static(fn)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        random.seed(0)
        np.random.seed(0)
        got = [static(rows(2)).numpy() for _ in range(3)]
    warning = one_warning(record, "runs eagerly from now on")
    assert warning.category is UserWarning
    assert f"{HERE}:{line_of(fn, call)}" in f"{os.path.basename(warning.filename)}:{warning.lineno}"
    assert "random" in str(warning.message)
    random.seed(0)
    np.random.seed(0)
    expected = [fn(rows(2)).numpy() for _ in range(3)]
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(got[0], got[1])  # new numbers on every call, as eager draws them


def test_python_randomness_with_full_graph_raises_naming_the_line():
    static = to_static(noisy_python, full_graph=True)
    with pytest.raises(GraphBreakError, match=f"{HERE}:{line_of(noisy_python, 'random.random()')}"):
        static(rows(2))


def test_python_randomness_in_unconverted_code_is_refused_too():
    noisy = lambda x: x * random.random()  # noqa: E731 - a lambda is traced unconverted
    static = to_static(noisy)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        first, second = static(rows(2)).numpy(), static(rows(2)).numpy()
    warning = one_warning(record, "runs eagerly from now on")
    assert os.path.basename(warning.filename) == HERE and "random" in str(warning.message)
    assert not np.array_equal(first, second)


# ------------------------------------------------------------------------------------------
# 4. state changed inside the function
# ------------------------------------------------------------------------------------------
class CountingLayer(Layer):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1.0


class CachingLayer(Layer):
    def forward(self, x):
        y = x * 2.0
        self.cache = y  # a tensor attribute rebound on every call
        return y + 1.0


@pytest.mark.parametrize("cls, store", [(CountingLayer, "self.calls += 1"), (CachingLayer, "self.cache = y")])
def test_an_attribute_set_inside_forward_runs_eagerly_naming_the_line(cls, store):
    model = cls()
    static = to_static(model.forward)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in (2, 2, 2):
            static(rows(n))
    warning = one_warning(record, "runs eagerly from now on")
    assert (os.path.basename(warning.filename), warning.lineno) == (HERE, line_of(cls.forward, store))
    if cls is CountingLayer:
        assert model.calls == 3  # every call counted, as eager
    else:
        assert_same(model.cache, rows(2) * 2.0)


def test_an_attribute_set_with_full_graph_raises():
    model = CountingLayer()
    with pytest.raises(GraphBreakError, match=f"{HERE}:{line_of(CountingLayer.forward, 'self.calls += 1')}"):
        to_static(model.forward, full_graph=True)(rows(2))


COUNT = 0


def counts_calls(x):
    global COUNT
    COUNT += 1
    return x * 2.0


def test_a_global_assigned_inside_the_function_runs_eagerly():
    global COUNT
    COUNT = 0
    static = to_static(counts_calls)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            static(rows(2))
    warning = one_warning(record, "global variable 'COUNT'")
    assert warning.lineno == line_of(counts_calls, "COUNT += 1")
    assert COUNT == 3


def test_a_nonlocal_assigned_inside_the_function_runs_eagerly():
    seen = 0

    def f(x):
        nonlocal seen
        seen += 1
        return x - 1.0

    static = to_static(f)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            static(rows(2))
    assert one_warning(record, "nonlocal variable 'seen'").lineno == line_of(f, "seen += 1")
    assert seen == 3


# ------------------------------------------------------------------------------------------
# 5. errors name the user's line
# ------------------------------------------------------------------------------------------
def reshaped(x):
    y = x * 2.0
    return oar.reshape(y, [4, -1])


def test_an_error_at_capture_names_the_line_and_keeps_its_type():
    with pytest.raises(ShapeError) as eager:
        reshaped(rows(3))
    with pytest.raises(ShapeError) as captured:
        to_static(reshaped)(rows(3))
    assert f"{HERE}:{line_of(reshaped, 'oar.reshape(y')}" in str(captured.value)
    assert str(eager.value) in str(captured.value)


def in_sixes(x):
    y = oar.exp(x)
    return oar.reshape(y, [-1, 6])


def test_an_error_in_a_later_run_of_the_program_names_the_line():
    static = to_static(in_sixes, input_spec=[InputSpec([None, 3])])
    with oar.no_grad():
        static(rows(4))  # 12 elements: 2 rows of 6, and the same program for 2 rows (6 elements)
        captured = static.concrete_program
        with pytest.raises(ShapeError) as eager:
            in_sixes(rows(3))
        with pytest.raises(ShapeError) as info:
            static(rows(3))  # 9 elements: the program's reshape fails
    assert static.concrete_program is captured  # the program ran, no capture
    assert f"{HERE}:{line_of(in_sixes, 'oar.reshape(y')}" in str(info.value)
    assert str(eager.value) in str(info.value)


def added(x, y):
    z = x * 2.0
    return z + y


def test_a_shape_mismatch_in_a_fused_program_names_the_lines():
    static = to_static(added, input_spec=[InputSpec([None, 3]), InputSpec([None, 3])])
    with oar.no_grad():
        static(rows(2), rows(2))
        with pytest.raises(ShapeError) as info:
            static(rows(2), rows(3))
    assert f"{HERE}:{line_of(added, 'z + y')}" in str(info.value)


def test_an_error_replaying_the_program_for_training_names_the_line():
    w = oar.to_tensor(np.ones([3], np.float32), stop_gradient=False)

    def f(x):
        y = x * w
        return oar.reshape(y, [-1, 6]).sum()

    static = to_static(f, input_spec=[InputSpec([None, 3])])
    static(rows(4)).backward()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no backward for these sizes: the forward replays
        with pytest.raises(ShapeError, match=f"{HERE}:{line_of(f, 'oar.reshape(y')}"):
            static(rows(3))
