"""DataLoader with worker processes: same batches as without, seeding, errors, shutdown on every
path (end, break, exception, Ctrl-C, timeout, a killed worker, garbage collection), no orphan
processes and no shared-memory leaks."""

from __future__ import annotations

import gc
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.io._shared_memory as shm_module
from oar.io import DataLoader, Dataset, IterableDataset, TensorDataset, get_worker_info
from tests.nn.io.processes import alive, children, shm_blocks, wait_gone

REPO = Path(__file__).resolve().parents[3]
SCRIPT_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists() or not Path("/dev/shm").is_dir(),
                                reason="reads processes from /proc and shared memory from /dev/shm (Linux)")


class Images(Dataset):
    """Sample i: a 3x32x32 float32 image filled with i, and i (a batch of 4 images is 48 KiB: shared memory)."""

    def __init__(self, n: int = 40, sleep: float = 0.0, fail_at: int | None = None):
        self.n, self.sleep, self.fail_at = n, sleep, fail_at

    def __getitem__(self, i):
        if self.sleep:
            time.sleep(self.sleep)
        if i == self.fail_at:
            raise ValueError(f"bad sample {i}")
        return np.full([3, 32, 32], i, np.float32), i

    def __len__(self):
        return self.n


class Noisy(Dataset):
    """Randomness from every source a worker seeds, and who produced it."""

    def __getitem__(self, i):
        info = get_worker_info()
        return (np.array([np.random.rand(), random.random(), oar.rand([1]).item()]),
                -1 if info is None else info.id, -1 if info is None else info.seed)

    def __len__(self):
        return 16


class Shards(IterableDataset):
    """0 .. n-1, split between the workers with get_worker_info()."""

    def __init__(self, n: int):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        for i in range(start, self.n, step):
            yield np.array([i], np.int64)


class Unsharded(IterableDataset):
    def __iter__(self):
        yield from (np.array([i]) for i in range(3))


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


class RaisesOdd(Dataset):
    def __getitem__(self, i):
        if i == 1:
            raise KeyError("missing key 1")
        raise NeedsTwoArgs("x", "y")

    def __len__(self):
        return 4


def _flat(loader) -> list[tuple[np.ndarray, list[int]]]:
    return [(images.numpy().copy(), labels.tolist()) for images, labels in loader]


@pytest.fixture
def clean():
    """Each test must leave no worker process and no shared-memory block behind."""
    before = children()
    yield
    gc.collect()
    assert not wait_gone(children() - before, 5.0), "worker processes outlived the test"
    assert shm_blocks() == []


def test_two_workers_give_the_batches_of_zero_workers_in_order(clean):
    oar.seed(7)
    serial = _flat(DataLoader(Images(45), batch_size=4, shuffle=True))
    after_serial = oar.rand([2]).tolist()
    oar.seed(7)
    parallel = _flat(DataLoader(Images(45), batch_size=4, shuffle=True, num_workers=2))
    assert oar.rand([2]).tolist() == after_serial  # the global generator advanced the same way
    assert len(parallel) == len(serial) == 12
    for (a_images, a_labels), (b_images, b_labels) in zip(serial, parallel):
        assert a_labels == b_labels
        np.testing.assert_array_equal(a_images, b_images)
    assert sorted(sum((labels for _, labels in serial), [])) == list(range(45))


def test_tensor_samples_and_an_empty_dataset_with_workers(clean):
    x = oar.to_tensor(np.arange(20, dtype=np.float32).reshape(10, 2))
    y = oar.arange(10)
    dataset = TensorDataset([x, y])
    serial = [[t.tolist() for t in batch] for batch in DataLoader(dataset, batch_size=3)]
    parallel = [[t.tolist() for t in batch] for batch in DataLoader(dataset, batch_size=3, num_workers=2)]
    assert parallel == serial and len(serial) == 4
    assert list(DataLoader(Images(0), batch_size=3, num_workers=2)) == []


def test_batches_travel_through_shared_memory(clean, monkeypatch):
    kinds = []
    read = shm_module.read

    def spy(descriptors):
        kinds.extend(d[0] for d in descriptors)
        return read(descriptors)

    monkeypatch.setattr(shm_module, "read", spy)
    _flat(DataLoader(Images(8), batch_size=4, num_workers=2))
    assert kinds == ["shm", "inline"] * 2  # the images in blocks, the small label arrays pickled
    kinds.clear()
    batches = _flat(DataLoader(Images(8), batch_size=4, num_workers=2, use_shared_memory=False))
    assert kinds == ["inline"] * 4 and batches[1][1] == [4, 5, 6, 7]


def test_seeded_workers_are_reproducible_and_distinct(clean):
    def run():
        oar.seed(123)
        return [[b.numpy().copy() if isinstance(b, oar.Tensor) else b for b in batch]
                for batch in DataLoader(Noisy(), batch_size=2, num_workers=2)]

    first, second = run(), run()
    for a, b in zip(first, second):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    ids = np.concatenate([batch[1] for batch in first])
    seeds = np.concatenate([batch[2] for batch in first])
    assert set(ids.tolist()) == {0, 1}
    base = seeds[ids == 0][0]
    assert (seeds == base + ids).all()  # worker i is seeded with base_seed + i
    values = np.concatenate([batch[0] for batch in first])
    assert len(np.unique(values[:, 0])) == len(values)  # the workers' numpy streams differ
    oar.seed(124)
    other = next(iter(DataLoader(Noisy(), batch_size=2, num_workers=2)))[0].numpy()
    assert not np.array_equal(other, first[0][0])
    assert get_worker_info() is None


def test_same_data_across_separate_runs(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent("""
        import hashlib, numpy as np, oar
        from tests.nn.io.test_workers import Noisy
        from oar.io import DataLoader
        oar.seed(99)
        digest = hashlib.sha256()
        for values, ids, seeds in DataLoader(Noisy(), batch_size=4, shuffle=True, num_workers=2):
            digest.update(values.numpy().tobytes())
        print(digest.hexdigest())
    """))
    outputs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, env=SCRIPT_ENV,
                              timeout=60)
               for _ in range(2)]
    assert all(o.returncode == 0 for o in outputs), outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout and len(outputs[0].stdout.strip()) == 64


def _record_worker(worker_id):
    global INIT_MARK
    INIT_MARK = 100 + worker_id


INIT_MARK = -1


class InitMark(Dataset):
    def __getitem__(self, i):
        return np.array([INIT_MARK])

    def __len__(self):
        return 4


def _failing_init(worker_id):
    raise RuntimeError(f"cannot open the database in worker {worker_id}")


def test_worker_init_fn_runs_in_each_worker(clean):
    marks = [b.numpy().ravel().tolist() for b in DataLoader(InitMark(), batch_size=1, num_workers=2,
                                                               worker_init_fn=_record_worker)]
    assert marks == [[100], [101], [100], [101]]
    with pytest.raises(RuntimeError, match="cannot open the database in worker 0") as info:
        list(DataLoader(InitMark(), num_workers=2, worker_init_fn=_failing_init))
    assert "_failing_init" in str(info.value)


def test_worker_exception_carries_its_traceback_and_worker_id(clean):
    loader = DataLoader(Images(40, fail_at=13), batch_size=4, num_workers=2)
    seen = []
    with pytest.raises(ValueError) as info:
        for _, labels in loader:
            seen.append(labels.tolist())
    message = str(info.value)
    assert "DataLoader worker 1 " in message  # batch 3 (samples 12..15) belongs to worker 1
    assert "bad sample 13" in message and "Traceback" in message
    assert "in __getitem__" in message and "test_workers.py" in message
    assert seen == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]  # the batches before it, in order


def test_worker_exceptions_that_cannot_be_rebuilt(clean):
    with pytest.raises(KeyError) as info:
        list(DataLoader(RaisesOdd(), batch_sampler=[[1]], num_workers=1))
    assert "missing key 1" in str(info.value) and "\n" in str(info.value)  # readable, not a repr
    with pytest.raises(RuntimeError, match="NeedsTwoArgs"):
        list(DataLoader(RaisesOdd(), batch_sampler=[[0]], num_workers=1))


def test_a_worker_names_the_sample_index_and_keeps_the_original_as_cause(clean):
    with pytest.raises(ValueError) as info:
        list(DataLoader(Images(40, fail_at=13), batch_size=4, num_workers=2))
    message = str(info.value)
    assert message.startswith("DataLoader worker 1 (pid ") and "): dataset[13] raised ValueError: bad sample 13" in message
    cause = info.value.__cause__
    assert type(cause) is ValueError and str(cause) == "bad sample 13"  # the worker's exception, re-created here


def test_a_worker_s_exception_that_cannot_be_rebuilt_still_names_the_index(clean):
    with pytest.raises(RuntimeError, match=r"dataset\[0\] raised NeedsTwoArgs: \('x', 'y'\)") as info:
        list(DataLoader(RaisesOdd(), batch_sampler=[[0]], num_workers=1))
    assert type(info.value.__cause__) is NeedsTwoArgs


class Ragged(Dataset):
    def __getitem__(self, i):
        return {"image": np.zeros([3, 28 if i == 5 else 32, 32], np.float32), "label": i}

    def __len__(self):
        return 8


def test_a_collate_shape_mismatch_in_a_worker_names_the_field_shapes_and_indices(clean):
    with pytest.raises(ValueError) as info:
        list(DataLoader(Ragged(), batch_size=4, num_workers=2))
    message = str(info.value)
    assert "DataLoader worker 1 " in message and "collate_fn on dataset[4, 5, 6, 7]" in message, message
    assert "field 'image': sample 0 has [3, 32, 32], sample 1 has [3, 28, 32]" in message, message


def test_break_stops_the_workers(clean):
    before = children()
    for _ in DataLoader(Images(400, sleep=0.001), batch_size=4, num_workers=2):
        workers = children() - before
        break
    assert len(workers) == 2
    assert not wait_gone(workers, 0.5)  # stopped by the iterator's finalizer, not by a timeout
    assert shm_blocks() == []


def test_exception_in_the_loop_body_stops_the_workers(clean):
    before = children()
    workers = set()

    def train():
        for i, _ in enumerate(DataLoader(Images(400), batch_size=4, num_workers=2)):
            workers.update(children() - before)
            if i == 2:
                raise ArithmeticError("loss is nan")

    with pytest.raises(ArithmeticError):
        train()
    assert len(workers) == 2 and not wait_gone(workers, 0.5)


def test_close_and_garbage_collection_stop_the_workers(clean):
    before = children()
    iterator = iter(DataLoader(Images(400), batch_size=4, num_workers=2))
    next(iterator)
    workers = children() - before
    iterator.close()
    assert len(workers) == 2 and not wait_gone(workers, 0.5)
    with pytest.raises(StopIteration):
        next(iterator)
    iterator = iter(DataLoader(Images(400), batch_size=4, num_workers=2))
    next(iterator)
    workers = children() - before
    del iterator
    assert len(workers) == 2 and not wait_gone(workers, 0.5)


def test_workers_end_with_the_pass(clean):
    before = children()
    loader = DataLoader(Images(16), batch_size=4, num_workers=2)
    iterator = iter(loader)
    assert len(iterator) == 4 and len(list(iterator)) == 4
    assert children() - before == set()


def test_persistent_workers_serve_several_epochs(clean):
    before = children()
    loader = DataLoader(Images(20), batch_size=4, shuffle=True, num_workers=2, persistent_workers=True)
    epochs, pids = [], []
    for _ in range(3):
        epochs.append(sum((labels for _, labels in _flat(loader)), []))
        pids.append(children() - before)
    assert all(sorted(e) == list(range(20)) for e in epochs) and epochs[0] != epochs[1]
    assert len(pids[0]) == 2 and pids[0] == pids[1] == pids[2]  # the same processes
    for _ in loader:  # leave an epoch early: the next one still gets all of its batches, none stale
        break
    assert sorted(sum((labels for _, labels in _flat(loader)), [])) == list(range(20))
    assert children() - before == pids[0]
    del loader
    gc.collect()
    assert not wait_gone(pids[0], 2.0)


def test_persistent_workers_shuffle_as_without_workers(clean):
    def two_epochs(**kwargs):
        oar.seed(5)
        loader = DataLoader(Images(12), batch_size=4, shuffle=True, **kwargs)
        return [[labels for _, labels in _flat(loader)] for _ in range(2)]

    assert two_epochs(num_workers=2, persistent_workers=True) == two_epochs()


def test_persistent_workers_restart_after_an_error(clean):
    loader = DataLoader(Images(12, fail_at=5), batch_size=4, num_workers=2, persistent_workers=True)
    for _ in range(2):
        with pytest.raises(ValueError, match="bad sample 5"):
            list(loader)


def test_iterable_dataset_sharded_with_get_worker_info(clean):
    batches = [b.numpy().ravel().tolist() for b in DataLoader(Shards(23), batch_size=3, num_workers=2)]
    assert sorted(sum(batches, [])) == list(range(23))
    assert batches[:2] == [[0, 2, 4], [1, 3, 5]]  # worker 0, worker 1, in turn
    dropped = [b.numpy().ravel().tolist() for b in DataLoader(Shards(23), batch_size=3, num_workers=2,
                                                                drop_last=True)]
    assert all(len(b) == 3 for b in dropped) and len(dropped) == 7  # 12 + 11 samples: 4 + 3 whole batches
    single = [b.numpy().ravel().tolist() for b in DataLoader(Shards(5), batch_size=None, num_workers=3)]
    assert sorted(single) == [[i] for i in range(5)]
    # without sharding every worker yields the whole stream
    repeated = [b.numpy().ravel().tolist() for b in DataLoader(Unsharded(), batch_size=3, num_workers=2)]
    assert repeated == [[0, 1, 2], [0, 1, 2]]


class Ints(Dataset):
    def __getitem__(self, i):
        return i

    def __len__(self):
        return 160_000


def test_large_tasks_and_large_pickled_results_do_not_deadlock(clean):
    # Each task (40000 indices) and each result (a pickled 320 KB array) overfills a pipe: a worker
    # blocked on sending its result must not stop the parent from sending it the next task.
    loader = DataLoader(Ints(), batch_size=40_000, num_workers=2, use_shared_memory=False, timeout=30)
    assert [int(b.numpy()[0]) for b in loader] == [0, 40_000, 80_000, 120_000]


def test_iterable_dataset_with_persistent_workers(clean):
    loader = DataLoader(Shards(10), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):  # each pass restarts every worker's iterator
        assert sorted(int(i) for b in loader for i in b.numpy().ravel()) == list(range(10))


def test_timeout_names_itself_and_stops_the_workers(clean):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"timed out.*timeout=0.3"):
        list(DataLoader(Images(8, sleep=0.8), batch_size=4, num_workers=2, timeout=0.3))
    assert time.monotonic() - start < 4.0


def test_a_killed_worker_is_reported(clean):
    before = children()
    iterator = iter(DataLoader(Images(400, sleep=0.005), batch_size=4, num_workers=2))
    next(iterator)
    victim = min(children() - before)
    os.kill(victim, signal.SIGKILL)
    with pytest.raises(RuntimeError, match=r"worker \d \(pid \d+\) was killed by signal 9 \(SIGKILL\)"):
        for _ in iterator:
            pass
    assert not alive(victim)


def test_ctrl_c_leaves_no_worker_behind(tmp_path):
    script = tmp_path / "interrupted.py"
    script.write_text(textwrap.dedent("""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with SIGINT ignored
        from tests.nn.io.processes import children, shm_blocks
        from tests.nn.io.test_workers import Images
        from oar.io import DataLoader
        try:
            for i, batch in enumerate(DataLoader(Images(4000, sleep=0.002), batch_size=8, num_workers=2)):
                if i == 0:
                    print("workers", *sorted(children()), flush=True)
        except KeyboardInterrupt:
            print("interrupted; children", *sorted(children()), "; blocks", *shm_blocks(), flush=True)
            sys.exit(3)
    """))
    # Its own session, so that the SIGINT goes to its whole process group, as Ctrl-C in a terminal does.
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO, env=SCRIPT_ENV, start_new_session=True)
    try:
        first = process.stdout.readline().split()
        assert first[:1] == ["workers"] and len(first) == 3, process.stderr.read()
        workers = {int(p) for p in first[1:]}
        time.sleep(0.2)
        os.killpg(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 3, err
    assert out.strip() == "interrupted; children ; blocks", out  # stopped before the handler even ran
    assert err == ""  # the workers ignored the SIGINT: no traceback from them
    assert not wait_gone(workers, 2.0)


def test_workers_leave_when_their_parent_is_killed(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(textwrap.dedent("""
        from tests.nn.io.processes import children
        from tests.nn.io.test_workers import Images
        from oar.io import DataLoader
        for i, batch in enumerate(DataLoader(Images(4000, sleep=0.002), batch_size=8, num_workers=2)):
            if i == 0:
                print("workers", *sorted(children()), flush=True)
    """))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, cwd=REPO, env=SCRIPT_ENV)
    try:
        first = process.stdout.readline().split()
        assert first[:1] == ["workers"] and len(first) == 3, process.stderr.read()
        time.sleep(0.2)
        process.kill()  # SIGKILL: no cleanup code runs in the parent
        process.communicate(timeout=20)
    finally:
        process.kill()
    assert not wait_gone({int(p) for p in first[1:]}, 3.0)  # they noticed the parent's death
    deadline = time.monotonic() + 5.0  # then the resource tracker unlinks the blocks the parent never read
    while shm_blocks(process.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shm_blocks(process.pid) == []


def test_spawn_start_method(tmp_path):
    script = tmp_path / "spawned.py"
    script.write_text(textwrap.dedent("""
        import multiprocessing, numpy as np, oar
        from oar.io import DataLoader
        from tests.nn.io.test_workers import Images

        if __name__ == "__main__":
            multiprocessing.set_start_method("spawn")
            oar.seed(1)
            serial = [labels.tolist() for _, labels in DataLoader(Images(20), batch_size=4, shuffle=True)]
            oar.seed(1)
            parallel = [labels.tolist() for _, labels in DataLoader(Images(20), batch_size=4, shuffle=True,
                                                                     num_workers=2)]
            print(serial == parallel, len(parallel))
            try:
                DataLoader(Images(4), num_workers=1, collate_fn=lambda samples: samples).__iter__()
            except TypeError as exc:
                print("picklable" in str(exc))
    """))
    result = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=REPO, env=SCRIPT_ENV,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "5", "True"], result.stdout + result.stderr
