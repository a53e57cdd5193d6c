"""Embedding kernels: ``embedding`` (a gather of weight rows) and ``embedding_grad`` (a scatter-add
of gradient rows into a ``[num_embeddings, dim]`` table).

Both work on tiles of ``BLOCK_I`` ids by ``BLOCK_D`` embedding columns, so a row is read and
written in coalesced chunks. ``embedding`` writes zeros where the id is ``padding_idx``;
``embedding_grad`` skips those positions, so the padding row of the gradient stays zero.

The scatter-add uses ``tl.atomic_add`` into a zeroed accumulator (float32 for float16 and
bfloat16 gradients, cast once at the end): several positions with one id add into one row, and
on a GPU the order of those additions, hence the rounding of the sum, may differ from run to run
(the interpreter runs programs in order). Sorting the ids to sum each row in a fixed order would
make it deterministic at the cost of a device sort.

Ids out of ``[0, num_embeddings)`` never touch memory (those lanes are masked); the first kernel
program that meets one records it in a two-element device flag, which is read back after the
launch to raise ``IndexOutOfRangeError`` as the reference does. That read waits for the kernel:
one small device-to-host copy per call, the price of the reference's error.
"""

from __future__ import annotations

import numpy as np
import triton
import triton.language as tl
from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND, contiguous, empty
from oar_triton.kernels.elementwise import cast
from oar_triton.launch import launch

from oar.errors import DTypeError, IndexOutOfRangeError, ShapeError

TILE = 4096  # elements per program tile
MAX_BLOCK_D = 512


@triton.jit
def _rows_and_ids(ids, flag, n, num, BLOCK_I: tl.constexpr, BLOCK_D: tl.constexpr):
    """This program's positions ``i``, columns ``d``, ids, and which ids are in range; the first
    column block reports an out-of-range id in ``flag`` (found, id)."""
    i = tl.program_id(0).to(tl.int64) * BLOCK_I + tl.arange(0, BLOCK_I)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    imask = i < n
    idx = tl.load(ids + i, mask=imask, other=0).to(tl.int64)
    bad = imask & ((idx < 0) | (idx >= num))
    if tl.program_id(1) == 0:  # one column block reports the bad ids
        tl.store(flag + i * 0, 1, mask=bad)
        tl.store(flag + 1 + i * 0, idx, mask=bad)
    return i, d, imask, idx, bad


@triton.jit
def _embedding_kernel(weight, ids, out, flag, n, num, dim, padding_idx,
                      BLOCK_I: tl.constexpr, BLOCK_D: tl.constexpr):
    i, d, imask, idx, bad = _rows_and_ids(ids, flag, n, num, BLOCK_I, BLOCK_D)
    keep = imask & ~bad & (idx != padding_idx)
    dmask = d < dim
    rows = tl.load(weight + idx[:, None] * dim + d[None, :], mask=keep[:, None] & dmask[None, :], other=0)
    tl.store(out + i[:, None] * dim + d[None, :], rows, mask=imask[:, None] & dmask[None, :])


@triton.jit
def _embedding_grad_kernel(g, ids, acc, flag, n, num, dim, padding_idx,
                           BLOCK_I: tl.constexpr, BLOCK_D: tl.constexpr):
    i, d, imask, idx, bad = _rows_and_ids(ids, flag, n, num, BLOCK_I, BLOCK_D)
    keep = (imask & ~bad & (idx != padding_idx))[:, None] & (d < dim)[None, :]
    rows = tl.load(g + i[:, None] * dim + d[None, :], mask=keep, other=0).to(acc.dtype.element_ty)
    tl.atomic_add(acc + idx[:, None] * dim + d[None, :], rows, mask=keep)


def _blocks(n: int, dim: int) -> tuple[int, int]:
    block_d = min(triton.next_power_of_2(max(dim, 1)), MAX_BLOCK_D)
    return max(1, min(TILE // block_d, triton.next_power_of_2(max(n, 1)))), block_d


def _check_ids(op: str, flag: DeviceArray, num: int) -> None:
    found, bad = (int(v) for v in BACKEND.to_numpy(flag))
    if found:
        raise IndexOutOfRangeError(f"{op}: x contains the id {bad}, out of range for {num} embeddings "
                                   f"(expected 0..{num - 1})")


def _ids(op: str, ids: DeviceArray) -> DeviceArray:
    if ids.dtype.kind not in "iu":
        raise DTypeError(f"{op}: x must be an integer tensor (int32 or int64), got {ids.dtype}")
    return contiguous(ids)


def embedding(weight, ids, padding_idx):
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D [num_embeddings, embedding_dim], got {list(weight.shape)}")
    ids = _ids("embedding", ids)
    num, dim = weight.shape
    out = empty(ids.shape + (dim,), weight.dtype)
    n = ids.size
    if n == 0 or dim == 0:
        return out
    weight = contiguous(weight)
    flag = BACKEND.zeros((2,), np.int64)
    block_i, block_d = _blocks(n, dim)
    launch(_embedding_kernel, (triton.cdiv(n, block_i), triton.cdiv(dim, block_d)), weight, ids, out, flag, n, num,
           dim, int(padding_idx), BLOCK_I=block_i, BLOCK_D=block_d)
    _check_ids("embedding", flag, num)
    return out


def embedding_grad(g, ids, num_embeddings, padding_idx):
    ids = _ids("embedding_grad", ids)
    if g.shape[:-1] != ids.shape:
        raise ShapeError(f"embedding_grad: the gradient has shape {list(g.shape)}, expected the ids' shape "
                         f"{list(ids.shape)} plus the embedding dimension")
    dim = g.shape[-1]
    wide = g.dtype == np.float64 or g.dtype == np.float32
    acc = BACKEND.zeros((num_embeddings, dim), g.dtype if wide else np.float32)
    n = ids.size
    if n and dim:
        g = contiguous(g)
        flag = BACKEND.zeros((2,), np.int64)
        block_i, block_d = _blocks(n, dim)
        launch(_embedding_grad_kernel, (triton.cdiv(n, block_i), triton.cdiv(dim, block_d)), g, ids, acc, flag, n,
               num_embeddings, dim, int(padding_idx), BLOCK_I=block_i, BLOCK_D=block_d)
        _check_ids("embedding_grad", flag, num_embeddings)
    return acc if wide else cast(acc, g.dtype)


KERNELS = {"embedding": embedding, "embedding_grad": embedding_grad}


# -- ahead-of-time compilation (oar_triton.aot) ---------------------------------------------------
def aot_configs() -> list[tuple]:
    """Both kernels in float32 and bfloat16, with int64 and int32 ids."""
    from oar_triton.aot import POINTER_TYPES  # (aot imports the kernel modules)

    found = []
    scalars = {"n": "i64", "num": "i64", "dim": "i64", "padding_idx": "i64", "BLOCK_I": "constexpr",
               "BLOCK_D": "constexpr"}
    consts = {"BLOCK_I": 8, "BLOCK_D": MAX_BLOCK_D}
    for dtype in ("float32", "bfloat16"):
        for ids in ("int64", "int32"):
            t, i = POINTER_TYPES[dtype], POINTER_TYPES[ids]
            found.append((f"embedding.embedding[{dtype},{ids}]", _embedding_kernel,
                          {"weight": t, "ids": i, "out": t, "flag": "*i64", **scalars}, consts))
            found.append((f"embedding.embedding_grad[{dtype},{ids}]", _embedding_grad_kernel,
                          {"g": t, "ids": i, "acc": "*fp32", "flag": "*i64", **scalars}, consts))
    return found


__all__ = ["KERNELS", "aot_configs"]
