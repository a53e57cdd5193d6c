"""Op cases of the linalg family: matmul (with bmm, mm, ``@``), dot, outer, einsum."""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import ints, rand

ALL_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _t(a, transpose):
    return np.swapaxes(a, -1, -2) if transpose and a.ndim >= 2 else a


def _matmul(tx=False, ty=False):
    return lambda x, y: np.matmul(_t(x, tx), _t(y, ty))


CASES = [
    # matmul: every rank combination of numpy's rules, broadcast batch dims, transposes
    OpCase("matmul", oar.matmul, np.matmul, [rand(2, 3), rand(3, 4)], dtypes=ALL_FLOATS, id="matmul_2d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(2, 1, 2, 3), rand(3, 3, 2)], id="matmul_broadcast_batch"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(4), rand(4)], id="matmul_1d_1d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(3), rand(2, 3, 4)], id="matmul_1d_3d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(2, 2, 3), rand(3)], id="matmul_3d_1d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(4, 3), rand(3)], id="matmul_2d_1d"),
    OpCase("matmul", lambda x, y: oar.matmul(x, y, transpose_x=True), _matmul(tx=True),
           [rand(2, 3, 2), rand(3, 4)], id="matmul_transpose_x"),
    OpCase("matmul", lambda x, y: oar.matmul(x, y, transpose_y=True), _matmul(ty=True),
           [rand(2, 3), rand(2, 1, 4, 3)], id="matmul_transpose_y"),
    OpCase("matmul", lambda x, y: oar.matmul(x, y, True, True), _matmul(True, True),
           [rand(1, 3, 2), rand(2, 4, 3)], dtypes=ALL_FLOATS, id="matmul_transpose_both"),
    OpCase("matmul", lambda x, y: oar.matmul(x, y, transpose_x=True, transpose_y=True), _matmul(),
           [rand(3), rand(3)], id="matmul_transpose_1d_is_noop"),
    OpCase("matmul", lambda x, y: oar.matmul(x, y, transpose_x=True), _matmul(tx=True),
           [rand(3, 2), rand(3)], id="matmul_transpose_x_2d_1d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(0, 3), rand(3, 2)], id="matmul_empty"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(0), rand(2, 0, 3)], id="matmul_empty_1d"),
    OpCase("matmul", oar.matmul, np.matmul, [rand(2, 0), rand(0, 3)], id="matmul_empty_contraction"),
    OpCase("matmul", oar.matmul, np.matmul, [ints(2, 3, low=-5, high=5), ints(3, 2, low=-5, high=5)],
           grad=False, id="matmul_int64"),
    OpCase("matmul", lambda x, y: x @ y, np.matmul, [rand(2, 3), rand(3, 2)], id="matmul_operator"),
    OpCase("matmul", lambda x, y: x.numpy() @ y, np.matmul, [rand(2, 3), rand(3, 2)], grad_inputs=[1],
           id="matmul_reflected_operator"),
    OpCase("matmul", lambda x, y: x.matmul(y, transpose_y=True), _matmul(ty=True), [rand(2, 3), rand(4, 3)],
           id="matmul_method"),
    OpCase("matmul", oar.bmm, np.matmul, [rand(2, 2, 3), rand(2, 3, 2)], id="bmm"),
    OpCase("matmul", oar.mm, np.matmul, [rand(3, 2), rand(2, 4)], id="mm"),
    # dot: 1-d vectors, or 2-d batches of rows
    OpCase("dot", oar.dot, np.dot, [rand(5), rand(5)], dtypes=ALL_FLOATS, id="dot_1d"),
    OpCase("dot", oar.dot, lambda x, y: np.sum(x * y, axis=-1), [rand(3, 4), rand(3, 4)], id="dot_2d_rows"),
    OpCase("dot", oar.dot, np.dot, [ints(4), ints(4)], grad=False, id="dot_int64"),
    # outer: flattens both operands
    OpCase("outer", oar.outer, np.outer, [rand(3), rand(4)], dtypes=ALL_FLOATS),
    OpCase("outer", oar.outer, np.outer, [rand(2, 2), rand()], id="outer_flattens"),
    OpCase("outer", oar.outer, np.outer, [rand(3, 0), rand(2)], id="outer_empty"),
    OpCase("dot", oar.dot, lambda x, y: np.sum(x * y, axis=-1), [rand(2, 0), rand(2, 0)], id="dot_empty_rows"),
    OpCase("einsum", lambda x, y: oar.einsum("ij,jk->ik", x, y), lambda x, y: np.einsum("ij,jk->ik", x, y),
           [rand(2, 0), rand(0, 3)], id="einsum_empty_contraction"),
    # einsum: products, reductions, transposes, ellipsis broadcasting, implicit output
    OpCase("einsum", lambda x, y: oar.einsum("ij,jk->ik", x, y), lambda x, y: np.einsum("ij,jk->ik", x, y),
           [rand(2, 3), rand(3, 4)], dtypes=ALL_FLOATS, id="einsum_matmul"),
    OpCase("einsum", lambda x, y: oar.einsum("bij,bjk->bik", x, y), lambda x, y: np.einsum("bij,bjk->bik", x, y),
           [rand(2, 2, 3), rand(2, 3, 2)], id="einsum_batched"),
    OpCase("einsum", lambda x, y: oar.einsum("...ij,...jk", x, y), lambda x, y: np.einsum("...ij,...jk", x, y),
           [rand(2, 1, 2, 3), rand(3, 3, 2)], id="einsum_ellipsis_broadcast"),
    OpCase("einsum", lambda x, y: oar.einsum("i,i->", x, y), lambda x, y: np.einsum("i,i->", x, y),
           [rand(5), rand(5)], id="einsum_inner"),
    OpCase("einsum", lambda x: oar.einsum("ij->", x), lambda x: np.einsum("ij->", x), [rand(2, 3)],
           id="einsum_sum_all"),
    OpCase("einsum", lambda x: oar.einsum("ijk->ki", x), lambda x: np.einsum("ijk->ki", x), [rand(2, 3, 4)],
           id="einsum_sum_and_transpose"),
    OpCase("einsum", lambda x: oar.einsum("ij", x), lambda x: np.einsum("ij", x), [rand(2, 3)],
           id="einsum_identity"),
    OpCase("einsum", lambda x: oar.einsum("ji", x), lambda x: np.einsum("ji", x), [rand(2, 3)],
           id="einsum_implicit_transpose"),
    OpCase("einsum", lambda x, y: oar.einsum("bi,bj->bij", x, y), lambda x, y: np.einsum("bi,bj->bij", x, y),
           [rand(2, 3), rand(2, 4)], id="einsum_batched_outer"),
    OpCase("einsum", lambda x, y: oar.einsum("ij,j->i", x, y), lambda x, y: np.einsum("ij,j->i", x, y),
           [rand(2, 3), rand(1)], id="einsum_label_broadcast"),
    OpCase("einsum", lambda x, y, z: oar.einsum("ij,jk,kl->il", x, y, z),
           lambda x, y, z: np.einsum("ij,jk,kl->il", x, y, z), [rand(2, 3), rand(3, 4), rand(4, 2)],
           id="einsum_chain"),
    OpCase("einsum", lambda x, y: oar.einsum("Ab,bC", x, y), lambda x, y: np.einsum("Ab,bC", x, y),
           [rand(2, 3), rand(3, 2)], id="einsum_uppercase_implicit"),
    OpCase("einsum", lambda x, y: oar.einsum("ii,j->j", x, y), lambda x, y: np.einsum("ii,j->j", x, y),
           [rand(3, 3), rand(4)], grad_inputs=[1], id="einsum_trace_other_operand"),
    OpCase("einsum", lambda x: oar.einsum("ii->i", x), lambda x: np.einsum("ii->i", x), [rand(3, 3)],
           grad=False, id="einsum_diagonal_forward"),
    OpCase("einsum", lambda x, y: oar.einsum("ij,jk->ik", x, y), lambda x, y: np.einsum("ij,jk->ik", x, y),
           [ints(2, 3), ints(3, 2)], grad=False, id="einsum_int64"),
]

# einsum differentiates every equation it accepts (issue #24): a label repeated in one operand
# (a diagonal, a trace, several repeats, alongside other operands and broadcasting).
CASES += [
    OpCase("einsum", lambda x: oar.einsum("ii->i", x), lambda x: np.einsum("ii->i", x), [rand(3, 3)],
           id="einsum_diagonal"),
    OpCase("einsum", lambda x: oar.einsum("ii->", x), lambda x: np.einsum("ii->", x), [rand(3, 3)], id="einsum_trace"),
    OpCase("einsum", lambda x: oar.einsum("ii", x), lambda x: np.einsum("ii", x), [rand(2, 2)],
           id="einsum_trace_implicit"),
    OpCase("einsum", lambda x: oar.einsum("iji->j", x), lambda x: np.einsum("iji->j", x), [rand(3, 2, 3)],
           id="einsum_repeat_apart"),
    OpCase("einsum", lambda x: oar.einsum("iii->i", x), lambda x: np.einsum("iii->i", x), [rand(2, 2, 2)],
           id="einsum_triple_repeat"),
    OpCase("einsum", lambda x: oar.einsum("iijj->ij", x), lambda x: np.einsum("iijj->ij", x), [rand(2, 2, 3, 3)],
           id="einsum_two_repeated_labels"),
    OpCase("einsum", lambda x, y: oar.einsum("ii,ij->j", x, y), lambda x, y: np.einsum("ii,ij->j", x, y),
           [rand(3, 3), rand(3, 2)], id="einsum_trace_times_other"),
    OpCase("einsum", lambda x, y: oar.einsum("bii,bi->b", x, y), lambda x, y: np.einsum("bii,bi->b", x, y),
           [rand(2, 3, 3), rand(1, 3)], id="einsum_batched_diagonal_broadcast"),
    OpCase("einsum", lambda x: oar.einsum("...ii->...i", x), lambda x: np.einsum("...ii->...i", x), [rand(2, 3, 3)],
           id="einsum_ellipsis_diagonal"),
]
