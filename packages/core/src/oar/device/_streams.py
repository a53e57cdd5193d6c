"""Streams and events, as ``paddle.device.Stream`` / ``Event``: honest on a synchronous device.

oar's CPU backend is synchronous: every op has finished when its call returns, so work "on" a
stream is complete as soon as it is queued. A ``Stream`` here is therefore a named handle for a
device with nothing pending: ``query()`` is True, ``wait_event``/``wait_stream`` have nothing to
wait for, ``synchronize()`` waits for the device (``oar.device.synchronize``, which a GPU backend
plugin implements). An ``Event`` records the time it was recorded at, so ``elapsed_time`` measures
host time between two records -- on a synchronous device, the time of the work in between.
``stream_guard`` / ``set_stream`` select the stream ``current_stream`` returns. A GPU backend
with real queues would supply its own streams; no oar backend does today.
"""

from __future__ import annotations

import time

from oar._engine.device import Place, get_device, set_device
from oar._engine.registries import BACKENDS
from oar.errors import ArgumentError

__all__ = ["Event", "Stream", "StreamContext", "current_stream", "device_name", "set_stream", "stream_guard"]


def device_name(device=None) -> str:
    """``'cpu'`` / ``'gpu:0'`` for a device given as Paddle takes it: None (the current one), a
    string, an int (a GPU index) or a ``Place``."""
    if device is None:
        return get_device()
    if isinstance(device, Place):
        return "cpu" if device.backend == "cpu" else f"{device.backend}:{device.index}"
    if isinstance(device, bool) or not isinstance(device, (str, int)):
        raise ArgumentError(f"device: expected None, a str, an int or a Place, got {type(device).__name__}")
    if isinstance(device, int):
        return f"gpu:{device}"
    name = device.lower()
    if name.split(":")[0] == "cuda":
        name = "gpu" + name[4:]
    return name


def _stream_key(device) -> str:
    name = device_name(device)
    return "gpu:0" if name == "gpu" else name


def _synchronize(name: str) -> None:
    backend_name = name.split(":")[0]
    if backend_name != "cpu" and backend_name in BACKENDS:
        backend = BACKENDS.get(backend_name)
        if hasattr(backend, "synchronize"):
            backend.synchronize()


class Event:
    """A point in a stream's work; on a synchronous device it is complete when recorded.

    >>> import oar
    >>> start, end = oar.device.Event(enable_timing=True), oar.device.Event(enable_timing=True)
    >>> start.record(); _ = oar.ones([64, 64]).sum(); end.record()
    >>> end.query(), start.elapsed_time(end) >= 0
    (True, True)
    """

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        self.device = get_device()
        self.enable_timing, self.blocking, self.interprocess = enable_timing, blocking, interprocess
        self._recorded_at: float | None = None

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point in ``stream`` (the current one by default) reached now."""
        stream = current_stream(self.device) if stream is None else stream
        if not isinstance(stream, Stream):
            raise ArgumentError(f"Event.record: stream must be an oar.device.Stream, got {type(stream).__name__}")
        self._recorded_at = time.perf_counter()

    def query(self) -> bool:
        """Whether the recorded work has finished: always, on a synchronous device."""
        return True

    def synchronize(self) -> None:
        _synchronize(self.device)

    def elapsed_time(self, end_event: Event) -> float:
        """Milliseconds from this event's record to ``end_event``'s; both need ``enable_timing``."""
        for which, event in (("this event", self), ("end_event", end_event)):
            if not event.enable_timing:
                raise ArgumentError(f"Event.elapsed_time: {which} was made without enable_timing=True")
            if event._recorded_at is None:
                raise ArgumentError(f"Event.elapsed_time: {which} has not been recorded")
        return (end_event._recorded_at - self._recorded_at) * 1000.0

    def __repr__(self) -> str:
        return f"<oar.device.Event on {self.device}>"


class Stream:
    """A queue of work on a device; on a synchronous device, one with nothing ever pending.

    >>> import oar
    >>> s = oar.device.Stream()
    >>> with oar.device.stream_guard(s):
    ...     oar.device.current_stream() is s
    True
    >>> s.query()
    True
    """

    def __init__(self, device=None, priority: int = 2, stream_base=None) -> None:
        if priority not in (1, 2):
            raise ArgumentError(f"Stream: priority must be 1 (high) or 2 (normal), got {priority!r}")
        self.device = _stream_key(device)
        self.priority = priority
        # An external handle (get_stream_from_external) is kept only to be given back.
        self.stream_base = stream_base

    def wait_event(self, event: Event) -> None:
        """Make later work wait for ``event``: nothing to wait for, the event's work is done."""
        if not isinstance(event, Event):
            raise ArgumentError(f"Stream.wait_event: expected an oar.device.Event, got {type(event).__name__}")

    def wait_stream(self, stream: Stream) -> None:
        """Make later work wait for ``stream``'s work so far: done already."""
        if not isinstance(stream, Stream):
            raise ArgumentError(f"Stream.wait_stream: expected an oar.device.Stream, got {type(stream).__name__}")

    def record_event(self, event: Event | None = None) -> Event:
        event = Event() if event is None else event
        event.record(self)
        return event

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        _synchronize(self.device)

    def __repr__(self) -> str:
        return f"<oar.device.Stream on {self.device}, priority {self.priority}>"


_default_streams: dict[str, Stream] = {}
_current_streams: dict[str, Stream] = {}


def current_stream(device=None) -> Stream:
    """The stream work on ``device`` (the current device by default) goes to: its default stream,
    or the one ``set_stream`` / ``stream_guard`` selected."""
    name = _stream_key(device)
    if name not in _current_streams:
        _default_streams.setdefault(name, Stream(name))
        return _default_streams[name]
    return _current_streams[name]


def set_stream(stream: Stream) -> Stream:
    """Make ``stream`` its device's current stream; returns the one it replaces."""
    if not isinstance(stream, Stream):
        raise ArgumentError(f"set_stream: expected an oar.device.Stream, got {type(stream).__name__}")
    previous = current_stream(stream.device)
    _current_streams[stream.device] = stream
    return previous


class stream_guard:  # noqa: N801 - Paddle's name
    """Within the block, ``stream`` is its device's current stream, and its device the current
    device (None: nothing changes)."""

    def __init__(self, stream: Stream | None = None) -> None:
        if stream is not None and not isinstance(stream, Stream):
            raise ArgumentError(f"stream_guard: expected an oar.device.Stream or None, got {type(stream).__name__}")
        self.stream = stream

    def __enter__(self) -> None:
        if self.stream is None:
            return
        self._previous_device = get_device()
        if self.stream.device.split(":")[0] != self._previous_device.split(":")[0]:
            set_device(self.stream.device)
        self._previous_stream = set_stream(self.stream)

    def __exit__(self, *exc) -> None:
        if self.stream is None:
            return
        set_stream(self._previous_stream)
        set_device(self._previous_device)


StreamContext = stream_guard  # Paddle 3.3's alias
