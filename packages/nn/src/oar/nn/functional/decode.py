"""Sequence helpers of decoding, with Paddle's names: ``sequence_mask`` (lengths to a mask) and
``gather_tree`` (the full beams from beam search's per-step ids and parents). Both work on
integer data, where no gradient flows; ``gather_tree`` is an op with a numpy kernel (the walk back
from the last step is sequential), ``sequence_mask`` composes core ops.

>>> import oar
>>> oar.nn.functional.sequence_mask(oar.to_tensor([1, 3]), maxlen=4).tolist()
[[1, 0, 0, 0], [1, 1, 1, 0]]
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.ops import Op, Tensor, TensorMeta, as_tensor, dispatch, fmt_shape


def sequence_mask(x, maxlen=None, dtype="int64", name=None) -> Tensor:
    """``mask[..., j] = j < x[...]``: the mask of sequences of lengths ``x``, with a new last
    axis of size ``maxlen`` (default: the largest length), in ``dtype``.

    >>> import oar
    >>> oar.nn.functional.sequence_mask(oar.to_tensor([2, 0]), dtype="bool").tolist()
    [[True, True], [False, False]]
    """
    fn = "sequence_mask"
    x = as_tensor(x, "x", fn)
    if not x.dtype.is_integer:
        raise DTypeError(f"{fn}: x must be an integer tensor of lengths, got {x.dtype.name}")
    if maxlen is None:
        maxlen = int(oar.max(x)) if x.size else 0
    elif isinstance(maxlen, Tensor):
        maxlen = int(maxlen.item())
    maxlen = int(maxlen)
    if maxlen < 0:
        raise ArgumentError(f"{fn}: maxlen must be non-negative, got {maxlen}")
    steps = oar.arange(maxlen, dtype=x.dtype, device=x.place)
    return oar.cast(oar.less_than(steps, oar.unsqueeze(x, -1)), dtype)


def _gather_tree_kernel(ids, parents):
    """Walk each beam back from the last step: ``out[t] = ids[t, parent]`` where ``parent``
    follows ``parents`` from the final beam index."""
    steps, batch, beam = ids.shape
    if parents.size and (parents.min() < 0 or parents.max() >= beam):
        bad = parents.min() if parents.min() < 0 else parents.max()
        raise ArgumentError(f"gather_tree: parents holds {int(bad)}, out of range for beam size {beam}")
    out = np.empty_like(ids)
    if steps == 0:
        return out
    rows = np.arange(batch)[:, None]
    beam_index = np.broadcast_to(np.arange(beam), (batch, beam)).copy()
    for t in range(steps - 1, -1, -1):
        out[t] = ids[t, rows, beam_index]
        beam_index = parents[t, rows, beam_index]
    return out


def _gather_tree_meta(ids: TensorMeta, parents: TensorMeta) -> TensorMeta:
    fn = "gather_tree"
    if not ids.dtype.is_integer or ids.dtype is not parents.dtype:
        raise DTypeError(f"{fn}: ids and parents must be integer tensors of one dtype, got {ids.dtype.name} and "
                         f"{parents.dtype.name}")
    if len(ids.shape) != 3 or tuple(ids.shape) != tuple(parents.shape):
        raise ShapeError(f"{fn}: ids and parents must both be [max_time, batch, beam_size], got "
                         f"{fmt_shape(ids.shape)} and {fmt_shape(parents.shape)}")
    return ids


gather_tree_op = Op("gather_tree", reference=_gather_tree_kernel, meta=_gather_tree_meta,
                    dtypes=(oar.int32, oar.int64), traits=("nondiff",))


def gather_tree(ids, parents) -> Tensor:
    """The full sequences of beam search: ``ids`` and ``parents`` ([max_time, batch, beam_size])
    hold each step's chosen token and the beam it extends; the result holds, for each final
    beam, its tokens from the first step on.

    >>> import oar
    >>> ids = oar.to_tensor([[[2, 3]], [[4, 5]]])
    >>> parents = oar.to_tensor([[[0, 0]], [[1, 0]]])
    >>> oar.nn.functional.gather_tree(ids, parents).tolist()
    [[[3, 2]], [[4, 5]]]
    """
    ids = as_tensor(ids, "ids", "gather_tree")
    parents = as_tensor(parents, "parents", "gather_tree")
    return dispatch(gather_tree_op, (ids, parents), {})


OPS = [gather_tree_op]
__all__ = ["sequence_mask", "gather_tree"]
