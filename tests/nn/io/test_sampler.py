"""oar.io samplers and batch samplers."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.io import (
    BatchSampler,
    DistributedBatchSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequenceSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_sequence_sampler():
    assert list(SequenceSampler(range(4))) == [0, 1, 2, 3]
    assert len(SequenceSampler(range(4))) == 4
    with pytest.raises(NotImplementedError):
        iter(Sampler(range(3)))


def test_random_sampler_permutes_and_follows_the_seed():
    oar.seed(3)
    first = list(RandomSampler(range(20)))
    assert sorted(first) == list(range(20)) and first != list(range(20))
    oar.seed(3)
    assert list(RandomSampler(range(20))) == first
    assert list(RandomSampler(range(20))) != first  # the generator moved on


def test_random_sampler_replacement_and_num_samples():
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=300))
    assert len(drawn) == 300 and set(drawn) == {0, 1, 2}
    part = list(RandomSampler(range(10), num_samples=4))
    assert len(part) == 4 and len(set(part)) == 4
    assert len(RandomSampler(range(10), num_samples=4)) == 4
    with pytest.raises(ArgumentError, match="must not exceed"):
        RandomSampler(range(3), num_samples=5)
    with pytest.raises(ArgumentError, match="positive int"):
        RandomSampler(range(3), replacement=True, num_samples=0)
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(3), replacement=1)


def test_random_sampler_generators():
    assert list(RandomSampler(range(5), generator=iter([4, 0, 2]))) == [4, 0, 2]  # Paddle: yields the indices
    a = list(RandomSampler(range(9), generator=np.random.default_rng(2)))
    assert a == list(RandomSampler(range(9), generator=np.random.default_rng(2)))


def test_weighted_random_sampler_follows_the_weights():
    oar.seed(0)
    weights = [1.0, 2.0, 3.0, 4.0, 0.0]
    drawn = np.array(list(WeightedRandomSampler(weights, num_samples=20000)))
    freq = np.bincount(drawn, minlength=5) / drawn.size
    np.testing.assert_allclose(freq[:4], [0.1, 0.2, 0.3, 0.4], atol=0.015)
    assert freq[4] == 0  # a zero weight is never drawn
    oar.seed(0)
    assert list(WeightedRandomSampler(weights, num_samples=50)) == drawn[:50].tolist()


def test_weighted_random_sampler_without_replacement_and_tensor_weights():
    drawn = list(WeightedRandomSampler(oar.to_tensor([1.0, 1.0, 5.0, 0.0]), num_samples=3, replacement=False))
    assert sorted(drawn) == [0, 1, 2]
    rows = WeightedRandomSampler(np.array([[1.0, 0.0], [0.0, 1.0]]), num_samples=3)
    assert len(rows) == 6 and list(rows) == [0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"weights": [1.0, -1.0], "num_samples": 2}, "non-negative"),
    ({"weights": [0.0, 0.0], "num_samples": 2}, "positive value"),
    ({"weights": [1.0, np.inf], "num_samples": 2}, "finite"),
    ({"weights": [1.0, 1.0, 0.0], "num_samples": 3, "replacement": False}, "must not exceed"),
    ({"weights": [1.0], "num_samples": 0}, "positive int"),
])
def test_weighted_random_sampler_rejects(kwargs, message):
    with pytest.raises(ArgumentError, match=message):
        WeightedRandomSampler(**kwargs)


def test_subset_random_sampler():
    drawn = list(SubsetRandomSampler([1, 3, 5, 7, 9]))
    assert sorted(drawn) == [1, 3, 5, 7, 9]
    assert len(SubsetRandomSampler([2, 4])) == 2
    with pytest.raises(ArgumentError, match="empty"):
        SubsetRandomSampler([])


def test_batch_sampler_batches_and_length():
    assert list(BatchSampler(dataset=range(7), batch_size=3)) == [[0, 1, 2], [3, 4, 5], [6]]
    assert list(BatchSampler(dataset=range(7), batch_size=3, drop_last=True)) == [[0, 1, 2], [3, 4, 5]]
    assert len(BatchSampler(dataset=range(7), batch_size=3)) == 3
    assert len(BatchSampler(dataset=range(7), batch_size=3, drop_last=True)) == 2
    assert len(BatchSampler(dataset=range(6), batch_size=3)) == 2
    shuffled = [i for b in BatchSampler(dataset=range(10), batch_size=4, shuffle=True) for i in b]
    assert sorted(shuffled) == list(range(10))
    assert list(BatchSampler(sampler=[5, 4, 3], batch_size=2)) == [[5, 4], [3]]


def test_batch_sampler_rejects():
    with pytest.raises(ArgumentError, match="either dataset or sampler"):
        BatchSampler()
    with pytest.raises(ArgumentError, match="not both"):
        BatchSampler(dataset=range(3), sampler=SequenceSampler(range(3)))
    with pytest.raises(ArgumentError, match="shuffle must be False"):
        BatchSampler(sampler=SequenceSampler(range(3)), shuffle=True)
    with pytest.raises(ArgumentError, match="batch_size"):
        BatchSampler(dataset=range(3), batch_size=0)
    with pytest.raises(TypeError, match="IterableDataset"):
        BatchSampler(dataset=IterableDataset())


@pytest.mark.parametrize("n", [1, 7, 10, 13, 16])
@pytest.mark.parametrize("nranks", [1, 2, 3, 4])
@pytest.mark.parametrize("batch_size", [1, 2, 3])
@pytest.mark.parametrize("shuffle", [False, True])
def test_distributed_shards_are_equal_disjoint_and_cover(n, nranks, batch_size, shuffle):
    samplers = [DistributedBatchSampler(range(n), batch_size, num_replicas=nranks, rank=r, shuffle=shuffle)
                for r in range(nranks)]
    shards = [[i for batch in s for i in batch] for s in samplers]
    per_rank = -(-n // nranks)
    assert all(len(shard) == per_rank for shard in shards)  # padded to equal shards
    assert all(len(list(s)) == len(s) for s in samplers)
    everything = [i for shard in shards for i in shard]
    assert set(everything) == set(range(n))  # covering
    # disjoint but for the padding, which repeats the first indices (cyclically)
    total = per_rank * nranks
    expected = [total // n + (i < total % n) for i in range(n)]
    assert np.bincount(everything, minlength=n).tolist() == expected


def test_distributed_padding_repeats_the_first_indices():
    shards = [[i for b in DistributedBatchSampler(range(5), 2, num_replicas=2, rank=r) for i in b] for r in (0, 1)]
    assert shards == [[0, 1, 4], [2, 3, 0]]


def test_distributed_set_epoch_is_deterministic_and_shared_by_ranks():
    def epoch_shards(epoch):
        samplers = [DistributedBatchSampler(range(20), 3, num_replicas=2, rank=r, shuffle=True) for r in (0, 1)]
        for s in samplers:
            s.set_epoch(epoch)
        return [[i for b in s for i in b] for s in samplers]

    first = epoch_shards(4)
    assert first == epoch_shards(4)  # same epoch: same order, whatever the global generator did
    assert not set(first[0]) & set(first[1]) and set(first[0]) | set(first[1]) == set(range(20))
    assert epoch_shards(5) != first
    assert first[0] + first[1] != list(range(20))


def test_distributed_epoch_advances_after_each_shuffled_pass():
    sampler = DistributedBatchSampler(range(12), 4, shuffle=True)
    a, b = list(sampler), list(sampler)
    assert sampler.epoch == 2 and a != b
    sampler.set_epoch(0)
    assert list(sampler) == a
    plain = DistributedBatchSampler(range(12), 4)
    assert list(plain) == list(plain) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_distributed_drop_last_and_len():
    sampler = DistributedBatchSampler(range(10), 4, num_replicas=2, rank=1, drop_last=True)
    assert len(sampler) == 1 and len(list(sampler)) == 1
    assert len(DistributedBatchSampler(range(10), 4, num_replicas=2, rank=1)) == 2


def test_distributed_reads_the_launch_environment(monkeypatch):
    monkeypatch.delenv("PADDLE_TRAINERS_NUM", raising=False)
    monkeypatch.delenv("PADDLE_TRAINER_ID", raising=False)
    alone = DistributedBatchSampler(range(6), 2)
    assert (alone.nranks, alone.local_rank) == (1, 0)
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "3")
    monkeypatch.setenv("PADDLE_TRAINER_ID", "2")
    ranked = DistributedBatchSampler(range(6), 2)
    assert (ranked.nranks, ranked.local_rank) == (3, 2)
    assert list(ranked) == [[4, 5]]
    monkeypatch.setenv("PADDLE_TRAINER_ID", "3")
    with pytest.raises(ArgumentError, match="rank 3 is out of range"):
        DistributedBatchSampler(range(6), 2)
    monkeypatch.setenv("PADDLE_TRAINERS_NUM", "x")
    with pytest.raises(ArgumentError, match="PADDLE_TRAINERS_NUM"):
        DistributedBatchSampler(range(6), 2)
