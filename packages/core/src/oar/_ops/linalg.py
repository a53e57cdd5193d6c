"""Linear algebra: matmul (and ``@``), bmm, mm, dot, outer, einsum.

Each op is defined in adjacent lines: the ``Op``, its gradient rule written with oar ops, and
the public function. Matrix products are in AMP's low-precision list (Paddle's white list);
float16 and bfloat16 compute in float32 on the numpy backend and are cast back, as a GPU
accumulates them in float32.
"""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.op import AMP_LOW_PRECISION, Op
from oar._engine.threads import one_blas_thread, small_product
from oar._ops._common import (
    Tensor,
    TensorMeta,
    as_tensor,
    broadcast_shapes,
    dispatch,
    fmt_shape,
)
from oar._ops.creation import eye
from oar._ops.elementwise import cast
from oar._ops.reduction import sum as _sum
from oar._ops.reduction import unbroadcast
from oar._ops.shape import broadcast_to, reshape_to
from oar.errors import ArgumentError, ShapeError

# numpy's float16 products accumulate in float16 and bfloat16 matmul returns float32: compute
# both in float32 (the dispatcher casts back). Bool has no matrix product in Paddle.
PRODUCT_DTYPES = (_dt.float32, _dt.float64) + _dt.INT_DTYPES


def _as_input_dtype(grad: Tensor, like: Tensor) -> Tensor:
    """A gradient in the dtype of the input it belongs to (inputs of mixed dtypes were promoted)."""
    return grad if grad.dtype is like.dtype or not like.dtype.is_floating else cast(grad, like.dtype)


def _numel(shape) -> int | None:
    return None if any(d is None for d in shape) else int(np.prod(shape, dtype=np.int64))


# -- matmul -------------------------------------------------------------------------------------
def _matmul_kernel(x, y, transpose_x=False, transpose_y=False):
    if transpose_x and x.ndim >= 2:
        x = np.swapaxes(x, -1, -2)
    if transpose_y and y.ndim >= 2:
        y = np.swapaxes(y, -1, -2)
    if small_product(x, y):  # see oar._engine.threads: a threaded small product leaves BLAS spinning
        with one_blas_thread():
            return np.asarray(np.matmul(x, y))
    return np.asarray(np.matmul(x, y))


def matmul_shape(op: str, xs, ys, transpose_x: bool = False, transpose_y: bool = False) -> tuple:
    """The output shape of ``op(x, y)`` with numpy's 1-d rules, or a ShapeError in user terms."""
    xs, ys = tuple(xs), tuple(ys)
    flags = "".join([" (transpose_x)" if transpose_x else "", " (transpose_y)" if transpose_y else ""])
    if not xs or not ys:
        raise ShapeError(f"{op}: x {fmt_shape(xs)} and y {fmt_shape(ys)}: both operands need at least 1 dimension")
    # A 1-d x is a row [1, K] and a 1-d y a column [K, 1]; transposing a 1-d operand does nothing.
    m, kx = (1, xs[0]) if len(xs) == 1 else (xs[-1], xs[-2]) if transpose_x else xs[-2:]
    ky, n = (ys[0], 1) if len(ys) == 1 else (ys[-1], ys[-2]) if transpose_y else ys[-2:]
    if kx is not None and ky is not None and kx != ky:
        raise ShapeError(f"{op}: x {fmt_shape(xs)} and y {fmt_shape(ys)}{flags}: contraction dims differ ({kx} vs {ky})")
    batch = broadcast_shapes(op, xs[:-2], ys[:-2], names=["x batch dims", "y batch dims"])
    return batch + ((m,) if len(xs) > 1 else ()) + ((n,) if len(ys) > 1 else ())


def _matmul_meta(x: TensorMeta, y: TensorMeta, transpose_x=False, transpose_y=False) -> TensorMeta:
    shape = matmul_shape("matmul", x.shape, y.shape, transpose_x, transpose_y)
    return TensorMeta(shape, _dt.PROMOTION_TABLE[x.dtype, y.dtype])


def _matmul_per_sample(attrs, in_shapes, out_shapes) -> bool:
    """x's first dim stays the rows' (or a batch) dim, and y is one matrix for every sample."""
    x, y = in_shapes
    return (len(x) > 2 or not attrs.get("transpose_x")) and len(x) >= 2 and (len(y) <= 2 or y[0] == 1)


matmul_op = Op(
    "matmul", reference=_matmul_kernel, meta=_matmul_meta, amp=AMP_LOW_PRECISION, promote=_dt.SAME_DTYPE,
    dtypes=PRODUCT_DTYPES, per_sample=_matmul_per_sample,
)


@matmul_op.defgrad
def _matmul_grad(ctx, g):
    x, y = ctx.inputs
    xs, ys = ctx.in_shapes
    tx = ctx.attrs["transpose_x"] and len(xs) > 1  # transposing a 1-d operand does nothing
    ty = ctx.attrs["transpose_y"] and len(ys) > 1
    # Redo the forward's promotion of 1-d operands to matrices, so that every operand is >= 2-d.
    x2 = reshape_to(x, [1, xs[0]]) if len(xs) == 1 else x
    y2 = reshape_to(y, [ys[0], 1]) if len(ys) == 1 else y
    if len(xs) == 1 or len(ys) == 1:
        gshape = list(g.shape)
        if len(xs) == 1:
            gshape.insert(len(gshape) - (len(ys) > 1), 1)
        if len(ys) == 1:
            gshape.append(1)
        g = reshape_to(g, gshape)
    # out = A @ B with A = op(x), B = op(y): dA = g @ B^T, dB = A^T @ g; a transposed operand
    # takes the transposed gradient, which swaps the operands of the product.
    gx = gy = None
    if ctx.needs_input_grad[0]:
        gx = matmul(g, y2, transpose_y=not ty) if not tx else matmul(y2, g, transpose_x=ty, transpose_y=True)
        gx = _as_input_dtype(reshape_to(unbroadcast(gx, x2.shape), list(xs)), x)
    if ctx.needs_input_grad[1]:
        gy = matmul(x2, g, transpose_x=not tx) if not ty else matmul(g, x2, transpose_x=True, transpose_y=tx)
        gy = _as_input_dtype(reshape_to(unbroadcast(gy, y2.shape), list(ys)), y)
    return gx, gy


def matmul(x, y, transpose_x: bool = False, transpose_y: bool = False, name=None) -> Tensor:
    """Matrix product with numpy's rules: batch dims broadcast, a 1-d ``x`` is a row and a 1-d
    ``y`` a column (their added dim is dropped again); ``transpose_x``/``transpose_y`` swap the
    last two dims of an operand first (no effect on a 1-d operand).

    >>> import oar
    >>> x = oar.ones([5, 2, 3])
    >>> oar.matmul(x, oar.ones([3, 4])).shape
    [5, 2, 4]
    >>> oar.matmul(x, oar.ones([4, 3]), transpose_y=True).shape
    [5, 2, 4]
    >>> oar.matmul(oar.ones([3]), oar.ones([3])).shape
    []
    """
    x = x if type(x) is Tensor else as_tensor(x, "x", "matmul")
    y = y if type(y) is Tensor else as_tensor(y, "y", "matmul")
    return dispatch(matmul_op, (x, y), {"transpose_x": bool(transpose_x), "transpose_y": bool(transpose_y)})


def mm(input, mat2, name=None) -> Tensor:
    """The matrix product ``input @ mat2`` (``paddle.mm``: the same rules as ``matmul``).

    >>> import oar
    >>> oar.mm(oar.ones([2, 3]), oar.ones([3, 4])).shape
    [2, 4]
    """
    return matmul(input, mat2)


def bmm(x, y, name=None) -> Tensor:
    """Batched matrix product of two 3-d tensors ``[B, M, K] @ [B, K, N] -> [B, M, N]``; unlike
    ``matmul``, the batch sizes must be equal (no broadcasting).

    >>> import oar
    >>> oar.bmm(oar.ones([4, 2, 3]), oar.ones([4, 3, 5])).shape
    [4, 2, 5]
    """
    x, y = as_tensor(x, "x", "bmm"), as_tensor(y, "y", "bmm")
    xs, ys = x.shape, y.shape
    if len(xs) != 3 or len(ys) != 3:
        raise ShapeError(f"bmm: x {fmt_shape(xs)} and y {fmt_shape(ys)}: both operands must be 3-d [batch, rows, cols]; "
                         f"use matmul for other ranks")
    if xs[0] != ys[0]:
        raise ShapeError(f"bmm: x {fmt_shape(xs)} and y {fmt_shape(ys)}: batch sizes differ ({xs[0]} vs {ys[0]})")
    if xs[2] != ys[1]:
        raise ShapeError(f"bmm: x {fmt_shape(xs)} and y {fmt_shape(ys)}: contraction dims differ ({xs[2]} vs {ys[1]})")
    return dispatch(matmul_op, (x, y), {"transpose_x": False, "transpose_y": False})


# -- dot ----------------------------------------------------------------------------------------
def _dot_kernel(x, y):
    return np.asarray(np.einsum("...i,...i->...", x, y))


def _dot_meta(x: TensorMeta, y: TensorMeta) -> TensorMeta:
    if len(x.shape) not in (1, 2) or len(y.shape) not in (1, 2):
        raise ShapeError(f"dot: x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)}: expected two 1-d vectors or "
                         f"two 2-d batches of row vectors")
    if len(x.shape) != len(y.shape) or any(a is not None and b is not None and a != b for a, b in zip(x.shape, y.shape)):
        raise ShapeError(f"dot: x {fmt_shape(x.shape)} and y {fmt_shape(y.shape)}: shapes must be equal")
    return TensorMeta(tuple(x.shape[:-1]), _dt.PROMOTION_TABLE[x.dtype, y.dtype])


dot_op = Op("dot", reference=_dot_kernel, meta=_dot_meta, amp=AMP_LOW_PRECISION, promote=_dt.SAME_DTYPE,
            dtypes=PRODUCT_DTYPES)


@dot_op.defgrad
def _dot_grad(ctx, g):
    x, y = ctx.inputs
    g = reshape_to(g, list(g.shape) + [1])  # one value per row, broadcast along it
    gx = _as_input_dtype(g * y, x) if ctx.needs_input_grad[0] else None
    gy = _as_input_dtype(g * x, y) if ctx.needs_input_grad[1] else None
    return gx, gy


def dot(x, y, name=None) -> Tensor:
    """Inner product of two vectors (a 0-d result), or row by row of two ``[N, D]`` batches
    (an ``[N]`` result), as ``paddle.dot``.

    >>> import oar
    >>> oar.dot(oar.to_tensor([1, 2, 3]), oar.to_tensor([4, 5, 6])).item()
    32
    >>> oar.dot(oar.ones([2, 3]), oar.ones([2, 3])).tolist()
    [3.0, 3.0]
    """
    x, y = as_tensor(x, "x", "dot"), as_tensor(y, "y", "dot")
    _dot_meta(TensorMeta(tuple(x.shape), x.dtype), TensorMeta(tuple(y.shape), y.dtype))  # numpy would broadcast
    return dispatch(dot_op, (x, y), {})


# -- outer --------------------------------------------------------------------------------------
def _outer_kernel(x, y):
    return np.outer(x, y)


def _outer_meta(x: TensorMeta, y: TensorMeta) -> TensorMeta:
    return TensorMeta((_numel(x.shape), _numel(y.shape)), _dt.PROMOTION_TABLE[x.dtype, y.dtype])


outer_op = Op("outer", reference=_outer_kernel, meta=_outer_meta, promote=_dt.SAME_DTYPE)


@outer_op.defgrad
def _outer_grad(ctx, g):
    x, y = ctx.inputs
    xs, ys = ctx.in_shapes
    gx = gy = None
    if ctx.needs_input_grad[0]:
        gx = _as_input_dtype(reshape_to(matmul(g, reshape_to(y, [_numel(ys)])), list(xs)), x)
    if ctx.needs_input_grad[1]:
        gy = _as_input_dtype(reshape_to(matmul(reshape_to(x, [_numel(xs)]), g), list(ys)), y)
    return gx, gy


def outer(x, y, name=None) -> Tensor:
    """Outer product: ``out[i, j] = x[i] * y[j]``, both operands flattened to 1-d first.

    >>> import oar
    >>> oar.outer(oar.to_tensor([1, 2]), oar.to_tensor([1, 10, 100])).tolist()
    [[1, 10, 100], [2, 20, 200]]
    """
    x, y = as_tensor(x, "x", "outer"), as_tensor(y, "y", "outer")
    return dispatch(outer_op, (x, y), {})


# -- einsum -------------------------------------------------------------------------------------
LABELS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def parse_einsum(equation: str) -> tuple[list[str], str]:
    """The input terms and the output term of an explicit equation without ellipsis."""
    lhs, _, rhs = equation.partition("->")
    return lhs.split(","), rhs


def normalize_einsum(equation, shapes) -> str:
    """Paddle/numpy einsum notation -> an explicit equation without ``...`` or spaces.

    The ellipsis of each operand becomes fresh labels, right-aligned so that they broadcast as
    numpy does; an implicit output becomes the ellipsis labels then the labels used once, sorted.
    """
    if not isinstance(equation, str):
        raise ArgumentError(f"einsum: equation must be a string such as 'ij,jk->ik', got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    if "->" in rhs:
        raise ArgumentError(f"einsum: equation {equation!r} has more than one '->'")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ArgumentError(f"einsum: equation {equation!r} names {len(terms)} operand(s) but {len(shapes)} were given")
    for term in terms + [rhs]:
        bad = sorted(set(term.replace("...", "")) - set(LABELS))
        if bad or term.count("...") > 1:
            what = f"characters {bad}" if bad else "more than one '...'"
            raise ArgumentError(f"einsum: equation {equation!r} has {what} in term {term!r}; "
                                f"use letters a-z, A-Z and at most one '...' per term")
    free = [c for c in LABELS if c not in eq]
    ell_ranks = []
    for i, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        if "..." in term:
            if named > len(shape):
                raise ShapeError(f"einsum: operand {i} has shape {fmt_shape(shape)} but term {term!r} names {named} dims")
            ell_ranks.append(len(shape) - named)
        elif named != len(shape):
            raise ShapeError(f"einsum: operand {i} has shape {fmt_shape(shape)} ({len(shape)} dims) but term "
                             f"{term!r} names {named}")
    rank = max(ell_ranks, default=0)
    if rank > len(free):
        raise ArgumentError(f"einsum: equation {equation!r} leaves too few unused letters for its '...' dims")
    ell = "".join(free[:rank])
    terms = [t.replace("...", ell[rank - (len(s) - len(t) + 3):] if rank else "") if "..." in t else t
             for t, s in zip(terms, shapes)]
    if arrow:
        if "..." not in rhs and rank:
            raise ShapeError(f"einsum: in {equation!r} the inputs' '...' covers {rank} dim(s) but the output has no "
                             f"'...'; add '...' to the output")
        out = rhs.replace("...", ell)
    else:
        counts = {c: "".join(terms).count(c) for c in set("".join(terms)) - set(ell)}
        out = ell + "".join(sorted(c for c, k in counts.items() if k == 1))
    return ",".join(terms) + "->" + out


def _einsum_kernel(*operands, equation):
    return np.asarray(np.einsum(equation, *operands, optimize=len(operands) > 1))


def _einsum_meta(*operands: TensorMeta, equation) -> TensorMeta:
    terms, out = parse_einsum(equation)
    if len(terms) != len(operands):
        raise ArgumentError(f"einsum: equation {equation!r} names {len(terms)} operand(s) but {len(operands)} were given")
    sizes: dict[str, int | None] = {}
    where: dict[str, int] = {}
    for i, (term, meta) in enumerate(zip(terms, operands)):
        if len(term) != len(meta.shape):
            raise ShapeError(f"einsum: operand {i} has shape {fmt_shape(meta.shape)} but term {term!r} names "
                             f"{len(term)} dims")
        for k, (label, d) in enumerate(zip(term, meta.shape)):
            first = term.index(label)
            if first != k and meta.shape[first] != d:
                raise ShapeError(f"einsum: operand {i} has shape {fmt_shape(meta.shape)} but repeats label "
                                 f"{label!r} of {equation!r} over dims of sizes {meta.shape[first]} and {d}")
            known = sizes.get(label, 1)
            if known is not None and d is not None and known != 1 and d != 1 and known != d:
                raise ShapeError(f"einsum: label {label!r} of {equation!r} is {known} in operand {where[label]} but "
                                 f"{d} in operand {i} (sizes must be equal or 1)")
            if label not in sizes or known == 1 or d is None:
                sizes[label] = d
                where[label] = i
    if len(set(out)) != len(out) or any(c not in sizes for c in out):
        raise ArgumentError(f"einsum: the output {out!r} of {equation!r} repeats a label or names one that no "
                            f"input has")
    dtype = operands[0].dtype
    for meta in operands[1:]:
        dtype = _dt.PROMOTION_TABLE[dtype, meta.dtype]
    return TensorMeta(tuple(sizes[c] for c in out), dtype)


einsum_op = Op(
    "einsum", reference=_einsum_kernel, meta=_einsum_meta, amp=AMP_LOW_PRECISION, promote=_dt.SAME_DTYPE,
    dtypes=PRODUCT_DTYPES, num_outputs=1,
    traits=("alias",),  # numpy returns a view for one operand and no sum ("ij->ji", "ii->i"); Paddle a copy
)


@einsum_op.defgrad
def _einsum_grad(ctx, g):
    equation = ctx.attrs["equation"]
    terms, out = parse_einsum(equation)
    inputs = ctx.inputs
    grads = []
    for i, term in enumerate(terms):
        if not ctx.needs_input_grad[i]:
            grads.append(None)
            continue
        # The gradient over operand i's distinct labels; a repeated one (a diagonal, a trace) then
        # puts it on that diagonal.
        unique = "".join(dict.fromkeys(term))
        own = [ctx.in_shapes[i][term.index(c)] for c in unique]  # operand i's size of each label
        others = [j for j in range(len(terms)) if j != i]
        reachable = set(out).union(*(terms[j] for j in others))
        kept = "".join(c for c in unique if c in reachable)
        if others or kept != out:
            sub = ",".join([out] + [terms[j] for j in others]) + "->" + kept
            grad = dispatch(einsum_op, (g, *(inputs[j] for j in others)), {"equation": sub})
        else:
            grad = g
        # Labels only operand i had were summed away: the gradient is constant along them.
        sizes = dict(zip(kept, grad.shape))
        grad = reshape_to(grad, [sizes.get(c, 1) for c in unique])
        summed = [k for k, c in enumerate(unique) if own[k] == 1 and sizes.get(c, 1) != 1]
        if summed:  # operand i broadcast along these labels
            grad = _sum(grad, axis=summed, keepdim=True)
        if tuple(grad.shape) != tuple(own):
            grad = broadcast_to(grad, own)
        if len(unique) != len(term):  # fresh labels: the letters the equation leaves unused
            grad = _onto_diagonals(grad, unique, term, own, iter(c for c in LABELS if c not in equation))
        grads.append(_as_input_dtype(grad, inputs[i]))
    return tuple(grads)


def _onto_diagonals(grad: Tensor, unique: str, term: str, own: list, fresh) -> Tensor:
    """``grad`` over the distinct labels of ``term`` as a tensor over ``term``: zero off the
    diagonals its repeated labels name. Each repeat gets a fresh label tied to the first by an
    identity matrix, in one einsum (so differentiable again)."""
    labels = [next(fresh) if c in term[:k] else c for k, c in enumerate(term)]
    repeats = [(c + f, own[unique.index(c)]) for c, f in zip(term, labels) if c != f]  # (its term, its size)
    sub = ",".join([unique] + [t for t, _ in repeats]) + "->" + "".join(labels)
    return dispatch(einsum_op, (grad, *(eye(n, dtype=grad.dtype) for _, n in repeats)), {"equation": sub})


def einsum(equation: str, *operands) -> Tensor:
    """Einstein summation over ``operands`` as ``paddle.einsum``/``numpy.einsum``: one term of
    labels per operand, ``...`` for broadcast dims, ``->`` before the output labels (when it is
    left out, the output is the ``...`` dims then the labels used once, sorted).

    >>> import oar
    >>> a, b = oar.ones([2, 3]), oar.ones([3, 4])
    >>> oar.einsum("ij,jk->ik", a, b).shape
    [2, 4]
    >>> oar.einsum("...ij,...jk", oar.ones([5, 2, 3]), b).shape
    [5, 2, 4]
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ArgumentError("einsum: give at least one operand")
    tensors = tuple(as_tensor(t, f"operands[{i}]", "einsum") for i, t in enumerate(operands))
    eq = normalize_einsum(equation, [t.shape for t in tensors])
    _einsum_meta(*(TensorMeta(tuple(t.shape), t.dtype) for t in tensors), equation=eq)
    return dispatch(einsum_op, tensors, {"equation": eq})


def _operand_like(value, like: Tensor, name: str) -> Tensor:
    # Paddle's ``@`` makes an array or number operand a tensor of the tensor operand's dtype;
    # two tensors of different dtypes still raise, as in ``matmul``.
    return value if isinstance(value, Tensor) else cast(as_tensor(value, name, "matmul"), like.dtype)


def _matmul_operator(self, other) -> Tensor:
    return matmul(self, _operand_like(other, self, "y"))


def _rmatmul(self, other) -> Tensor:
    return matmul(_operand_like(other, self, "x"), self)


OPS = [matmul_op, dot_op, outer_op, einsum_op]
__all__ = ["matmul", "mm", "bmm", "dot", "outer", "einsum"]

METHODS = {
    "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot, "outer": outer,
    "__matmul__": _matmul_operator, "__rmatmul__": _rmatmul,
}
