"""oar.io datasets: the base classes, the combinators and random_split."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.io import (
    ChainDataset,
    ComposeDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n: int):
        self.n = n

    def __getitem__(self, idx):
        return np.array([idx * idx], np.float32), idx

    def __len__(self):
        return self.n


class Count(IterableDataset):
    def __init__(self, start: int, stop: int):
        self.start, self.stop = start, stop

    def __iter__(self):
        yield from range(self.start, self.stop)


def test_base_classes_say_what_is_missing():
    with pytest.raises(NotImplementedError, match="__getitem__.*Dataset"):
        Dataset()[0]
    with pytest.raises(NotImplementedError, match="__len__"):
        len(Dataset())
    with pytest.raises(NotImplementedError, match="__iter__"):
        iter(IterableDataset())
    with pytest.raises(TypeError, match="no length"):
        len(Count(0, 3))
    with pytest.raises(TypeError, match="iterate"):
        Count(0, 3)[0]
    assert list(Count(2, 5)) == [2, 3, 4]
    assert Dataset[int].__origin__ is Dataset  # generic in annotations, as Paddle's


def test_tensor_dataset_rows():
    x = oar.to_tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    y = oar.to_tensor([10, 11, 12, 13])
    ds = TensorDataset([x, y])
    assert len(ds) == 4
    row, label = ds[2]
    assert isinstance(row, oar.Tensor) and row.tolist() == [6.0, 7.0, 8.0]
    assert label.item() == 12
    with pytest.raises(ArgumentError, match="first dimension"):
        TensorDataset([x, oar.to_tensor([1, 2])])
    with pytest.raises(ArgumentError, match="at least one"):
        TensorDataset([])


def test_compose_dataset_joins_fields():
    ds = ComposeDataset([Squares(3), Subset(list(range(100)), [7, 8, 9])])
    image, label, extra = ds[1]
    assert image.tolist() == [1.0] and label == 1 and extra == 8
    assert len(ds) == 3
    with pytest.raises(ArgumentError, match="same length"):
        ComposeDataset([Squares(3), Squares(4)])
    with pytest.raises(TypeError, match="IterableDataset"):
        ComposeDataset([Squares(3), Count(0, 3)])
    with pytest.raises(ArgumentError, match="empty"):
        ComposeDataset([])


def test_chain_dataset_iterates_in_turn():
    assert list(ChainDataset([Count(0, 2), Count(5, 7)])) == [0, 1, 5, 6]
    with pytest.raises(TypeError, match="IterableDataset"):
        ChainDataset([Squares(2)])


def test_concat_dataset_indexes_across():
    ds = ConcatDataset([Squares(2), Subset(list(range(10)), [5, 6, 7])])
    assert len(ds) == 5 and ds.cumulative_sizes == [2, 5]
    assert ds[1][1] == 1 and ds[2] == 5 and ds[4] == 7 and ds[-1] == 7 and ds[-5][1] == 0
    with pytest.raises(IndexError, match="out of range"):
        ds[5]
    with pytest.raises(IndexError, match="out of range"):
        ds[-6]
    with pytest.raises(TypeError, match="ChainDataset"):
        ConcatDataset([Count(0, 1)])


def test_subset_keeps_order_and_repeats():
    sub = Subset(Squares(10), [3, 3, 0])
    assert len(sub) == 3
    assert [sub[i][1] for i in range(3)] == [3, 3, 0]


def test_random_split_by_lengths_is_a_seeded_partition():
    oar.seed(5)
    parts = random_split(range(10), [3, 7])
    assert [len(p) for p in parts] == [3, 7]
    values = [list(p) for p in parts]
    assert sorted(values[0] + values[1]) == list(range(10))
    assert values != [list(range(3)), list(range(3, 10))]  # shuffled
    oar.seed(5)
    assert [list(p) for p in random_split(range(10), [3, 7])] == values
    oar.seed(6)
    assert [list(p) for p in random_split(range(10), [3, 7])] != values


def test_random_split_by_fractions_deals_the_remainder_from_the_first():
    parts = random_split(range(11), [0.5, 0.25, 0.25])
    assert [len(p) for p in parts] == [6, 3, 2]  # floors 5, 2, 2; one left over for each of the first two
    assert sorted(i for p in parts for i in p) == list(range(11))
    with pytest.warns(UserWarning, match="split 1 is empty"):
        assert [len(p) for p in random_split(range(2), [0.9, 0.1])] == [2, 0]


def test_random_split_with_a_numpy_generator():
    a = [list(p) for p in random_split(range(8), [4, 4], generator=np.random.default_rng(1))]
    b = [list(p) for p in random_split(range(8), [4, 4], generator=np.random.default_rng(1))]
    assert a == b


@pytest.mark.parametrize(("lengths", "message"), [
    ([3, 3], "add up to 6"),
    ([0.5, 0.4], "add up to 1"),
    ([1.5, -0.5], "not between 0 and 1"),
    ([-1, 11], "non-negative int"),
])
def test_random_split_rejects_bad_lengths(lengths, message):
    with pytest.raises(ArgumentError, match=message):
        random_split(range(10), lengths)
