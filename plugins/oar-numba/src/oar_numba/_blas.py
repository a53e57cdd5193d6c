"""numpy's own BLAS GEMM, called from compiled kernels.

A kernel that alternates copies and products (a convolution's patches, its GEMM, its epilogue)
would otherwise return to Python for every product: one GIL release and re-acquisition each.
While another Python thread runs a part of the same batch (``oar._graph.executor``'s split), every
such re-acquisition the other thread holds the GIL for puts this thread to sleep, and waking a
thread costs tens of microseconds on the project's virtual machines: two halves of LeNet's batch
64 side by side each took longer than one alone (docs/numba.md, "Figures behind the kernels'
choices"). With the product inside the kernel, a whole convolution is one GIL release.

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
from numba.core import cgutils
from numba.core.errors import TypingError
from numba.extending import intrinsic

from oar.ops import blas_controllers

CBLAS_ROW_MAJOR, CBLAS_NO_TRANS, CBLAS_TRANS = 101, 111, 112
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


def _check_types(address, int_kind, a, b, c):
    arrays = (a, b, c)
    if not all(isinstance(t, types.Array) and t.ndim == 2 and t.layout in ("C", "A") for t in arrays):
        raise TypingError("gemm: a, b and c must be 2-d arrays of C-contiguous rows (C-contiguous, or slices of "
                          "columns of such arrays)")
    if not (a.dtype == b.dtype == c.dtype and a.dtype in (types.float32, types.float64)):
        raise TypingError("gemm: a, b and c must share one dtype, float32 or float64")
    if not isinstance(int_kind, types.Integer) or int_kind.bitwidth not in (32, 64):
        raise TypingError("gemm: int_kind must be a 32- or 64-bit integer")
    if not isinstance(address, types.Integer):
        raise TypingError("gemm: address must be an integer")


def _codegen(transpose_b: bool):
    """The call of cblas GEMM (row-major) on the three arrays, ``b`` read transposed or not. The
    leading dimension of each array is its row stride; a row whose elements are not adjacent
    (a[:, ::2]) raises ValueError: BLAS could not read it."""

    def codegen(context, builder, signature, args):
        address_value, _, a_value, b_value, c_value, beta_value = args
        array_types = signature.args[2:5]
        a_array, b_array, c_array = (context.make_array(t)(context, builder, v)
                                     for t, v in zip(array_types, (a_value, b_value, c_value)))
        single = signature.args[2].dtype == types.float32
        real = ir.FloatType() if single else ir.DoubleType()
        enum, blas_int = ir.IntType(32), ir.IntType(signature.args[1].bitwidth)
        pointer = real.as_pointer()
        function = ir.FunctionType(ir.VoidType(), [enum, enum, enum, blas_int, blas_int, blas_int, real, pointer,
                                                   blas_int, pointer, blas_int, real, pointer, blas_int])
        call = builder.inttoptr(address_value, function.as_pointer())
        itemsize = context.get_constant(types.intp, 4 if single else 8)

        def as_blas_int(value):
            return builder.trunc(value, blas_int) if blas_int.width < 64 else value

        def row_stride(array, array_type):  # in elements; checks that a row's elements are adjacent
            if array_type.layout == "C":
                return builder.extract_value(array.shape, 1)
            inner = builder.extract_value(array.strides, 1)
            columns = builder.extract_value(array.shape, 1)
            scattered = builder.and_(builder.icmp_signed("!=", inner, itemsize),
                                     builder.icmp_signed(">", columns, context.get_constant(types.intp, 1)))
            with cgutils.if_unlikely(builder, scattered):
                context.call_conv.return_user_exc(builder, ValueError,
                                                  ("gemm: the elements of a row of a, b or c are not adjacent",))
            return builder.sdiv(builder.extract_value(array.strides, 0), itemsize)

        lda, ldb, ldc = (row_stride(array, t) for array, t in zip((a_array, b_array, c_array), array_types))
        m, k = builder.extract_value(a_array.shape, 0), builder.extract_value(a_array.shape, 1)
        n = builder.extract_value(b_array.shape, 0 if transpose_b else 1)
        b_k = builder.extract_value(b_array.shape, 1 if transpose_b else 0)
        c_m, c_n = builder.extract_value(c_array.shape, 0), builder.extract_value(c_array.shape, 1)
        disagree = builder.or_(builder.icmp_signed("!=", k, b_k),
                               builder.or_(builder.icmp_signed("!=", m, c_m), builder.icmp_signed("!=", n, c_n)))
        with cgutils.if_unlikely(builder, disagree):  # BLAS would read or write past an array
            context.call_conv.return_user_exc(builder, ValueError, ("gemm: the shapes of a, b and c do not agree",))
        beta_real = context.cast(builder, beta_value, signature.args[5], types.float32 if single else types.float64)
        builder.call(call, [ir.Constant(enum, CBLAS_ROW_MAJOR), ir.Constant(enum, CBLAS_NO_TRANS),
                            ir.Constant(enum, CBLAS_TRANS if transpose_b else CBLAS_NO_TRANS),
                            as_blas_int(m), as_blas_int(n), as_blas_int(k), ir.Constant(real, 1.0), a_array.data,
                            as_blas_int(lda), b_array.data, as_blas_int(ldb), beta_real, c_array.data,
                            as_blas_int(ldc)])
        return context.get_dummy_value()

    return codegen


@intrinsic
def gemm(typingctx, address, int_kind, a, b, c, beta):
    """``c = a @ b + beta * c`` through the cblas GEMM at ``address`` (from ``gemm_for``), in a
    compiled kernel. ``a`` [m, k], ``b`` [k, n] and ``c`` [m, n] are 2-d arrays of one float dtype
    whose rows are C-contiguous (a C-contiguous array, or a slice of its columns: a band of an
    output's positions); shapes that do not agree raise ValueError. ``int_kind`` is a
    zero of the library's integer type. The address is an argument, never a constant of the
    compiled code, so that numba's disk cache holds nothing of one process's memory layout."""
    _check_types(address, int_kind, a, b, c)
    return types.void(address, int_kind, a, b, c, beta), _codegen(transpose_b=False)


@intrinsic
def gemm_nt(typingctx, address, int_kind, a, b, c, beta):
    """``c = a @ b.T + beta * c``, as ``gemm`` with ``b`` [n, k] read transposed by BLAS."""
    _check_types(address, int_kind, a, b, c)
    return types.void(address, int_kind, a, b, c, beta), _codegen(transpose_b=True)
