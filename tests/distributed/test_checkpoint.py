"""Distributed checkpoints: a sharded checkpoint written by 2 ranks resumes in one process and in
4 ranks on the same trajectory; an incomplete or damaged checkpoint is a clear error."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import oar
from oar.distributed import load_merged_state_dict, load_state_dict, save_state_dict
from oar.errors import ArgumentError, SerializationError
from oar.testing import TOLERANCES

# The model, data and one training step, shared by the jobs and this process. Parameters are
# named, so that optimizer keys do not depend on how many layers a process created before.
COMMON = """
import numpy as np
import oar


def make_model():
    oar.seed(11)
    attr = lambda n: oar.nn.ParamAttr(name=n)  # noqa: E731
    return oar.nn.Sequential(oar.nn.Linear(8, 16, weight_attr=attr("fc1.w"), bias_attr=attr("fc1.b")), oar.nn.Tanh(),
                             oar.nn.Linear(16, 2, weight_attr=attr("fc2.w"), bias_attr=attr("fc2.b")))


def make_adam(params):
    return oar.optimizer.Adam(learning_rate=oar.optimizer.lr.StepDecay(0.02, step_size=2, gamma=0.5),
                              parameters=params)


def train_step(model, opt, step, rank=0, world=1):
    rng = np.random.default_rng(step)
    x, y = rng.standard_normal((8, 8)).astype("float32"), rng.standard_normal((8, 2)).astype("float32")
    mine = slice(rank * 8 // world, (rank + 1) * 8 // world)
    ((model(oar.to_tensor(x[mine])) - oar.to_tensor(y[mine])) ** 2).mean().backward()
    opt.step()
    opt.clear_grad()
    opt._learning_rate.step()
"""

SAVE = COMMON + """
import sys
import oar.distributed as dist
from oar.distributed._checkpoint import save_state_dict
from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model

ckpt, reference = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
model = sharding_model(make_model(), 2)
opt = ShardingOptimizer(make_adam(model.parameters()), 2)
for step in range(3):
    train_step(model, opt, step, rank, world)
save_state_dict({"model": model.state_dict(), "optimizer": opt.state_dict()}, ckpt)
for step in range(3, 6):
    train_step(model, opt, step, rank, world)
if rank == 0:
    oar.save({p.name: p for p in model.parameters()}, reference)
"""

RESUME = COMMON + """
import sys
import oar.distributed as dist
from oar.distributed._checkpoint import load_state_dict
from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model
from oar.testing import TOLERANCES

ckpt, reference = sys.argv[1], sys.argv[2]
dist.init_parallel_env()
rank, world = dist.get_rank(), dist.get_world_size()
model = sharding_model(make_model(), 2)
opt = ShardingOptimizer(make_adam(model.parameters()), 2)
state = {"model": model.state_dict(), "optimizer": opt.state_dict()}  # this rank's shard, by name
load_state_dict(state, ckpt)
model.set_state_dict(state["model"])
opt.set_state_dict(state["optimizer"])
for step in range(3, 6):
    train_step(model, opt, step, rank, world)
expected = oar.load(reference)
rtol, atol = TOLERANCES["float32"]
for p in model.parameters():
    np.testing.assert_allclose(p.numpy(), expected[p.name].numpy(), rtol=rtol, atol=atol, err_msg=p.name)
print("RESUMED", rank, flush=True)
"""

namespace: dict = {}
exec(COMMON, namespace)  # noqa: S102 - the shared test code above, run here as in the jobs


def test_sharded_checkpoint_resumes_in_one_process_and_in_four_ranks(launch, tmp_path):
    ckpt, reference = tmp_path / "ckpt", tmp_path / "reference.pdparams"
    launch(SAVE, nproc=2, args=(ckpt, reference), timeout=60).check()
    manifest = json.loads((ckpt / "0.metadata").read_text())
    assert manifest["world_size"] == 2 and manifest["files"] == ["0_0.distcp", "1_0.distcp"]
    entries = manifest["entries"]
    assert {e["file"] for k, e in entries.items() if k.startswith("model/")} == {"0_0.distcp"}  # written once
    moments = {e["file"] for k, e in entries.items() if k.endswith("_moment1_0")}
    assert moments == {"0_0.distcp", "1_0.distcp"}  # each rank wrote its shard
    assert entries["optimizer/LR_Scheduler"]["kind"] == "value"

    # One process, a plain Adam: its state dict is empty before a step, so ask for everything.
    make_model, make_adam, train_step = namespace["make_model"], namespace["make_adam"], namespace["train_step"]
    model = make_model()
    opt = make_adam(model.parameters())
    state = {"model": model.state_dict(), "optimizer": {}}
    load_state_dict(state, str(ckpt))
    model.set_state_dict(state["model"])
    opt.set_state_dict(state["optimizer"])
    assert opt.get_lr() == pytest.approx(0.01)  # the scheduler's state came back too
    for step in range(3, 6):
        train_step(model, opt, step)
    expected = oar.load(str(reference))
    rtol, atol = TOLERANCES["float32"]
    for p in model.parameters():
        np.testing.assert_allclose(p.numpy(), expected[p.name].numpy(), rtol=rtol, atol=atol, err_msg=p.name)

    # The same in one process from load_merged_state_dict: every shard merged, nothing to build first.
    merged = load_merged_state_dict(str(ckpt))
    model = make_model()
    opt = make_adam(model.parameters())
    model.set_state_dict(merged["model"])
    opt.set_state_dict(merged["optimizer"])
    for step in range(3, 6):
        train_step(model, opt, step)
    for p in model.parameters():
        np.testing.assert_allclose(p.numpy(), expected[p.name].numpy(), rtol=rtol, atol=atol, err_msg=p.name)
    assert sorted(load_merged_state_dict(str(ckpt), prefix="model")) == ["model"]

    job = launch(RESUME, nproc=4, args=(ckpt, reference), timeout=90).check()
    assert all("RESUMED" in job.log(rank) for rank in range(4))


def _checkpoint(path) -> None:
    save_state_dict({"w": oar.ones([2, 3]), "step": 7}, str(path))


def test_missing_manifest_is_an_incomplete_checkpoint(tmp_path):
    _checkpoint(tmp_path)
    os.remove(tmp_path / "0.metadata")
    with pytest.raises(SerializationError, match="manifest is written last"):
        load_state_dict({"w": oar.zeros([2, 3])}, str(tmp_path))
    with pytest.raises(SerializationError, match="not a checkpoint directory"):
        load_state_dict({"w": oar.zeros([2, 3])}, str(tmp_path / "empty") if os.makedirs(tmp_path / "empty") is None
                        else "")


def test_corrupted_manifest_is_named(tmp_path):
    _checkpoint(tmp_path)
    (tmp_path / "0.metadata").write_text('{"format": "oar.distributed.checkpoint", "entr')
    with pytest.raises(SerializationError, match="0.metadata.*corrupted"):
        load_state_dict({"w": oar.zeros([2, 3])}, str(tmp_path))


def test_missing_data_file_and_mismatches_change_nothing(tmp_path):
    _checkpoint(tmp_path)
    w = oar.zeros([2, 3])
    with pytest.raises(ArgumentError, match="lacks.*other"):
        load_state_dict({"w": w, "other": oar.zeros([1])}, str(tmp_path))
    with pytest.raises(ArgumentError, match="shape"):
        load_state_dict({"w": oar.zeros([3, 2])}, str(tmp_path))
    os.remove(tmp_path / "0_0.distcp")
    with pytest.raises(SerializationError, match="missing"):
        load_state_dict({"w": w}, str(tmp_path))
    assert w.numpy().sum() == 0


def test_saves_are_numbered_and_the_newest_loads(tmp_path):
    save_state_dict({"w": oar.ones([2])}, str(tmp_path))
    save_state_dict({"w": oar.full([2], 2.0)}, str(tmp_path))
    state = {"w": oar.zeros([2])}
    load_state_dict(state, str(tmp_path))
    assert state["w"].tolist() == [2.0, 2.0]
    load_state_dict(state, str(tmp_path), unique_id=0)
    assert state["w"].tolist() == [1.0, 1.0]


def test_no_pickle_and_plain_values(tmp_path):
    save_state_dict({"opt": {"LR_Scheduler": {"last_epoch": 4, "last_lr": 0.5}}, "w": oar.ones([1])}, str(tmp_path))
    assert oar.load(str(tmp_path / "0_0.distcp"))["w"].tolist() == [1.0]  # an oar.save file
    state = {"opt": {"LR_Scheduler": {}}, "w": oar.zeros([1])}
    load_state_dict(state, str(tmp_path))
    assert state["opt"]["LR_Scheduler"] == {"last_epoch": 4, "last_lr": 0.5}


AGREE = """
import sys
import oar
import oar.distributed as dist
from oar.distributed._checkpoint import load_state_dict, save_state_dict
from oar.errors import SerializationError

dist.init_parallel_env()
rank = dist.get_rank()
save_state_dict({"w": oar.ones([2])}, sys.argv[1])
state = {"w": oar.zeros([2])}
if rank == 1:
    state["not saved"] = oar.zeros([1])  # only rank 1 asks for a key the checkpoint lacks
try:
    load_state_dict(state, sys.argv[1])
except SerializationError as exc:
    print("RAISED", rank, "rank 1" in str(exc), state["w"].tolist(), flush=True)
"""


def test_a_failure_on_one_rank_raises_on_every_rank(launch, tmp_path):
    job = launch(AGREE, nproc=2, args=(tmp_path / "ckpt",), timeout=60).check()
    for rank in range(2):
        assert f"RAISED {rank} True [0.0, 0.0]" in job.log(rank)
