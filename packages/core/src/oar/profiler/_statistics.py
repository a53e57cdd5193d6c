"""The tables of ``Profiler.summary`` and the line of ``Profiler.step_info``, from recorded spans.

A span's time is counted once in each table: a table of one kind of span (operators, layers)
counts only the spans not inside another of that kind -- an op a gradient rule dispatched is part
of the rule's time (``op_detail`` lists it under the rule), a sublayer's forward part of its
parent's. The ratio column is against the recorded steps' total (or the window's span without
``Profiler.step`` calls).
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from enum import Enum

_UNIT_NS = {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}
MODEL_KINDS = ("Dataloader", "Forward", "Backward", "Optimization")
USER_KINDS = ("PythonUserDefined", "UserDefined")
_NOTHING = "The profiler recorded nothing (no step was in a RECORD state, or timer_only=True)."


class SortedKeys(Enum):
    """The column ``summary`` sorts its operator and layer tables by (Paddle's names; the GPU
    columns sort by CPU time where no GPU was profiled)."""

    CPUTotal = 0
    CPUAvg = 1
    CPUMax = 2
    CPUMin = 3
    GPUTotal = 4
    GPUAvg = 5
    GPUMax = 6
    GPUMin = 7


def _outermost(events, kinds) -> list[tuple[object, list]]:
    """The spans of ``kinds`` not inside another span of ``kinds`` on their thread, each with the
    spans of ``kinds`` directly inside it."""
    by_thread = defaultdict(list)
    for e in events:
        if e.kind in kinds:
            by_thread[e.thread].append(e)
    result = []
    for spans in by_thread.values():
        spans.sort(key=lambda e: (e.start, -e.end))
        stack: list[tuple[object, list]] = []
        for e in spans:
            while stack and stack[-1][0].end <= e.start:
                stack.pop()
            entry = (e, [])
            if stack:
                stack[-1][1].append(e)
            else:
                result.append(entry)
            stack.append(entry)
    return result


class _Stat:
    __slots__ = ("calls", "total", "max", "min", "allocated", "peak", "children")

    def __init__(self):
        self.calls, self.total, self.max, self.min = 0, 0, 0, None
        self.allocated, self.peak = None, None  # bytes: None where the spans did not count them
        self.children: dict[str, _Stat] | None = None

    def add(self, duration: int) -> None:
        self.calls += 1
        self.total += duration
        self.max = max(self.max, duration)
        self.min = duration if self.min is None else min(self.min, duration)

    def key(self, sorted_by) -> float:
        name = sorted_by.name.replace("GPU", "CPU")
        return {"CPUTotal": self.total, "CPUAvg": self.total / self.calls, "CPUMax": self.max,
                "CPUMin": self.min}[name]


def _table(title: str, header: list[str], rows: list[list[str]], note: str = "") -> str:
    widths = [max(len(header[i]), *(len(r[i]) for r in rows)) if rows else len(header[i]) for i in range(len(header))]
    rule = "  ".join("-" * w for w in widths)
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths)))
    width = len(rule)
    out = [f"{'-' * max((width - len(title) - 2) // 2, 3)} {title} {'-' * max((width - len(title) - 1) // 2, 3)}"]
    if note:
        out.append(note)
    out += [rule, line(header), rule, *(line(r) for r in rows), rule]
    return "\n".join(out)


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def build_summary(events, memory, *, sorted_by, op_detail: bool, thread_sep: bool, time_unit: str,
                  views: set | None) -> str:
    """The text of ``Profiler.summary``: overview, model, operator, layer, memory and user tables."""
    if not events:
        return _NOTHING
    scale = _UNIT_NS[time_unit]
    fmt = lambda ns: f"{ns / scale:.3f}"  # noqa: E731
    steps = [e for e in events if e.kind == "ProfileStep"]
    if steps:
        total = sum(e.end - e.start for e in steps)
    else:
        total = (max(e.end for e in events) - min(e.start for e in events)) if events else 0
    ratio = lambda ns: f"{100.0 * ns / total:.2f}" if total else "-"  # noqa: E731
    want = lambda view: views is None or view in views  # noqa: E731
    sections = []

    kinds_time = {}
    for kind in (*MODEL_KINDS, "Operator", *USER_KINDS):
        spans = _outermost(events, {kind})
        kinds_time[kind] = (len(spans), sum(e.end - e.start for e, _ in spans))
    if want("OverView"):
        rows = [["ProfileStep", str(len(steps)), fmt(total), ratio(total) if total else "-"]]
        rows += [[f"  {kind}", str(calls), fmt(ns), ratio(ns)] for kind, (calls, ns) in kinds_time.items() if calls]
        sections.append(_table("Overview Summary", ["Event Type", "Calls", "CPU Time", "Ratio (%)"], rows,
                               f"Time unit: {time_unit}"))

    if want("ModelView") and any(kinds_time[k][0] for k in MODEL_KINDS):
        rows, counted = [], 0
        for kind in MODEL_KINDS:
            spans = [e for e, _ in _outermost(events, {kind})]
            stat = _Stat()
            for e in spans:
                stat.add(e.end - e.start)
            counted += stat.total
            rows.append([kind, str(stat.calls), fmt(stat.total), fmt(stat.total / stat.calls) if stat.calls else "-",
                         fmt(stat.max) if stat.calls else "-", fmt(stat.min) if stat.calls else "-", ratio(stat.total)])
        rows.append(["Others", "-", fmt(max(total - counted, 0)), "-", "-", "-", ratio(max(total - counted, 0))])
        sections.append(_table("Model Summary", ["Name", "Calls", "CPU Total", "Avg", "Max", "Min", "Ratio (%)"], rows,
                               f"Time unit: {time_unit}"))

    levels = sorted(memory)
    times = [t for t, _ in levels]

    def level_before(t: int) -> int | None:
        i = bisect.bisect_right(times, t) - 1
        return levels[i][1] if i >= 0 else None  # before the first sample: not known

    def peak_within(start: int, end: int) -> int | None:
        lo, hi = bisect.bisect_left(times, start), bisect.bisect_right(times, end)
        return max((v for _, v in levels[lo:hi]), default=None)

    def grouped(kinds, detail: bool, source=events, nested: bool = False) -> dict[str, _Stat]:
        stats: dict[str, _Stat] = defaultdict(_Stat)
        spans = [(e, ()) for e in source if e.kind in kinds] if nested else _outermost(source, kinds)
        for e, inner in spans:
            stat = stats[e.name]
            stat.add(e.end - e.start)
            if e.args and "allocated_bytes" in e.args:
                stat.allocated = (stat.allocated or 0) + e.args["allocated_bytes"]
            if levels:
                top, before = peak_within(e.start, e.end), level_before(e.start - 1)
                if top is not None and before is not None:
                    rise = max(top - before, 0)
                    stat.peak = rise if stat.peak is None else max(stat.peak, rise)
            if detail:
                stat.children = stat.children if stat.children is not None else defaultdict(_Stat)
                for child in inner:
                    stat.children[child.name].add(child.end - child.start)
                if e.args and "input_shapes" in e.args:
                    shapes = "  shapes " + ", ".join(str(s) for s in e.args["input_shapes"])
                    stat.children[shapes].add(e.end - e.start)
        return stats

    def stat_rows(stats: dict[str, _Stat], with_memory: bool) -> list[list[str]]:
        rows = []
        for name, stat in sorted(stats.items(), key=lambda kv: -kv[1].key(sorted_by)):
            row = [name, str(stat.calls), fmt(stat.total), fmt(stat.total / stat.calls), fmt(stat.max), fmt(stat.min),
                   ratio(stat.total)]
            rows.append(row + (["-" if stat.allocated is None else _bytes(stat.allocated),
                                "-" if stat.peak is None else _bytes(stat.peak)]
                               if with_memory else []))
            for child, inner in sorted((stat.children or {}).items(), key=lambda kv: -kv[1].total):
                rows.append([f"  {child}", str(inner.calls), fmt(inner.total), fmt(inner.total / inner.calls),
                             fmt(inner.max), fmt(inner.min), ratio(inner.total)] + (["", ""] if with_memory else []))
        return rows

    header = ["Name", "Calls", "CPU Total", "Avg", "Max", "Min", "Ratio (%)"]
    memory_header = ["Allocated", "Peak increase"]
    with_memory = bool(levels)
    if want("OperatorView") and kinds_time["Operator"][0]:
        threads = sorted({e.thread for e in events if e.kind == "Operator"}) if thread_sep else [None]
        for thread in threads:
            chosen = events if thread is None else [e for e in events if e.thread == thread]
            stats = grouped({"Operator"}, op_detail, chosen)
            title = "Operator Summary" + ("" if thread is None else f" (thread {thread})")
            sections.append(_table(title, header + (memory_header if with_memory else []), stat_rows(stats, with_memory),
                                   f"Time unit: {time_unit}"))
    if want("KernelView") and any(e.kind == "Kernel" for e in events):  # inside operators: not in the overview
        stats = grouped({"Kernel"}, False, nested=True)
        sections.append(_table("Kernel Summary", header, stat_rows(stats, False),
                               f"Time unit: {time_unit}; the path each kernel took, as its plugin records it"))
    if want("LayerView") and kinds_time["Forward"][0]:
        stats = grouped({"Forward"}, False, nested=True)
        sections.append(_table("Layer Summary", header + (["Peak increase"] if with_memory else []),
                               [r[:7] + (r[8:] if with_memory else []) for r in stat_rows(stats, with_memory)],
                               f"Time unit: {time_unit}; each layer's time includes its sublayers'"))
    if want("MemoryView") and with_memory:
        peak = max(v for _, v in levels)
        first = levels[0][1]
        sections.append(_table("Memory Summary", ["Tensor memory (CPU)", "Bytes"],
                               [["When recording began", _bytes(first)], ["Peak while recording", _bytes(peak)],
                                ["At the end", _bytes(levels[-1][1])]]))
    if want("UDFView") and any(kinds_time[k][0] for k in USER_KINDS):
        stats = grouped(set(USER_KINDS), False)
        sections.append(_table("UserDefined Summary", header, stat_rows(stats, False), f"Time unit: {time_unit}"))
    if not sections:
        return _NOTHING
    return "\n\n".join(sections)


def step_report(steps, waits, unit: str | None) -> str:
    """Paddle's ``step_info`` line over ``steps`` ((step, start_ns, end_ns, samples) each)."""
    if not steps:
        return "reader_cost: 0.00000 s batch_cost: 0.00000 s ips: 0.000 steps/s"
    batch = sum(end - start for _, start, end, _ in steps) / len(steps) / 1e9
    first, last = steps[0][1], steps[-1][2]
    reader = sum(e.end - e.start for e in waits if first <= e.start < last) / len(steps) / 1e9
    samples = [n for *_, n in steps if n is not None]
    if samples and len(samples) == len(steps):
        ips, what = sum(samples) / len(steps) / batch if batch else 0.0, unit or "samples"
    else:
        ips, what = 1.0 / batch if batch else 0.0, unit or "steps"
    return f"reader_cost: {reader:.5f} s batch_cost: {batch:.5f} s ips: {ips:.3f} {what}/s"
