"""The launcher (``python -m oar.distributed.launch``, issue #21): real jobs of 1, 2 and 4 ranks,
per-rank logs, a failing rank ending the whole job, ``--check``, ``--dry_run`` and usage errors;
and ``python script.py`` without it, which needs no MPI."""

from __future__ import annotations

import doctest
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import oar.distributed.launch as launch_package
import oar.distributed.launch._launcher as launcher_module
from oar.distributed.launch import LaunchError, find_mpiexec, main, plan_launch
from oar.distributed.launch._launcher import THREAD_VARIABLES

REPORT = """
    import json, os, sys
    import oar.distributed as dist
    names = ["PADDLE_TRAINER_ID", "PADDLE_TRAINERS_NUM", "PADDLE_LOCAL_RANK", "PADDLE_RANK_IN_NODE",
             "PADDLE_LOCAL_SIZE", "PADDLE_NNODES", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"]
    report = {"rank": dist.get_rank(), "world_size": dist.get_world_size(), "argv": sys.argv[1:],
              "env": {n: os.environ.get(n) for n in names}}
    print("REPORT " + json.dumps(report))
    print(f"stderr of rank {dist.get_rank()}", file=sys.stderr)
"""


def _reports(text: str) -> list[dict]:
    return [json.loads(line[len("REPORT "):]) for line in text.splitlines() if line.startswith("REPORT ")]


def _threads(nproc: int) -> str:
    return str(max(1, len(os.sched_getaffinity(0)) // nproc)) if hasattr(os, "sched_getaffinity") else \
        str(max(1, (os.cpu_count() or 1) // nproc))


@pytest.mark.parametrize("nproc", [1, 2, 4])
def test_every_rank_knows_its_place(launch, nproc):
    job = launch(REPORT, nproc=nproc, args=["--lr", "0.1"]).check()
    for rank in range(nproc):
        (report,) = _reports(job.log(rank))
        assert report["rank"] == rank and report["world_size"] == nproc
        assert report["argv"] == ["--lr", "0.1"]
        env = report["env"]
        assert env["PADDLE_TRAINER_ID"] == str(rank) and env["PADDLE_TRAINERS_NUM"] == str(nproc)
        assert env["PADDLE_LOCAL_RANK"] == env["PADDLE_RANK_IN_NODE"] == str(rank)  # one host
        assert env["PADDLE_LOCAL_SIZE"] == str(nproc) and env["PADDLE_NNODES"] == "1"
        for name in THREAD_VARIABLES:
            assert env[name] == os.environ.get(name, _threads(nproc)), name


def test_console_shows_rank_0_and_each_log_its_rank(launch):
    job = launch(REPORT, nproc=2, env={"OMP_NUM_THREADS": "7"}).check()
    assert [r["rank"] for r in _reports(job.stdout)] == [0]  # rank 1 prints to its log only
    assert "stderr of rank 0" in job.stderr and "stderr of rank 1" not in job.stderr
    for rank in (0, 1):
        log = job.log(rank)
        assert [r["rank"] for r in _reports(log)] == [rank]
        assert f"stderr of rank {rank}" in log
    assert _reports(job.log(1))[0]["env"]["OMP_NUM_THREADS"] == "7"  # the user's choice is kept


def test_worker_refuses_an_mpiexec_of_another_mpi(tmp_path):
    # What a rank sees when mpiexec and mpi4py's library differ: MPI says 1 where mpiexec started 2.
    script = tmp_path / "job.py"
    script.write_text("print('ran')\n")
    done = subprocess.run([find_mpiexec(), "-n", "1", sys.executable, "-m", "oar.distributed.launch._worker",
                           "--log_dir", str(tmp_path / "log"), str(script)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "OAR_LAUNCH_WORLD_SIZE": "2"})
    assert done.returncode == 1
    assert "different MPIs" in done.stderr and "ran" not in done.stdout


def test_a_failing_rank_ends_the_job_while_the_others_wait(launch):
    code = """
        import oar, oar.distributed as dist
        dist.init_parallel_env()
        if dist.get_rank() == 1:
            raise ValueError("rank one cannot go on")
        x = oar.to_tensor([1.0, 2.0])
        dist.all_reduce(x)  # ranks 0 and 2 wait here for rank 1
        print("unreachable")
    """
    start = time.monotonic()
    job = launch(code, nproc=3)  # the collectives' own timeout is 60 s: only the abort ends it sooner
    assert time.monotonic() - start < 30
    assert job.returncode == 1, job.stderr
    assert "[rank 1] Traceback (most recent call last):" in job.stderr
    assert "[rank 1] ValueError: rank one cannot go on" in job.stderr
    assert "unreachable" not in job.stdout
    log = job.log(1)
    assert "ValueError: rank one cannot go on" in log and 'raise ValueError("rank one cannot go on")' in log
    assert "runpy" not in log  # the traceback starts at the user's script, as with `python script.py`
    record = json.loads((job.log_dir / ".failed" / "rank1.json").read_text())
    assert record["rank"] == 1 and record["exit_code"] == 1 and record["error"] == "ValueError: rank one cannot go on"
    assert "rank 1 failed with exit code 1" in job.stderr and "workerlog.1" in job.stderr


def test_sys_exit_code_of_a_rank_is_the_job_exit_code(launch):
    code = """
        import sys, oar.distributed as dist
        if dist.get_rank() == 1:
            sys.exit(3)
        dist.barrier()
    """
    start = time.monotonic()
    job = launch(code, nproc=2)
    assert time.monotonic() - start < 30
    assert job.returncode == 3, job.stderr
    assert "sys.exit(3)" in job.stderr


def test_check_prints_the_versions_and_a_bandwidth(launch):
    job = launch(None, nproc=2, launcher_args=["--check"], timeout=60)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "rank  host  python  oar-core  oar-distributed  mpi4py  MPI library" in job.stdout
    assert job.stdout.count("\n0  ") + job.stdout.count("\n1  ") == 2
    assert "GB/s" in job.stdout and "oar preflight: OK" in job.stdout


def test_check_names_ssh_when_a_host_cannot_start(launch):
    job = launch(None, nproc=1, launcher_args=["--check", "--ips", "nonexistent.invalid"], timeout=60)
    assert job.returncode != 0
    assert "could not be started" in job.stderr and "ssh" in job.stderr


def _dry_run_command(job) -> list[str]:
    assert job.returncode == 0, job.stderr
    line = job.stdout.strip().splitlines()[-1]
    return line.split()


def test_dry_run_with_ips(launch):
    job = launch("print('never run')", nproc=2, args=["--epochs", "3"], launcher_args=["--dry_run", "--ips", "a,b"])
    words = _dry_run_command(job)
    mpiexec = words.index(find_mpiexec())
    assert words[mpiexec:mpiexec + 7] == [find_mpiexec(), "-n", "4", "-hosts", "a,b", "-ppn", "2"]
    assert words[mpiexec + 7:mpiexec + 10] == [sys.executable, "-m", "oar.distributed.launch._worker"]
    assert words[-2:] == ["--epochs", "3"]
    assert "OAR_LAUNCH_WORLD_SIZE=4" in words
    assert not job.log_dir.exists()  # nothing ran


def test_dry_run_with_hostfile(launch, tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("node1:2\nnode2:2\nnode3:2\n")
    words = _dry_run_command(launch("pass", nproc=2, launcher_args=["--dry_run", "--hostfile", hostfile]))
    mpiexec = words.index(find_mpiexec())
    assert words[mpiexec:mpiexec + 7] == [find_mpiexec(), "-n", "6", "-f", str(hostfile), "-ppn", "2"]


def test_hostfile_counts_decide_without_nproc_per_node(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# two machines\nnode1:3\nnode2\n")
    plan = plan_launch(["--hostfile", str(hostfile), "--check"], mpiexec="mpiexec")
    assert plan.command[:5] == ["mpiexec", "-n", "4", "-f", str(hostfile)]
    assert "-ppn" not in plan.command and plan.ranks_per_host == 3


@pytest.mark.parametrize("argv, message", [
    ([], "no script to run"),
    (["--nproc_per_node", "0", "train.py"], "--nproc_per_node must be at least 1"),
    (["missing_script.py"], "missing_script.py does not exist"),
    (["--ips", "a,b", "--hostfile", "hosts", "train.py"], "not allowed with"),
    (["--ips", "a,,b", "--check"], "--ips"),
    (["--check", "train.py"], "--check runs a preflight"),
])
def test_usage_errors_exit_2_with_one_line(argv, message, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text("pass\n")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


def test_usage_error_from_the_command_line(launch):
    job = launch("pass", nproc=0)
    assert job.returncode == 2
    assert job.stderr.strip().splitlines() == [
        "oar.distributed.launch: error: --nproc_per_node must be at least 1, got 0 (see --help)"]


def test_without_mpiexec_the_error_names_pip_install_mpich(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LaunchError, match="pip install mpich"):
        find_mpiexec()


# -- without the launcher: a job of one, no MPI ----------------------------------------------------
SINGLE = """
    import sys
    import oar, oar.distributed as dist
    x = oar.to_tensor([1.0, 2.0])
    dist.all_reduce(x)
    dist.barrier()
    print(dist.get_rank(), dist.get_world_size(), x.tolist(), "mpi4py" in sys.modules)
"""


def _plain_python(tmp_path, extra_path: str | None = None) -> str:
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent(SINGLE))
    # Nothing may say "launched": not the launcher's variables, not mpiexec's (these tests may run under one).
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PADDLE_", "PMI_", "OMPI_", "HYDRA_", "MPI_", "OAR_LAUNCH"))}
    if extra_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [extra_path, env.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=env,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_plain_python_is_a_job_of_one_without_mpi4py(tmp_path):
    assert _plain_python(tmp_path) == "0 1 [1.0, 2.0] False"


def test_plain_python_works_when_mpi4py_cannot_be_imported(tmp_path):
    broken = tmp_path / "broken"
    (broken / "mpi4py").mkdir(parents=True)
    (broken / "mpi4py" / "__init__.py").write_text("raise ImportError('no MPI library here')\n")
    assert _plain_python(tmp_path, str(broken)) == "0 1 [1.0, 2.0] False"


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_launcher_stops_every_rank(tmp_path, signum, code):
    script = tmp_path / "sleeper.py"
    script.write_text("import time\nimport oar.distributed as dist\nprint('ready', dist.get_world_size(), "
                      "flush=True)\ntime.sleep(60)\n")
    process = subprocess.Popen([sys.executable, "-m", "oar.distributed.launch", "--nproc_per_node", "2",
                                "--log_dir", str(tmp_path / "log"), str(script)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert process.stdout.readline().strip() == "ready 2"
        start = time.monotonic()
        process.send_signal(signum)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert time.monotonic() - start < 15
    assert process.returncode == code, err
    assert f"stopped by {signal.Signals(signum).name}" in err


def test_the_launcher_doctests_pass():
    for module in (launch_package, launcher_module):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
