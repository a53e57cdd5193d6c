"""``oar.io.DistributedBatchSampler`` on real ranks: each rank reads the launcher's rank and world
size from its environment, the shards are disjoint and cover the dataset (padded to equal size),
and ``set_epoch`` gives every rank the same permutation."""

from __future__ import annotations

import json

import pytest

SHARDS = """
import json, oar.distributed as dist
from oar.io import DistributedBatchSampler
dist.init_parallel_env()
sampler = DistributedBatchSampler(list(range(23)), batch_size=4, shuffle=True)  # rank and size from the launcher
epochs = {}
for epoch in (0, 1, 5):
    sampler.set_epoch(epoch)
    epochs[epoch] = [i for batch in sampler for i in batch]
everyone = []
dist.all_gather_object(everyone, {"rank": sampler.local_rank, "nranks": sampler.nranks, "epochs": epochs})
print("SHARDS", json.dumps(everyone))
"""


@pytest.mark.parametrize("nproc", [2, 3])
def test_shards_are_disjoint_cover_the_data_and_follow_the_epoch(launch, nproc):
    job = launch(SHARDS, nproc=nproc).check()
    line = next(line for line in job.log(0).splitlines() if line.startswith("SHARDS "))
    ranks = json.loads(line[len("SHARDS "):])
    assert [r["rank"] for r in ranks] == list(range(nproc)) and {r["nranks"] for r in ranks} == {nproc}
    per_rank = -(-23 // nproc)
    for epoch in ("0", "1", "5"):
        shards = [r["epochs"][epoch] for r in ranks]
        assert all(len(shard) == per_rank for shard in shards)
        together = [i for shard in shards for i in shard]
        assert sorted(set(together)) == list(range(23))  # every sample, on some rank
        assert len(together) - len(set(together)) == per_rank * nproc - 23  # only the padding repeats
    assert ranks[0]["epochs"]["0"] != ranks[0]["epochs"]["1"]  # a new permutation each epoch
