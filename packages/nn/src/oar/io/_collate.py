"""Collating samples into batches, and the batch structure that crosses process boundaries.

``default_collate_fn`` stacks field by field as Paddle's does: numpy arrays and numbers become
numpy arrays with a leading batch dimension, Tensors are stacked into a Tensor, strings are kept
as lists, dicts and sequences are collated per key or position. The DataLoader then turns every
array of the batch into an oar Tensor.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from oar import Tensor, stack
from oar.errors import ShapeError


def default_collate_fn(batch: Sequence):
    """Stack a list of samples into one batch, field by field.

    Samples whose arrays differ in shape are a ``ShapeError`` naming the field and the shapes
    (``field 0: samples 0..3 have [3, 32, 32], sample 4 has [3, 28, 28]``).

    >>> import numpy as np
    >>> from oar.io import default_collate_fn
    >>> batch = default_collate_fn([{"image": np.zeros([3, 2]), "label": 1},
    ...                             {"image": np.ones([3, 2]), "label": 4}])
    >>> batch["image"].shape, batch["label"]
    ((2, 3, 2), array([1, 4]))
    """
    return _collate(batch, ())


def _field(path: tuple) -> str:
    """``field 0: ``, ``field 'image': ``, ``field 1['w']: `` (nothing for the samples themselves)."""
    return f"field {path[0]!r}" + "".join(f"[{p!r}]" for p in path[1:]) + ": " if path else ""


def _stack(batch: list, path: tuple):
    try:
        if isinstance(batch[0], np.ndarray):
            return np.stack(batch, axis=0)
        return stack(batch, axis=0)
    except (ValueError, TypeError):
        shapes = [list(s.shape) if hasattr(s, "shape") else f"no shape ({type(s).__name__})" for s in batch]
        odd = next((i for i, s in enumerate(shapes) if s != shapes[0]), None)
        if odd is None:
            raise  # not a shape mismatch: numpy's or oar's own error says what is wrong
        have = "sample 0 has" if odd == 1 else f"samples 0..{odd - 1} have"
        raise ShapeError(f"default_collate_fn: {_field(path)}{have} {shapes[0]}, sample {odd} has {shapes[odd]}; "
                         f"the samples of a batch must have one shape in each field (resize or pad them, or give "
                         f"the DataLoader a collate_fn)") from None


def _collate(batch: Sequence, path: tuple):
    sample = batch[0]
    if isinstance(sample, (np.ndarray, Tensor)):
        return _stack(list(batch), path)
    if isinstance(sample, (numbers.Number, np.generic)) and not isinstance(sample, (str, bytes)):
        return np.array(batch)
    if isinstance(sample, (str, bytes)):
        return list(batch)
    if isinstance(sample, Mapping):
        for i, s in enumerate(batch):
            missing = next((key for key in sample if key not in s), None) if isinstance(s, Mapping) else None
            if missing is not None:
                raise KeyError(_Message(f"default_collate_fn: {_field(path)}sample {i} has no key {missing!r}, "
                                        f"which sample 0 has"))
        return {key: _collate([s[key] for s in batch], (*path, key)) for key in sample}
    if isinstance(sample, Sequence):
        width = len(sample)
        for i, s in enumerate(batch):
            if not isinstance(s, Sequence) or len(s) != width:
                raise RuntimeError(f"default_collate_fn: {_field(path)}sample 0 has {width} fields but sample {i} has "
                                   f"{len(s) if isinstance(s, Sequence) else type(s).__name__}; the samples of "
                                   f"a batch must have the same number of fields")
        return [_collate(list(fields), (*path, i)) for i, fields in enumerate(zip(*batch))]
    raise TypeError(f"default_collate_fn: {_field(path)}a sample may hold numpy arrays, Tensors, numbers, strings, "
                    f"dicts and lists, got {type(sample).__name__}")


class _Message(str):
    """A message whose repr is itself, so that ``KeyError(message)`` prints its lines."""

    def __repr__(self) -> str:
        return str(self)


def default_convert_fn(batch):
    """The ``collate_fn`` when automatic batching is off (``batch_size=None``): returns each
    sample as it is, with tuples turned into lists (the DataLoader makes Tensors of its arrays).

    >>> import numpy as np
    >>> from oar.io import default_convert_fn
    >>> default_convert_fn((np.zeros(2), "a"))
    [array([0., 0.]), 'a']
    """
    if isinstance(batch, (Tensor, np.ndarray, str, bytes)):
        return batch
    if isinstance(batch, Mapping):
        return {key: default_convert_fn(value) for key, value in batch.items()}
    if isinstance(batch, Sequence):
        return [default_convert_fn(value) for value in batch]
    return batch


# -- a batch taken apart: arrays in one list, everything else in a picklable skeleton -----------
class _Slot:
    """Where array number ``index`` of the flat list goes back into the skeleton."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index

    def __reduce__(self):
        return _Slot, (self.index,)


def flatten_batch(batch) -> tuple[object, list[np.ndarray]]:
    """Split a collated batch into a skeleton (lists, dicts, numbers, strings and ``_Slot`` s) and
    the list of its arrays; Tensors travel as their numpy arrays."""
    arrays: list[np.ndarray] = []

    def walk(node):
        if isinstance(node, Tensor):
            node = node.numpy(copy=False)
        if isinstance(node, np.ndarray):
            arrays.append(node)
            return _Slot(len(arrays) - 1)
        if isinstance(node, (str, bytes)):
            return node
        if isinstance(node, Mapping):
            return {key: walk(value) for key, value in node.items()}
        if isinstance(node, Sequence):
            return [walk(value) for value in node]
        return node

    return walk(batch), arrays


def restore_batch(skeleton, arrays: list[np.ndarray]):
    """Put the arrays back into the skeleton (inverse of ``flatten_batch``)."""
    if isinstance(skeleton, _Slot):
        return arrays[skeleton.index]
    if isinstance(skeleton, dict):
        return {key: restore_batch(value, arrays) for key, value in skeleton.items()}
    if isinstance(skeleton, list):
        return [restore_batch(value, arrays) for value in skeleton]
    return skeleton


def to_output(batch, make_tensor):
    """A batch as the DataLoader yields it: arrays become Tensors (``make_tensor``), tuples and
    other sequences become lists, dicts stay dicts, strings and numbers stay as they are."""
    if isinstance(batch, Tensor):
        return batch
    if isinstance(batch, np.ndarray):
        return make_tensor(batch)
    if isinstance(batch, (str, bytes)):
        return batch
    if isinstance(batch, Mapping):
        return {key: to_output(value, make_tensor) for key, value in batch.items()}
    if isinstance(batch, Sequence):
        return [to_output(value, make_tensor) for value in batch]
    return batch


__all__ = ["default_collate_fn", "default_convert_fn"]
