"""``oar.profiler``: where the time and the memory of a program go, with Paddle's API.

>>> import oar, oar.profiler as profiler
>>> x = oar.ones([64, 64])
>>> with profiler.Profiler(scheduler=(1, 3), on_trace_ready=None, timer_only=False) as prof:
...     for step in range(4):
...         y = oar.matmul(x, x).sum()
...         prof.step()
>>> sorted({e.name for e in prof.events() if e.kind == "Operator"})
['matmul', 'sum']

What is recorded (each a span with a start, an end and a thread):

- every op call (``Operator``): eager ones as they are dispatched, each node of a to_static
  program run for inference (with the node's index and the user's line that made it), and each
  gradient rule the backward pass runs (``matmul_grad``); with ``record_shapes=True`` the input
  shapes and dtypes;
- each ``loss.backward()`` (``Backward``), each Layer's forward (``Forward``, named by the layer's
  ``full_name()``), each optimizer step (``Optimization``) and each wait for a DataLoader batch
  (``Dataloader``) -- the last three recorded by oar-nn through ``RecordEvent``;
- each ``Profiler.step()`` (``ProfileStep#N``) and the user's own ``RecordEvent`` spans
  (``PythonUserDefined``);
- with ``profile_memory=True``, the bytes of tensor storage each op and each layer allocated and
  the highest level of tensor memory while it ran.

The cost when no profiler records: nothing per eager op (the profiler pushes a dispatch mode only
while it records), one test per backward node and per program run, and one per Layer call in
oar-nn. Packages that record spans of their own test ``RECORDERS`` (a list, empty unless a
profiler records) before timing anything, and use ``RecordEvent``.
"""

from __future__ import annotations

import datetime
import functools
import gzip
import json
import os
import socket
import threading
import warnings
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, NamedTuple

from oar._engine import profiling as _profiling
from oar._engine.dispatch import Mode
from oar._engine.registries import BACKENDS
from oar.profiler._statistics import SortedKeys, build_summary, step_report

__all__ = [
    "Profiler", "ProfilerState", "ProfilerTarget", "RecordEvent", "SortedKeys", "SummaryView", "TracerEventType",
    "export_chrome_tracing", "export_protobuf", "load_profiler_result", "make_scheduler", "RECORDERS",
]

RECORDERS = _profiling.recorders  # the active recorders: empty unless a profiler records
TRACE_FORMAT = "oar-trace/1"  # what export_protobuf's files hold (see export_protobuf)


class ProfilerState(Enum):
    """Where a profiler is in its schedule (Paddle's names): ``CLOSED`` records nothing, ``READY``
    is open without recording (the warm-up before a record window), ``RECORD`` records, and
    ``RECORD_AND_RETURN`` is the last step of a window, after which the trace is handed on."""

    CLOSED = 0
    READY = 1
    RECORD = 2
    RECORD_AND_RETURN = 3


class ProfilerTarget(Enum):
    """The devices to profile. ``CPU`` always; ``GPU`` where a GPU backend is installed."""

    CPU = 0
    GPU = 1
    XPU = 2
    CUSTOM_DEVICE = 3


class TracerEventType(Enum):
    """The kind of a recorded span (Paddle's names; oar records the CPU-side ones)."""

    Operator = 0
    Dataloader = 1
    ProfileStep = 2
    CudaRuntime = 3
    Kernel = 4
    Memcpy = 5
    Memset = 6
    UserDefined = 7
    OperatorInner = 8
    Forward = 9
    Backward = 10
    Optimization = 11
    Communication = 12
    PythonOp = 13
    PythonUserDefined = 14


class SummaryView(Enum):
    """The tables ``Profiler.summary(views=...)`` prints (all of them by default)."""

    DeviceView = 0
    OverView = 1
    ModelView = 2
    DistributedView = 3
    KernelView = 4
    OperatorView = 5
    MemoryView = 6
    MemoryManipulationView = 7
    UDFView = 8
    LayerView = 9


class Event(NamedTuple):
    """One recorded span; times in nanoseconds of ``time.perf_counter_ns``."""

    name: str
    kind: str  # a TracerEventType name
    start: int
    end: int
    thread: int
    args: dict | None


def make_scheduler(*, closed: int, ready: int, record: int, repeat: int = 0,
                   skip_first: int = 0) -> Callable[[int], ProfilerState]:
    """A schedule of profiler states by step: ``skip_first`` steps closed, then cycles of
    ``closed``, ``ready`` and ``record`` steps (the last of them ``RECORD_AND_RETURN``),
    ``repeat`` times (0: until the profiler stops).

    >>> from oar.profiler import make_scheduler
    >>> schedule = make_scheduler(closed=1, ready=1, record=2, repeat=1)
    >>> [schedule(step).name for step in range(5)]
    ['CLOSED', 'READY', 'RECORD', 'RECORD_AND_RETURN', 'CLOSED']
    """
    for name, value, least in (("closed", closed, 0), ("ready", ready, 0), ("record", record, 1),
                               ("repeat", repeat, 0), ("skip_first", skip_first, 0)):
        if not isinstance(value, int) or value < least:
            raise ValueError(f"make_scheduler: {name} must be an int >= {least}, got {value!r}")
    period = closed + ready + record

    def schedule(step: int) -> ProfilerState:
        if step < skip_first:
            return ProfilerState.CLOSED
        step -= skip_first
        if repeat > 0 and step // period >= repeat:
            return ProfilerState.CLOSED
        position = step % period
        if position < closed:
            return ProfilerState.CLOSED
        if position < closed + ready:
            return ProfilerState.READY
        return ProfilerState.RECORD if position < period - 1 else ProfilerState.RECORD_AND_RETURN

    return schedule


def _always_record(step: int) -> ProfilerState:
    return ProfilerState.RECORD


def _trace_path(dir_name: str, worker_name: str | None, suffix: str) -> str:
    worker = worker_name or f"host_{socket.gethostname()}pid_{os.getpid()}"
    stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S_%f")
    return os.path.join(dir_name, f"{worker}_time_{stamp}{suffix}")


def _make_dir(dir_name: str) -> None:
    try:
        os.makedirs(dir_name, exist_ok=True)
    except OSError as exc:
        raise RuntimeError(f"the profiler cannot create the folder {dir_name!r} for its traces: {exc}") from exc


def export_chrome_tracing(dir_name: str, worker_name: str | None = None) -> Callable:
    """An ``on_trace_ready`` that writes each record window as a Chrome trace
    (``<worker>_time_<stamp>.paddle_trace.json``), which chrome://tracing and Perfetto open.

    >>> import oar.profiler as profiler
    >>> handler = profiler.export_chrome_tracing("./profiler_log")  # doctest: +SKIP
    """
    _make_dir(dir_name)

    def handle(prof: Profiler) -> None:
        prof.export(_trace_path(dir_name, worker_name, ".paddle_trace.json"), "json")

    return handle


def export_protobuf(dir_name: str, worker_name: str | None = None) -> Callable:
    """An ``on_trace_ready`` that keeps each record window whole, to be read back with
    ``load_profiler_result`` and summarised later (``<worker>_time_<stamp>.oar_trace.json.gz``).

    Paddle writes a protobuf file here; oar writes gzip-compressed JSON with the same content
    (``{"format": "oar-trace/1", "events": [[name, kind, start_ns, end_ns, thread, args], ...],
    "memory": [[time_ns, bytes], ...], "steps": ...}``): no pickle, no schema compiler, readable
    by any tool.
    """
    _make_dir(dir_name)

    def handle(prof: Profiler) -> None:
        prof.export(_trace_path(dir_name, worker_name, ".oar_trace.json.gz"), "pb")

    return handle


class _OpRecorder(Mode):
    """Times every op dispatched while a profiler records (pushed only then)."""

    observer = True  # to_static runs its programs, whose executor reports each node with its index

    def __init__(self, profiler: Profiler):
        self.profiler = profiler

    def apply(self, op, inputs: tuple, attrs: dict):
        prof = self.profiler
        memory = prof.profile_memory
        before = _profiling.TENSOR_MEMORY.total if memory else 0
        start = _profiling.now_ns()
        out = self.apply_below(op, inputs, attrs)
        end = _profiling.now_ns()
        args = None
        if prof.record_shapes:
            args = {"input_shapes": [list(t._data.shape) for t in inputs],
                    "input_dtypes": [str(t.dtype) for t in inputs]}
        if memory:
            args = args or {}
            args["allocated_bytes"] = _profiling.TENSOR_MEMORY.total - before
            prof._memory.append((end, _profiling.TENSOR_MEMORY.allocated))
        prof._events.append(Event(op.name, "Operator", start, end, threading.get_ident(), args))
        return out


class Profiler:
    """Records what a program does between ``start()`` and ``stop()``, step by step.

    ``scheduler``: a ``(start, end)`` pair records steps ``start`` to ``end - 1``; a function
    from step to ``ProfilerState`` (``make_scheduler``); None records every step.
    ``on_trace_ready(profiler)`` runs at the end of each record window (by default
    ``export_chrome_tracing("./profiler_log/")``; None to keep the results in memory only).
    ``timer_only=True`` times steps only (``step_info``), records no op.

    >>> import oar, oar.profiler as profiler
    >>> prof = profiler.Profiler(on_trace_ready=None)
    >>> prof.start()
    >>> for _ in range(3):
    ...     _ = oar.ones([8]).exp()
    ...     prof.step(num_samples=8)
    >>> prof.stop()
    >>> prof.step_info().startswith("reader_cost")
    True
    """

    def __init__(self, *, targets: Iterable[ProfilerTarget] | None = None,
                 scheduler: Callable[[int], ProfilerState] | tuple | list | None = None,
                 on_trace_ready: Callable[[Profiler], Any] | None | str = "default",
                 record_shapes: bool = False, profile_memory: bool = False, timer_only: bool = False,
                 emit_nvtx: bool = False, custom_device_types: list | None = None, with_flops: bool = False):
        available = {ProfilerTarget.CPU} | ({ProfilerTarget.GPU} if "gpu" in BACKENDS else set())
        self.targets = {ProfilerTarget.CPU} if targets is None else set()
        for target in targets or ():
            if not isinstance(target, ProfilerTarget):
                raise TypeError(f"Profiler: targets holds ProfilerTarget values, got {target!r}")
            if target in available:
                self.targets.add(target)
            else:
                warnings.warn(f"Profiler: profiling {target.name} is not supported here (no such device is "
                              f"installed); profiling the CPU", stacklevel=2)
                self.targets.add(ProfilerTarget.CPU)
        if callable(scheduler):
            self.scheduler = scheduler
        elif isinstance(scheduler, (tuple, list)):
            if len(scheduler) != 2 or not all(isinstance(v, int) for v in scheduler) or scheduler[1] <= scheduler[0]:
                raise ValueError(f"Profiler: scheduler=(start, end) needs two ints with end > start, got {scheduler!r}")
            begin, end = max(scheduler[0], 0), scheduler[1]
            self.scheduler = (make_scheduler(closed=max(begin - 1, 0), ready=1, record=end - begin, repeat=1)
                              if begin >= 1 else make_scheduler(closed=0, ready=0, record=end - begin, repeat=1))
        elif scheduler is None:
            self.scheduler = _always_record
        else:
            raise TypeError(f"Profiler: scheduler is a (start, end) pair, a function or None, got {scheduler!r}")
        self.on_trace_ready = export_chrome_tracing("./profiler_log/") if on_trace_ready == "default" else on_trace_ready
        self.record_shapes = bool(record_shapes)
        self.profile_memory = bool(profile_memory)
        self.timer_only = bool(timer_only)
        self.with_flops = bool(with_flops)
        self.step_num = 0
        self.current_state = ProfilerState.CLOSED
        self._events: list[Event] = []
        self._memory: list[tuple[int, int]] = []
        self._recording = False
        self._mode: _OpRecorder | None = None
        self._started_memory = False  # the memory count is this profiler's, stopped with its recording
        self._step_start: int | None = None
        self._step_samples: int | None = None
        self._steps: list[tuple[int, int, int, int | None]] = []  # (step, start, end, samples)
        self._reported = 0  # steps already in a step_info

    # -- the schedule ---------------------------------------------------------------------------
    def __enter__(self) -> Profiler:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        """Begin step 0 in the state the scheduler gives it."""
        self.current_state = self.scheduler(self.step_num)
        self._step_start = _profiling.now_ns()
        self._enter_state(self.current_state)

    def step(self, num_samples: int | None = None) -> None:
        """End the current step (``num_samples``: its batch size, for ``step_info``'s ips) and
        begin the next."""
        end = _profiling.now_ns()
        if self._step_start is not None:
            self._steps.append((self.step_num, self._step_start, end, num_samples))
            if self._recording:
                self._events.append(Event(f"ProfileStep#{self.step_num}", "ProfileStep", self._step_start, end,
                                          threading.get_ident(), None))
        previous = self.current_state
        self.step_num += 1
        self.current_state = self.scheduler(self.step_num)
        if previous is ProfilerState.RECORD_AND_RETURN or (
                previous is ProfilerState.RECORD and self.current_state in (ProfilerState.CLOSED, ProfilerState.READY)):
            self._leave_recording()
            self._trace_ready()
        self._enter_state(self.current_state)
        self._step_start = _profiling.now_ns()

    def stop(self) -> None:
        """End profiling; a record window still open is handed to ``on_trace_ready``."""
        if self._step_start is not None and self._recording:
            end = _profiling.now_ns()
            self._events.append(Event(f"ProfileStep#{self.step_num}", "ProfileStep", self._step_start, end,
                                      threading.get_ident(), None))
        was_recording = self._recording
        self._leave_recording()
        self._step_start = None
        self.current_state = ProfilerState.CLOSED
        if was_recording:
            self._trace_ready()

    def _enter_state(self, state: ProfilerState) -> None:
        if state not in (ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN) or self._recording:
            return
        self._events, self._memory = [], []  # a new record window; the last was handed on
        self._recording = True
        RECORDERS.append(self)
        if not self.timer_only:
            if self.profile_memory and not _profiling.TENSOR_MEMORY.on:  # counting costs: only while recording
                _profiling.TENSOR_MEMORY.start()
                self._started_memory = True
            if self.profile_memory:  # the level the window starts from: the first span's peak increase is against it
                self._memory.append((_profiling.now_ns(), _profiling.TENSOR_MEMORY.allocated))
            self._mode = _OpRecorder(self)
            self._mode.__enter__()

    def _leave_recording(self) -> None:
        if not self._recording:
            return
        self._recording = False
        RECORDERS.remove(self)
        if self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None
        if self._started_memory:
            self._started_memory = False
            if not _profiling.TENSOR_MEMORY.kept:  # oar.device's statistics asked meanwhile: they keep counting
                _profiling.TENSOR_MEMORY.stop()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    # -- what the recording points call ---------------------------------------------------------
    def span(self, name: str, kind: str, start: int, end: int, args: dict | None = None) -> None:
        """Record a span (the autograd engine, ``RecordEvent`` and packages call this)."""
        if self.timer_only and kind != "Dataloader":  # step_info's reader cost is all it keeps
            return
        if self.profile_memory and kind in ("Forward", "Operator"):
            self._memory.append((end, _profiling.TENSOR_MEMORY.allocated))
        self._events.append(Event(name, kind, start, end, threading.get_ident(), args))

    def program_node(self, program, index: int, node, start: int, end: int) -> None:
        """Record one node of a program's inference run (the executor calls this)."""
        if self.timer_only:
            return
        args = {"node": index}
        if node.where:
            args["where"] = node.where
        if self.profile_memory:
            self._memory.append((end, _profiling.TENSOR_MEMORY.allocated))
        self._events.append(Event(node.op, "Operator", start, end, threading.get_ident(), args))

    # -- results --------------------------------------------------------------------------------
    def events(self) -> list[Event]:
        """The spans of the last record window, in the order they ended."""
        return list(self._events)

    def step_info(self, unit: str | None = None) -> str:
        """The average reader cost (DataLoader waits), batch cost and throughput over the steps
        since the last call, as Paddle prints them."""
        steps = self._steps[self._reported:]
        self._reported = len(self._steps)
        waits = [e for e in self._events if e.kind == "Dataloader"]
        return step_report(steps, waits, unit)

    def summary(self, sorted_by: SortedKeys = SortedKeys.CPUTotal, op_detail: bool = True, thread_sep: bool = False,
                time_unit: str = "ms", views: SummaryView | list | None = None) -> None:
        """Print the overview, model, operator, layer, memory and user-event tables of the last
        record window (as Paddle's ``summary``; returns None)."""
        print(self.summary_text(sorted_by, op_detail, thread_sep, time_unit, views))

    def summary_text(self, sorted_by: SortedKeys = SortedKeys.CPUTotal, op_detail: bool = True,
                     thread_sep: bool = False, time_unit: str = "ms", views=None) -> str:
        """What ``summary`` prints, as a string."""
        if time_unit not in ("s", "ms", "us", "ns"):
            raise ValueError(f"Profiler.summary: time_unit is one of 's', 'ms', 'us', 'ns', got {time_unit!r}")
        if not isinstance(sorted_by, SortedKeys):
            raise TypeError(f"Profiler.summary: sorted_by is a SortedKeys value, got {sorted_by!r}")
        if views is not None:
            views = {v.name for v in (views if isinstance(views, (list, tuple)) else [views])}
        return build_summary(self._events, self._memory, sorted_by=sorted_by, op_detail=op_detail,
                             thread_sep=thread_sep, time_unit=time_unit, views=views)

    def export(self, path: str = "", format: str = "json") -> None:
        """Write the last record window to ``path``: ``"json"``, a Chrome trace; ``"pb"``, the
        whole record for ``load_profiler_result`` (see ``export_protobuf``). Atomic."""
        if format == "json":
            data = json.dumps(chrome_trace(self._events, self._memory)).encode()
        elif format == "pb":
            data = gzip.compress(json.dumps({"format": TRACE_FORMAT, "events": [list(e) for e in self._events],
                                             "memory": self._memory}).encode())
        else:
            raise ValueError(f"Profiler.export: format is 'json' or 'pb', got {format!r}")
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        temporary = f"{path}.tmp{os.getpid()}"
        with open(temporary, "wb") as file:
            file.write(data)
        os.replace(temporary, path)


class ProfilerResult:
    """A record read back by ``load_profiler_result``: its ``events()`` and ``summary()``."""

    def __init__(self, events: list[Event], memory: list):
        self._events, self._memory = events, memory

    events = Profiler.events
    summary = Profiler.summary
    summary_text = Profiler.summary_text


def load_profiler_result(filename: str) -> ProfilerResult:
    """Read a record written by ``export_protobuf`` (or ``Profiler.export(path, "pb")``).

    >>> import oar.profiler as profiler
    >>> result = profiler.load_profiler_result("trace.oar_trace.json.gz")  # doctest: +SKIP
    >>> result.summary()  # doctest: +SKIP
    """
    with open(filename, "rb") as file:
        raw = file.read()
    try:
        data = json.loads(gzip.decompress(raw))
    except (OSError, ValueError) as exc:
        raise ValueError(f"load_profiler_result: {filename!r} is not a record written by export_protobuf "
                         f"(gzip-compressed JSON): {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        raise ValueError(f"load_profiler_result: {filename!r} holds no {TRACE_FORMAT} record")
    return ProfilerResult([Event(*e) for e in data["events"]], [tuple(m) for m in data["memory"]])


def chrome_trace(events: list[Event], memory: list) -> dict:
    """The Chrome trace (``traceEvents``) of recorded spans: complete events in microseconds,
    each named with its duration as Paddle names them (``matmul[0.012 ms]``), and a
    ``Tensor memory`` counter where memory was profiled."""
    origin = min((e.start for e in events), default=0)
    pid = os.getpid()
    trace = []
    for e in events:
        entry = {"name": f"{e.name}[{(e.end - e.start) / 1e6:.3f} ms]", "cat": e.kind, "ph": "X", "pid": pid,
                 "tid": e.thread, "ts": (e.start - origin) / 1e3, "dur": (e.end - e.start) / 1e3}
        if e.args:
            entry["args"] = e.args
        trace.append(entry)
    for t, level in memory:
        trace.append({"name": "Tensor memory", "ph": "C", "pid": pid, "ts": (t - origin) / 1e3,
                      "args": {"allocated_bytes": level}})
    return {"traceEvents": trace, "displayTimeUnit": "ms",
            "otherData": {"framework": "oar", "clock": "perf_counter_ns"}}


class RecordEvent:
    """A span of the user's (or a package's) own, as context manager, decorator or
    ``begin()``/``end()``; it costs a test when no profiler records.

    >>> import oar.profiler as profiler
    >>> with profiler.RecordEvent("preprocess"):
    ...     pass
    >>> @profiler.RecordEvent("postprocess")
    ... def post(x):
    ...     return x
    >>> post(1)
    1
    """

    def __init__(self, name: str, event_type: TracerEventType = TracerEventType.PythonUserDefined):
        self.name = name
        self.event_type = event_type
        self._start: int | None = None

    def begin(self) -> None:
        self._start = _profiling.now_ns() if RECORDERS else None

    def end(self) -> None:
        if self._start is not None and RECORDERS:
            end = _profiling.now_ns()
            for recorder in RECORDERS:
                recorder.span(self.name, self.event_type.name, self._start, end)
        self._start = None

    def __enter__(self) -> RecordEvent:
        self.begin()
        return self

    def __exit__(self, *exc) -> None:
        self.end()

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with RecordEvent(self.name, self.event_type):
                return fn(*args, **kwargs)

        return wrapper
