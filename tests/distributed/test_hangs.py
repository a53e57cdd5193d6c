"""No silent hangs: a collective that a rank never joins raises on every rank that waits, naming the
collective, its line and who arrived; in debug mode a mismatched collective is an error on every
rank instead of a deadlock or mixed data."""

from __future__ import annotations

import time

HUNG = """
import time, oar, oar.distributed as dist
dist.init_parallel_env()
rank = dist.get_rank()
x = oar.ones([4])
dist.all_reduce(x)
if rank == 2:
    time.sleep(60)  # stuck in its own code: never reaches the next collective
else:
    try:
        dist.all_reduce(x)  # the hung collective
    except dist.CollectiveTimeoutError as error:
        print("TIMEOUT", error, flush=True)
        raise
"""


def test_a_hung_collective_raises_on_every_waiting_rank_naming_who_is_missing(launch):
    start = time.monotonic()
    job = launch(HUNG, nproc=3, env={"OAR_DISTRIBUTED_TIMEOUT": "4"}, timeout=90)
    assert job.returncode != 0
    assert time.monotonic() - start < 45  # the timeout, then the launcher stops the job
    waiting = [rank for rank in (0, 1) if "TIMEOUT" in job.log(rank)]
    assert waiting, job.stdout + job.stderr
    for rank in waiting:
        message = next(line for line in job.log(rank).splitlines() if line.startswith("TIMEOUT"))
        assert "all_reduce(shape=[4], dtype=float32, op=SUM) #1 at job1.py:11" in message
        assert "did not complete within 4 s" in message
        assert "Not arrived: rank 2 (running its own code; its last collective was all_reduce" in message
        assert "job1.py:6" in message  # where rank 2 was last seen in a collective
        assert "Arrived: ranks [0, 1]" in message or f"Arrived: ranks [{rank}]" in message


MISMATCHED = """
import oar, oar.distributed as dist
dist.init_parallel_env()
rank = dist.get_rank()
try:
    if rank == 0:
        dist.all_reduce(oar.ones([4]))
    else:
        dist.broadcast(oar.ones([4, 2]), src=0)
except dist.CollectiveMismatchError as error:
    print("MISMATCH", error, flush=True)
print("AFTER", rank, flush=True)
"""


def test_debug_mode_reports_mismatched_collectives_on_every_rank(launch):
    job = launch(MISMATCHED, nproc=2, env={"OAR_DISTRIBUTED_DEBUG": "1", "OAR_DISTRIBUTED_TIMEOUT": "20"}).check()
    for rank in (0, 1):
        log = job.log(rank)
        message = next(line for line in log.splitlines() if line.startswith("MISMATCH"))
        assert "rank 0: all_reduce(shape=[4], dtype=float32, op=SUM) at job1.py:7" in message
        assert "rank 1: broadcast(shape=[4, 2], dtype=float32, src=0) at job1.py:9" in message
        assert f"AFTER {rank}" in log


def test_debug_mode_lets_matching_calls_run(launch):
    # The same program with matching calls runs to the end in debug mode.
    same = MISMATCHED.replace("dist.broadcast(oar.ones([4, 2]), src=0)", "dist.all_reduce(oar.ones([4]))")
    job = launch(same, nproc=2, env={"OAR_DISTRIBUTED_DEBUG": "1"}).check()
    assert all("MISMATCH" not in job.log(rank) for rank in (0, 1))
