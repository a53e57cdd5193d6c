"""The gpu backend: tensors in device memory from the caching pool, moving between devices with
their gradients, the statistics of ``oar.device.cuda``, and the errors a user gets."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.driver import HostDriver
from oar_triton.memory import MemoryPool, rounded_size

import oar
from oar.errors import DeviceError, DTypeError, ResourceExhaustedError


def test_set_device_puts_new_tensors_on_the_gpu_and_values_come_back(gpu):
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    assert x.place == oar.CUDAPlace(0) and x.place.is_gpu_place()
    assert type(x.numpy()) is np.ndarray
    np.testing.assert_array_equal(x.numpy(), [[1.0, 2.0], [3.0, 4.0]])
    assert oar.zeros([2, 3]).place.is_gpu_place() and oar.ones([2]).numpy().tolist() == [1.0, 1.0]
    assert oar.full([2], 7, dtype="int64").numpy().tolist() == [7, 7]
    assert oar.get_device() == "gpu"


def test_cuda_and_cpu_move_tensors_and_keep_the_tape():
    x = oar.to_tensor([1.0, -2.0, 3.0], stop_gradient=False)
    on_gpu = x.cuda()
    assert on_gpu.place.is_gpu_place() and x.place.is_cpu_place()
    y = (on_gpu * on_gpu).exp().cpu()  # computed on the gpu, read on the cpu
    assert y.place.is_cpu_place()
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy() * np.exp(x.numpy() ** 2), rtol=1e-6)
    assert x.grad.place.is_cpu_place()  # the gradient of a cpu leaf comes back to the cpu
    assert x.to("gpu").place.is_gpu_place() and on_gpu.to("cpu").place.is_cpu_place()


def test_a_gpu_leaf_gets_its_gradient_on_the_gpu(gpu):
    w = oar.to_tensor([0.5, 1.5], stop_gradient=False)
    (w * oar.to_tensor([2.0, 3.0])).backward(oar.to_tensor([1.0, 1.0]))
    assert w.grad.place.is_gpu_place()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 3.0])
    before = w.grad
    (w * oar.to_tensor([1.0, 1.0])).backward(oar.to_tensor([1.0, 1.0]))  # accumulates
    np.testing.assert_array_equal(w.grad.numpy(), [3.0, 4.0])
    w.clear_gradient()
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 0.0])
    assert before.place.is_gpu_place()


def test_tensors_on_two_devices_do_not_mix(gpu):
    a = oar.to_tensor([1.0])
    b = oar.to_tensor([1.0], place="cpu")
    with pytest.raises(DeviceError, match=r"'add': inputs are on different devices \(input 0 on gpu, input 1 on cpu\)"):
        a + b


def test_an_op_without_a_gpu_kernel_names_itself_and_the_dtype(gpu):
    x = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(DTypeError, match=r"op 'cholesky' has no kernel on backend 'gpu' for float32.*\.cpu\(\)"):
        oar.linalg.cholesky(x)


def test_complex_tensors_stay_on_the_cpu(gpu):
    with pytest.raises(DTypeError, match=r"gpu backend has no complex dtypes \(complex64"):
        oar.to_tensor(np.array([1 + 2j], np.complex64))


def test_memory_statistics_count_what_tensors_hold(gpu):
    oar.device.cuda.empty_cache()
    oar.device.cuda.reset_max_memory_allocated()
    start = oar.device.cuda.memory_allocated()
    x = oar.zeros([1000], dtype="float32")  # 4000 bytes: one 4096-byte block
    assert oar.device.cuda.memory_allocated() == start + 4096
    assert oar.device.cuda.max_memory_allocated() >= start + 4096
    assert oar.device.cuda.memory_reserved() >= oar.device.cuda.memory_allocated()
    del x
    assert oar.device.cuda.memory_allocated() == start
    reserved = oar.device.cuda.memory_reserved()
    y = oar.zeros([1000], dtype="float32")  # served by the cached block: nothing new reserved
    assert oar.device.cuda.memory_reserved() == reserved
    del y
    oar.device.cuda.empty_cache()
    assert oar.device.cuda.memory_reserved() == oar.device.cuda.memory_allocated()


def test_the_pool_rounds_requests_and_reuses_freed_blocks():
    pool = MemoryPool(HostDriver())
    assert rounded_size(1) == 512 and rounded_size(513) == 1024 and rounded_size((1 << 20) + 1) == 2 << 20
    a = pool.allocate(3000)
    ptr = a.ptr
    del a
    b = pool.allocate(2900)  # the same rounded size: the freed block comes back
    assert b.ptr == ptr and pool.memory_reserved() == 3072
    c = pool.allocate(3000)
    assert c.ptr != ptr and pool.max_memory_allocated() == 6144


class _SmallDevice(HostDriver):
    """A device with room for ``capacity`` bytes, to see what the pool does when it is full."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity, self.sizes = capacity, {}

    def alloc(self, nbytes: int) -> int:
        if sum(self.sizes.values()) + nbytes > self.capacity:
            raise ResourceExhaustedError("out of memory")
        ptr = super().alloc(nbytes)
        self.sizes[ptr] = nbytes
        return ptr

    def free(self, ptr: int) -> None:
        del self.sizes[ptr]
        super().free(ptr)

    def total_memory(self) -> int:
        return self.capacity


def test_a_full_device_first_gives_back_cached_blocks_then_says_how_much_was_asked():
    pool = MemoryPool(_SmallDevice(8192))
    a = pool.allocate(4096)
    del a  # cached, still taking the device's memory
    b = pool.allocate(8192)  # fits only once the cached block is given back
    assert b.size == 8192
    with pytest.raises(ResourceExhaustedError, match=r"out of memory allocating 0.0 MiB: 0.0 MiB are in use"):
        pool.allocate(512)


def test_device_queries(gpu):
    assert oar.device.cuda.device_count() == 1 and oar.device.is_compiled_with_cuda()
    assert oar.device.cuda.get_device_name() == "Triton interpreter (CPU)"
    assert oar.device.cuda.get_device_capability() == (9, 0)
    properties = oar.device.cuda.get_device_properties()
    assert properties.major == 9 and properties.total_memory > 0
    oar.device.cuda.synchronize()
    assert BACKEND.supports_dtype("bfloat16") and BACKEND.supports_dtype("float16")


def test_amp_knows_the_gpu_computes_in_half_types():
    amp = pytest.importorskip("oar.amp")
    assert amp.is_bfloat16_supported("gpu:0") and amp.is_float16_supported("gpu")


def test_the_docstring_examples_run():
    import doctest

    import oar_triton.autotune
    import oar_triton.memory

    results = [doctest.testmod(module) for module in (oar_triton.memory, oar_triton.autotune)]
    assert sum(r.failed for r in results) == 0 and sum(r.attempted for r in results) >= 5
