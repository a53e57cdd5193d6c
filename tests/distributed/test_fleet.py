"""``oar.distributed.fleet``: the strategy's validation, gradient merge (one process and two ranks),
recompute through ``distributed_model``, and data-parallel training on two ranks matching one
process on the global batch."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import oar
import oar.nn as nn
from oar.distributed import fleet
from oar.distributed.fleet import DistributedOptimizer, DistributedStrategy, Fleet
from oar.errors import ArgumentError
from oar.testing import sum_tolerance


# -- the strategy ------------------------------------------------------------------------------------
def test_strategy_defaults_and_merged_configs():
    s = DistributedStrategy()
    assert (s.gradient_merge, s.sharding, s.recompute, s.amp) == (False, False, False, False)
    s.gradient_merge_configs = {"k_steps": 4}
    assert s.gradient_merge_configs == {"k_steps": 4, "avg": True}  # keys not given keep their value
    s.sharding_configs = {"stage": 2, "sharding_degree": 2}
    assert (s.sharding_configs["stage"], s.sharding_configs["sharding_degree"]) == (2, 2)
    s.hybrid_configs = {"dp_degree": 2}
    s.recompute_configs = {"checkpoints": ["0"]}
    s.amp_configs = {"custom_white_list": ["matmul"], "init_loss_scaling": 1024}
    assert s.amp_configs["init_loss_scaling"] == 1024.0
    configs = s.gradient_merge_configs
    configs["k_steps"] = 99  # a copy: the strategy changes only through assignment, which checks
    assert s.gradient_merge_configs["k_steps"] == 4


@pytest.mark.parametrize("action, message", [
    (lambda s: setattr(s, "gradinet_merge", True), "unknown attribute 'gradinet_merge'; did you mean 'gradient_merge'"),
    (lambda s: s.shardng, "unknown attribute 'shardng'"),
    (lambda s: setattr(s, "gradient_merge", 1), "gradient_merge must be a bool"),
    (lambda s: setattr(s, "gradient_merge_configs", {"k_step": 2}), "unknown key of gradient_merge_configs 'k_step'"),
    (lambda s: setattr(s, "gradient_merge_configs", {"k_steps": 2.0}), r"gradient_merge_configs\['k_steps'\] must be"),
    (lambda s: setattr(s, "gradient_merge_configs", {"k_steps": 0}), ">= 1"),
    (lambda s: setattr(s, "gradient_merge_configs", [("k_steps", 2)]), "must be a dict"),
    (lambda s: setattr(s, "sharding_configs", {"degree": 2}), "fleet calls it sharding_degree"),
    (lambda s: setattr(s, "sharding_configs", {"stage": 3}), "stage 3"),
    (lambda s: setattr(s, "recompute_configs", {"checkpoints": "fc1"}), "must be a list of str"),
    (lambda s: setattr(s, "hybrid_configs", {"mp_degree": 2}), "data parallel only"),
    (lambda s: setattr(s, "hybrid_configs", {"pp_degree": 4}), "data parallel only"),
    (lambda s: setattr(s, "pipeline", True), "does not implement 'pipeline'"),
])
def test_strategy_refuses_wrong_names_types_and_values(action, message):
    with pytest.raises(ArgumentError, match=message):
        action(DistributedStrategy())


def test_unimplemented_strategies_may_be_turned_off():
    s = DistributedStrategy()
    s.pipeline = False
    s.a_sync = False
    s.find_unused_parameters = True
    assert s.find_unused_parameters is True and s.lamb is False


# -- fleet in one process ----------------------------------------------------------------------------
def test_init_and_worker_info_in_one_process():
    f = Fleet()
    with pytest.raises(ArgumentError, match="fleet.init"):
        f.distributed_model(nn.Linear(2, 2))
    with pytest.raises(ArgumentError, match="collective training only"):
        f.init()
    f.init(is_collective=True)
    assert (f.worker_index(), f.worker_num(), f.is_first_worker()) == (0, 1, True)
    f.barrier_worker()
    s = DistributedStrategy()
    s.hybrid_configs = {"dp_degree": 2}
    with pytest.raises(ArgumentError, match="dp_degree.*1 rank"):
        f.init(is_collective=True, strategy=s)
    assert fleet.worker_num() == 1  # the module's functions are the one Fleet's methods


def make_model(seed: int = 0) -> nn.Layer:
    oar.seed(seed)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))


def global_batch(n: int = 32):
    rng = np.random.default_rng(5)
    return rng.standard_normal((n, 6)).astype("float32"), rng.standard_normal((n, 1)).astype("float32")


def merge_strategy(k: int, avg: bool = True) -> DistributedStrategy:
    s = DistributedStrategy()
    s.gradient_merge = True
    s.gradient_merge_configs = {"k_steps": k, "avg": avg}
    return s


def assert_params_close(got: nn.Layer, expected: nn.Layer, terms: int = 32):
    for (name, p), q in zip(got.named_parameters(), expected.parameters()):
        rtol, atol = sum_tolerance("float32", terms, scale=float(np.abs(q.numpy()).max()))
        np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=rtol, atol=atol, err_msg=name)


@pytest.mark.parametrize("avg", [True, False])
def test_gradient_merge_equals_one_step_on_a_k_times_larger_batch(avg):
    x, y = global_batch(32)
    k, b = 4, 8
    reference = make_model()
    sgd = oar.optimizer.SGD(0.1, parameters=reference.parameters())
    loss = ((reference(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean()
    (loss if avg else loss * k).backward()  # avg=False: the sum of the k micro-batch means
    sgd.step()

    model = make_model()
    opt = DistributedOptimizer(oar.optimizer.SGD(0.1, parameters=model.parameters()), merge_strategy(k, avg))
    before = [p.numpy() for p in model.parameters()]
    for i in range(k):
        xb, yb = oar.to_tensor(x[i * b:(i + 1) * b]), oar.to_tensor(y[i * b:(i + 1) * b])
        ((model(xb) - yb) ** 2).mean().backward()
        opt.step()
        opt.clear_grad()
        if i < k - 1:  # inside the window: no update, gradients kept
            assert all((p.numpy() == q).all() for p, q in zip(model.parameters(), before))
            assert all(p.grad is not None and np.abs(p.grad.numpy()).sum() > 0 for p in model.parameters())
    assert all(not np.abs(p.grad.numpy()).any() for p in model.parameters())  # cleared after the update
    assert_params_close(model, reference)


def test_wrapper_keeps_the_optimizer_api():
    model = make_model()
    inner = oar.optimizer.Adam(0.01, parameters=model.parameters())
    opt = DistributedOptimizer(inner, merge_strategy(2))
    assert opt.get_lr() == 0.01 and opt.inner_opt is inner
    opt.set_lr(0.02)
    assert inner.get_lr() == 0.02
    with pytest.raises(ArgumentError, match="DistributedStrategy"):
        DistributedOptimizer(inner, {"gradient_merge": True})


def test_distributed_model_applies_recompute_to_named_sublayers():
    f = Fleet()
    s = DistributedStrategy()
    s.recompute = True
    s.recompute_configs = {"checkpoints": ["0", "2"]}
    f.init(is_collective=True, strategy=s)
    x, y = global_batch(16)
    reference = make_model()
    ((reference(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean().backward()
    inner = make_model()
    model = f.distributed_model(inner)
    ((model(oar.to_tensor(x)) - oar.to_tensor(y)) ** 2).mean().backward()
    for p, q in zip(inner.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
    assert "forward" in vars(inner[0]) and "forward" not in vars(inner[1])  # only the checkpoints are wrapped
    s.recompute_configs = {"checkpoints": ["fc9"]}
    with pytest.raises(ArgumentError, match="'fc9' is not a sublayer"):
        f.distributed_model(make_model())


@pytest.mark.skipif(importlib.util.find_spec("oar.amp") is not None, reason="oar-amp is installed")
def test_amp_without_the_plugin_names_what_to_install():
    f = Fleet()
    s = DistributedStrategy()
    s.amp = True
    f.init(is_collective=True, strategy=s)
    with pytest.raises(ArgumentError, match=r"pip install \./plugins/oar-amp"):
        f.distributed_model(make_model())


@pytest.mark.skipif(importlib.util.find_spec("oar.amp") is None, reason="needs the oar-amp plugin")
@pytest.mark.parametrize(("configs", "low", "params"), [
    ({}, "float16", "float32"),  # Paddle's default: O1 float16, float32 parameters
    ({"use_pure_bf16": True}, "bfloat16", "bfloat16"),  # O2: the parameters are cast too
])
def test_amp_hands_the_forward_to_oar_amp(configs, low, params):
    f = Fleet()
    s = DistributedStrategy()
    s.amp = True
    s.amp_configs = configs
    f.init(is_collective=True, strategy=s)
    model = f.distributed_model(make_model())
    out = model(oar.ones([4, 6]))
    assert out.dtype.name == low  # the Linear ran in low precision under oar.amp.auto_cast
    out.astype("float32").mean().backward()
    assert all(p.grad is not None and p.dtype.name == params for p in model.parameters())


# -- two ranks ---------------------------------------------------------------------------------------
def test_init_and_worker_info_on_two_ranks(launch):
    job = launch("""
        from oar.distributed import fleet
        fleet.init(is_collective=True)
        fleet.barrier_worker()
        print("INFO", fleet.worker_index(), fleet.worker_num(), fleet.is_first_worker())
    """, nproc=2, timeout=90).check()
    assert "INFO 0 2 True" in job.log(0)
    assert "INFO 1 2 False" in job.log(1)


TRAIN_ON_TWO_RANKS = """
import sys
import numpy as np
import oar, oar.nn as nn
from oar.distributed import fleet

K = int(sys.argv[1])  # gradient merge k_steps (1: off)
STAGE = int(sys.argv[2])  # sharding stage (0: off)
STEPS, B = 3, 8  # updates; per-rank micro-batch
rng = np.random.default_rng(5)
x = rng.standard_normal((STEPS * K * 2 * B, 6)).astype("float32")
y = rng.standard_normal((STEPS * K * 2 * B, 1)).astype("float32")

def make_model():
    oar.seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 1))

strategy = fleet.DistributedStrategy()
if K > 1:
    strategy.gradient_merge = True
    strategy.gradient_merge_configs = {"k_steps": K, "avg": True}
if STAGE:
    strategy.sharding = True
    strategy.sharding_configs = {"stage": STAGE}
fleet.init(is_collective=True, strategy=strategy)
rank, world = fleet.worker_index(), fleet.worker_num()
inner = make_model()
optimizer = fleet.distributed_optimizer(oar.optimizer.SGD(0.1, parameters=inner.parameters()))
model = fleet.distributed_model(inner)  # after the optimizer, as Paddle's examples: it still learns of it
for i in range(STEPS * K):
    rows = slice((i * world + rank) * B, (i * world + rank + 1) * B)  # this rank's share of micro-batch i
    loss = ((model(oar.to_tensor(x[rows])) - oar.to_tensor(y[rows])) ** 2).mean()
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()

# One process, the global batch of each update in one step.
reference = make_model()
sgd = oar.optimizer.SGD(0.1, parameters=reference.parameters())
per_update = K * world * B
for s in range(STEPS):
    rows = slice(s * per_update, (s + 1) * per_update)
    ((reference(oar.to_tensor(x[rows])) - oar.to_tensor(y[rows])) ** 2).mean().backward()
    sgd.step()
    sgd.clear_grad()
worst = max(float(np.abs(p.numpy() - q.numpy()).max()) for p, q in zip(inner.parameters(), reference.parameters()))
assert worst < 1e-5, worst
print("MATCH", rank, worst)
"""


@pytest.mark.parametrize(("k_steps", "stage"), [(1, 0), (4, 0), (1, 1), (1, 2), (2, 2)])
def test_two_ranks_train_like_one_process_on_the_global_batch(launch, k_steps, stage):
    job = launch(TRAIN_ON_TWO_RANKS, nproc=2, args=(k_steps, stage), timeout=120).check()
    assert "MATCH 0" in job.log(0) and "MATCH 1" in job.log(1)


def test_sharding_strategy_builds_the_sharding_optimizer():
    f = Fleet()
    s = DistributedStrategy()
    s.sharding = True
    s.sharding_configs = {"stage": 1}
    f.init(is_collective=True, strategy=s)
    model = make_model()
    opt = f.distributed_optimizer(oar.optimizer.SGD(0.1, parameters=model.parameters()))
    assert type(opt.inner_opt).__name__ == "ShardingOptimizer"
