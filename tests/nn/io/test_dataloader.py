"""DataLoader in the main process (num_workers=0): arguments, lengths, batching modes."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.io import BatchSampler, DataLoader, Dataset, IterableDataset, SequenceSampler, TensorDataset


class Numbers(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __getitem__(self, i):
        return np.array([i], np.int64)

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.array([i], np.int64)


def values(loader) -> list[list[int]]:
    return [batch.numpy().ravel().tolist() for batch in loader]


def test_batches_lengths_and_drop_last():
    assert values(DataLoader(Numbers(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(DataLoader(Numbers(7), batch_size=3)) == 3
    assert values(DataLoader(Numbers(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(Numbers(7), batch_size=3, drop_last=True)) == 2
    assert len(DataLoader(Numbers(7))) == 7  # batch_size defaults to 1


def test_shuffle_follows_the_seed_and_covers_everything():
    oar.seed(11)
    first = values(DataLoader(Numbers(20), batch_size=4, shuffle=True))
    assert sorted(sum(first, [])) == list(range(20)) and sum(first, []) != list(range(20))
    oar.seed(11)
    assert values(DataLoader(Numbers(20), batch_size=4, shuffle=True)) == first


def test_each_pass_reshuffles_and_loader_can_be_called():
    loader = DataLoader(Numbers(20), batch_size=20, shuffle=True)
    assert values(loader) != values(loader())


def test_batch_sampler_replaces_batch_size():
    sampler = BatchSampler(sampler=SequenceSampler(Numbers(5)), batch_size=2, drop_last=True)
    loader = DataLoader(Numbers(5), batch_sampler=sampler)
    assert loader.batch_size is None and len(loader) == 2
    assert values(loader) == [[0, 1], [2, 3]]
    with pytest.raises(ArgumentError, match="batch_sampler"):
        DataLoader(Numbers(5), batch_sampler=sampler, batch_size=2)
    with pytest.raises(ArgumentError, match="batch_sampler"):
        DataLoader(Numbers(5), batch_sampler=sampler, shuffle=True)


def test_batch_size_none_returns_samples_one_by_one():
    loader = DataLoader(Numbers(3), batch_size=None)
    assert len(loader) == 3
    batches = list(loader)
    assert [b.shape for b in batches] == [[1], [1], [1]] and values(batches) == [[0], [1], [2]]
    oar.seed(2)
    shuffled = values(DataLoader(Numbers(10), batch_size=None, shuffle=True))
    assert sorted(shuffled) == [[i] for i in range(10)] and shuffled != [[i] for i in range(10)]


def test_iterable_dataset_batches_and_drop_last():
    assert values(DataLoader(Stream(5), batch_size=2)) == [[0, 1], [2, 3], [4]]
    assert values(DataLoader(Stream(5), batch_size=2, drop_last=True)) == [[0, 1], [2, 3]]
    assert values(DataLoader(Stream(2), batch_size=None)) == [[0], [1]]
    with pytest.raises(TypeError, match="length of an IterableDataset"):
        len(DataLoader(Stream(5)))
    with pytest.raises(ArgumentError, match="shuffle"):
        DataLoader(Stream(5), shuffle=True)


def test_tensor_dataset_through_the_loader():
    x = oar.to_tensor(np.arange(10, dtype=np.float32).reshape(5, 2))
    y = oar.to_tensor([0, 1, 0, 1, 1])
    batches = list(DataLoader(TensorDataset([x, y]), batch_size=2))
    assert [b[1].tolist() for b in batches] == [[0, 1], [0, 1], [1]]
    assert batches[0][0].tolist() == [[0.0, 1.0], [2.0, 3.0]]


def test_custom_collate_fn():
    def add_up(samples):
        return np.sum(samples, axis=0), len(samples)

    total, count = next(iter(DataLoader(Numbers(4), batch_size=4, collate_fn=add_up)))
    assert total.tolist() == [6] and count == 4


def test_places_and_feed_list():
    batch = next(iter(DataLoader(Numbers(2), batch_size=2, places=oar.CPUPlace())))
    assert batch.place == oar.CPUPlace()

    class Feed:
        def __init__(self, name):
            self.name = name

    class Pairs(Dataset):
        def __getitem__(self, i):
            return np.array([i], np.float32), i

        def __len__(self):
            return 2

    batch = next(iter(DataLoader(Pairs(), feed_list=[Feed("x"), Feed("y")], return_list=False, batch_size=2)))
    assert set(batch) == {"x", "y"} and batch["y"].tolist() == [0, 1]
    plain = next(iter(DataLoader(Pairs(), return_list=False, batch_size=2)))  # dynamic mode: still a list
    assert isinstance(plain, list) and plain[1].tolist() == [0, 1]
    with pytest.raises(ArgumentError, match="feed_list names 1"):
        next(iter(DataLoader(Pairs(), feed_list=[Feed("x")], return_list=False, batch_size=2)))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"batch_size": 0}, "batch_size"),
    ({"num_workers": -1}, "num_workers"),
    ({"prefetch_factor": 0}, "prefetch_factor"),
    ({"timeout": -1}, "timeout"),
])
def test_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        DataLoader(Numbers(3), **kwargs)


class Failing(Dataset):
    """Sample ``fail_at`` raises ``error``; the others are ``[i, i]``."""

    def __init__(self, fail_at, error: Exception, n: int = 8):
        self.fail_at, self.error, self.n = fail_at, error, n

    def __getitem__(self, i):
        if i == self.fail_at:
            raise self.error
        return np.full([2], i, np.float32)

    def __len__(self):
        return self.n


class TwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


@pytest.mark.parametrize("batch_size", [4, None])
def test_an_exception_in_getitem_names_the_sample_index(batch_size):
    original = ValueError("corrupt JPEG")
    with pytest.raises(ValueError) as info:
        list(DataLoader(Failing(6, original), batch_size=batch_size))
    message = str(info.value)
    assert message.startswith("DataLoader: dataset[6] raised ValueError: corrupt JPEG"), message
    assert info.value.__cause__ is original  # the dataset's own exception, with its traceback


def test_an_index_of_a_numpy_int_shows_as_a_number():
    with pytest.raises(KeyError) as info:
        list(DataLoader(Failing(np.int64(3), KeyError("no label"), 8), batch_sampler=[[np.int64(3)]]))
    assert "dataset[3] raised KeyError: 'no label'" in str(info.value)  # readable, not a repr


def test_an_exception_that_cannot_be_rebuilt_is_a_runtime_error_with_the_original_as_cause():
    original = TwoArgs("x", "y")
    with pytest.raises(RuntimeError, match=r"dataset\[1\] raised TwoArgs: \('x', 'y'\)") as info:
        list(DataLoader(Failing(1, original), batch_size=2))
    assert info.value.__cause__ is original


def test_a_collate_shape_mismatch_names_the_batch_s_dataset_indices():
    class Ragged(Dataset):
        def __getitem__(self, i):
            return np.zeros([3, 28 if i == 6 else 32, 32], np.float32), i

        def __len__(self):
            return 8

    with pytest.raises(ValueError) as info:
        list(DataLoader(Ragged(), batch_size=4))
    message = str(info.value)
    assert "collate_fn on dataset[4, 5, 6, 7]" in message, message
    assert "field 0: samples 0..1 have [3, 32, 32], sample 2 has [3, 28, 32]" in message, message
