"""The ``gpu`` backend: tensors in device memory from the caching pool, moved on and off the device
by the driver, and the statistics and queries ``oar.device.cuda`` asks a GPU backend for.

One device (GPU 0) and one stream: every kernel and copy is ordered on the default stream, so a
result read back to the host is always complete.

>>> import oar                                  # doctest: +SKIP
>>> oar.set_device("gpu")                       # doctest: +SKIP
>>> x = oar.to_tensor([1.0, 2.0]); x.place      # doctest: +SKIP
Place(gpu:0)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from oar_triton.array import DeviceArray
from oar_triton.driver import NO_GPU, get_driver, require_driver
from oar_triton.memory import MemoryPool

from oar.errors import DTypeError
from oar.plugins import Backend


class DeviceProperties(NamedTuple):
    """What ``oar.device.cuda.get_device_properties`` returns (Paddle's fields)."""

    name: str
    major: int
    minor: int
    total_memory: int  # bytes


class GPUBackend(Backend):
    """Device memory from a caching pool, and Triton kernels (registered under ``"gpu"``)."""

    name = "gpu"

    def __init__(self):
        self._pool: MemoryPool | None = None

    @property
    def pool(self) -> MemoryPool:
        if self._pool is None:
            self._pool = MemoryPool(require_driver())
        return self._pool

    def is_available(self) -> bool:
        return get_driver() is not None

    def unavailable_reason(self) -> str:
        return "" if get_driver() is not None else NO_GPU

    def device_count(self) -> int:
        driver = get_driver()
        return driver.device_count() if driver is not None else 0

    # -- storage ------------------------------------------------------------------------------
    def empty(self, shape, np_dtype) -> DeviceArray:
        """A new contiguous array of ``shape`` and ``np_dtype`` whose values are not set."""
        dtype = np.dtype(np_dtype)
        shape = tuple(int(d) for d in shape)
        return DeviceArray(self.pool.allocate(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize), shape, dtype)

    def from_numpy(self, array) -> DeviceArray:
        host = np.asarray(array)
        if host.dtype.kind == "c":
            raise DTypeError(f"gpu: the gpu backend has no complex dtypes ({host.dtype} given); keep complex tensors "
                             f"on the cpu")
        if not host.flags.c_contiguous:
            host = np.ascontiguousarray(host)  # (which would make a 0-d array 1-d)
        out = self.empty(host.shape, host.dtype)
        if host.nbytes:
            self.pool.driver.upload(out.data_ptr(), host)
        return out

    def to_numpy(self, data: DeviceArray) -> np.ndarray:
        if not data.is_contiguous():
            data = contiguous(data)
        host = np.empty(data.shape, data.dtype)
        if host.nbytes:
            self.pool.driver.download(host, data.data_ptr())
        return host

    def zeros(self, shape, np_dtype) -> DeviceArray:
        out = self.empty(shape, np_dtype)
        if out.nbytes:
            self.pool.driver.memset(out.data_ptr(), 0, out.nbytes)
        return out

    def full(self, shape, value, np_dtype) -> DeviceArray:
        from oar_triton.kernels.shape import fill_with  # (the kernels import this module)

        return fill_with(self.empty(shape, np_dtype), value)

    def copy(self, data: DeviceArray) -> DeviceArray:
        if not data.is_contiguous():
            return contiguous(data)
        out = self.empty(data.shape, data.dtype)
        if out.nbytes:
            self.pool.driver.copy(out.data_ptr(), data.data_ptr(), out.nbytes)
        return out

    def supports_dtype(self, dtype: str) -> bool:
        """Whether the kernels compute in ``dtype`` here (oar-amp's ``is_float16_supported`` and
        ``is_bfloat16_supported`` ask): float16 from sm_70, bfloat16 from sm_80; the interpreter
        computes both (in float32, as the kernels do on every device)."""
        driver = get_driver()
        if driver is None:
            return False
        needed = {"float16": (7, 0), "bfloat16": (8, 0)}.get(str(dtype))
        return needed is None or driver.capability() >= needed

    # -- oar.device.cuda ----------------------------------------------------------------------
    def memory_allocated(self, device=None) -> int:
        return self.pool.memory_allocated()

    def max_memory_allocated(self, device=None) -> int:
        return self.pool.max_memory_allocated()

    def memory_reserved(self, device=None) -> int:
        return self.pool.memory_reserved()

    def max_memory_reserved(self, device=None) -> int:
        return self.pool.max_memory_reserved()

    def reset_max_memory_allocated(self, device=None) -> None:
        self.pool.reset_max_memory_allocated()

    def reset_max_memory_reserved(self, device=None) -> None:
        self.pool.reset_max_memory_reserved()

    def empty_cache(self) -> None:
        if self._pool is not None:
            self._pool.empty_cache()

    def synchronize(self) -> None:
        driver = get_driver()
        if driver is not None:
            driver.synchronize()

    def get_device_name(self, device=None) -> str:
        return require_driver().name

    def get_device_capability(self, device=None) -> tuple[int, int]:
        return require_driver().capability()

    def get_device_properties(self, device=None) -> DeviceProperties:
        driver = require_driver()
        return DeviceProperties(driver.name, *driver.capability(), driver.total_memory())


BACKEND = GPUBackend()


def empty(shape, np_dtype) -> DeviceArray:
    """A new uninitialised array on the gpu (the kernels' output buffers)."""
    return BACKEND.empty(shape, np_dtype)


def contiguous(data: DeviceArray) -> DeviceArray:
    """``data`` itself when contiguous, else a contiguous copy made on the device."""
    if data.is_contiguous():
        return data
    from oar_triton.kernels.elementwise import strided_copy  # (the kernels import this module)

    return strided_copy(data)
