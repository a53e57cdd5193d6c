"""Every collective on real MPI ranks through the launcher, checked against numpy; a job of one
process without MPI; and what a caller gets for bad arguments."""

from __future__ import annotations

import json

import numpy as np
import pytest

import oar
import oar.distributed as dist

COLLECTIVES = """
import json, numpy as np, oar, oar.distributed as dist
dist.init_parallel_env()
r, n = dist.get_rank(), dist.get_world_size()
got = {}
def base(rank, dtype="float32"):
    return np.arange(6, dtype=dtype).reshape(2, 3) * (rank + 1) + rank

for name, op in [("SUM", dist.ReduceOp.SUM), ("MAX", dist.ReduceOp.MAX), ("MIN", dist.ReduceOp.MIN),
                 ("PROD", dist.ReduceOp.PROD), ("AVG", dist.ReduceOp.AVG)]:
    for dtype in ("float32", "float64", "int64", "int32"):
        x = oar.to_tensor(base(r, dtype))
        dist.all_reduce(x, op=op)
        got[f"all_reduce {name} {dtype}"] = x.numpy().tolist()
x = oar.to_tensor(base(r)).astype("bfloat16")
dist.all_reduce(x)
got["all_reduce SUM bfloat16"] = x.astype("float32").numpy().tolist()
x = oar.to_tensor(base(r)).astype("float16")
dist.all_reduce(x, op=dist.ReduceOp.MAX)
got["all_reduce MAX float16"] = x.astype("float32").numpy().tolist()
x = oar.to_tensor(base(r)); dist.broadcast(x, src=n - 1); got["broadcast"] = x.numpy().tolist()
x = oar.to_tensor(base(r)); dist.reduce(x, dst=1); got["reduce"] = x.numpy().tolist()
out = []; dist.all_gather(out, oar.to_tensor(base(r))); got["all_gather list"] = [t.numpy().tolist() for t in out]
whole = oar.zeros([2 * n, 3]); dist.all_gather(whole, oar.to_tensor(base(r))); got["all_gather tensor"] = whole.numpy().tolist()
out = [] if r == 0 else None
dist.gather(oar.to_tensor(base(r)), out, dst=0)
got["gather"] = [t.numpy().tolist() for t in out] if r == 0 else None
x = oar.zeros([2, 3])
dist.scatter(x, [oar.to_tensor(base(10 + j)) for j in range(n)] if r == 1 else None, src=1)
got["scatter"] = x.numpy().tolist()
x = oar.zeros([2, 3]); dist.reduce_scatter(x, [oar.to_tensor(base(r) + j) for j in range(n)])
got["reduce_scatter"] = x.numpy().tolist()
out = []; dist.alltoall(out, [oar.to_tensor(base(r) * 100 + j) for j in range(n)])
got["alltoall"] = [t.numpy().tolist() for t in out]
x = oar.zeros([2 * n, 3])
dist.alltoall_single(x, oar.to_tensor(np.concatenate([base(r) + 1000 * j for j in range(n)])))
got["alltoall_single"] = x.numpy().tolist()
if r == 0:
    dist.send_object_list([{"to": n - 1}, "x"], dst=n - 1)
elif r == n - 1:
    lst = [None, None]; dist.recv_object_list(lst, src=0); got["recv_object_list"] = lst
task = dist.all_reduce(oar.to_tensor(base(r)), sync_op=False)
got["task"] = [task.wait(), task.is_completed()]
if r == 0:
    dist.send(oar.to_tensor(base(7)), dst=n - 1)
elif r == n - 1:
    x = oar.zeros([2, 3]); dist.recv(x, src=0); got["recv"] = x.numpy().tolist()
if r == 1:
    t = dist.isend(oar.to_tensor(base(8)), dst=0); t.wait()
elif r == 0:
    x = oar.zeros([2, 3]); t = dist.irecv(x, src=1); t.wait(); got["irecv"] = x.numpy().tolist()
objects = []; dist.all_gather_object(objects, {"rank": r, "tags": ["a", r]}); got["all_gather_object"] = objects
lst = [r, "x"] if r == 0 else [None]; dist.broadcast_object_list(lst, src=0); got["broadcast_object_list"] = lst
out_obj = []; dist.scatter_object_list(out_obj, [{"to": j} for j in range(n)] if r == 0 else None, src=0)
got["scatter_object_list"] = out_obj
evens = dist.new_group([q for q in range(n) if q % 2 == 0])
if r % 2 == 0:
    x = oar.to_tensor(base(r)); dist.all_reduce(x, group=evens); got["group all_reduce"] = x.numpy().tolist()
    got["group rank"] = [evens.rank, evens.nranks, dist.get_rank(evens)]
else:  # outside the group: the call does nothing here, with a warning (as Paddle)
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        x = oar.to_tensor(base(r))
        returned = dist.all_reduce(x, group=evens)
    got["non-member"] = [returned is None, x.numpy().tolist() == base(r).tolist(),
                         "is not in the group" in str(caught[0].message), caught[0].filename == __file__]  # the user's line
dist.barrier()
print("RESULT", json.dumps(got))
"""


def base(rank, dtype="float32"):
    return np.arange(6, dtype=dtype).reshape(2, 3) * (rank + 1) + rank


def expected(r: int, n: int) -> dict:
    ranks = range(n)
    want = {}
    for dtype in ("float32", "float64", "int64", "int32"):
        stack = np.stack([base(q, dtype) for q in ranks])
        want[f"all_reduce SUM {dtype}"] = stack.sum(0)
        want[f"all_reduce MAX {dtype}"] = stack.max(0)
        want[f"all_reduce MIN {dtype}"] = stack.min(0)
        want[f"all_reduce PROD {dtype}"] = stack.prod(0)
        want[f"all_reduce AVG {dtype}"] = stack.sum(0) // n if dtype.startswith("int") else stack.sum(0) / n
    want["all_reduce SUM bfloat16"] = np.stack([base(q) for q in ranks]).sum(0)
    want["all_reduce MAX float16"] = np.stack([base(q) for q in ranks]).max(0)
    want["broadcast"] = base(n - 1)
    want["reduce"] = np.stack([base(q) for q in ranks]).sum(0) if r == 1 else base(r)
    want["all_gather list"] = [base(q) for q in ranks]
    want["all_gather tensor"] = np.concatenate([base(q) for q in ranks])
    want["gather"] = [base(q) for q in ranks] if r == 0 else None
    want["scatter"] = base(10 + r)
    want["reduce_scatter"] = np.stack([base(q) + r for q in ranks]).sum(0)
    want["alltoall"] = [base(q) * 100 + r for q in ranks]
    want["alltoall_single"] = np.concatenate([base(q) + 1000 * r for q in ranks])
    if r == n - 1:
        want["recv_object_list"] = [{"to": n - 1}, "x"]
    want["task"] = [True, True]
    if r == n - 1:
        want["recv"] = base(7)
    if r == 0:
        want["irecv"] = base(8)
    want["all_gather_object"] = [{"rank": q, "tags": ["a", q]} for q in ranks]
    want["broadcast_object_list"] = [0, "x"]
    want["scatter_object_list"] = [{"to": r}]
    if r % 2 == 0:
        evens = [q for q in ranks if q % 2 == 0]
        want["group all_reduce"] = np.stack([base(q) for q in evens]).sum(0)
        want["group rank"] = [evens.index(r), len(evens), evens.index(r)]
    else:
        want["non-member"] = [True, True, True, True]
    return want


def results(job, n: int) -> list[dict]:
    found = []
    for rank in range(n):
        line = next(line for line in job.log(rank).splitlines() if line.startswith("RESULT "))
        found.append(json.loads(line[len("RESULT "):]))
    return found


@pytest.mark.parametrize("nproc", [2, 4])
def test_every_collective_matches_numpy(launch, nproc):
    job = launch(COLLECTIVES, nproc=nproc).check()
    for rank, got in enumerate(results(job, nproc)):
        want = expected(rank, nproc)
        assert sorted(got) == sorted(want), f"rank {rank}"
        for key, value in want.items():
            if isinstance(value, np.ndarray) or (isinstance(value, list) and value and isinstance(value[0], np.ndarray)):
                np.testing.assert_allclose(np.asarray(got[key], dtype=float), np.asarray(value, dtype=float),
                                           rtol=1e-6, err_msg=f"rank {rank}: {key}")
            else:
                assert got[key] == value, f"rank {rank}: {key}"


def test_a_job_of_one_process_needs_no_mpi():
    x = oar.to_tensor([1.0, 2.0])
    dist.all_reduce(x, op=dist.ReduceOp.AVG)
    gathered = []
    dist.all_gather(gathered, x)
    objects = []
    dist.all_gather_object(objects, {"a": 1})
    assert x.tolist() == [1.0, 2.0] and [t.tolist() for t in gathered] == [[1.0, 2.0]] and objects == [{"a": 1}]
    assert dist.get_rank() == 0 and dist.get_world_size() == 1 and dist.get_backend() == "SINGLE"
    assert dist.ParallelEnv().world_size == 1


def test_bad_arguments_say_what_is_wrong():
    x = oar.to_tensor([1.0])
    with pytest.raises(ValueError, match="op must be one of ReduceOp"):
        dist.all_reduce(x, op="sum")
    with pytest.raises(ValueError, match="must be an oar Tensor"):
        dist.all_reduce(np.ones(2))
    with pytest.raises(ValueError, match="src=3 is not a rank of the group"):
        dist.broadcast(x, src=3)
    with pytest.raises(ValueError, match="ranks must be distinct ranks in"):
        dist.new_group([0, 0])
    with pytest.raises(ValueError, match="tensor_list\\[0\\] is float32 \\[2\\]"):
        dist.all_gather([oar.zeros([2])], x)
    with pytest.raises(ValueError, match="never unpickles"):
        dist.all_gather_object([], {1, 2})
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        dist.new_group([0], timeout=-1)
