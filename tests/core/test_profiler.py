"""oar.profiler (Paddle's Profiler API) and oar.device's memory statistics, with oar-core alone.

What each test pins: which steps a schedule records, what RecordEvent, the autograd engine and
the executor record (names, kinds, arguments), what the Chrome trace and the export_protobuf
record hold, what summary() prints, step_info()'s line, and that the memory statistics move by
the exact bytes of a known allocation. Layers, optimizers and the DataLoader: tests/nn/test_profiler_nn.py.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import time

import numpy as np
import pytest

import oar
import oar.profiler as profiler
from oar._engine import profiling as _profiling
from oar._engine.dispatch import modes_above_eager
from oar.profiler import ProfilerState, SortedKeys, TracerEventType


@pytest.fixture(autouse=True)
def _no_count_left_on():
    """Each test starts and ends with no profiler recording and no memory count (they are
    process-wide, and other tests in this worker time the fast paths a count turns off)."""
    _profiling.TENSOR_MEMORY.stop()
    yield
    assert not profiler.RECORDERS, "a profiler was left recording"
    _profiling.TENSOR_MEMORY.stop()
    assert not modes_above_eager()


def _run_steps(prof: profiler.Profiler, n: int) -> None:
    x = oar.ones([4, 4])
    for _ in range(n):
        oar.matmul(x, x).sum()
        prof.step()


def _recorded_steps(events) -> list[int]:
    return sorted(int(e.name.split("#")[1]) for e in events if e.kind == "ProfileStep")


# -- scheduling ----------------------------------------------------------------------------------
def test_a_start_end_pair_records_the_steps_from_start_to_end_minus_one():
    with profiler.Profiler(scheduler=(2, 5), on_trace_ready=None) as prof:
        _run_steps(prof, 7)
    assert _recorded_steps(prof.events()) == [2, 3, 4]  # as Paddle 3.3.1: ProfileStep#2..#4
    ops = [e for e in prof.events() if e.kind == "Operator"]
    assert [e.name for e in ops] == ["matmul", "sum"] * 3


def test_a_pair_starting_at_zero_records_from_the_first_step():
    with profiler.Profiler(scheduler=(0, 2), on_trace_ready=None) as prof:
        _run_steps(prof, 4)
    assert _recorded_steps(prof.events()) == [0, 1]


def test_make_scheduler_states_and_windows():
    schedule = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2, skip_first=1)
    assert [schedule(step) for step in range(11)] == [
        ProfilerState.CLOSED,  # skip_first
        ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN,
        ProfilerState.CLOSED, ProfilerState.READY, ProfilerState.RECORD, ProfilerState.RECORD_AND_RETURN,
        ProfilerState.CLOSED, ProfilerState.CLOSED,  # repeat=2 cycles done
    ]
    windows = []
    with profiler.Profiler(scheduler=schedule, on_trace_ready=lambda p: windows.append(_recorded_steps(p.events()))) \
            as prof:
        _run_steps(prof, 12)
    assert windows == [[3, 4], [7, 8]]  # on_trace_ready once per window, each window's steps alone


def test_make_scheduler_repeat_zero_cycles_until_stopped():
    schedule = profiler.make_scheduler(closed=0, ready=1, record=1)
    assert [schedule(s).name for s in range(4)] == ["READY", "RECORD_AND_RETURN"] * 2


@pytest.mark.parametrize("kwargs", [dict(closed=-1, ready=0, record=1), dict(closed=0, ready=0, record=0),
                                    dict(closed=0, ready=0, record=1, repeat=1.5)])
def test_make_scheduler_refuses_bad_counts(kwargs):
    with pytest.raises(ValueError, match="make_scheduler"):
        profiler.make_scheduler(**kwargs)


def test_a_bad_scheduler_pair_is_refused():
    with pytest.raises(ValueError, match=r"end > start"):
        profiler.Profiler(scheduler=(3, 3), on_trace_ready=None)


def test_start_stop_and_an_open_window_handed_on_at_stop():
    ready = []
    prof = profiler.Profiler(on_trace_ready=ready.append)
    prof.start()
    _run_steps(prof, 2)
    oar.ones([2]).exp()  # a step still open at stop() is recorded too
    prof.stop()
    assert ready == [prof]
    assert _recorded_steps(prof.events()) == [0, 1, 2]
    assert prof.current_state is ProfilerState.CLOSED


def test_no_profiler_no_mode_and_no_recorder():
    prof = profiler.Profiler(scheduler=(1, 2), on_trace_ready=None)
    prof.start()
    assert not profiler.RECORDERS and not modes_above_eager()  # step 0 is READY: nothing records
    prof.step()
    assert profiler.RECORDERS == [prof]
    prof.step()
    assert not profiler.RECORDERS and not modes_above_eager()
    prof.stop()


def test_timer_only_records_no_op():
    with profiler.Profiler(on_trace_ready=None, timer_only=True) as prof:
        _run_steps(prof, 2)
    assert not [e for e in prof.events() if e.kind == "Operator"]
    assert "batch_cost" in prof.step_info()


# -- RecordEvent ---------------------------------------------------------------------------------
def test_record_event_as_context_manager_decorator_and_begin_end():
    @profiler.RecordEvent("decorated")
    def work(x):
        return x * 2

    with profiler.Profiler(on_trace_ready=None) as prof:
        with profiler.RecordEvent("block"):
            oar.ones([3]).exp()
        assert work(oar.ones([3])).shape == [3]
        span = profiler.RecordEvent("manual", TracerEventType.UserDefined)
        span.begin()
        span.end()
    spans = {e.name: e for e in prof.events() if e.kind in ("PythonUserDefined", "UserDefined")}
    assert set(spans) == {"block", "decorated", "manual"}
    assert spans["manual"].kind == "UserDefined"
    exp = next(e for e in prof.events() if e.name == "exp")
    assert spans["block"].start <= exp.start and exp.end <= spans["block"].end  # the op ran inside the span
    assert work.__name__ == "work"


def test_record_event_outside_a_profiler_records_nothing():
    with profiler.RecordEvent("nobody listens"):
        pass
    assert not profiler.RECORDERS


# -- what is recorded ----------------------------------------------------------------------------
def test_backward_nodes_and_the_backward_span():
    w = oar.to_tensor(np.ones((4, 4), np.float32), stop_gradient=False)
    with profiler.Profiler(on_trace_ready=None) as prof:
        oar.matmul(oar.ones([2, 4]), w).sum().backward()
    names = [e.name for e in prof.events()]
    assert {"matmul_grad", "sum_grad"} <= set(names)
    backward = next(e for e in prof.events() if e.kind == "Backward")
    grads = [e for e in prof.events() if e.name.endswith("_grad")]
    assert all(backward.start <= e.start and e.end <= backward.end for e in grads)
    assert all(e.kind == "Operator" for e in grads)


def test_record_shapes_adds_input_shapes_and_dtypes():
    x = oar.ones([2, 3])
    with profiler.Profiler(on_trace_ready=None, record_shapes=True) as prof:
        oar.matmul(x, oar.ones([3, 5]))
    matmul = next(e for e in prof.events() if e.name == "matmul")
    assert matmul.args["input_shapes"] == [[2, 3], [3, 5]]
    assert matmul.args["input_dtypes"] == ["oar.float32", "oar.float32"]
    text = prof.summary_text()
    assert "shapes [2, 3], [3, 5]" in text


def test_to_static_program_nodes_are_recorded_with_their_node_and_line():
    @oar.jit.to_static
    def f(a):
        b = oar.exp(a)  # the line each node names
        return oar.matmul(b, a)

    x = oar.ones([4, 4])
    with oar.no_grad():
        f(x)  # captured before the profiler
        with profiler.Profiler(on_trace_ready=None) as prof:
            out = f(x)
    np.testing.assert_allclose(out.numpy(), np.exp(np.ones((4, 4))) @ np.ones((4, 4)), rtol=1e-5)
    nodes = [e for e in prof.events() if e.kind == "Operator"]
    assert nodes and all(e.args and "node" in e.args for e in nodes)  # run by the executor, not replayed op by op
    assert [e.args["node"] for e in nodes] == list(range(len(nodes)))
    assert "matmul" in {e.name for e in nodes}
    assert any("test_profiler.py" in e.args.get("where", "") for e in nodes)


def test_to_static_training_runs_its_programs_under_the_profiler():
    @oar.jit.to_static
    def f(a):
        return (oar.exp(a) * a).sum()

    w = oar.to_tensor(np.ones((3, 3), np.float32), stop_gradient=False)
    f(w).backward()
    expected = w.grad.numpy().copy()
    w.clear_grad()
    with profiler.Profiler(on_trace_ready=None) as prof:
        f(w).backward()
    np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-6)
    names = [e.name for e in prof.events()]
    assert "run_program_grad" in names  # the derived backward program ran, as without a profiler
    assert any(e.args and "node" in e.args for e in prof.events() if e.kind == "Operator")


# -- exports -------------------------------------------------------------------------------------
def test_chrome_trace_content(tmp_path):
    with profiler.Profiler(on_trace_ready=profiler.export_chrome_tracing(str(tmp_path), "worker0")) as prof:
        with profiler.RecordEvent("mine"):
            oar.ones([8]).exp()
        prof.step()
    files = list(tmp_path.glob("worker0_time_*.paddle_trace.json"))
    assert len(files) == 1
    trace = json.loads(files[0].read_text())
    events = trace["traceEvents"]
    assert all(e["ph"] == "X" and e["ts"] >= 0 and e["dur"] >= 0 for e in events)
    names = {re.sub(r"\[[0-9.]+ ms\]$", "", e["name"]): e for e in events}  # Paddle's "name[1.234 ms]"
    assert {"exp", "mine", "ProfileStep#0"} <= set(names)
    assert names["mine"]["cat"] == "PythonUserDefined" and names["exp"]["cat"] == "Operator"
    assert names["exp"]["ts"] >= names["mine"]["ts"]
    assert names["exp"]["ts"] + names["exp"]["dur"] <= names["mine"]["ts"] + names["mine"]["dur"] + 1e-3


def test_chrome_trace_has_a_memory_counter_when_memory_is_profiled(tmp_path):
    path = tmp_path / "trace.json"
    with profiler.Profiler(on_trace_ready=None, profile_memory=True) as prof:
        oar.ones([256]).exp()
    prof.export(str(path), "json")
    counters = [e for e in json.loads(path.read_text())["traceEvents"] if e["ph"] == "C"]
    assert counters and all("allocated_bytes" in e["args"] for e in counters)


def test_export_protobuf_round_trips_through_load_profiler_result(tmp_path):
    with profiler.Profiler(on_trace_ready=profiler.export_protobuf(str(tmp_path))) as prof:
        oar.matmul(oar.ones([4, 4]), oar.ones([4, 4]))
        prof.step()
    (path,) = tmp_path.glob("*.oar_trace.json.gz")
    raw = json.loads(gzip.decompress(path.read_bytes()))  # a documented format, not a pickle
    assert raw["format"] == "oar-trace/1"
    result = profiler.load_profiler_result(str(path))
    assert result.events() == prof.events()
    assert result.summary_text() == prof.summary_text()


def test_load_profiler_result_refuses_another_file(tmp_path):
    path = tmp_path / "not_a_trace.gz"
    path.write_bytes(gzip.compress(b'{"format": "something else"}'))
    with pytest.raises(ValueError, match="oar-trace/1"):
        profiler.load_profiler_result(str(path))
    path.write_bytes(b"plain bytes")
    with pytest.raises(ValueError, match="export_protobuf"):
        profiler.load_profiler_result(str(path))


def test_export_refuses_an_unknown_format(tmp_path):
    prof = profiler.Profiler(on_trace_ready=None)
    with pytest.raises(ValueError, match="'json' or 'pb'"):
        prof.export(str(tmp_path / "x"), "xml")


# -- summary -------------------------------------------------------------------------------------
def _table(text: str, title: str) -> list[list[str]]:
    """The rows of a summary table, cut at the columns of its rule line (the first cell keeps the
    indent of a nested row: ``"  broadcast_to"``)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line)
    rules = [i for i in range(start + 1, len(lines)) if set(lines[i]) <= {"-", " "} and lines[i].strip()][:3]
    spans = [m.span() for m in re.finditer(r"-+", lines[rules[0]])]
    return [[line[a:b].rstrip() if k == 0 else line[a:b].strip() for k, (a, b) in enumerate(spans)]
            for line in lines[rules[1] + 1:rules[2]]]


def test_summary_tables_count_the_ops_run(capsys):
    x = oar.ones([16, 16])
    with profiler.Profiler(on_trace_ready=None) as prof:
        for _ in range(3):
            with profiler.RecordEvent("my_block"):
                oar.matmul(x, x).exp()
            prof.step()
    assert prof.summary() is None  # prints, as Paddle's
    text = capsys.readouterr().out
    assert text.strip() == prof.summary_text().strip()
    overview = {row[0].strip(): row for row in _table(text, "Overview Summary")}
    # 3 steps, and the one stop() ended (as Paddle, which ends the open ProfileStep span at stop)
    assert overview["ProfileStep"][1] == "4" and overview["Operator"][1] == "6"
    ops = {row[0]: row for row in _table(text, "Operator Summary")}
    assert ops["matmul"][1] == "3" and ops["exp"][1] == "3"
    user = {row[0]: row for row in _table(text, "UserDefined Summary")}
    assert user["my_block"][1] == "3"


def test_summary_sorted_by_and_time_unit():
    x = oar.ones([64, 64])
    with profiler.Profiler(on_trace_ready=None) as prof:
        oar.matmul(oar.matmul(x, x), x)
        oar.ones([2]).exp()
    for key, column in ((SortedKeys.CPUTotal, 2), (SortedKeys.CPUMax, 4), (SortedKeys.CPUMin, 5)):
        rows = _table(prof.summary_text(sorted_by=key, time_unit="us"), "Operator Summary")
        values = [float(r[column]) for r in rows if not r[0].startswith(" ")]
        assert values == sorted(values, reverse=True)
    ms = {r[0]: float(r[2]) for r in _table(prof.summary_text(time_unit="ms"), "Operator Summary")}
    ns = {r[0]: float(r[2]) for r in _table(prof.summary_text(time_unit="ns"), "Operator Summary")}
    assert ns["matmul"] == pytest.approx(ms["matmul"] * 1e6, rel=1e-2, abs=1.0)
    assert "Time unit: us" in prof.summary_text(time_unit="us")
    with pytest.raises(ValueError, match="time_unit"):
        prof.summary_text(time_unit="h")
    with pytest.raises(TypeError, match="SortedKeys"):
        prof.summary_text(sorted_by="total")


def test_summary_views_and_op_detail():
    w = oar.to_tensor(np.ones((4, 4), np.float32), stop_gradient=False)
    with profiler.Profiler(on_trace_ready=None) as prof:
        oar.matmul(oar.ones([2, 4]), w).sum().backward()
    only_ops = prof.summary_text(views=profiler.SummaryView.OperatorView)
    assert "Operator Summary" in only_ops and "Overview Summary" not in only_ops
    detailed = [r[0] for r in _table(prof.summary_text(), "Operator Summary")]
    assert "sum_grad" in detailed and any(name.startswith("  ") for name in detailed)  # ops inside a rule
    flat = [r[0] for r in _table(prof.summary_text(op_detail=False), "Operator Summary")]
    assert not any(name.startswith("  ") for name in flat)


def test_summary_thread_sep_gives_one_table_per_thread():
    def work():
        oar.ones([4]).exp()

    with profiler.Profiler(on_trace_ready=None) as prof:
        work()
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert prof.summary_text(thread_sep=True).count("Operator Summary (thread") == 2


def test_summary_of_nothing_recorded_says_so():
    with profiler.Profiler(scheduler=(5, 6), on_trace_ready=None) as prof:
        _run_steps(prof, 2)
    assert "recorded nothing" in prof.summary_text()


def test_profile_memory_columns_and_the_memory_table():
    x = oar.ones([256, 256])  # float32: an output of the same shape is 256 KiB
    with profiler.Profiler(on_trace_ready=None, profile_memory=True) as prof:
        y = x.exp()
        z = (y + 1).sum()
    exp = next(e for e in prof.events() if e.name == "exp")
    assert exp.args["allocated_bytes"] == 256 * 256 * 4
    add = next(e for e in prof.events() if e.name == "add")
    assert add.args["allocated_bytes"] == 256 * 256 * 4
    rows = {r[0]: r for r in _table(prof.summary_text(), "Operator Summary")}
    assert rows["exp"][7] == "256.00 KiB"  # the Allocated column
    assert "Memory Summary" in prof.summary_text()
    assert not _profiling.TENSOR_MEMORY.on  # the profiler's count ends with its recording
    del y, z


def test_step_info_reports_batch_cost_and_ips():
    prof = profiler.Profiler(on_trace_ready=None, timer_only=True)
    prof.start()
    for _ in range(4):
        time.sleep(0.01)  # a step long enough for the line's five decimals
        prof.step(num_samples=32)
    line = prof.step_info(unit="images")
    prof.stop()
    match = re.fullmatch(r"reader_cost: ([0-9.]+) s batch_cost: ([0-9.]+) s ips: ([0-9.]+) images/s", line)
    assert match, line
    reader, batch, ips = map(float, match.groups())
    assert reader == 0.0 and batch > 0 and ips == pytest.approx(32 / batch, rel=0.05)
    assert prof.step_info().startswith("reader_cost: 0.00000 s batch_cost: 0.00000 s")  # no step since the last


def test_targets_other_than_the_cpu_warn_without_a_gpu_backend():
    if oar.device.is_compiled_with_cuda():
        pytest.skip("a GPU backend is installed")
    with pytest.warns(UserWarning, match="not supported"):
        prof = profiler.Profiler(targets=[profiler.ProfilerTarget.GPU], on_trace_ready=None)
    assert prof.targets == {profiler.ProfilerTarget.CPU}


# -- memory statistics ---------------------------------------------------------------------------
MIB = 1 << 20


def test_memory_allocated_moves_by_the_bytes_of_a_tensor():
    before = oar.device.memory_allocated()
    x = oar.zeros([1024, 256])  # float32: 1 MiB
    assert oar.device.memory_allocated() - before == MIB
    y = x + 1  # an op's output
    assert oar.device.memory_allocated() - before == 2 * MIB
    v = y.reshape([256, 1024])  # a view holds no memory of its own
    assert oar.device.memory_allocated() - before == 2 * MIB
    t = oar.to_tensor(np.ones((512, 512), np.float64))  # 2 MiB made outside an op
    assert oar.device.memory_allocated() - before == 4 * MIB
    del x, t
    assert oar.device.memory_allocated() - before == MIB
    del y
    assert oar.device.memory_allocated() - before == MIB  # the view keeps its base alive
    del v
    assert oar.device.memory_allocated() == before


def test_max_memory_allocated_and_its_reset():
    oar.device.reset_max_memory_allocated()
    base = oar.device.memory_allocated()
    assert oar.device.max_memory_allocated() == base
    x = oar.zeros([2048, 256])  # 2 MiB
    del x
    assert oar.device.max_memory_allocated() - base == 2 * MIB
    assert oar.device.memory_allocated() == base
    oar.device.reset_max_memory_allocated()
    assert oar.device.max_memory_allocated() == base
    y = oar.zeros([1024, 256])
    assert oar.device.max_memory_allocated() - base == MIB
    del y


def test_tensors_alive_before_the_first_call_are_counted():
    x = oar.zeros([1024, 256])  # made while nothing counts
    assert oar.device.memory_allocated() >= MIB
    before = oar.device.memory_allocated()
    del x
    assert before - oar.device.memory_allocated() == MIB


def test_memory_reserved_holds_at_least_what_is_allocated():
    x = oar.zeros([1024, 1024])
    assert oar.device.memory_reserved() >= oar.device.memory_allocated()
    assert oar.device.max_memory_reserved() >= oar.device.memory_reserved()
    oar.device.reset_peak_memory_stats()
    assert oar.device.max_memory_allocated() == oar.device.memory_allocated()
    del x


def test_memory_statistics_of_a_missing_gpu_say_what_to_install():
    if oar.device.is_compiled_with_cuda():
        pytest.skip("a GPU backend is installed")
    with pytest.raises(ValueError, match="oar-triton"):
        oar.device.memory_allocated("gpu:0")
    with pytest.raises(RuntimeError, match="oar-triton"):
        oar.device.cuda.memory_allocated()
    assert oar.device.cuda.device_count() == 0 and oar.device.device_count() == 0
    assert oar.device.get_available_device() == ["cpu"]


def test_a_profiler_leaves_a_count_the_device_statistics_started():
    oar.device.memory_allocated()
    with profiler.Profiler(on_trace_ready=None, profile_memory=True):
        oar.ones([4]).exp()
    assert _profiling.TENSOR_MEMORY.on
    before = oar.device.memory_allocated()
    x = oar.zeros([1024, 256])
    assert oar.device.memory_allocated() - before == MIB
    del x


def test_the_docstring_examples_run():
    import doctest

    import oar.device
    import oar.utils.install_check

    for module in (profiler, oar.device, oar.utils.install_check, _profiling):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
