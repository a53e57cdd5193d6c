"""Keeping freed memory for reuse: a process-wide setting of glibc's malloc, made by ``import oar``.

glibc's malloc returns freed blocks of more than 128 KiB to the kernel, and the top of its heap
once more than twice that is free; a training step allocates and frees its activations (MiBs
each) every step, so every step would page-fault them in again (docs/core.md, "Memory", has the
measurement). Keeping freed memory in the heap makes the next step reuse it, as Paddle's CPU
allocator and torch's caching allocators do. Up to ``KEEP_FREED_BYTES`` of free heap is kept.
"""

from __future__ import annotations

import ctypes
import os
import sys

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
