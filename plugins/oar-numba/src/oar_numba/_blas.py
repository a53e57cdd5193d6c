"""numpy's own BLAS GEMM, called from compiled kernels.

A kernel that alternates copies and products (a convolution's patches, its GEMM, its epilogue)
would otherwise return to Python for every product: one GIL release and re-acquisition each.
While another Python thread runs a part of the same batch (``oar._core.executor``'s split), every
such re-acquisition the other thread holds the GIL for puts this thread to sleep, and waking a
thread costs 60-90 us on the project's virtual machines: two halves of LeNet's batch 64 took
820-1000 us each side by side against 610-680 us alone. With the product inside the kernel, a
whole convolution is one GIL release.

The library is the one numpy links and threadpoolctl sizes (``oar.set_num_threads``): OpenBLAS,
whose build (32- or 64-bit integers, ``openblas_get_config``) and symbol names (``scipy_`` prefix
and ``64_`` suffix in numpy's wheels) are read once. Where no such library is found (another
BLAS, no threadpoolctl), ``gemm_for`` answers None and the kernels take their numpy path.

>>> import numpy as np
>>> from oar_numba._blas import gemm_for
>>> gemm_for(np.float32) is None or len(gemm_for(np.float32)) == 2
True
"""

from __future__ import annotations

import ctypes

import numpy as np
from llvmlite import ir
from numba import types
from numba.core.errors import TypingError
from numba.extending import intrinsic

from oar._core.threads import blas_controllers

CBLAS_ROW_MAJOR, CBLAS_NO_TRANS = 101, 111
_found: dict | None = None


def _find() -> dict:
    """{np.float32: (sgemm address, int kind), np.float64: (dgemm address, int kind)} or {}."""
    for lib in blas_controllers():
        if getattr(lib, "internal_api", None) != "openblas":
            continue
        try:
            handle = ctypes.CDLL(lib.filepath)
        except OSError:
            continue
        for prefix in ("scipy_", ""):
            for suffix in ("64_", ""):
                config = getattr(handle, f"{prefix}openblas_get_config{suffix}", None)
                sgemm = getattr(handle, f"{prefix}cblas_sgemm{suffix}", None)
                dgemm = getattr(handle, f"{prefix}cblas_dgemm{suffix}", None)
                if config is None or sgemm is None or dgemm is None:
                    continue
                config.restype = ctypes.c_char_p
                kind = np.int64(0) if b"USE64BITINT" in config() else np.int32(0)  # BLAS's integer width
                return {np.dtype(np.float32): (ctypes.cast(sgemm, ctypes.c_void_p).value, kind),
                        np.dtype(np.float64): (ctypes.cast(dgemm, ctypes.c_void_p).value, kind)}
    return {}


def gemm_for(dtype):
    """``(address, int_kind)`` to pass to a kernel that calls ``gemm`` for arrays of ``dtype``, or
    None where numpy's BLAS cannot be called from compiled code (or ``dtype`` is not float32/64)."""
    global _found
    if _found is None:
        _found = _find()
    return _found.get(np.dtype(dtype))


@intrinsic
def gemm(typingctx, address, int_kind, a, b, c, beta):
    """``c = a @ b + beta * c`` through the cblas GEMM at ``address`` (from ``gemm_for``), in a
    compiled kernel. ``a`` [m, k], ``b`` [k, n] and ``c`` [m, n] are C-contiguous 2-d arrays of
    one float dtype (unchecked: the caller's shapes must agree); ``int_kind`` is a zero of the
    library's integer type. The address is an argument, never a constant of the compiled code,
    so that numba's disk cache holds nothing of one process's memory layout."""
    arrays = (a, b, c)
    if not all(isinstance(t, types.Array) and t.ndim == 2 and t.layout == "C" for t in arrays):
        raise TypingError("gemm: a, b and c must be C-contiguous 2-d arrays")
    if not (a.dtype == b.dtype == c.dtype and a.dtype in (types.float32, types.float64)):
        raise TypingError("gemm: a, b and c must share one dtype, float32 or float64")
    if not isinstance(int_kind, types.Integer) or int_kind.bitwidth not in (32, 64):
        raise TypingError("gemm: int_kind must be a 32- or 64-bit integer")
    if not isinstance(address, types.Integer):
        raise TypingError("gemm: address must be an integer")

    def codegen(context, builder, signature, args):
        address_value, _, a_value, b_value, c_value, beta_value = args
        a_array, b_array, c_array = (context.make_array(t)(context, builder, v)
                                     for t, v in zip(signature.args[2:5], (a_value, b_value, c_value)))
        single = signature.args[2].dtype == types.float32
        real = ir.FloatType() if single else ir.DoubleType()
        enum, blas_int = ir.IntType(32), ir.IntType(signature.args[1].bitwidth)
        pointer = real.as_pointer()
        function = ir.FunctionType(ir.VoidType(), [enum, enum, enum, blas_int, blas_int, blas_int, real, pointer,
                                                   blas_int, pointer, blas_int, real, pointer, blas_int])
        call = builder.inttoptr(address_value, function.as_pointer())

        def dim(array, axis):  # numba's intp shape entry as BLAS's integer
            value = builder.extract_value(array.shape, axis)
            return builder.trunc(value, blas_int) if blas_int.width < 64 else value

        m, k, n = dim(a_array, 0), dim(a_array, 1), dim(b_array, 1)
        beta_real = context.cast(builder, beta_value, signature.args[5], types.float32 if single else types.float64)
        builder.call(call, [ir.Constant(enum, CBLAS_ROW_MAJOR), ir.Constant(enum, CBLAS_NO_TRANS),
                            ir.Constant(enum, CBLAS_NO_TRANS), m, n, k, ir.Constant(real, 1.0), a_array.data, k,
                            b_array.data, n, beta_real, c_array.data, n])
        return context.get_dummy_value()

    return types.void(address, int_kind, a, b, c, beta), codegen
