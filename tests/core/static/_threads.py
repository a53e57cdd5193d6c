"""Shared by the batch-split tests of core and nn: two threads for the test, and a record of the
part counts the executor splits calls into."""

from __future__ import annotations

import contextlib

import oar
import oar._graph.executor as executor_module
from oar.plugins import registries


@contextlib.contextmanager
def threads(n: int):
    """``oar.set_num_threads(n)`` for the block; what other tests left set does not leak in or out."""
    controls = registries().thread_controls
    before = controls.num_threads
    oar.set_num_threads(n)
    try:
        yield
    finally:
        oar.set_num_threads(before or 1)
        controls.num_threads = before


def two_threads():
    return threads(2)


def record_parts(monkeypatch) -> list[int]:
    """The part count of every call the executor runs in parts, from now on in this test."""
    calls: list[int] = []
    run_in_parts = executor_module.run_in_parts

    def recorded(work, parts):
        calls.append(parts)
        run_in_parts(work, parts)

    monkeypatch.setattr(executor_module, "run_in_parts", recorded)
    return calls
