"""Where the gpu backend's memory lives and its kernels run: a CUDA GPU, or Triton's interpreter.

``TRITON_INTERPRET=1`` in the environment (read when the plugin first needs a driver, and by Triton
when the kernel modules are imported) selects the interpreter: the same Triton kernels run on the
CPU, one program instance at a time, over host memory that stands in for the device's. It is how
CI, which has no GPU, checks every kernel's numerics; it is no way to be fast.

Otherwise device memory comes from the CUDA driver itself (``libcuda`` through ctypes: allocate,
free, copy, set, synchronize) in device 0's primary context, which is also the context and stream
Triton's torch-free launcher uses: kernels and copies are ordered on the default stream.
"""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from oar.errors import DeviceError, ResourceExhaustedError

ALIGNMENT = 256  # bytes: what cuMemAlloc guarantees, and more than any vectorised load needs


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


class HostDriver:
    """The interpreter's device: host memory, aligned as the GPU's would be; copies are memmoves."""

    kind = "interpreter"
    name = "Triton interpreter (CPU)"

    def __init__(self):
        self._buffers: dict[int, np.ndarray] = {}  # keeps each allocation alive until freed

    def device_count(self) -> int:
        return 1

    def alloc(self, nbytes: int) -> int:
        try:
            raw = np.empty(nbytes + ALIGNMENT, np.uint8)
        except MemoryError as exc:
            raise ResourceExhaustedError(f"gpu (interpreter): cannot allocate {nbytes} bytes of host memory") from exc
        ptr = raw.ctypes.data
        ptr += -ptr % ALIGNMENT
        self._buffers[ptr] = raw
        return ptr

    def free(self, ptr: int) -> None:
        self._buffers.pop(ptr, None)

    def upload(self, ptr: int, array: np.ndarray) -> None:
        ctypes.memmove(ptr, array.ctypes.data, array.nbytes)

    def download(self, array: np.ndarray, ptr: int) -> None:
        ctypes.memmove(array.ctypes.data, ptr, array.nbytes)

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        ctypes.memmove(dst, src, nbytes)

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        ctypes.memset(ptr, byte, nbytes)

    def synchronize(self) -> None:
        pass

    def capability(self) -> tuple[int, int]:
        return (9, 0)  # the target the kernels are written and compiled ahead of time for

    def total_memory(self) -> int:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


# CUDA driver API constants (cuda.h)
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
_CUDA_ERROR_OUT_OF_MEMORY = 2


class CudaDriver:
    """Device 0 of the CUDA driver, in its primary context (the one Triton's launcher uses)."""

    kind = "cuda"

    def __init__(self, lib: ctypes.CDLL):
        self._lib = lib
        self._check(lib.cuInit(0), "cuInit")
        count = ctypes.c_int()
        self._check(lib.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value < 1:
            raise DeviceError("gpu: the CUDA driver sees no device")
        self._count = count.value
        self._device = ctypes.c_int()
        self._check(lib.cuDeviceGet(ctypes.byref(self._device), 0), "cuDeviceGet")
        context = ctypes.c_void_p()
        self._check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), self._device), "cuDevicePrimaryCtxRetain")
        self._check(lib.cuCtxSetCurrent(context), "cuCtxSetCurrent")
        name = ctypes.create_string_buffer(256)
        self._check(lib.cuDeviceGetName(name, 256, self._device), "cuDeviceGetName")
        self.name = name.value.decode()

    def _check(self, status: int, call: str) -> None:
        if status != 0:
            message = ctypes.c_char_p()
            self._lib.cuGetErrorString(status, ctypes.byref(message))
            text = message.value.decode() if message.value else f"error {status}"
            if status == _CUDA_ERROR_OUT_OF_MEMORY:
                raise ResourceExhaustedError(f"gpu: {call}: {text}")
            raise DeviceError(f"gpu: {call} failed: {text}")

    def device_count(self) -> int:
        return self._count

    def alloc(self, nbytes: int) -> int:
        ptr = ctypes.c_uint64()
        self._check(self._lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 1))), "cuMemAlloc")
        return ptr.value

    def free(self, ptr: int) -> None:
        self._check(self._lib.cuMemFree_v2(ctypes.c_uint64(ptr)), "cuMemFree")

    def upload(self, ptr: int, array: np.ndarray) -> None:
        self._check(self._lib.cuMemcpyHtoD_v2(ctypes.c_uint64(ptr), ctypes.c_void_p(array.ctypes.data),
                                              ctypes.c_size_t(array.nbytes)), "cuMemcpyHtoD")

    def download(self, array: np.ndarray, ptr: int) -> None:
        self._check(self._lib.cuMemcpyDtoH_v2(ctypes.c_void_p(array.ctypes.data), ctypes.c_uint64(ptr),
                                              ctypes.c_size_t(array.nbytes)), "cuMemcpyDtoH")

    def copy(self, dst: int, src: int, nbytes: int) -> None:
        self._check(self._lib.cuMemcpyDtoD_v2(ctypes.c_uint64(dst), ctypes.c_uint64(src), ctypes.c_size_t(nbytes)),
                    "cuMemcpyDtoD")

    def memset(self, ptr: int, byte: int, nbytes: int) -> None:
        self._check(self._lib.cuMemsetD8_v2(ctypes.c_uint64(ptr), ctypes.c_ubyte(byte), ctypes.c_size_t(nbytes)),
                    "cuMemsetD8")

    def synchronize(self) -> None:
        self._check(self._lib.cuCtxSynchronize(), "cuCtxSynchronize")

    def capability(self) -> tuple[int, int]:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self._check(self._lib.cuDeviceGetAttribute(ctypes.byref(major), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                                   self._device), "cuDeviceGetAttribute")
        self._check(self._lib.cuDeviceGetAttribute(ctypes.byref(minor), _CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                                   self._device), "cuDeviceGetAttribute")
        return (major.value, minor.value)

    def total_memory(self) -> int:
        total = ctypes.c_size_t()
        self._check(self._lib.cuDeviceTotalMem_v2(ctypes.byref(total), self._device), "cuDeviceTotalMem")
        return total.value


def _load_libcuda() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


@functools.cache
def get_driver() -> HostDriver | CudaDriver | None:
    """The driver this process uses (chosen once), or None where there is neither a GPU nor
    ``TRITON_INTERPRET=1``."""
    if interpreting():
        return HostDriver()
    lib = _load_libcuda()
    if lib is None:
        return None
    try:
        return CudaDriver(lib)
    except DeviceError:
        return None


NO_GPU = ("no CUDA GPU is visible here (libcuda.so.1 is missing or sees no device); to run the gpu backend's "
          "kernels in Triton's interpreter on the CPU, for testing, set TRITON_INTERPRET=1 before oar starts")


def require_driver() -> HostDriver | CudaDriver:
    driver = get_driver()
    if driver is None:
        raise DeviceError(f"gpu: {NO_GPU}")
    return driver
