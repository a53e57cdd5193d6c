"""Samplers yield dataset indices; batch samplers yield lists of them (Paddle's names and behaviour).

Every random choice draws from oar's global generator (``oar.seed``), unless a sampler is given
its own generator, so a seeded run shuffles the same way every time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator, Sequence
from types import GenericAlias

import numpy as np

from oar.errors import ArgumentError
from oar.io._dataset import IterableDataset


def _global_generator() -> np.random.Generator:
    from oar.ops import default_generator

    return default_generator()


def _positive_int(value, what: str, owner: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ArgumentError(f"{owner}: {what} must be a positive int, got {value!r}")
    return int(value)


def _bool(value, what: str, owner: str) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: {what} must be a bool, got {type(value).__name__}")
    return bool(value)


class Sampler:
    """Base class of samplers: ``__iter__`` yields indices of ``data_source`` and, where it has one,
    ``__len__`` says how many.

    >>> from oar.io import Sampler
    >>> class Backwards(Sampler):
    ...     def __iter__(self):
    ...         return iter(range(len(self.data_source) - 1, -1, -1))
    ...     def __len__(self):
    ...         return len(self.data_source)
    >>> list(Backwards(range(3)))
    [2, 1, 0]
    """

    __class_getitem__ = classmethod(GenericAlias)  # ``Sampler[int]`` in annotations

    def __init__(self, data_source=None):
        self.data_source = data_source

    def __iter__(self) -> Iterator:
        raise NotImplementedError(f"'__iter__' is not implemented in class {type(self).__name__}")


class SequenceSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1`` in order.

    >>> from oar.io import SequenceSampler
    >>> list(SequenceSampler(range(3)))
    [0, 1, 2]
    """

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """Indices of ``data_source`` in random order: a permutation (of which the first
    ``num_samples``) without replacement, or ``num_samples`` independent draws with it.

    ``generator`` may be a ``numpy.random.Generator`` to draw from, or (as in Paddle) an iterator
    that yields the indices itself; by default oar's global generator draws them.

    >>> import oar
    >>> from oar.io import RandomSampler
    >>> _ = oar.seed(0)
    >>> sorted(RandomSampler(range(5)))
    [0, 1, 2, 3, 4]
    >>> len(list(RandomSampler(range(5), replacement=True, num_samples=8)))
    8
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = _bool(replacement, "replacement", "RandomSampler")
        self._num_samples = num_samples
        self.generator = generator
        _positive_int(self.num_samples, "num_samples", "RandomSampler")
        if not self.replacement and self.num_samples > len(data_source):
            raise ArgumentError(f"RandomSampler: without replacement num_samples ({self.num_samples}) must not "
                                f"exceed the length of data_source ({len(data_source)})")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        if self.generator is not None and not isinstance(self.generator, np.random.Generator):
            return _take(self.generator, self.num_samples)
        rng = self.generator if self.generator is not None else _global_generator()
        n = len(self.data_source)
        if self.replacement:
            drawn = rng.integers(0, n, size=self.num_samples)
        else:
            drawn = rng.permutation(n)[: self.num_samples]
        return iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


def _take(iterator, n: int) -> Iterator[int]:
    for _, index in zip(range(n), iterator):
        yield index


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in ``[0, len(weights))`` drawn with probabilities proportional to
    ``weights`` (a list, numpy array or Tensor), with replacement by default. A 2-d ``weights``
    draws ``num_samples`` for each row, one row after the other.

    >>> import oar
    >>> from oar.io import WeightedRandomSampler
    >>> _ = oar.seed(0)
    >>> list(WeightedRandomSampler([0.0, 1.0, 0.0], num_samples=3))
    [1, 1, 1]
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True):
        self.num_samples = _positive_int(num_samples, "num_samples", "WeightedRandomSampler")
        self.replacement = _bool(replacement, "replacement", "WeightedRandomSampler")
        array = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights, dtype=np.float64)
        if array.ndim not in (1, 2) or array.shape[-1] == 0:
            raise ArgumentError(f"WeightedRandomSampler: weights must be a non-empty 1-d or 2-d sequence, "
                                f"got shape {list(array.shape)}")
        rows = array.reshape(-1, array.shape[-1])
        if not np.all(np.isfinite(rows)) or np.any(rows < 0):
            raise ArgumentError("WeightedRandomSampler: weights must be finite and non-negative")
        nonzero = (rows > 0).sum(axis=1)
        if np.any(nonzero == 0):
            raise ArgumentError("WeightedRandomSampler: every row of weights needs a positive value")
        if not self.replacement and np.any(nonzero < self.num_samples):
            raise ArgumentError(f"WeightedRandomSampler: without replacement num_samples ({self.num_samples}) must "
                                f"not exceed the number of positive weights ({int(nonzero.min())})")
        self.weights = weights
        self._rows = rows / rows.sum(axis=1, keepdims=True)

    def __iter__(self) -> Iterator[int]:
        rng = _global_generator()
        drawn = [rng.choice(row.size, self.num_samples, replace=self.replacement, p=row) for row in self._rows]
        return iter(np.concatenate(drawn).tolist())

    def __len__(self) -> int:
        return self.num_samples * len(self._rows)


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in random order, without replacement.

    >>> from oar.io import SubsetRandomSampler
    >>> sorted(SubsetRandomSampler([1, 3, 5, 7, 9]))
    [1, 3, 5, 7, 9]
    """

    def __init__(self, indices: Sequence[int]):
        if len(indices) == 0:
            raise ArgumentError("SubsetRandomSampler: indices must not be empty")
        self.indices = indices

    def __iter__(self) -> Iterator[int]:
        order = _global_generator().permutation(len(self.indices)).tolist()
        return (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Groups the indices of a sampler into lists of ``batch_size``: give ``dataset`` (sequential,
    or random with ``shuffle=True``) or a ``sampler``, not both. ``drop_last`` drops a final
    batch shorter than ``batch_size``.

    >>> from oar.io import BatchSampler
    >>> list(BatchSampler(dataset=range(5), batch_size=2))
    [[0, 1], [2, 3], [4]]
    >>> len(BatchSampler(dataset=range(5), batch_size=2, drop_last=True))
    2
    """

    def __init__(self, dataset=None, sampler=None, shuffle: bool = False, batch_size: int = 1,
                 drop_last: bool = False):
        shuffle = _bool(shuffle, "shuffle", "BatchSampler")
        if dataset is None:
            if sampler is None:
                raise ArgumentError("BatchSampler: give either dataset or sampler")
            if not isinstance(sampler, (Sampler, Iterable)):
                raise TypeError(f"BatchSampler: sampler must be an oar.io.Sampler or an iterable, "
                                f"got {type(sampler).__name__}")
            if shuffle:
                raise ArgumentError("BatchSampler: shuffle must be False when a sampler is given "
                                    "(the sampler decides the order)")
            self.sampler = sampler
        else:
            if isinstance(dataset, IterableDataset):
                raise TypeError("BatchSampler: dataset must not be an IterableDataset (it has no indices)")
            if sampler is not None:
                raise ArgumentError("BatchSampler: give either dataset or sampler, not both")
            self.sampler = RandomSampler(dataset) if shuffle else SequenceSampler(dataset)
        self.batch_size = _positive_int(batch_size, "batch_size", "BatchSampler")
        self.shuffle = shuffle
        self.drop_last = _bool(drop_last, "drop_last", "BatchSampler")

    def __iter__(self) -> Iterator[list[int]]:
        return _batched(iter(self.sampler), self.batch_size, self.drop_last)

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


def _batched(indices: Iterator, batch_size: int, drop_last: bool) -> Iterator[list]:
    batch = []
    for index in indices:
        batch.append(index)
        if len(batch) == batch_size:
            yield batch
            batch = []
    if batch and not drop_last:
        yield batch


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ArgumentError(f"DistributedBatchSampler: environment variable {name}={value!r} is not an int") from None


class DistributedBatchSampler(BatchSampler):
    """The batches of one rank out of ``num_replicas``: each rank loads a disjoint shard of
    ``dataset``, padded (by repeating the first indices) so that every shard has the same size.

    ``num_replicas`` and ``rank`` default to the environment of a distributed launch
    (``PADDLE_TRAINERS_NUM``, ``PADDLE_TRAINER_ID``), else to 1 and 0. With ``shuffle=True`` the
    indices are shuffled with the epoch number as the seed, the same on every rank; the epoch
    advances after each pass, or call ``set_epoch(epoch)`` at the start of every epoch.

    >>> from oar.io import DistributedBatchSampler
    >>> [list(DistributedBatchSampler(range(5), batch_size=2, num_replicas=2, rank=r)) for r in (0, 1)]
    [[[0, 1], [4]], [[2, 3], [0]]]
    """

    def __init__(self, dataset, batch_size: int, num_replicas: int | None = None, rank: int | None = None,
                 shuffle: bool = False, drop_last: bool = False):
        owner = "DistributedBatchSampler"
        self.dataset = dataset
        self.batch_size = _positive_int(batch_size, "batch_size", owner)
        self.shuffle = _bool(shuffle, "shuffle", owner)
        self.drop_last = _bool(drop_last, "drop_last", owner)
        nranks = _env_int("PADDLE_TRAINERS_NUM", 1) if num_replicas is None else num_replicas
        self.nranks = _positive_int(nranks, "num_replicas", owner)
        local_rank = _env_int("PADDLE_TRAINER_ID", 0) if rank is None else rank
        if isinstance(local_rank, bool) or not isinstance(local_rank, (int, np.integer)) or local_rank < 0:
            raise ArgumentError(f"{owner}: rank must be a non-negative int, got {local_rank!r}")
        if local_rank >= self.nranks:
            raise ArgumentError(f"{owner}: rank {local_rank} is out of range for num_replicas={self.nranks}")
        self.local_rank = int(local_rank)
        self.epoch = 0
        self.num_samples = math.ceil(len(dataset) / self.nranks)
        self.total_size = self.num_samples * self.nranks

    def _padded_indices(self) -> list[int]:
        indices = list(range(len(self.dataset)))
        if indices:
            missing = self.total_size - len(indices)
            indices += (indices * math.ceil(missing / len(indices)))[:missing]
        if self.shuffle:
            # A legacy RandomState seeded by the epoch: the same order on every rank, and the same
            # order Paddle's sampler produces for that epoch.
            np.random.RandomState(self.epoch).shuffle(indices)
            self.epoch += 1
        return indices

    def _shard(self, indices: list[int]) -> list[int]:
        """Whole batches in turn for each rank; the last, short round split evenly over the ranks."""
        if self.nranks == 1:
            return indices
        round_size = self.batch_size * self.nranks
        tail = self.total_size % round_size
        shard = []
        for start in range(self.local_rank * self.batch_size, self.total_size - tail, round_size):
            shard.extend(indices[start:start + self.batch_size])
        per_rank = tail // self.nranks
        tail_start = self.total_size - tail + self.local_rank * per_rank
        shard.extend(indices[tail_start:tail_start + per_rank])
        return shard

    def __iter__(self) -> Iterator[list[int]]:
        return _batched(iter(self._shard(self._padded_indices())), self.batch_size, self.drop_last)

    def __len__(self) -> int:
        n = self.num_samples
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def set_epoch(self, epoch: int) -> None:
        """Use ``epoch`` as the shuffling seed of the next pass (the same value on every rank gives
        every rank the same permutation, so the shards stay disjoint).

        >>> from oar.io import DistributedBatchSampler
        >>> sampler = DistributedBatchSampler(range(8), batch_size=4, shuffle=True)
        >>> sampler.set_epoch(3); first = list(sampler)
        >>> sampler.set_epoch(3); first == list(sampler)
        True
        """
        if isinstance(epoch, bool) or not isinstance(epoch, (int, np.integer)) or epoch < 0:
            raise ArgumentError(f"DistributedBatchSampler.set_epoch: epoch must be a non-negative int, got {epoch!r}")
        self.epoch = int(epoch)


__all__ = [
    "Sampler", "SequenceSampler", "RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler", "BatchSampler",
    "DistributedBatchSampler",
]
