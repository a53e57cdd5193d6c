"""Sharding stages 1 and 2: the same training as one process on the global batch, and memory per
rank that falls with the world size. Multi-process checks run real MPI ranks through ``launch``."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
from oar.distributed.fleet._sharding import ShardingOptimizer, assign_owners, sharding_model
from oar.errors import ArgumentError

EQUIVALENCE = """
import sys
import numpy as np
import oar
import oar.distributed as dist
from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model
from oar.testing import TOLERANCES

stage, clip = int(sys.argv[1]), sys.argv[2] == "clip"
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()


def make():
    oar.seed(7)
    return oar.nn.Sequential(oar.nn.Linear(8, 16), oar.nn.Tanh(), oar.nn.Linear(16, 16), oar.nn.Tanh(),
                             oar.nn.Linear(16, 2))


def adam(params):
    grad_clip = oar.nn.ClipGradByGlobalNorm(0.05) if clip else None
    return oar.optimizer.Adam(learning_rate=0.01, parameters=params, grad_clip=grad_clip)


reference = make()
reference_opt = adam(reference.parameters())
model = sharding_model(make(), stage)
opt = ShardingOptimizer(adam(model.parameters()), stage)
share = 8 // world
for step in range(4):
    rng = np.random.default_rng(step)
    x, y = rng.standard_normal((8, 8)).astype("float32"), rng.standard_normal((8, 2)).astype("float32")
    ((reference(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean().backward()
    reference_opt.step()
    reference_opt.clear_grad()
    mine = slice(rank * share, (rank + 1) * share)
    ((model(oar.to_tensor(x[mine])) - oar.to_tensor(y[mine])) ** 2).mean().backward()
    opt.step()
    opt.clear_grad()
rtol, atol = TOLERANCES["float32"]
for a, b in zip(reference.parameters(), model.parameters()):
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=rtol, atol=atol, err_msg=a.name)
print("EQUAL", rank, flush=True)
"""


@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("clip", ["noclip", "clip"])
def test_two_ranks_train_as_one_process_on_the_global_batch(launch, stage, clip):
    job = launch(EQUIVALENCE, nproc=2, args=(stage, clip), timeout=60).check()
    assert all("EQUAL" in job.log(rank) for rank in range(2))


MEMORY = """
import json
import numpy as np
import oar
import oar.distributed as dist
from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model

dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
result = {}
for stage in (1, 2):
    oar.seed(0)
    layers = oar.nn.Sequential(*[oar.nn.Linear(64, 64) for _ in range(4)])
    model = sharding_model(layers, stage)
    opt = ShardingOptimizer(oar.optimizer.Adam(parameters=model.parameters()), stage)
    x = oar.to_tensor(np.ones((4 // world, 64), "float32"))
    model(x).mean().backward()
    grads = sum(p.grad.numpy().nbytes for p in model.parameters() if p.grad is not None)
    opt.step()
    state = sum(v.numpy().nbytes for v in opt._inner_opt.state_dict().values() if isinstance(v, oar.Tensor))
    result[stage] = {"grad_bytes": grads, "state_bytes": state}
print("MEMORY " + json.dumps(result), flush=True)
"""


def test_memory_per_rank_falls_with_world_size(launch):
    measured = {}
    for world in (1, 2, 4):
        job = launch(MEMORY, nproc=world, timeout=60).check()
        lines = [next(line for line in job.log(r).splitlines() if line.startswith("MEMORY ")) for r in range(world)]
        ranks = [json.loads(line[len("MEMORY "):]) for line in lines]
        measured[world] = {stage: {what: max(r[stage][what] for r in ranks) for what in ("grad_bytes", "state_bytes")}
                           for stage in ("1", "2")}
    print(json.dumps(measured))  # shown with -s: the numbers of docs/distributed.md
    for stage in ("1", "2"):  # optimizer state is sharded in both stages
        assert measured[2][stage]["state_bytes"] <= 0.6 * measured[1][stage]["state_bytes"]
        assert measured[4][stage]["state_bytes"] <= 0.6 * measured[2][stage]["state_bytes"]
    assert measured[2]["1"]["grad_bytes"] == measured[1]["1"]["grad_bytes"]  # stage 1 keeps every gradient
    assert measured[2]["2"]["grad_bytes"] <= 0.6 * measured[1]["2"]["grad_bytes"]
    assert measured[4]["2"]["grad_bytes"] <= 0.6 * measured[2]["2"]["grad_bytes"]


def test_owners_are_balanced_and_deterministic():
    params = [oar.zeros([n]) for n in (100, 10, 60, 40, 5, 5)]
    owners = assign_owners(params, 2)
    assert owners == assign_owners(params, 2)
    loads = [sum(int(p.shape[0]) for p, o in zip(params, owners) if o == r) for r in range(2)]
    assert sorted(loads) == [110, 110]
    assert assign_owners(params, 1) == [0] * len(params)


def test_one_process_is_the_plain_optimizer():
    def train(wrap):
        oar.seed(3)
        fc = oar.nn.Linear(4, 3)
        opt = oar.optimizer.Adam(learning_rate=0.1, parameters=fc.parameters())
        opt = ShardingOptimizer(opt, stage=2) if wrap else opt
        model = sharding_model(fc, stage=2) if wrap else fc
        for _ in range(3):
            model(oar.ones([2, 4])).square().mean().backward()
            opt.step()
            opt.clear_grad()
        return [p.numpy() for p in fc.parameters()], opt

    plain, _ = train(False)
    sharded, opt = train(True)
    for a, b in zip(plain, sharded):
        np.testing.assert_array_equal(a, b)
    assert opt.get_lr() == 0.1
    opt.set_lr(0.05)
    assert opt._inner_opt.get_lr() == 0.05
    assert len(opt._parameter_list) == 2  # the wrapped optimizer's, unchanged


def test_state_dict_names_the_shard_before_the_first_step():
    fc = oar.nn.Linear(2, 2, weight_attr=oar.nn.ParamAttr(name="sd.w"), bias_attr=oar.nn.ParamAttr(name="sd.b"))
    opt = ShardingOptimizer(oar.optimizer.Adam(parameters=fc.parameters()))
    assert sorted(opt.state_dict()) == sorted(f"sd.{p}_{a}_0" for p in "wb"
                                              for a in ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"))
    assert opt.state_dict()["sd.w_beta1_pow_acc_0"].item() == pytest.approx(0.9)


@pytest.mark.parametrize("stage", [0, 3, True])
def test_unsupported_stages_are_refused(stage):
    fc = oar.nn.Linear(2, 2)
    with pytest.raises(ArgumentError, match="stage"):
        ShardingOptimizer(oar.optimizer.SGD(parameters=fc.parameters()), stage=stage)
    with pytest.raises(ArgumentError, match="stage"):
        sharding_model(fc, stage=stage)
