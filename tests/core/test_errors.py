"""Errors a user can cause: the right exception classes, and messages in the user's terms."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.plugins
from oar import errors
from oar.ops import dispatch
from oar.plugins import Backend, Op, hookimpl

BUILTIN_BASE = {
    errors.ShapeError: ValueError,
    errors.DTypeError: TypeError,
    errors.DeviceError: RuntimeError,
    errors.ArgumentError: ValueError,
    errors.IndexOutOfRangeError: IndexError,
    errors.KernelError: RuntimeError,
    errors.GradientError: RuntimeError,
    errors.RegistryError: LookupError,
    errors.PluginError: RuntimeError,
    errors.SerializationError: ValueError,
    errors.ResourceExhaustedError: MemoryError,
}


def test_every_error_class_derives_from_oar_error_and_its_builtin():
    exported = {getattr(errors, name) for name in errors.__all__}
    raised = exported - {errors.OarError, errors.PluginWarning}
    assert raised == set(BUILTIN_BASE), "a new error class needs its builtin base listed here"
    for cls, base in BUILTIN_BASE.items():
        assert issubclass(cls, errors.OarError) and issubclass(cls, base), cls
        with pytest.raises(base):
            raise cls("caught as the builtin a Python user would catch")
    assert issubclass(errors.PluginWarning, UserWarning)


def test_add_with_shapes_that_do_not_broadcast():
    x, y = oar.ones([2, 3]), oar.ones([4])
    with pytest.raises(errors.ShapeError) as info:
        oar.add(x, y)
    message = str(info.value)
    assert message.startswith("add:")
    assert "x [2, 3]" in message and "y [4]" in message and "3 vs 4" in message
    with pytest.raises(ValueError, match=r"x \[2, 3\] with y \[4\]"):
        x + y  # the operator says the same


def test_reshape_to_a_wrong_size():
    with pytest.raises(errors.ShapeError) as info:
        oar.reshape(oar.ones([2, 3]), [4, 2])
    message = str(info.value)
    assert message.startswith("reshape:")
    assert "[2, 3]" in message and "6 elements" in message and "[4, 2]" in message


def test_sum_with_an_axis_out_of_range():
    with pytest.raises(errors.ArgumentError) as info:
        oar.sum(oar.ones([2, 3]), axis=5)
    message = str(info.value)
    assert message.startswith("sum:")
    assert "axis" in message and "5" in message and "2-d" in message and "-2..1" in message


def test_unknown_dtype_strings():
    with pytest.raises(errors.DTypeError) as info:
        oar.to_tensor([1.0], dtype="flaot32")
    message = str(info.value)
    assert "to_tensor" in message and "'dtype'" in message and "'flaot32'" in message and "float32" in message
    with pytest.raises(TypeError, match=r"zeros: .*'flaot32'"):
        oar.zeros([2], dtype="flaot32")
    with pytest.raises(errors.DTypeError, match=r"unknown dtype 'int65'.*int64"):
        oar.to_tensor([1]).astype("int65")


def test_to_tensor_of_strings_and_ragged_lists():
    with pytest.raises(errors.ArgumentError) as info:
        oar.to_tensor("hello")
    message = str(info.value)
    assert "to_tensor" in message and "'data'" in message and "str" in message and "numbers" in message
    with pytest.raises(errors.ArgumentError, match=r"to_tensor: argument 'data' holds <U\d values"):
        oar.to_tensor(["a", "b"])
    with pytest.raises(errors.ArgumentError, match=r"to_tensor: .*'data'"):
        oar.to_tensor([[1.0, 2.0], [3.0]])
    with pytest.raises(errors.DTypeError, match=r"to_tensor: .*uint16.*supported"):
        oar.to_tensor(np.array([1, 2], np.uint16))


def test_a_non_tensor_argument_names_the_op_and_the_argument():
    with pytest.raises(errors.ArgumentError, match=r"exp: argument 'x' must be a Tensor, got object"):
        oar.exp(object())


# -- a kernel failure the meta function does not explain ---------------------------------------
def _failing_kernel(x, scale):
    raise FloatingPointError("the kernel gave up")


FAILING = Op("test_errors_failing", reference=_failing_kernel, meta=lambda x, scale: x, traits={"nondiff"})


class FailingOpPlugin:
    @hookimpl
    def oar_register_ops(self, ops):
        ops.add(FAILING)


@pytest.fixture
def failing_op():
    oar.plugins.register(FailingOpPlugin(), name="test-errors-failing-op")
    yield FAILING
    oar.plugins.unregister("test-errors-failing-op")


def test_a_kernel_failure_becomes_a_kernel_error_naming_the_op_and_the_inputs(failing_op):
    x = oar.ones([2, 3])
    with pytest.raises(errors.KernelError) as info:
        dispatch(failing_op, (x,), {"scale": 2})
    message = str(info.value)
    assert "'test_errors_failing'" in message
    assert "float32[2, 3]" in message and "'scale': 2" in message
    assert "FloatingPointError: the kernel gave up" in message
    assert isinstance(info.value.__cause__, FloatingPointError)  # the original stays attached


# -- devices ------------------------------------------------------------------------------------
class SecondCPU(Backend):
    """A second numpy-backed device, so that tensors on two devices can meet."""

    name = "second"


class SecondDevicePlugin:
    @hookimpl
    def oar_register_backends(self, backends):
        backends.register("second", SecondCPU())


@pytest.fixture
def second_device():
    oar.plugins.register(SecondDevicePlugin(), name="test-errors-second-device")
    yield "second"
    oar.plugins.unregister("test-errors-second-device")


def test_tensors_on_different_devices_do_not_mix(second_device):
    a = oar.to_tensor([1.0, 2.0], place=second_device)
    b = oar.to_tensor([1.0, 2.0])
    assert a._backend == "second"
    with pytest.raises(errors.DeviceError) as info:
        a + b
    message = str(info.value)
    assert "'add'" in message and "input 0 on second" in message and "input 1 on cpu" in message


def test_an_unknown_device():
    with pytest.raises(errors.DeviceError, match=r"set_device: no backend 'tpu' is installed \(installed: cpu"):
        oar.set_device("tpu")
