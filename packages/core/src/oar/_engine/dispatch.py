"""Binding an op call: the stack of modes.

``dispatch(op, inputs, attrs)`` hands the call to the mode on top of the stack. The bottom mode
is eager execution (``oar._engine.eager``, which puts itself there): it runs the kernel now and
records a tape node when a gradient is needed. Tracing (to_static) and wrappers such as autocast
push their own mode, which may rewrite the call and delegate to the mode below
(``Mode.apply_below``).

A mode that rewrites calls (autocast) sets ``outermost``: it stays above the modes pushed after
it, so that to_static's tracer, pushed inside an ``auto_cast`` block, records the rewritten call
(the casts and the op on the cast inputs), not the call the user wrote. Its ``capture_key`` says
what a capture made under it depends on; to_static keys its cached programs by it.
"""

from __future__ import annotations

from typing import Any


class Mode:
    """A way of binding op calls; modes stack (``with mode: ...``).

    ``outermost = True``: the mode rewrites calls before anything records them (autocast), so a
    mode pushed after it (to_static's tracer, a recorder) goes in under it. ``capture_key``: what a
    to_static capture made under this mode depends on (a hashable value, such as autocast's level
    and dtype), or None when the mode does not change what is captured; to_static caches one
    program per key, and replays it through the mode when called under it again, so the mode must
    leave the calls it produced unchanged (autocast's cast inputs already have their dtype).
    ``outermost`` is read when a mode enters, ``capture_key`` on each to_static call (a property
    may compute it). ``observer = True``: the mode passes every call on unchanged and only watches
    (``oar.profiler``'s recorder, the memory count), so to_static may still run its compiled
    programs, whose executor reports each node to the profiler itself.
    """

    outermost: bool = False
    capture_key: Any = None
    observer: bool = False  # only watches calls, changes none (a profiler): see ``observers_only``

    def apply(self, op, inputs: tuple, attrs: dict):
        raise NotImplementedError

    def apply_below(self, op, inputs: tuple, attrs: dict):
        """Delegate to the mode under this one on the stack."""
        index = _mode_stack.index(self)
        return _mode_stack[index - 1].apply(op, inputs, attrs)

    def rebind(self, target, result) -> None:
        """``target`` was just overwritten in place with ``result``'s value (``apply_inplace``);
        a mode that tracks tensors (to_static's tracer) follows it. Most modes ignore it."""

    def python_backward(self, what: str) -> None:
        """A gradient written in Python (``what``: a PyLayer) is about to be recorded on the tape.
        A mode that captures a program, which cannot hold it, breaks the graph; most modes ignore it."""

    def __enter__(self):
        at = len(_mode_stack)
        if not self.outermost:
            while at > 1 and _mode_stack[at - 1].outermost:  # under the rewriting modes, which see calls first
                at -= 1
        _mode_stack.insert(at, self)
        return self

    def __exit__(self, *exc):
        _mode_stack.remove(self)
        return False


# Bottom first. The eager mode, at the bottom, is put there when oar._engine.eager is imported.
_mode_stack: list[Mode] = []


def dispatch(op, inputs: tuple, attrs: dict) -> Any:
    """Bind one call of ``op`` in the active mode."""
    return _mode_stack[-1].apply(op, inputs, attrs)


def current_mode() -> Mode:
    """The mode on top of the stack (the eager mode when nothing is traced or wrapped)."""
    return _mode_stack[-1]


def eager_mode() -> Mode:
    """The bottom of the stack: runs kernels now, whatever is traced or wrapped above it."""
    return _mode_stack[0]


def modes_above_eager() -> list[Mode]:
    """The modes pushed over eager execution, bottom first (empty in plain eager code)."""
    return _mode_stack[1:]


def observers_only() -> bool:
    """True when every mode above eager only watches calls (``Mode.observer``); True in plain eager
    code too. Read off the hot paths, after ``len(_mode_stack) == 1`` said no."""
    return all(m.observer for m in _mode_stack[1:])


def capture_keys() -> tuple:
    """The ``capture_key`` of each mode above eager that has one, bottom first (empty in plain
    eager code): what to_static adds to the cache key of a call."""
    return tuple(key for key in (m.capture_key for m in _mode_stack[1:]) if key is not None)
