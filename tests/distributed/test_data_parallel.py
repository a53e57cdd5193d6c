"""``oar.DataParallel`` on real MPI ranks: the same parameters as one process on the global batch,
rank 0's start broadcast, ``no_sync`` accumulation, unused parameters named instead of a hang."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
from oar.testing import sum_tolerance

# A model with small buckets, so that several buckets are reduced, in order,
# while the backward runs. Each rank starts from different random weights: DataParallel must
# broadcast rank 0's. The same script with DP=0 is the single-process run on the global batch.
TRAIN = """
import json, os, sys, numpy as np, oar, oar.distributed as dist
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
oar.seed(100 + rank)

class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv = oar.nn.Conv2D(1, 4, 3, padding=1)
        self.fc1 = oar.nn.Linear(4 * 6 * 6, 32)
        self.fc2 = oar.nn.Linear(32, 3)
    def forward(self, x):
        h = oar.nn.functional.relu(self.conv(x))
        return self.fc2(oar.nn.functional.relu(self.fc1(h.flatten(1))))

net = Net()
if world == 1:  # the single-process reference starts from the weights rank 0 draws
    oar.seed(100)
    net = Net()
model = oar.DataParallel(net, comm_buffer_size=0.002, last_comm_buffer_size=0.001) if world > 1 else net
opt = oar.optimizer.Adam(learning_rate=0.01, parameters=model.parameters())
data = np.random.default_rng(0)
X = data.standard_normal((8, 16, 1, 6, 6)).astype("float32")
Y = data.integers(0, 3, (8, 16))
loss_fn = oar.nn.CrossEntropyLoss()
per_rank = 16 // world
for step in range(8):
    xs = X[step, rank * per_rank:(rank + 1) * per_rank]
    ys = Y[step, rank * per_rank:(rank + 1) * per_rank]
    loss = loss_fn(model(oar.to_tensor(xs)), oar.to_tensor(ys))
    loss.backward()
    opt.step()
    opt.clear_grad()
state = {k: v.numpy().tolist() for k, v in net.state_dict().items()}
print("STATE", json.dumps(state))
"""


def final_state(text: str) -> dict:
    line = next(line for line in text.splitlines() if line.startswith("STATE "))
    return {k: np.asarray(v, np.float32) for k, v in json.loads(line[len("STATE "):]).items()}


def test_two_ranks_train_as_one_process_on_the_global_batch(launch):
    single = launch(TRAIN, nproc=1).check()
    double = launch(TRAIN, nproc=2).check()
    reference = final_state(single.log(0))
    for rank in (0, 1):
        state = final_state(double.log(rank))
        assert sorted(state) == sorted(reference)
        for key in reference:
            # The gradient of a batch of 16 summed as two halves of 8: rounding of a sum taken in
            # another order, over the 8 steps (each step's update is at most lr = 0.01).
            rtol, atol = sum_tolerance("float32", terms=16 * 8, scale=0.01)
            np.testing.assert_allclose(state[key], reference[key], rtol=rtol, atol=atol, err_msg=f"rank {rank} {key}")


UNUSED = """
import oar, oar.distributed as dist
dist.init_parallel_env()
rank = dist.get_rank()

class Net(oar.nn.Layer):
    def __init__(self):
        super().__init__()
        self.used = oar.nn.Linear(4, 4)
        self.head_a = oar.nn.Linear(4, 1)
        self.head_b = oar.nn.Linear(4, 1)
    def forward(self, x, head):
        return (self.head_a if head == "a" else self.head_b)(self.used(x))

net = Net()
model = oar.DataParallel(net, find_unused_parameters=FIND)
x = oar.ones([2, 4])
model(x, "a" if rank == 0 else "b").sum().backward()
print("GRADS", net.head_a.weight.grad is None, net.head_b.weight.grad is None,
      float(net.head_a.weight.grad.abs().sum()) if net.head_a.weight.grad is not None else None)
model(x, "a").sum().backward()  # nobody uses head_b: its grad stays as it was
print("AFTER", net.head_b.weight.grad is None or float(net.head_b.weight.grad.abs().sum()))
"""


def test_unused_parameters_are_averaged_as_zeros_with_find_unused_parameters(launch):
    job = launch(UNUSED.replace("FIND", "True"), nproc=2).check()
    for rank in (0, 1):
        grads = next(line for line in job.log(rank).splitlines() if line.startswith("GRADS")).split()
        # every rank ends with both heads' averaged gradients (used on one rank each)
        assert grads[1:3] == ["False", "False"] and float(grads[3]) > 0


def test_an_unused_parameter_is_named_instead_of_a_hang(launch):
    job = launch(UNUSED.replace("FIND", "False"), nproc=2, timeout=60)
    assert job.returncode != 0
    output = job.stdout + job.stderr
    assert "got no gradient in this backward" in output and "find_unused_parameters=True" in output
    assert "head_b.weight" in output or "head_a.weight" in output


NO_SYNC = """
import numpy as np, oar, oar.distributed as dist
dist.init_parallel_env()
rank = dist.get_rank()
oar.seed(0)
net = oar.nn.Linear(3, 2)
model = oar.DataParallel(net)
x = [oar.to_tensor(np.full((1, 3), 1.0 + rank + 10 * k, np.float32)) for k in range(3)]
with model.no_sync():
    model(x[0]).sum().backward()
    model(x[1]).sum().backward()
local = net.weight.grad.numpy().copy()
model(x[2]).sum().backward()
print("LOCAL", local[:, 0].tolist(), "SYNCED", net.weight.grad.numpy()[:, 0].tolist())
"""


def test_no_sync_accumulates_locally_then_averages_the_sum(launch):
    job = launch(NO_SYNC, nproc=2).check()
    for rank in (0, 1):
        line = next(line for line in job.log(rank).splitlines() if line.startswith("LOCAL")).split("SYNCED")
        local = json.loads(line[0].split("LOCAL")[1])
        synced = json.loads(line[1])
        # d(sum(W x))/dW[0, j] = x_j; per rank: (1 + r) + (11 + r) locally, then + (21 + r) and averaged
        assert local == [12.0 + 2 * rank] * 3
        # rank 0: 1 + 11 + 21 = 33, rank 1: 2 + 12 + 22 = 36; the mean is 34.5 on both
        assert synced == [34.5] * 3


def test_one_process_data_parallel_changes_nothing():
    oar.seed(3)
    net = oar.nn.Linear(3, 2)
    model = oar.DataParallel(net)
    x = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    model(x).sum().backward()
    np.testing.assert_allclose(net.weight.grad.numpy(), np.tile(x.numpy().sum(0)[:, None], (1, 2)))
    assert list(model.state_dict()) == ["weight", "bias"]
    with pytest.raises(ValueError, match="comm_buffer_size"):
        oar.DataParallel(net, comm_buffer_size=0)


OVERLAP = """
import oar, oar.distributed as dist
dist.init_parallel_env()
layers = [oar.nn.Linear(64, 64) for _ in range(6)]
net = oar.nn.Sequential(*layers)
model = oar.DataParallel(net, comm_buffer_size=0.02, last_comm_buffer_size=0.02)
started_when_first_layer_ready = []
# The first layer's weight and bias are the last gradients of the backward: by then every bucket
# but the (at most two) holding them has had its all-reduce started.
layers[0].weight.register_post_accumulate_grad_hook(
    lambda p: started_when_first_layer_ready.append(sum(b.task is not None for b in model._buckets)))
model(oar.ones([4, 64])).sum().backward()
print("BUCKETS", len(model._buckets), "STARTED", started_when_first_layer_ready[0])
"""


def test_buckets_start_while_the_backward_still_runs(launch):
    job = launch(OVERLAP, nproc=2).check()
    words = next(line for line in job.log(0).splitlines() if line.startswith("BUCKETS")).split()
    buckets, started = int(words[1]), int(words[3])
    assert buckets >= 4 and started >= buckets - 2
