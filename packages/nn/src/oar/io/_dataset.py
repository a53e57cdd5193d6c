"""Datasets: the map-style ``Dataset`` and the stream-style ``IterableDataset``, and the ways to
combine and split them, with Paddle's names and behaviour."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from types import GenericAlias

import numpy as np

from oar.errors import ArgumentError


class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i`` and ``len(dataset)`` their number.

    Subclass it and implement ``__getitem__`` and ``__len__``; a sample is a numpy array, a
    number, a Tensor, or a tuple/list/dict of them, which ``DataLoader`` batches field by field.

    >>> import numpy as np
    >>> from oar.io import Dataset
    >>> class Squares(Dataset):
    ...     def __getitem__(self, idx):
    ...         return np.array([idx * idx], "float32"), idx
    ...     def __len__(self):
    ...         return 4
    >>> Squares()[3]
    (array([9.], dtype=float32), 3)
    """

    __class_getitem__ = classmethod(GenericAlias)  # ``Dataset[tuple]`` in annotations, as Paddle's Generic

    def __getitem__(self, idx):
        raise NotImplementedError(f"'__getitem__' is not implemented in class {type(self).__name__}")

    def __len__(self) -> int:
        raise NotImplementedError(f"'__len__' is not implemented in class {type(self).__name__}")


class IterableDataset(Dataset):
    """A dataset read as a stream: implement ``__iter__`` to yield samples.

    With ``DataLoader(num_workers=n)`` every worker iterates its own copy of the dataset, so
    shard the stream with ``oar.io.get_worker_info()`` or each sample comes ``n`` times.

    >>> from oar.io import IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self):
    ...         yield from range(3)
    >>> list(Count())
    [0, 1, 2]
    """

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"'__iter__' is not implemented in class {type(self).__name__}")

    # TypeError, Python's "not supported" (Paddle raises RuntimeError): list() and len() expect it.
    def __getitem__(self, idx):
        raise TypeError(f"'__getitem__' should not be called on the IterableDataset {type(self).__name__}: "
                        f"iterate over it instead")

    def __len__(self) -> int:
        raise TypeError(f"'__len__' should not be called on the IterableDataset {type(self).__name__}: "
                        f"a stream has no length")


class TensorDataset(Dataset):
    """Sample ``i`` is the tuple of the ``i``-th rows of ``tensors`` (which share their first
    dimension).

    >>> import oar
    >>> from oar.io import TensorDataset
    >>> ds = TensorDataset([oar.arange(6).reshape([3, 2]), oar.to_tensor([7, 8, 9])])
    >>> len(ds), [t.tolist() for t in ds[1]]
    (3, [[2, 3], 8])
    """

    def __init__(self, tensors: Sequence):
        tensors = list(tensors)
        if not tensors:
            raise ArgumentError("TensorDataset: give at least one tensor")
        sizes = [t.shape[0] if len(t.shape) else None for t in tensors]
        if None in sizes or len(set(sizes)) != 1:
            shapes = [list(t.shape) for t in tensors]
            raise ArgumentError(f"TensorDataset: the tensors must share their first dimension, got shapes {shapes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


def _as_fields(sample) -> list:
    return list(sample) if isinstance(sample, (list, tuple)) else [sample]


class ComposeDataset(Dataset):
    """Joins the fields of map-style datasets of the same length: sample ``i`` is the tuple of
    the fields of every dataset's sample ``i``, in order.

    >>> from oar.io import ComposeDataset, Subset
    >>> ds = ComposeDataset([Subset(range(10), [1, 2]), Subset(range(10), [5, 6])])
    >>> ds[1]
    (2, 6)
    """

    def __init__(self, datasets: Sequence):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ComposeDataset: datasets must not be empty")
        for i, dataset in enumerate(self.datasets):
            if isinstance(dataset, IterableDataset):
                raise TypeError(f"ComposeDataset: dataset {i} is an IterableDataset; only map-style datasets compose")
        lengths = [len(d) for d in self.datasets]
        if len(set(lengths)) != 1:
            raise ArgumentError(f"ComposeDataset: the datasets must have the same length, got lengths {lengths}")

    def __len__(self) -> int:
        return len(self.datasets[0])

    def __getitem__(self, idx):
        fields = []
        for dataset in self.datasets:
            fields.extend(_as_fields(dataset[idx]))
        return tuple(fields)


class ChainDataset(IterableDataset):
    """Iterates ``IterableDataset`` s one after the other.

    >>> from oar.io import ChainDataset, IterableDataset
    >>> class Count(IterableDataset):
    ...     def __init__(self, n):
    ...         self.n = n
    ...     def __iter__(self):
    ...         yield from range(self.n)
    >>> list(ChainDataset([Count(2), Count(3)]))
    [0, 1, 0, 1, 2]
    """

    def __init__(self, datasets: Sequence):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ChainDataset: datasets must not be empty")
        for i, dataset in enumerate(self.datasets):
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset: dataset {i} is a {type(dataset).__name__}; it chains IterableDatasets")

    def __iter__(self) -> Iterator:
        for dataset in self.datasets:
            yield from dataset


class ConcatDataset(Dataset):
    """Map-style datasets one after the other: indices run through the first, then the second, ...

    >>> from oar.io import ConcatDataset, Subset
    >>> ds = ConcatDataset([Subset(range(10), [0, 1]), Subset(range(10), [7, 8, 9])])
    >>> len(ds), ds[2], ds[-1]
    (5, 7, 9)
    """

    def __init__(self, datasets: Iterable):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ArgumentError("ConcatDataset: datasets must not be empty")
        for i, dataset in enumerate(self.datasets):
            if isinstance(dataset, IterableDataset):
                raise TypeError(f"ConcatDataset: dataset {i} is an IterableDataset; use ChainDataset for streams")
        self.cumulative_sizes = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence) -> list[int]:
        return [int(n) for n in np.cumsum([len(d) for d in sequence])]

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"ConcatDataset: index {idx} is out of range for {n} samples")
        idx = idx + n if idx < 0 else idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order (repeats allowed).

    >>> from oar.io import Subset
    >>> list(Subset(range(1, 4), [0, 2, 2]))
    [1, 3, 3]
    """

    def __init__(self, dataset, indices: Sequence[int]):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


def _split_lengths(n: int, lengths: Sequence) -> list[int]:
    """Lengths as given, or fractions (summing to 1) turned into lengths as Paddle does: each
    ``floor(n * fraction)``, then the remainder dealt out one by one from the first split."""
    lengths = list(lengths)
    total = sum(lengths)
    if any(isinstance(v, (float, np.floating)) for v in lengths):
        if not math.isclose(total, 1):
            raise ArgumentError(f"random_split: fractions must add up to 1, got {lengths} (sum {total})")
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ArgumentError(f"random_split: fraction {i} ({fraction}) is not between 0 and 1")
        counts = [int(math.floor(n * fraction)) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"random_split: split {i} is empty", stacklevel=3)
        return counts
    for i, length in enumerate(lengths):
        if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
            raise ArgumentError(f"random_split: length {i} must be a non-negative int (or give fractions), "
                                f"got {length!r}")
    if total != n:
        raise ArgumentError(f"random_split: the lengths {lengths} add up to {total}, but the dataset has {n} samples")
    return [int(v) for v in lengths]


def random_split(dataset, lengths: Sequence, generator=None) -> list[Subset]:
    """Split ``dataset`` at random into non-overlapping ``Subset`` s of the given ``lengths``, or
    of the given fractions of its length (``[0.8, 0.2]``).

    The permutation comes from oar's global generator, so ``oar.seed(n)`` makes the split
    reproducible; a ``numpy.random.Generator`` passed as ``generator`` is used instead.

    >>> import oar
    >>> from oar.io import random_split
    >>> _ = oar.seed(2023)
    >>> a, b = random_split(range(10), [3, 7])
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (3, 7, True)
    """
    counts = _split_lengths(len(dataset), lengths)
    if isinstance(generator, np.random.Generator):
        order = generator.permutation(len(dataset)).tolist()
    elif generator is None:
        from oar.ops import default_generator

        order = default_generator().permutation(len(dataset)).tolist()
    else:
        raise TypeError(f"random_split: generator must be None or a numpy.random.Generator, "
                        f"got {type(generator).__name__}")
    bounds = np.cumsum([0] + counts)
    return [Subset(dataset, order[start:stop]) for start, stop in zip(bounds[:-1], bounds[1:])]


__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ComposeDataset", "ChainDataset", "ConcatDataset", "Subset",
    "random_split",
]
