"""``oar.device``'s Paddle names beyond memory: device selection, streams and events on a
synchronous device, random state, GPU queries without a GPU, and the dtype tensor classes."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DeviceError

WITHOUT_GPU_PLUGIN = pytest.mark.skipif("gpu" in oar.plugins.registries().backends,
                                        reason="checks what a user without the oar-triton plugin is told")

D = oar.device


def test_dtype_tensor_classes_are_the_frameworks():
    assert D.FloatTensor is oar.framework.FloatTensor and D.LongTensor is oar.framework.LongTensor
    assert isinstance(oar.ones([2]), D.FloatTensor) and not isinstance(oar.ones([2]), D.DoubleTensor)
    assert D.LongTensor([1, 2]).dtype == oar.int64
    assert D.BoolTensor([True]).dtype == oar.bool


def test_device_context_restores_the_previous_device():
    assert D.get_device() == "cpu"
    with D.device("cpu") as selected:
        assert D.get_device() == "cpu" and selected.device == "cpu"
    with D.device_guard(oar.CPUPlace()):
        assert D.get_device() == "cpu"
    with pytest.raises(ArgumentError, match="string or a Place"):
        D.device_guard(0)
    assert D.get_device() == "cpu"


@WITHOUT_GPU_PLUGIN
def test_a_gpu_device_context_without_the_plugin_says_what_to_install():
    with pytest.raises(DeviceError, match="oar-triton"):
        with D.device("gpu:0"):
            pass
    assert D.get_device() == "cpu"


def test_streams_are_synchronous_and_selectable():
    default = D.current_stream()
    assert default is D.current_stream("cpu") and default.query()
    s = D.Stream(priority=1)
    assert s.device == "cpu" and s.priority == 1
    with D.stream_guard(s):
        assert D.current_stream() is s
        s.wait_stream(default)
        event = s.record_event()
        s.wait_event(event)
        assert event.query()
    assert D.current_stream() is default
    assert D.StreamContext is D.stream_guard
    with D.stream_guard(None):
        assert D.current_stream() is default
    assert D.set_stream(s) is default and D.set_stream(default) is s
    s.synchronize()
    with pytest.raises(ArgumentError, match="priority"):
        D.Stream(priority=7)
    with pytest.raises(ArgumentError, match="Stream"):
        D.set_stream(None)


def test_events_time_the_work_between_their_records():
    start, end = D.Event(enable_timing=True), D.Event(enable_timing=True)
    start.record()
    oar.ones([32, 32]).matmul(oar.ones([32, 32]))
    end.record(D.current_stream())
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    with pytest.raises(ArgumentError, match="enable_timing"):
        D.Event().elapsed_time(end)
    with pytest.raises(ArgumentError, match="not been recorded"):
        D.Event(enable_timing=True).elapsed_time(end)


def test_random_state_round_trips_and_manual_seed_seeds():
    assert D.manual_seed(11) is None
    first = oar.rand([3]).numpy()
    D.manual_seed(11)
    np.testing.assert_array_equal(oar.rand([3]).numpy(), first)
    state = D.get_rng_state()
    a = oar.randn([4]).numpy()
    D.set_rng_state(state)
    np.testing.assert_array_equal(oar.randn([4]).numpy(), a)


def test_device_queries_on_the_cpu_say_it_has_none():
    with pytest.raises(ArgumentError, match="CPU has no device properties"):
        D.get_device_name()
    with pytest.raises(ArgumentError, match="external"):
        D.get_stream_from_external(1234)


@WITHOUT_GPU_PLUGIN
def test_gpu_queries_without_a_gpu_say_what_is_missing():
    for query in (D.get_device_name, D.get_device_capability, D.get_device_properties):
        with pytest.raises(RuntimeError, match="oar-triton"):
            query("gpu:0")
    for fn in (D.cuda.current_stream, D.cuda.memory_summary, D.cuda.vmm_compact):
        with pytest.raises(RuntimeError, match="oar-triton"):
            fn()
    with pytest.raises(RuntimeError, match="oar-triton"):
        D.cuda.stream_guard(D.Stream("gpu:0"))
    assert D.cuda.Stream is D.Stream and D.cuda.Event is D.Event


def test_cpu_answers_as_paddles_cpu_build():
    # Paddle 3.3.1's CPU build: is_bf16_supported() True, get_cudnn_version() None, not capturing.
    assert D.is_bf16_supported() and D.is_bf16_supported(including_emulation=False)
    assert D.get_cudnn_version() is None
    assert D.is_current_stream_capturing() is False
    assert D.ipc_collect() is None
