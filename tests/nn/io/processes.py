"""What the DataLoader worker tests look at: a process's children (read from /proc) and the
shared-memory blocks a loader names after its process."""

from __future__ import annotations

import os
import time
from pathlib import Path


def children(pid: int | None = None) -> set[int]:
    """Live child processes of ``pid`` (default: this process), not counting Python's resource
    tracker (one per interpreter, shared by every loader, leaves with the interpreter) and zombies."""
    pid = os.getpid() if pid is None else pid
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z" and b"resource_tracker" not in cmdline:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_gone(pids, seconds: float = 5.0) -> set[int]:
    """The pids still alive after waiting up to ``seconds`` for them to exit."""
    deadline = time.monotonic() + seconds
    left = {p for p in pids if alive(p)}
    while left and time.monotonic() < deadline:
        time.sleep(0.02)
        left = {p for p in left if alive(p)}
    return left


def shm_blocks(pid: int | None = None) -> list[str]:
    """Shared-memory blocks that loaders of process ``pid`` created and have not unlinked."""
    prefix = f"oar{os.getpid() if pid is None else pid}_"
    return sorted(name for name in os.listdir("/dev/shm") if name.startswith(prefix))
