"""``python -m oar.distributed.launch`` (or ``oar-launch``): run a training script as a job of
several processes, Paddle's ``paddle.distributed.launch`` on MPICH's ``mpiexec``.

One machine
-----------
::

    python -m oar.distributed.launch --nproc_per_node 4 train.py --lr 0.1

starts 4 processes (ranks) of ``train.py --lr 0.1``. In the script, Paddle's code works as it is:
``dist.init_parallel_env()``, ``dist.get_rank()``, ``paddle.DataParallel(model)``. Rank 0's output
goes to the console and to ``log/workerlog.0``; every other rank's only to ``log/workerlog.<rank>``
(``--log_dir DIR`` to put them elsewhere). ``--dry_run`` prints the ``mpiexec`` command and runs
nothing.

Several machines
----------------
Every machine needs the same Python environment at the same path and ``ssh`` from the first
machine to the others without a password (MPICH's ``mpiexec`` starts the remote ranks over ssh).
List the hosts, with the number of ranks each, in a hostfile::

    # hosts
    node1:2
    node2:2

and check the setup before training -- versions on every host, a test all-reduce and its
bandwidth, a one-line fix when something differs or a host cannot be reached::

    python -m oar.distributed.launch --hostfile hosts --check
    python -m oar.distributed.launch --hostfile hosts train.py

``--ips node1,node2 --nproc_per_node 2`` does the same without a file (Paddle's form). With
``--hostfile``, ``--nproc_per_node`` overrides the file's counts. ``--mpiexec_args '-iface eth0'``
picks the network between the hosts. Ranks on other hosts write their logs to ``DIR`` on their
own host (use a shared folder to see them all in one place).

What each rank finds in its environment
---------------------------------------
========================  ===========================================================
``PADDLE_TRAINER_ID``     its rank, 0 .. world size - 1 (``dist.get_rank()``)
``PADDLE_TRAINERS_NUM``   the world size, every rank of every host (``dist.get_world_size()``)
``PADDLE_LOCAL_RANK``     its rank among the ranks of its host (also ``PADDLE_RANK_IN_NODE``)
``PADDLE_LOCAL_SIZE``     how many ranks its host runs
``PADDLE_NNODES``         how many hosts the job spans
``OMP_NUM_THREADS``       and ``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``NUMBA_NUM_THREADS``:
                          max(1, cpu_count // ranks per host) unless you set them, so that
                          the ranks sharing a machine do not oversubscribe its cores
========================  ===========================================================

When a rank fails
-----------------
No hang: when a rank raises (or calls ``sys.exit(n)`` with ``n != 0``), it prints its traceback
to its log and, each line prefixed ``[rank r]``, to the console, records the failure in
``DIR/.failed/rank<r>.json`` and aborts the job (``MPI_Abort``): every other rank is ended within
seconds, also those waiting for it in a collective. The launcher then prints which rank failed
and where its log is, and exits with that rank's code (1 for an exception, ``n`` for
``sys.exit(n)``; the first failure when several ranks fail), 0 when every rank succeeded, and 2
for a usage error. Ctrl-C and SIGTERM are passed on to every rank. A collective that waits for a
rank that is alive but never arrives raises ``CollectiveTimeoutError`` after
``OAR_DISTRIBUTED_TIMEOUT`` seconds (default 300), which also ends the job this way;
``MPIEXEC_TIMEOUT=<seconds>`` bounds the whole job.

Without the launcher, ``python train.py`` is a job of one rank and imports no MPI.

>>> from oar.distributed.launch import plan_launch
>>> plan = plan_launch(["--nproc_per_node", "2", "--check"], mpiexec="mpiexec")
>>> plan.command[:3]
['mpiexec', '-n', '2']
"""

from oar.distributed.launch._launcher import LaunchError as LaunchError
from oar.distributed.launch._launcher import LaunchPlan as LaunchPlan
from oar.distributed.launch._launcher import UsageError as UsageError
from oar.distributed.launch._launcher import find_mpiexec as find_mpiexec
from oar.distributed.launch._launcher import main as main
from oar.distributed.launch._launcher import plan_launch as plan_launch
from oar.distributed.launch._launcher import read_failures as read_failures
from oar.distributed.launch._launcher import read_hostfile as read_hostfile

__all__ = ["main", "plan_launch", "LaunchPlan", "find_mpiexec", "read_hostfile", "read_failures", "UsageError",
           "LaunchError"]
