"""Dynamic-to-static conversion (oar.jit.dy2static): tensor-dependent Python control flow becomes
cond / while ops, so that ONE captured program gives eager's results for every input; Python
values are still evaluated at capture; what cannot convert falls back with a warning naming
the line. Core only (no oar.nn)."""

from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap
import traceback
import warnings

import numpy as np
import pytest

import oar
from oar.jit import GraphBreakError, to_static
from oar.jit.dy2static import UndefinedVariableError, convert_function, why_not_converted
from oar.static import InputSpec
from oar.testing import line_of

THIS_FILE = __file__



def ops_of(program) -> list[str]:
    """Every op name in the program, its blocks' included."""
    names = []
    for node in program.nodes:
        names.append(node.op)
        for value in node.attrs.values():
            if isinstance(value, oar.static.Program):
                names.extend(ops_of(value))
    return names


def top_ops(program) -> list[str]:
    return [n.op for n in program.nodes]


def as_numpy(result):
    if isinstance(result, (list, tuple)):
        return [as_numpy(r) for r in result]
    return result.numpy() if isinstance(result, oar.Tensor) else result


def assert_same(static_result, eager_result):
    a, b = as_numpy(static_result), as_numpy(eager_result)
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-6)
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6)


def check_one_program(fn, inputs, *, expect_ops=(), input_spec=None):
    """``fn`` captured once gives eager's result for every input (each a tuple of arguments),
    without a graph break; returns the StaticFunction."""
    static = to_static(fn, input_spec=input_spec, full_graph=True)
    for args in inputs:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same(static(*args), fn(*args))
    assert len(static.program_cache) == 1
    ops = top_ops(static.concrete_program)
    for op in expect_ops:
        assert op in ops, f"{op} not in {ops}"
    return static


def t(*values, dtype="float32"):
    return oar.to_tensor(np.array(values, dtype=dtype))


# -- if / elif / else ---------------------------------------------------------------------------
def test_tensor_if_else_is_one_cond_taking_each_branch():
    def f(x):
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = -x
        return y + 1.0

    static = check_one_program(f, [(t(1.0, 2.0),), (t(-1.0, -2.0),), (t(3.0, -1.0),)], expect_ops=["cond"])
    assert top_ops(static.concrete_program).count("cond") == 1


def test_elif_chain_takes_all_three_branches():
    def f(x):
        s = x.mean()
        if s > 1:
            y = x - 1.0
        elif s < -1:
            y = x + 1.0
        else:
            y = x * 0.5
        return y

    check_one_program(f, [(t(5.0, 3.0),), (t(-5.0, -3.0),), (t(0.5, 0.1),)], expect_ops=["cond"])


def test_variables_unchanged_in_one_branch_keep_their_value():
    def f(x, y):
        z = y
        if x.max() > y.max():
            z = x
            y = y * 3.0
        return z, y

    check_one_program(f, [(t(5.0), t(1.0)), (t(0.0), t(1.0))], expect_ops=["cond"])


def test_python_number_assigned_in_branches_becomes_a_tensor():
    def f(x):
        if x.sum() > 0:
            k = 2
        else:
            k = 3
        return x * k

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


def test_python_valued_if_is_evaluated_at_capture():
    def f(x, scale: bool):
        if scale:
            x = x * 10.0
        if x.shape[0] > 1:
            x = x + 1.0
        if x.ndim == 1 and not scale:
            x = x - 3.0
        return x

    static = to_static(f, full_graph=True)
    np.testing.assert_allclose(static(t(1.0, 2.0), True).numpy(), [11.0, 21.0])
    assert "cond" not in ops_of(static.concrete_program)
    np.testing.assert_allclose(static(t(1.0, 2.0), False).numpy(), [-1.0, 0.0])
    assert "cond" not in ops_of(static.concrete_program)
    assert len(static.program_cache) == 2  # one per Python value, as before


def test_and_or_not_on_tensors():
    def f(x, y):
        if (x.sum() > 0 and y.sum() > 0) or not (x.mean() < 10):
            out = x + y
        else:
            out = x - y
        return out

    inputs = [(t(1.0), t(1.0)), (t(1.0), t(-1.0)), (t(-1.0), t(1.0)), (t(20.0), t(-1.0))]
    check_one_program(f, inputs, expect_ops=["cond", "logical_and"])


def test_and_or_keep_python_semantics_on_python_values():
    def f(x, a, b):
        value = a or b
        both = a and b
        return x * (1.0 if not both else 2.0), value, both

    static = to_static(f, full_graph=True)
    assert static(t(1.0), 0, 5)[1:] == (5, 0)
    assert static(t(1.0), 3, 5)[1:] == (3, 5)


def test_and_on_a_tensor_whose_right_side_python_would_skip_and_that_fails():
    def f(x, i):
        if i < 2 and x[i].sum() > 0:  # x[i] is out of range when i >= 2
            return x * 2.0
        return x

    static = to_static(f)
    with pytest.warns(UserWarning, match=r"`and` on a tensor condition evaluates every operand"):
        assert static(oar.ones([2, 1]), t(5, dtype="int64")).tolist() == [[1.0], [1.0]]
    assert static(oar.ones([2, 1]), t(1, dtype="int64")).tolist() == [[2.0], [2.0]]


def test_ternary_on_a_tensor():
    def f(x):
        return x * 2.0 if x.sum() > 0 else x - 5.0

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


def test_nested_ifs():
    def f(x):
        y = x
        if x.sum() > 0:
            if x.max() > 5:
                y = x * 10.0
            else:
                y = x * 2.0
        else:
            y = -x
        return y

    static = check_one_program(f, [(t(6.0),), (t(1.0),), (t(-3.0),)], expect_ops=["cond"])
    assert ops_of(static.concrete_program).count("cond") == 2


# -- early return -------------------------------------------------------------------------------
def test_early_return_in_a_tensor_if():
    def f(x):
        if x.sum() > 0:
            return x * 2.0
        y = x - 1.0
        return y * 3.0

    check_one_program(f, [(t(1.0, 2.0),), (t(-1.0, -2.0),)], expect_ops=["cond"])


def test_return_in_the_else_branch_only():
    def f(x):
        if x.sum() > 0:
            x = x + 100.0
        else:
            return x - 1.0
        return x * 2.0

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


def test_return_of_a_tuple_from_both_branches():
    def f(x):
        if x.mean() > 0:
            return x, x * 2.0
        return x * 3.0, x

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


def test_return_in_an_elif_then_a_loop_on_the_other_paths():
    def f(x, n):
        if x.sum() > 0:
            y = x * 2.0
        elif x.mean() < -1:
            return -x
        else:
            y = x - 1.0
        i = 0
        while i < n and y.abs().max() > 0.1:
            y = y * 0.5
            i += 1
        return y

    inputs = [(t(1.0, 2.0), t(3, dtype="int64")), (t(-3.0, -2.0), t(3, dtype="int64")),
              (t(-0.5, 0.2), t(2, dtype="int64")), (t(0.01, 0.02), t(5, dtype="int64"))]
    check_one_program(f, inputs, expect_ops=["cond"])


def test_falling_off_the_end_on_one_path_is_not_a_zero_tensor():
    def f(x):
        if x.sum() > 0:
            return x * 2.0
        x = x + 1.0  # and no return: None on this path

    with pytest.raises(GraphBreakError, match="the return value is (a tensor|None) in one branch and (None|a tensor) in the other"):
        to_static(f, full_graph=True)(t(1.0))
    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert static(t(1.0)).tolist() == [2.0]
    assert static(t(-1.0)) is None


# -- while / for --------------------------------------------------------------------------------
def test_tensor_while_runs_as_many_iterations_as_each_input_needs():
    def f(x, n):
        i = 0
        while i < n:
            x = x * 2.0
            i += 1
        return x, i

    static = check_one_program(f, [(t(1.0), t(3, dtype="int64")), (t(1.0), t(0, dtype="int64")),
                                   (t(0.5), t(5, dtype="int64"))], expect_ops=["while"])
    assert top_ops(static.concrete_program).count("while") == 1


def test_while_on_a_value_computed_in_the_body():
    def f(x):
        while x.sum() < 100:
            x = x * 3.0 + 1.0
        return x

    check_one_program(f, [(t(1.0, 2.0),), (t(200.0, 0.0),), (t(0.1, 0.1),)], expect_ops=["while"])


def test_for_range_of_a_tensor():
    def f(x, n):
        acc = x * 0.0
        for i in range(n):
            acc = acc + x * i
        return acc

    check_one_program(f, [(t(1.0, 2.0), t(4, dtype="int64")), (t(1.0, 2.0), t(0, dtype="int64"))],
                      expect_ops=["while"])


def test_for_range_of_a_python_int_is_unrolled_as_before():
    def f(x):
        for i in range(3):
            x = x + float(i)
        return x

    static = check_one_program(f, [(t(1.0),)])
    assert "while" not in ops_of(static.concrete_program)
    assert top_ops(static.concrete_program).count("add") == 3


def test_for_over_a_tensor_iterates_its_rows():
    def f(x):
        total = x[0] * 0.0
        for row in x:
            total = total + row
        return total

    check_one_program(f, [(oar.to_tensor(np.arange(6, dtype=np.float32).reshape(3, 2)),)])


def test_break_and_continue_in_a_tensor_loop():
    def f(x, n):
        i = 0
        total = x * 0.0
        while i < n:
            i += 1
            if (x * i).sum() > 10:
                break
            if i == 2:
                continue
            total = total + x * i
        return total, i

    inputs = [(t(1.0), t(20, dtype="int64")), (t(1.0), t(3, dtype="int64")), (t(-1.0), t(4, dtype="int64")),
              (t(4.0), t(5, dtype="int64"))]
    check_one_program(f, inputs, expect_ops=["while"])


def test_tensor_break_in_a_python_range_loop():
    def f(x):
        for _ in range(4):
            if x.sum() > 8:
                break
            x = x * 2.0
        return x

    check_one_program(f, [(t(1.0),), (t(3.0),), (t(100.0),)])


def test_return_inside_a_tensor_loop():
    def f(x, n):
        i = 0
        while i < n:
            if x.sum() > 5:
                return x - 100.0
            x = x + 2.0
            i += 1
        return x

    inputs = [(t(1.0), t(10, dtype="int64")), (t(1.0), t(1, dtype="int64")), (t(9.0), t(3, dtype="int64"))]
    check_one_program(f, inputs, expect_ops=["while"])


def test_nested_loops():
    def f(x, n, m):
        i = 0
        while i < n:
            j = 0
            while j < m:
                x = x + 1.0
                j += 1
            x = x * 2.0
            i += 1
        return x

    inputs = [(t(0.0), t(2, dtype="int64"), t(3, dtype="int64")), (t(1.0), t(3, dtype="int64"), t(0, dtype="int64"))]
    static = check_one_program(f, inputs, expect_ops=["while"])
    assert ops_of(static.concrete_program).count("while") == 2


def test_python_while_stays_python():
    def f(x):
        k = 0
        while k < 3:
            x = x + 1.0
            k += 1
        return x

    static = check_one_program(f, [(t(1.0),)])
    assert "while" not in ops_of(static.concrete_program)


def test_continue_in_a_range_loop_over_a_tensor_bound():
    def f(x, n):
        total = x * 0.0
        for i in range(1, n, 2):
            if (x * i).sum() > 6:
                continue
            total = total + x * i
        return total

    inputs = [(t(1.0), t(9, dtype="int64")), (t(-1.0), t(6, dtype="int64")), (t(1.0), t(1, dtype="int64"))]
    check_one_program(f, inputs, expect_ops=["while"])


def test_break_on_a_tensor_while_iterating_a_tensor():
    def f(x):
        total = x[0] * 0.0
        for row in x:
            if total.sum() > 4:
                break
            total = total + row
        return total

    rows = oar.to_tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    check_one_program(f, [(rows,), (-rows,)])


def test_nested_function_and_comprehension_with_tensor_conditions():
    def f(x):
        def clip(v):
            if v.max() > 1:
                v = v / v.max()
            return v

        parts = [clip(x * k) if x.sum() > 0 else x - k for k in (1.0, 3.0)]
        return parts[0] + parts[1]

    check_one_program(f, [(t(0.2, 0.1),), (t(-1.0, 0.5),), (t(2.0, 1.0),)], expect_ops=["cond"])


def test_structures_through_a_cond():
    def f(x):
        state = {"h": x, "n": (x, x * 2.0)}
        if x.sum() > 0:
            state = {"h": x + 1.0, "n": (x * 3.0, x)}
        return state["h"], state["n"][0], state["n"][1]

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


# -- variables on one path only, and what cannot convert ----------------------------------------
def test_variable_defined_in_one_branch_only_is_a_clear_error_when_used():
    def f(x):
        if x.sum() > 0:
            y = x * 2.0
        return y

    with pytest.raises(UndefinedVariableError, match=rf"'y'.*one branch.*test_dy2static\.py:{line_of(f, 'if x.sum')}"):
        to_static(f)(t(1.0))


def test_variable_defined_in_one_branch_only_is_fine_when_not_used_after():
    def f(x):
        if x.sum() > 0:
            tmp = x * 2.0
            x = tmp + 1.0
        return x

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])


def test_branch_that_changes_a_python_object_falls_back_with_one_warning_naming_the_line():
    def f(x):
        seen = []
        if x.sum() > 0:
            seen.append(1)
        return x + len(seen)

    line = line_of(f, "if x.sum() > 0")
    static = to_static(f)
    with pytest.warns(UserWarning, match=rf"runs eagerly.*changes Python state.*seen.append\(1\).*"
                                         rf"test_dy2static\.py:{line}\)") as caught:
        assert static(t(1.0)).tolist() == [2.0]
    assert len(caught) == 1 and caught[0].filename == THIS_FILE and caught[0].lineno == line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert static(t(-1.0)).tolist() == [-1.0]  # eager from now on: right for every input
    with pytest.raises(GraphBreakError, match=rf"test_dy2static\.py:{line}: a branch of this tensor-dependent if"):
        to_static(f, full_graph=True)(t(1.0))


def test_assigning_a_global_in_a_tensor_branch_falls_back():
    def f(x):
        global CALLS
        if x.sum() > 0:
            CALLS = CALLS + 1
        return x * 2.0

    with pytest.raises(GraphBreakError, match=r"changes Python state .*CALLS = \.\.\. \(global variable\)"):
        to_static(f, full_graph=True)(t(1.0))
    assert CALLS == 0


CALLS = 0


def test_branches_leaving_different_python_values_fall_back():
    def f(x):
        if x.sum() > 0:
            mode = "up"
        else:
            mode = "down"
        return x * 2.0 if mode == "up" else x

    with pytest.raises(GraphBreakError, match=r"mode is 'up' in one branch and 'down' in the other"):
        to_static(f, full_graph=True)(t(1.0))
    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert static(t(1.0)).tolist() == [2.0]
    assert static(t(-1.0)).tolist() == [-1.0]


def test_loop_variable_changing_dtype_falls_back_with_a_clear_reason():
    def f(x, n):
        s = 0
        i = 0
        while i < n:
            s = s + x.sum()
            i += 1
        return s

    with pytest.raises(GraphBreakError, match=r"s is int64 before the loop and float32 after an iteration"):
        to_static(f, full_graph=True)(t(1.5), t(2, dtype="int64"))
    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        static(t(1.5), t(2, dtype="int64"))
    assert static(t(1.5), t(3, dtype="int64")).tolist() == pytest.approx(4.5)


def test_in_place_update_of_a_shared_tensor_in_a_loop_falls_back():
    def f(n):
        i = oar.zeros([], "int64")
        j = i  # shares i's tensor: eager's i += 1 changes j too
        while i < n:
            i += 1
        return i, j

    with pytest.raises(GraphBreakError, match="changes i in place"):
        to_static(f, full_graph=True)(t(3, dtype="int64"))
    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert [v.tolist() for v in static(t(3, dtype="int64"))] == [3, 3]
    assert [v.tolist() for v in static(t(2, dtype="int64"))] == [2, 2]


def test_branches_of_different_dtypes_fall_back():
    def f(x):
        k = 1 if x.sum() > 0 else 2.5
        return x * k

    static = to_static(f)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert static(t(1.0)).tolist() == [1.0]
    assert static(t(-1.0)).tolist() == [-2.5]


def test_a_branch_eager_would_not_take_may_fail_while_traced():
    def f(x, w):
        if x.sum() > 100:
            y = oar.matmul(x, w)  # wrong shapes: fails if ever taken
        else:
            y = x + 1.0
        return y

    static = to_static(f)
    with pytest.warns(UserWarning, match=r"tracing both branches raised .*matmul"):
        assert static(t(1.0, 2.0), oar.ones([3, 3])).tolist() == [2.0, 3.0]


def test_a_value_read_into_python_still_breaks_with_its_line():
    def f(x):
        if float(x.sum()) > 0:
            return x
        return -x

    line = line_of(f, "if float(x.sum())")
    with pytest.raises(GraphBreakError, match=rf"test_dy2static\.py:{line}: Python reads the values"):
        to_static(f, full_graph=True)(t(1.0))


def test_function_without_source_is_traced_unconverted():
    code = compile("def g(x):\n    if x.sum() > 0:\n        return x\n    return -x\n", "<generated>", "exec")
    namespace: dict = {}
    exec(code, namespace)  # the test's own source: a function without a file
    g = namespace["g"]
    assert convert_function(g) is g
    assert "source is not available" in why_not_converted(g)
    with pytest.warns(UserWarning, match="runs eagerly"):
        assert to_static(g)(t(-2.0)).tolist() == [2.0]


def test_lambda_is_traced_unconverted():
    f = to_static(lambda x: x + 1.0)
    assert f(t(1.0)).tolist() == [2.0]
    assert f.concrete_program is not None


def test_generator_is_not_converted():
    def gen(x):
        yield x

    assert convert_function(gen) is gen
    assert "generator" in why_not_converted(gen)


def test_not_to_static_keeps_a_helper_unconverted():
    @oar.jit.not_to_static
    def helper(x):
        if x.sum() > 0:
            return x
        return -x

    def f(x):
        return helper(x) * 2.0

    with pytest.warns(UserWarning, match="runs eagerly"):
        assert to_static(f)(t(-1.0)).tolist() == [2.0]


def test_enable_to_static_false_runs_the_python_function():
    calls = []

    def f(x):
        calls.append(1)
        if x.sum() > 0:
            return x
        return -x

    static = to_static(f)
    oar.jit.enable_to_static(False)
    try:
        assert static(t(-1.0)).tolist() == [1.0]
        assert static(t(-1.0)).tolist() == [1.0]
        assert not static.program_cache and len(calls) == 2
    finally:
        oar.jit.enable_to_static(True)


# -- functions, closures, methods ---------------------------------------------------------------
def abs_like(x):
    if x.sum() < 0:
        return -x
    return x


def test_user_functions_called_inside_are_converted():
    def f(x):
        return abs_like(x) + 1.0

    check_one_program(f, [(t(-2.0),), (t(3.0),)], expect_ops=["cond"])


SCALE = 2.0


def test_closures_globals_and_defaults():
    offset = 5.0
    counter = [0]

    def f(x, factor=3.0, *, extra=1.0):
        nonlocal offset
        counter[0] += 1
        if x.sum() > 0:
            y = x * factor * SCALE
        else:
            y = x + offset + extra
        return y

    check_one_program(f, [(t(1.0),), (t(-1.0),)], expect_ops=["cond"])
    offset = 50.0  # the converted function reads the closure cell, not a copy
    assert convert_function(f)(t(-1.0)).tolist() == [50.0]


class Base:
    def scale(self, x):
        return x * 2.0


class Model(Base):
    def __init__(self):
        self.__bias = 1.5  # a private (mangled) attribute

    def forward(self, x):
        if x.sum() > 0:
            y = super().scale(x) + self.__bias
        else:
            y = self.helper(x)
        return y

    def helper(self, x):
        while x.sum() < 0:
            x = x + 1.0
        return x


def test_methods_with_super_and_private_names():
    model = Model()
    static = to_static(model.forward, full_graph=True)
    for v in (2.0, -2.5):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert_same(static(t(v)), model.forward(t(v)))
    assert len(static.program_cache) == 1
    assert "while" in ops_of(static.concrete_program)


class _Private:
    def __init__(self):
        self.__gain = 3.0

    def make(self):
        def scaled(x):  # a closure defined in a method: its private names are mangled too
            if x.sum() > 0:
                return x * self.__gain
            return -x

        return scaled


def test_private_names_in_a_closure_defined_in_a_method():
    scaled = _Private().make()
    check_one_program(scaled, [(t(1.0),), (t(-2.0),)], expect_ops=["cond"])


def test_converted_code_keeps_the_users_line_numbers():
    def f(x, w):
        if x.sum() > 0:
            y = oar.matmul(x, w)  # a shape error here
        else:
            y = x
        return y

    line = line_of(f, "oar.matmul(x, w)")
    with pytest.raises(Exception) as info:
        to_static(f)(oar.ones([2, 3]), oar.ones([4, 4]))
    frames = [fr for fr in traceback.extract_tb(info.value.__traceback__) if fr.filename == THIS_FILE]
    assert frames[-1].lineno == line


def test_converted_function_is_cached_per_function():
    assert convert_function(abs_like) is convert_function(abs_like)
    assert convert_function(abs_like) is not abs_like


def test_the_converter_never_runs_text_from_the_source():
    marker = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"oar_dy2static_injection_{os.getpid()}"

    def f(x):
        # __import__('pathlib').Path(MARKER).touch()
        s = "__import__('pathlib').Path('" + str(marker) + "').touch()"
        if x.sum() > 0:
            y = x + 1.0
        else:
            y = x - 1.0
        return y, s

    static = to_static(f, full_graph=True)
    y, s = static(t(1.0))
    assert y.tolist() == [2.0] and s.startswith("__import__") and not marker.exists()


def test_converter_compiles_only_syntax_trees():
    """No eval at all; exec only of a code object that compile() made from an ast.Module."""
    folder = pathlib.Path(oar.__file__).parent / "jit" / "dy2static"
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "eval", f"{path.name}:{node.lineno}"
                if node.func.id == "exec":
                    assert isinstance(node.args[0], ast.Name) and node.args[0].id == "module_code", path.name
                if node.func.id == "compile":
                    assert isinstance(node.args[0], ast.Name) and node.args[0].id == "module", path.name
    source = (folder / "convert.py").read_text()
    assert "module = ast.Module(" in source and "module_code = compile(module," in source


# -- save and load ------------------------------------------------------------------------------
def test_saved_program_with_cond_and_while_loads_in_a_fresh_process(tmp_path):
    def f(x, n):
        if x.sum() > 0:
            y = x * 2.0
        else:
            y = x - 1.0
        i = 0
        while i < n:
            y = y + 1.0
            i += 1
        return y

    static = to_static(f, input_spec=[InputSpec([None], name="x"), InputSpec([], "int64", name="n")])
    prefix = str(tmp_path / "cf")
    oar.jit.save(static, prefix)
    cases = [([1.0, 2.0], 3), ([-1.0, -2.0, 0.5], 0), ([-4.0], 2)]
    expected = [f(t(*x), t(n, dtype="int64")).numpy() for x, n in cases]
    script = textwrap.dedent(f"""
        import numpy as np, oar
        loaded = oar.jit.load({prefix!r})
        outs = [loaded(oar.to_tensor(np.array(x, np.float32)), oar.to_tensor(np.array(n, np.int64))).numpy()
                for x, n in {cases!r}]
        np.savez({prefix + ".out.npz"!r}, *outs)
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    got = np.load(prefix + ".out.npz")
    for i, e in enumerate(expected):
        np.testing.assert_allclose(got[f"arr_{i}"], e, rtol=1e-6)
    assert {"cond", "while"} <= set(top_ops(static.concrete_program))

