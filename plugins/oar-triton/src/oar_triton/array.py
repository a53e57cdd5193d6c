"""``DeviceArray``: the gpu backend's buffer, what its kernels receive and return.

It is a block of the memory pool seen with a shape, a numpy dtype, strides (in elements) and an
offset, so transposes, slices and broadcasts are views of one block. It has numpy's ``shape``,
``ndim``, ``size`` and ``dtype``, which oar's engine reads, and what a Triton launch reads from a
pointer argument, through ``Pointer``: ``data_ptr()`` and ``dtype`` (``str(dtype)`` is a Triton
type name: ``float32``, ``bfloat16``, ...).
"""

from __future__ import annotations

import math

import numpy as np
from oar_triton.memory import Block


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step)
        step *= max(dim, 1)
    return tuple(reversed(strides))


class DeviceArray:
    """A view of a pool block: ``shape``, ``dtype``, ``strides`` (elements) and ``offset``."""

    __slots__ = ("block", "shape", "dtype", "strides", "offset", "__weakref__")

    def __init__(self, block: Block, shape: tuple[int, ...], dtype: np.dtype,
                 strides: tuple[int, ...] | None = None, offset: int = 0):
        self.block = block
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.strides = contiguous_strides(self.shape) if strides is None else tuple(strides)
        self.offset = offset

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def data_ptr(self) -> int:
        return self.block.ptr + self.offset * self.dtype.itemsize

    def is_contiguous(self) -> bool:
        step = 1
        for dim, stride in zip(reversed(self.shape), reversed(self.strides)):
            if dim != 1 and stride != step:
                return False
            step *= dim
        return True

    def view(self, shape, strides, offset: int = 0) -> DeviceArray:
        """Another view of the same block (``offset`` in elements, from this array's start)."""
        return DeviceArray(self.block, shape, self.dtype, strides, self.offset + offset)

    def astype(self, dtype) -> DeviceArray:
        """A new array of the values cast to ``dtype`` (numpy's ``astype``, run by the cast kernel:
        core casts a kernel's inputs with it where the kernel computes in another dtype)."""
        from oar_triton.kernels.elementwise import cast  # (the kernel modules import this one)

        return cast(self, np.dtype(dtype))

    def __repr__(self) -> str:
        return f"DeviceArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides})"


_BOOL, _UINT8 = np.dtype(np.bool_), np.dtype(np.uint8)


class Pointer:
    """A ``DeviceArray`` as a Triton launch argument: ``data_ptr()`` and ``dtype``, and the torch-like
    calls Triton's interpreter makes on a pointer argument to move it to the host and back (the
    memory already is the host's there, so each is the identity)."""

    __slots__ = ("array", "dtype")

    def __init__(self, array: DeviceArray):
        # bool memory is one byte per element, as uint8's: Triton's i1 pointers are not (in the
        # interpreter they step by zero bytes); kernels read it as uint8 and compare with 0
        self.array, self.dtype = array, (_UINT8 if array.dtype == _BOOL else array.dtype)

    def data_ptr(self) -> int:
        return self.array.data_ptr()

    def stride(self, dim: int | None = None):
        return self.array.strides if dim is None else self.array.strides[dim]

    def size(self, dim: int | None = None):
        return self.array.shape if dim is None else self.array.shape[dim]

    def storage_offset(self) -> int:
        return 0  # data_ptr() already points at the first element

    def untyped_storage(self) -> Pointer:
        return self

    def cpu(self) -> Pointer:
        return self

    def new_empty(self, *args, **kwargs) -> Pointer:
        return self

    def set_(self, *args) -> Pointer:
        return self

    def copy_(self, other) -> Pointer:
        return self
