"""Allocations that cannot succeed are oar errors that name the op or function, the shape, the
dtype and the bytes asked for: a ResourceExhaustedError (a MemoryError) when the memory is not
there or the size passes what an array can address, a ShapeError past numpy's 64 dimensions.

The sizes are far beyond any machine's address space (2**58 bytes and more), so the allocations
fail at once whatever the kernel's overcommit setting: nothing is ever touched."""

from __future__ import annotations

import re

import numpy as np
import pytest

import oar
from oar.errors import OarError, ResourceExhaustedError, ShapeError

HUGE = [2**28, 2**28]  # 2**56 elements: 256 PiB of float32, more than any address space
HUGE_BYTES = 2**58
PAST_INT64 = [2**31] * 3  # 2**93 elements: the byte count passes int64


def check_names(err: Exception, what: str, shape, dtype: str, nbytes: int) -> None:
    message = str(err)
    assert message.startswith(what), message
    assert str(list(shape)) in message and dtype in message, message
    assert f"{nbytes:,} bytes" in message, message


@pytest.mark.parametrize(("what", "make", "dtype"), [
    ("zeros", lambda: oar.zeros(HUGE), "float32"),
    ("ones", lambda: oar.ones(HUGE, dtype="int64"), "int64"),
    ("full", lambda: oar.full(HUGE, 1.5), "float32"),
    ("empty", lambda: oar.empty(HUGE, dtype="float16"), "float16"),
])
def test_creation_out_of_memory_names_the_function_shape_dtype_and_bytes(what, make, dtype):
    with pytest.raises(ResourceExhaustedError) as info:
        make()
    itemsize = np.dtype(dtype).itemsize
    check_names(info.value, what, HUGE, dtype, 2**56 * itemsize)
    assert isinstance(info.value, MemoryError) and isinstance(info.value, OarError)
    assert "out of memory" in str(info.value)


@pytest.mark.parametrize(("what", "make"), [
    ("op 'gaussian'", lambda: oar.randn(HUGE)),
    ("op 'uniform'", lambda: oar.rand(HUGE)),
])
def test_random_creation_out_of_memory_goes_through_the_op(what, make):
    with pytest.raises(ResourceExhaustedError) as info:
        make()
    check_names(info.value, what, HUGE, "float32", HUGE_BYTES)


def test_an_op_s_kernel_out_of_memory_names_the_op_its_output_and_inputs():
    with pytest.raises(ResourceExhaustedError) as info:
        oar.ones([2**14, 1]).tile([1, 2**42])
    message = str(info.value)
    assert message.startswith("op 'tile': out of memory") and f"{HUGE_BYTES:,} bytes" in message, message
    assert "float32[16384, 4398046511104]" in message  # the output, in the user's terms
    assert "float32[16384, 1]" in message and "'repeat_times': [1, 4398046511104]" in message  # input, attributes
    assert isinstance(info.value.__cause__, MemoryError)  # numpy's own error stays as the cause


def test_linspace_eye_and_arange_out_of_memory():
    for what, make, shape in [("linspace", lambda: oar.linspace(0, 1, 2**56), [2**56]),
                              ("eye", lambda: oar.eye(2**28), HUGE),
                              ("arange", lambda: oar.arange(2**56), [2**56])]:
        with pytest.raises(ResourceExhaustedError, match=rf"^{what}: out of memory: .*{re.escape(str(shape))}"):
            make()


@pytest.mark.parametrize(("what", "make"), [
    ("zeros", lambda: oar.zeros(PAST_INT64)),
    ("full", lambda: oar.full(PAST_INT64, 0, dtype="int32")),
])
def test_a_size_past_what_an_array_can_address(what, make):
    with pytest.raises(ResourceExhaustedError) as info:
        make()
    message = str(info.value)
    assert message.startswith(what) and "more than an array can address" in message, message
    assert re.search(r"\[(0, )?\d+, \d+(, \d+)?\]", message)


def test_a_reshape_of_zero_elements_past_what_an_array_can_address():
    x = oar.zeros([0, 2**62], dtype="bool")
    with pytest.raises(ShapeError, match=r"^reshape: shape \[0, 4611686018427387904, 4\] is more than an array can "
                                         r"address"):
        x.reshape([0, 2**62, 4])


def test_a_reshape_whose_size_wraps_int64_is_refused_by_its_size():
    """2**32 * 2**32 is 0 in int64 arithmetic: no "fit" for a tensor of 0 elements."""
    with pytest.raises(ShapeError, match=r"^reshape: cannot reshape a tensor of shape \[0\] \(0 elements\)"):
        oar.zeros([0]).reshape([2**32, 2**32])


def test_the_bytes_of_a_size_past_int64_are_exact():
    with pytest.raises(ResourceExhaustedError) as info:
        oar.zeros(PAST_INT64)
    check_names(info.value, "zeros", PAST_INT64, "float32", 2**93 * 4)


@pytest.mark.parametrize(("what", "make"), [
    ("zeros", lambda: oar.zeros([1] * 65)),
    ("op 'reshape'", lambda: oar.ones([1]).reshape([1] * 65)),
])
def test_more_than_64_dimensions_is_a_shape_error(what, make):
    with pytest.raises(ShapeError, match=rf"^{re.escape(what)}: .*65 dimensions.*at most 64"):
        make()


def test_ordinary_kernel_errors_are_unchanged():
    """A kernel's ValueError that is no allocation stays a KernelError (or the meta's error)."""
    with pytest.raises(OarError) as info:
        oar.ones([2, 3]) @ oar.ones([4, 5])
    assert not isinstance(info.value, ResourceExhaustedError)
