"""``oar.amp.debugging`` -- operator statistics by dtype, ``check_numerics``, the tensor checker that
names the first op producing a NaN or an Inf -- and the float16/bfloat16 support queries."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.amp import debugging
from oar.amp.debugging import DebugMode, NumericsError, TensorCheckerConfig
from oar.errors import ArgumentError, OarError


def test_operator_stats_count_each_op_by_the_dtype_it_ran_in(capsys):
    model = nn.Linear(4, 4, bias_attr=False)
    x = oar.rand([2, 4])
    with debugging.collect_operator_stats() as stats:
        with oar.amp.auto_cast(dtype="bfloat16"):
            F.softmax(model(x))
            model(x)
        model(x)
    assert stats["matmul"] == {"float16": 0, "bfloat16": 2, "float32": 1, "other": 0}  # Linear without a bias
    assert stats["softmax"] == {"float16": 0, "bfloat16": 0, "float32": 1, "other": 0}
    assert stats["cast"]["float32"] == 4 and stats["cast"]["bfloat16"] == 1  # x and weight down, twice; one up
    table = capsys.readouterr().out
    assert "op list" in table and "op count: 3" in table
    assert [line for line in table.splitlines() if line.strip().startswith("matmul")][0].split("|")[1:3] == \
        ["  0                ", "  2                "]


def test_enable_and_disable_operator_stats_collection(capsys):
    debugging.enable_operator_stats_collection()
    oar.exp(oar.ones([2], dtype="float16"))
    debugging.disable_operator_stats_collection()
    assert "exp" in capsys.readouterr().out
    oar.exp(oar.ones([2]))  # not counted any more
    debugging.disable_operator_stats_collection()  # a second disable does nothing
    assert capsys.readouterr().out == ""


def test_check_numerics_counts_and_raises_in_the_default_mode():
    x = oar.to_tensor([1.0, 0.0, -2.0, 0.0], dtype="float16")
    stats, values = debugging.check_numerics(x, "my_op", "x")
    assert stats.dtype == oar.int64 and stats.tolist() == [0, 0, 2]
    assert values.dtype == oar.float32 and values.tolist() == [1.0, -2.0, -0.25]
    bad = oar.to_tensor([1.0, float("nan"), float("inf"), float("-inf")])
    with pytest.raises(NumericsError, match=r"op=my_op, tensor=y, dtype=fp32\], numel=4, num_nan=1, num_inf=2"):
        debugging.check_numerics(bad, "my_op", "y")
    stats, _ = debugging.check_numerics(bad, "my_op", "y", debug_mode=DebugMode.CHECK_NAN_INF)
    assert stats.tolist() == [1, 2, 0]
    assert issubclass(NumericsError, OarError) and issubclass(NumericsError, RuntimeError)


def test_the_tensor_checker_names_the_first_op_that_produces_nan_or_inf(capsys):
    x = oar.to_tensor([1.0, 4.0, 0.0])
    debugging.enable_tensor_checker(TensorCheckerConfig(enable=True))
    try:
        y = oar.sqrt(x)  # finite
        with pytest.raises(NumericsError) as info:
            z = oar.log(y)  # log(0) = -inf: the first op with a non-finite output
            oar.exp(z)
    finally:
        debugging.disable_tensor_checker()
    message = str(info.value)
    assert message.startswith("op 'log' produced 0 NaN and 1 Inf in its output 0 (float32[3]), from finite inputs")
    assert "called at test_amp_debugging.py:" in message
    assert "op=log" in capsys.readouterr().out
    oar.log(x)  # the checker is off again


def test_the_tensor_checker_checks_gradients_and_can_go_on():
    config = TensorCheckerConfig(enable=True, debug_mode=DebugMode.CHECK_NAN_INF)
    x = oar.to_tensor([0.0, 1.0], stop_gradient=False)
    debugging.enable_tensor_checker(config)
    try:
        oar.sqrt(x).sum().backward()  # d sqrt(x) / dx at 0 is inf: found in the gradient rule's ops
    finally:
        debugging.disable_tensor_checker()
    # sqrt's gradient rule divides by 2 * sqrt(x): the forward was finite, the division is not
    assert [line.split("op=")[1].split(",")[0] for line in config.reports] == ["divide"]
    assert "num_nan=0, num_inf=1" in config.reports[0]


def test_checked_and_skipped_ops_steps_and_output_dir(tmp_path):
    config = TensorCheckerConfig(enable=True, debug_mode=DebugMode.CHECK_NAN_INF, skipped_op_list=["log"],
                                 output_dir=str(tmp_path), debug_step=[1, 2])
    zero = oar.zeros([1])
    for _step in range(3):
        debugging.enable_tensor_checker(config)
        oar.log(zero)
        oar.divide(oar.ones([1]), zero)
        debugging.disable_tensor_checker()
    assert len(config.reports) == 1 and "op=divide" in config.reports[0]  # step 1 only, log skipped
    assert (tmp_path / "tensor_checker.log").read_text().strip() == config.reports[0]
    only = TensorCheckerConfig(enable=True, debug_mode=DebugMode.CHECK_NAN_INF, checked_op_list=["elementwise_div"])
    debugging.enable_tensor_checker(only)
    try:
        oar.log(zero)
        oar.divide(oar.ones([1]), zero)
    finally:
        debugging.disable_tensor_checker()
    assert [line.split("op=")[1].split(",")[0] for line in only.reports] == ["divide"]
    with pytest.raises(ArgumentError, match="debug_step must be"):
        TensorCheckerConfig(enable=True, debug_step=[3, 1])


def test_the_checker_sees_what_autocast_made_of_each_op():
    """float16 overflows where float32 does not: 300 * 300 under O2 is inf in float16."""
    config = TensorCheckerConfig(enable=True, debug_mode=DebugMode.CHECK_NAN_INF)
    x = oar.full([2], 300.0, dtype="float16")
    debugging.enable_tensor_checker(config)
    try:
        with oar.amp.auto_cast(level="O2"):
            (x * x).astype("float32")
    finally:
        debugging.disable_tensor_checker()
    assert len(config.reports) == 2 and "op=multiply" in config.reports[0] and "dtype=fp16" in config.reports[0]


def test_float16_and_bfloat16_support_by_device():
    assert oar.amp.is_float16_supported() and oar.amp.is_bfloat16_supported()
    assert oar.amp.is_float16_supported("cpu") and oar.amp.is_bfloat16_supported("cpu")
    assert not oar.amp.is_float16_supported("npu:0")  # no such backend here
    with pytest.raises(ArgumentError, match="device must be a string"):
        oar.amp.is_bfloat16_supported(0)


def test_a_backend_answers_for_its_own_kernels():
    class HalfOnly(oar.plugins.Backend):
        name = "halfonly"

        def supports_dtype(self, dtype):
            return dtype == "float16"

    plugin = type("Plugin", (), {})()
    plugin.oar_register_backends = oar.plugins.hookimpl(lambda backends: backends.register("halfonly", HalfOnly()))
    oar.plugins.register(plugin, name="amp_test_backend")
    try:
        assert oar.amp.is_float16_supported("halfonly") and not oar.amp.is_bfloat16_supported("halfonly")
    finally:
        oar.plugins.unregister("amp_test_backend")
    np.testing.assert_equal(oar.amp.is_float16_supported("halfonly"), False)
