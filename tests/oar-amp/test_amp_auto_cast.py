"""``oar.amp.auto_cast``: the dtype each op computes in, for every op of the registry at every
level and dtype, against Paddle's rule written out from its lists; then the casts as eager code
sees them, the custom lists, nesting, ``enable=False`` and the argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar.amp import amp_lists
from oar.amp._auto_cast import make_state
from oar.errors import ArgumentError
from oar.ops import AMP_FP32, AMP_LOW_PRECISION, amp_category
from oar.plugins import registries

LEVELS = ["O1", "O2", "OD"]
DTYPES = ["float16", "bfloat16"]


# -- the decision table, over the op registry -------------------------------------------------------
def paddle_dest_dtype(op_name: str, level: str, dtype: str, use_promote: bool, input_dtypes: list[str],
                      custom_white=(), custom_black=()) -> str:
    """Paddle's _update_list and GetAmpDestDtype, over Paddle's lists (translated to oar's op
    names) and oar's op categories, which stand for Paddle's default white and black lists."""
    ops = registries().ops
    white = amp_lists.resolve_all(amp_lists.white_list()[dtype][level])
    white |= {name for name in ops if amp_category(name) == AMP_LOW_PRECISION}
    black = amp_lists.resolve_all(amp_lists.black_list()[dtype][level])
    if level == "O1":
        black |= {name for name in ops if amp_category(name) == AMP_FP32}
    white, black = (white - set(custom_black)) | set(custom_white), (black - set(custom_white)) | set(custom_black)
    if level != "O2" or use_promote:
        if op_name in white:
            return dtype
        if op_name in black:
            return "float32"
        if level == "OD":
            return "float32"
        # GetPromoteType: batch_norm and layer_norm (oar's batch_norm_infer is batch_norm at inference) by x alone
        deciding = input_dtypes[:1] if op_name in ("batch_norm", "batch_norm_infer", "layer_norm") else input_dtypes
        return "float32" if "float32" in deciding else dtype
    return "float32" if op_name in black else dtype


def fake_inputs(dtypes: list[str]) -> tuple:
    return tuple(oar.zeros([1], dtype=d) for d in dtypes)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("use_promote", [True, False])
def test_every_op_computes_in_the_dtype_paddles_rule_gives(level, dtype, use_promote):
    state = make_state(level=level, dtype=dtype, use_promote=use_promote)
    ops = registries().ops
    checked = 0
    for name in sorted(ops):
        if name in ("cast", "cond", "while"):
            continue
        op = ops.get(name)
        for dtypes in (["float32"], [dtype], [dtype, "float32"], ["int64", dtype]):
            expected = paddle_dest_dtype(name, level, dtype, use_promote, dtypes)
            assert state.target(op, fake_inputs(dtypes)) == expected, (name, dtypes)
            checked += 1
    assert checked > 4 * 150  # every op of core and oar-nn


def test_custom_lists_in_the_table():
    custom_white, custom_black = {"add", "relu"}, {"matmul", "exp"}
    state = make_state(level="O1", dtype="bfloat16", custom_white_list=custom_white, custom_black_list=custom_black)
    for name in ("add", "relu", "matmul", "exp", "conv", "softmax", "abs"):
        expected = paddle_dest_dtype(name, "O1", "bfloat16", True, ["float32"], custom_white, custom_black)
        assert state.target(registries().ops.get(name), fake_inputs(["float32"])) == expected


def test_paddles_named_lists_agree_with_the_op_categories():
    """Every op of Paddle's white list that oar has is low_precision, every one of its O1 black
    list fp32 (the plugin overrides the categories that differ, CATEGORY_OVERRIDES)."""
    for name in amp_lists.WHITE_LIST:
        for op in amp_lists.resolve(name):
            assert amp_category(op) == AMP_LOW_PRECISION, (name, op)
    for name in amp_lists.FP16_BLACK_LIST:
        for op in amp_lists.resolve(name):
            assert amp_category(op) == AMP_FP32, (name, op)
    assert {op for name in amp_lists.FP16_BLACK_LIST for op in amp_lists.resolve(name)} >= {
        "softmax", "log_softmax", "softmax_with_cross_entropy", "layer_norm", "mean", "sum", "exp", "log", "pow",
        "tan", "rsqrt", "reciprocal"}


def test_the_plugin_overrides_the_categories_paddle_lists_differently():
    assert registries().ops.get("tan").amp != AMP_FP32  # what core declares...
    assert amp_category("tan") == AMP_FP32  # ...and what applies with oar-amp installed


def test_paddle_operator_names_resolve_to_oar_ops():
    assert amp_lists.resolve("elementwise_add") == ("add",)
    assert amp_lists.resolve("matmul_v2") == ("matmul",)
    assert amp_lists.resolve("lookup_table_v2") == ("embedding",)
    assert amp_lists.resolve("conv") == ("conv",)  # oar's own name
    assert amp_lists.resolve("max_pool2d") == ("max_pool",)  # the Paddle API name an op serves
    assert amp_lists.resolve("flash_attn") == ()


# -- eager code ---------------------------------------------------------------------------------------
def test_white_ops_run_low_black_ops_float32_the_others_follow_their_inputs():
    x = oar.rand([4, 4])
    with oar.amp.auto_cast(dtype="bfloat16"):
        low = oar.matmul(x, x)
        assert low.dtype == oar.bfloat16
        assert F.softmax(low).dtype == oar.float32  # black: cast up first
        assert oar.exp(low).dtype == oar.float32 and oar.mean(low).dtype == oar.float32
        assert F.relu(low).dtype == oar.bfloat16  # gray, low input
        assert (low + x).dtype == oar.float32  # gray, a float32 input: promoted
        assert (low + low).dtype == oar.bfloat16
    np.testing.assert_allclose(low.astype("float32").numpy(), x.numpy() @ x.numpy(), rtol=2e-2, atol=1e-2)


def test_the_casts_are_recorded_for_backward_and_gradients_keep_the_parameters_dtypes():
    layer = nn.Linear(3, 2)
    x = oar.rand([4, 3])
    with oar.amp.auto_cast(dtype="float16"):
        loss = layer(x).astype("float32").mean()
    loss.backward()
    assert layer.weight.grad.dtype == oar.float32 and layer.bias.grad.dtype == oar.float32
    expected = np.broadcast_to(x.numpy().mean(0)[:, None] / 2, (3, 2))
    np.testing.assert_allclose(layer.weight.grad.numpy(), expected, rtol=1e-2, atol=1e-3)


def test_float64_and_integers_are_never_cast():
    x64 = oar.rand([2, 2], dtype="float64")
    with oar.amp.auto_cast():
        assert oar.matmul(x64, x64).dtype == oar.float64
        ints = oar.to_tensor([[1, 2], [3, 4]])
        assert oar.matmul(ints, ints).dtype == oar.int64


def test_norms_cast_only_x():
    x = oar.rand([2, 3, 4, 4]).astype("bfloat16")
    bn = nn.BatchNorm2D(3)
    bn.eval()
    with oar.amp.auto_cast(level="O2", dtype="bfloat16"):  # O2: gray, decided by x alone
        out = bn(x)
    assert out.dtype == oar.bfloat16 and bn._mean.dtype == oar.float32


def test_paddles_documented_examples():
    conv2d = nn.Conv2D(3, 2, 3, bias_attr=False)
    data = oar.rand([10, 3, 32, 32])
    with oar.amp.auto_cast():
        assert conv2d(data).dtype == oar.float16
    with oar.amp.auto_cast(enable=False):
        assert conv2d(data).dtype == oar.float32
    with oar.amp.auto_cast(custom_black_list={"conv2d"}):
        assert conv2d(data).dtype == oar.float32
    a, b = oar.rand([2, 3]), oar.rand([2, 3])
    with oar.amp.auto_cast(custom_white_list={"elementwise_add"}):
        assert (a + b).dtype == oar.float16
    with oar.amp.auto_cast(custom_white_list={"elementwise_add"}, level="O2"):
        assert (a + b).dtype == oar.float16


def test_levels():
    x = oar.rand([2, 2])
    low = x.astype("bfloat16")
    with oar.amp.auto_cast(level="OD", dtype="bfloat16"):
        assert oar.matmul(x, x).dtype == oar.bfloat16 and F.relu(low).dtype == oar.float32
    with oar.amp.auto_cast(level="O2", dtype="bfloat16"):
        assert F.softmax(low).dtype == oar.bfloat16  # O2's black list is Paddle's extra one only
        assert (low + x).dtype == oar.float32  # use_promote
        emb = nn.Embedding(4, 2)
        assert emb(oar.to_tensor([1, 2])).dtype == oar.float32  # extra black list
    with oar.amp.auto_cast(level="O2", dtype="bfloat16", use_promote=False):
        assert (low + x).dtype == oar.bfloat16
    with oar.amp.auto_cast(level="O0"):
        assert oar.matmul(x, x).dtype == oar.float32


def test_nested_blocks_replace_the_outer_state_and_restore_it():
    x = oar.rand([2, 2])
    with oar.amp.auto_cast(dtype="bfloat16"):
        with oar.amp.auto_cast(enable=False):
            assert oar.matmul(x, x).dtype == oar.float32
            with oar.amp.auto_cast(dtype="float16"):
                assert oar.matmul(x, x).dtype == oar.float16
        assert oar.matmul(x, x).dtype == oar.bfloat16
    assert oar.matmul(x, x).dtype == oar.float32
    with oar.no_grad():
        assert oar.ops.eager_no_grad()  # no mode is left above eager execution


def test_an_exception_inside_a_block_leaves_autocast_off():
    x = oar.rand([2, 2])
    with pytest.raises(ValueError, match="inside the block"):
        with oar.amp.auto_cast():
            raise ValueError("inside the block")
    assert oar.matmul(x, x).dtype == oar.float32


def test_argument_errors_say_what_is_accepted():
    with pytest.raises(ArgumentError, match="level should be O0, OD, O1 or O2"):
        oar.amp.auto_cast(level="O3").__enter__()
    with pytest.raises(ArgumentError, match="dtype should be 'float16' or 'bfloat16'"):
        oar.amp.auto_cast(dtype="float64").__enter__()
    with pytest.raises(ArgumentError, match="custom white list overlap custom black list"):
        oar.amp.auto_cast(custom_white_list=["conv2d"], custom_black_list={"conv2d"}).__enter__()
    with pytest.raises(ArgumentError, match="must be a set, list or tuple"):
        oar.amp.auto_cast(custom_white_list="conv2d").__enter__()
    with pytest.warns(UserWarning, match="'no_such_op', which is no op of oar"):
        with oar.amp.auto_cast(custom_black_list={"no_such_op"}):
            pass
    with oar.amp.auto_cast(enable=False, dtype="float64"):  # dtype is checked only when enabled, as Paddle
        pass


def test_the_current_blocks_state_is_queried_as_in_paddle():
    assert not oar.amp.is_autocast_enabled() and oar.amp.get_autocast_dtype() == "float16"
    with oar.amp.auto_cast(dtype="bfloat16"):
        assert oar.amp.is_autocast_enabled() and oar.amp.get_autocast_dtype() == "bfloat16"
        assert oar.amp.get_autocast_cpu_dtype("cpu") is oar.amp.get_autocast_gpu_dtype() is oar.bfloat16
        with oar.amp.auto_cast(enable=False):
            assert not oar.amp.is_autocast_enabled() and oar.amp.get_autocast_dtype() == "float16"
        with oar.amp.auto_cast(level="O0"):
            assert not oar.amp.is_autocast_enabled()
        assert oar.amp.is_autocast_enabled("gpu")
    assert not oar.amp.is_autocast_enabled()
