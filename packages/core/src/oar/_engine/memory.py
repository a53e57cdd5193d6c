"""Keeping freed memory for reuse: a process-wide setting of glibc's malloc, made by ``import oar``.

glibc's malloc returns freed blocks of more than 128 KiB to the kernel, and the top of its heap
once more than twice that is free; a training step allocates and frees its activations (MiBs
each) every step, so every step would page-fault them in again (docs/core.md, "Memory", has the
measurement). Keeping freed memory in the heap makes the next step reuse it, as Paddle's CPU
allocator and torch's caching allocators do. Up to ``KEEP_FREED_BYTES`` of free heap is kept.

``allocation_error`` turns numpy failing to allocate (a ``MemoryError``, or a ``ValueError`` for a
size past what an array can address or more than 64 dimensions) into an oar error naming what was
being made, its shape, dtype and bytes: ``explain_failure`` asks it about every kernel's
exception, the creation functions about theirs.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import sys

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.op import fmt_shape
from oar.errors import OarError, ResourceExhaustedError, ShapeError

MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's largest allowed; bigger blocks are still mapped
KEEP_FREED_BYTES = 512 << 20
_MALLOPT_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def keep_freed_memory(environ=None) -> bool:
    """Tune glibc's malloc to keep freed memory for reuse (see above); True where it did.

    Nothing changes where the user tuned malloc through the environment, set
    ``OAR_KEEP_FREED_MEMORY=0``, or the C library is not glibc.
    """
    environ = os.environ if environ is None else environ
    if environ.get("OAR_KEEP_FREED_MEMORY", "1") == "0" or any(k in environ for k in _MALLOPT_SETTINGS):
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
        libc.gnu_get_libc_version  # noqa: B018 - glibc only: musl has no M_* of these numbers
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # from glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES)) and bool(mallopt(m_trim_threshold, KEEP_FREED_BYTES))


_TOO_BIG = ("array is too big", "Maximum allowed dimension exceeded", "iterator is too large")  # numpy's words
_TOO_MANY_DIMS = re.compile(r"maximum supported dimension for an ndarray is (?:currently )?(\d+), found (\d+)")


def _bytes_text(n: int) -> str:
    value, unit = float(n), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"):
        if value < 1024 or unit == "YiB":
            break
        value /= 1024
    return f"{n:,} bytes" + ("" if unit == "bytes" else f" ({value:.3g} {unit})")


def allocation_error(what: str, exc: BaseException, shape=None, dtype=None, detail: str = "") -> OarError | None:
    """The oar error for ``exc`` if it is numpy failing to make an array for ``what`` (``"zeros"``,
    ``"op 'tile'"``), else None: a ResourceExhaustedError naming the shape, the dtype and the bytes
    asked for, or a ShapeError past numpy's number of dimensions (64; 32 before numpy 2). ``shape`` and ``dtype`` are the
    result's; the array numpy names in its MemoryError, when another, is the one reported (the
    result is then named too). ``detail`` ends the message.

    >>> import numpy as np
    >>> print(allocation_error("zeros", MemoryError(), [2**40], np.float32))
    zeros: out of memory: a float32 tensor of shape [1099511627776] needs 4,398,046,511,104 bytes (4 TiB)
    """
    text = str(exc)
    dims = _TOO_MANY_DIMS.search(text) if isinstance(exc, ValueError) else None
    if not (isinstance(exc, MemoryError) or dims or isinstance(exc, ValueError) and any(m in text for m in _TOO_BIG)):
        return None
    failed = getattr(exc, "shape", None)
    if failed is not None and tuple(failed) != tuple(shape or ()):  # a temporary, or a result not known
        detail = ("" if shape is None else f"; the result is {dtype.name if isinstance(dtype, _dt.DType) else dtype}"
                  f"{fmt_shape(shape)}") + detail
        shape, dtype = failed, getattr(exc, "dtype", None)
    d = dtype if isinstance(dtype, _dt.DType) or dtype is None else _dt.NP_TO_DTYPE.get(np.dtype(dtype))
    tensor = "a tensor" if d is None else f"a {d.name} tensor"
    tensor += "" if shape is None else f" of shape {fmt_shape(shape)}"
    if dims:
        return ShapeError(f"{what}: {tensor} has {dims[2]} dimensions; a tensor has at most {dims[1]} (numpy's limit){detail}")
    nbytes = None if shape is None or d is None or None in shape else math.prod(shape) * d.itemsize
    if isinstance(exc, MemoryError):
        needs = "" if nbytes is None else f" needs {_bytes_text(nbytes)}"
        return ResourceExhaustedError(f"{what}: out of memory: {tensor}{needs}{detail}")
    why = (f"it needs {_bytes_text(nbytes)}, the limit is {sys.maxsize:,}" if nbytes is not None and nbytes > sys.maxsize
           else f"its non-zero dimensions multiply past {sys.maxsize:,}")  # numpy checks them even with a 0
    return ResourceExhaustedError(f"{what}: {tensor} is more than an array can address: {why}{detail}")
