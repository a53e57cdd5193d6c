"""oar-numba's int8 layers (``_qgemm``: ``quantized_conv2d``, ``quantized_linear``) against integer
references written out in numpy, and ``quantize_linear``'s float32 lanes against its reference.

With ``act=None``, unit steps and no bias a layer's float32 output is its int32 sum, converted:
those cases compare exactly, over shapes that reach the tiles' edges (k not a multiple of 4, one
row, odd sizes, rows and lanes past a tile), padding, strides, dilation, nonzero zero points and
sums near int32's range. The epilogue (steps per tensor and per channel, negative ones included,
bias, activations, max pooling) is compared with a float64 formula within ``oar.testing``'s
tolerances, and with the reference kernel bit for bit where the module says it rounds alike.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
from numba_test_support import nn_op_cases
from oar_numba import _qgemm, _quant

import oar
from oar.nn.functional import quant as reference
from oar.plugins import registries
from oar.testing import check_output, record_ops, sum_tolerance

needs_vnni = pytest.mark.skipif(not _qgemm.VNNI, reason="the int8 kernels need AVX-512 VNNI (elsewhere the "
                                                         "references run)")
RNG = np.random.default_rng(5)
ONE, F32 = np.array(1.0, np.float32), np.float32


def int8(*shape, low=-128, high=128):
    return RNG.integers(low, high, shape).astype(np.int8)


def integer_linear(x, zx, w, zw):
    return (x.astype(np.int64) - int(zx)) @ (w.astype(np.int64) - zw.astype(np.int64))


def integer_conv(x, zx, w, zw, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1)):
    """sum over c, i, j of (x - zx)[n, c, oh * sh + i * dh, ow * sw + j * dw] * (w - zw)[o, c, i, j],
    x padded with real zeros, in int64."""
    (sh, sw), (dh, dw), (top, bottom, left, right) = stride, dilation, padding
    xc = np.pad(x.astype(np.int64) - int(zx), ((0, 0), (0, 0), (top, bottom), (left, right)))
    wc = w.astype(np.int64) - zw.astype(np.int64).reshape(-1, 1, 1, 1)
    kh, kw = w.shape[2:]
    oh = (xc.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (xc.shape[3] - dw * (kw - 1) - 1) // sw + 1
    acc = np.zeros((x.shape[0], w.shape[0], oh, ow), np.int64)
    for i in range(kh):
        for j in range(kw):
            window = xc[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            acc += np.einsum("nchw,oc->nohw", window, wc[:, :, i, j])
    return acc


def max_pooled(y, k):
    n, o, h, w = y.shape
    h, w = h // k * k, w // k * k
    return y[:, :, :h, :w].reshape(n, o, h // k, k, w // k, k).max(axis=(3, 5))


def zero_points(channels, per_channel, nonzero):
    if not nonzero:
        return np.zeros(channels if per_channel else (), np.int8)
    return RNG.integers(-9, 10, channels if per_channel else ()).astype(np.int8)


# -- the int32 sums, exactly ------------------------------------------------------------------------
@needs_vnni
@pytest.mark.parametrize("shape, zx, zw_kind", [
    ((1, 7, 5), 0, None),                # one row, k and n odd
    ((64, 400, 120), 0, None),           # LeNet's fc1 at batch 64
    ((13, 81, 33), -5, "per_tensor"),    # k past a multiple of 4, rows past a multiple of 4
    ((5, 3, 70), 7, "per_channel"),      # k below a word; a 64-lane tile and a 16-lane tail
    ((2, 3, 130), -128, "per_channel"),  # lanes 144: two tiles and a tail
    ((6, 1, 1), 127, "per_tensor"),
], ids=str)
def test_linear_sums_are_exact(shape, zx, zw_kind):
    m, k, n = shape
    x, w = int8(m, k), int8(k, n)
    zw = zero_points(n, zw_kind == "per_channel", zw_kind is not None)
    steps = np.ones(zw.shape, np.float32)
    got = _qgemm.quantized_linear(x, ONE, np.array(zx, np.int8), w, steps, zw)
    np.testing.assert_array_equal(got, integer_linear(x, zx, w, zw).astype(np.float32))


@needs_vnni
def test_linear_of_a_3d_x_and_of_a_transposed_x():
    x, w, zw = int8(2, 40, 3), int8(40, 9), zero_points(9, True, True)
    for view in (x.transpose(0, 2, 1), np.ascontiguousarray(x.transpose(0, 2, 1))):
        got = _qgemm.quantized_linear(view, ONE, np.array(3, np.int8), w, np.ones(9, F32), zw)
        expected = integer_linear(view.reshape(-1, 40), 3, w, zw).reshape(2, 3, 9)
        np.testing.assert_array_equal(got, expected.astype(np.float32))


@needs_vnni
def test_sums_near_the_int32_range_are_exact():
    """(x - zx) = 255 and (w - zw) = -255 everywhere: every product is -65025, the sums pass 2**27,
    and the terms the kernel takes off for the unsigned operand and the zero points pass 2**31
    before they cancel (modulo 2**32)."""
    k = 4096
    x, w = np.full((4, k), 127, np.int8), np.full((k, 3), -128, np.int8)
    zw = np.full(3, 127, np.int8)
    got = _qgemm.quantized_linear(x, ONE, np.array(-128, np.int8), w, np.ones(3, F32), zw)
    assert integer_linear(x, -128, w, zw)[0, 0] == -65025 * k
    np.testing.assert_array_equal(got, integer_linear(x, -128, w, zw).astype(np.float32))
    xc, wc = np.full((1, 64, 8, 8), 127, np.int8), np.full((2, 64, 3, 3), -128, np.int8)
    got = _qgemm.quantized_conv2d(xc, ONE, np.array(-128, np.int8), wc, np.ones(2, F32), np.full(2, 127, np.int8),
                                  padding=(1, 1, 1, 1))
    np.testing.assert_array_equal(got, integer_conv(xc, -128, wc, np.full(2, 127, np.int8),
                                                    padding=(1, 1, 1, 1)).astype(np.float32))


CONV_SHAPES = [
    # x shape, weight shape, stride, padding, dilation
    ((3, 1, 28, 28), (6, 1, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # LeNet's conv1: 9 taps, 6 channels
    ((40, 6, 14, 14), (16, 6, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),    # LeNet's conv2, several chunks of samples
    ((2, 32, 32, 32), (32, 32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),   # the W4 ResNet's block convolution
    ((2, 3, 32, 32), (32, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),     # and its stem
    ((2, 5, 11, 9), (7, 5, 3, 2), (2, 2), (1, 0, 2, 1), (1, 1)),       # stride 2, padding on some sides
    ((2, 5, 11, 9), (7, 5, 3, 2), (1, 2), (1, 0, 2, 1), (2, 1)),       # a column stride, a row dilation
    ((2, 5, 11, 9), (7, 5, 3, 2), (2, 1), (1, 0, 2, 1), (1, 2)),       # wide rows at a row stride
    ((1, 4, 5, 5), (3, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),        # 1x1
    ((1, 2, 3, 3), (1, 2, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1)),        # one output position
]


@needs_vnni
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation", CONV_SHAPES, ids=[str(s[:2]) for s in CONV_SHAPES])
@pytest.mark.parametrize("zx, zw_kind", [(0, None), (-6, "per_tensor"), (11, "per_channel")])
def test_conv_sums_are_exact(x_shape, w_shape, stride, padding, dilation, zx, zw_kind):
    x, w = int8(*x_shape), int8(*w_shape)
    zw = zero_points(w_shape[0], zw_kind == "per_channel", zw_kind is not None)
    got = _qgemm.quantized_conv2d(x, ONE, np.array(zx, np.int8), w, np.ones(zw.shape, F32), zw, stride=stride,
                                  padding=padding, dilation=dilation)
    expected = integer_conv(x, zx, w, zw, stride, padding, dilation)
    np.testing.assert_array_equal(got, expected.astype(np.float32))


# -- the epilogue ----------------------------------------------------------------------------------------
def epilogue(acc, x_scale, w_scale, bias, act, channel_axis):
    """act(acc * x_scale * w_scale + bias) in float64."""
    shape = [1] * acc.ndim
    shape[channel_axis] = -1
    y = acc * (np.float64(x_scale) * w_scale.astype(np.float64).reshape(shape))
    if bias is not None:
        y = y + bias.astype(np.float64).reshape(shape)
    return {None: y, "relu": np.maximum(y, 0), "sigmoid": 1 / (1 + np.exp(-y)), "leaky_relu": np.where(y > 0, y, 0.1 * y),
            "tanh": np.tanh(y)}[act]


ACT_ATTRS = {"leaky_relu": {"negative_slope": 0.1}}


def close(got, expected, terms):
    rtol, atol = sum_tolerance("float32", terms=terms, scale=np.abs(expected).max())
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


@needs_vnni
@pytest.mark.parametrize("act", [None, "relu", "sigmoid", "leaky_relu"])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("max_pool", [None, 2, 3])
def test_conv_epilogue(act, per_channel, max_pool):
    x, w = int8(3, 6, 13, 12), int8(8, 6, 3, 3)
    x_scale = np.array(0.004, F32)
    w_scale = (RNG.uniform(0.002, 0.01, 8) * RNG.choice([-1, 1], 8)).astype(F32) if per_channel else np.array(0.005, F32)
    zw, bias = zero_points(8, per_channel, True), RNG.standard_normal(8).astype(F32)
    args = (x, x_scale, np.array(-2, np.int8), w, w_scale, zw, bias, (1, 1), (1, 1, 1, 1), (1, 1), 1, act,
            ACT_ATTRS.get(act, {}), max_pool)
    got = _qgemm.quantized_conv2d(*args)
    y = epilogue(integer_conv(x, -2, w, zw, padding=(1, 1, 1, 1)), x_scale, np.broadcast_to(w_scale, (8,)), bias, act,
                 1)
    close(got, max_pooled(y, max_pool) if max_pool else y, terms=3)
    if act in (None, "relu"):  # rounded as the reference rounds (the module's docstring)
        np.testing.assert_array_equal(got, reference._quantized_conv2d_kernel(*args))


@needs_vnni
@pytest.mark.parametrize("act", [None, "relu", "tanh"])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_linear_epilogue(act, per_channel, with_bias):
    x, w = int8(9, 50), int8(50, 21)
    x_scale = np.array(0.01, F32)
    w_scale = (RNG.uniform(0.001, 0.01, 21) * RNG.choice([-1, 1], 21)).astype(F32) if per_channel else np.array(0.004, F32)
    zw, bias = zero_points(21, per_channel, True), RNG.standard_normal(21).astype(F32) if with_bias else None
    args = (x, x_scale, np.array(4, np.int8), w, w_scale, zw, bias, act, {})
    got = _qgemm.quantized_linear(*args)
    close(got, epilogue(integer_linear(x, 4, w, zw), x_scale, np.broadcast_to(w_scale, (21,)), bias, act, 1), terms=3)
    if act in (None, "relu"):
        np.testing.assert_array_equal(got, reference._quantized_linear_kernel(*args))


# -- threads, fallbacks, registration -----------------------------------------------------------------
@pytest.fixture
def two_threads():
    before = numba.get_num_threads()
    oar.set_num_threads(2)
    yield
    oar.set_num_threads(before)


@needs_vnni
@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="numba has one thread")
def test_shares_of_a_large_batch_on_numba_threads_give_the_one_thread_result(two_threads, monkeypatch):
    shared = []
    for name in ("_conv_parts", "_linear_parts"):
        kernel = getattr(_qgemm, name)
        monkeypatch.setattr(_qgemm, name, lambda *args, kernel=kernel, name=name: (shared.append(name), kernel(*args)))
    x, w, zw = int8(16, 32, 32, 32), int8(32, 32, 3, 3), zero_points(32, True, True)
    conv = (x, np.array(0.01, F32), np.array(3, np.int8), w, np.full(32, 0.02, F32), zw, None, (1, 1), (1, 1, 1, 1),
            (1, 1), 1, "relu", {}, 2)
    xl, wl, zl = int8(300, 256), int8(256, 64), zero_points(64, True, True)
    linear = (xl, np.array(0.01, F32), np.array(-1, np.int8), wl, np.full(64, 0.02, F32), zl, None, None, {})
    threaded = _qgemm.quantized_conv2d(*conv), _qgemm.quantized_linear(*linear)
    assert shared == ["_conv_parts", "_linear_parts"]
    oar.set_num_threads(1)
    np.testing.assert_array_equal(threaded[0], _qgemm.quantized_conv2d(*conv))
    np.testing.assert_array_equal(threaded[1], _qgemm.quantized_linear(*linear))
    assert len(shared) == 2  # one thread: the calling thread alone


def test_what_the_kernels_do_not_take_gets_the_reference_answer():
    """Groups, a negative padding (a crop), a depth past MAX_DEPTH, int16 weights, a weight scale of
    the wrong size (the reference raises), and every call on a CPU without VNNI."""
    x, w = int8(2, 4, 6, 6), int8(6, 2, 3, 3)
    grouped = (x, ONE, np.array(1, np.int8), w, np.ones(6, F32), np.zeros(6, np.int8), None, (1, 1), (1, 1, 1, 1),
               (1, 1), 2)
    np.testing.assert_array_equal(_qgemm.quantized_conv2d(*grouped), reference._quantized_conv2d_kernel(*grouped))
    cropped = (x, ONE, np.array(1, np.int8), int8(3, 4, 3, 3), np.ones(3, F32), np.zeros(3, np.int8), None, (1, 1),
               (0, -1, 1, 0), (1, 1), 1)
    np.testing.assert_array_equal(_qgemm.quantized_conv2d(*cropped), reference._quantized_conv2d_kernel(*cropped))
    deep = (int8(2, _qgemm.MAX_DEPTH + 4), ONE, np.array(0, np.int8), int8(_qgemm.MAX_DEPTH + 4, 3), ONE,
            np.array(0, np.int8))
    np.testing.assert_array_equal(_qgemm.quantized_linear(*deep), reference._quantized_linear_kernel(*deep))
    assert not _qgemm._linear_fits(int8(2, 5), ONE, np.array(0, np.int8), int8(5, 3).astype(np.int16), ONE,
                                   np.array(0, np.int8), None)
    with pytest.raises(ValueError):  # numpy's broadcasting error, from the reference
        _qgemm.quantized_linear(int8(2, 5), ONE, np.array(0, np.int8), int8(5, 3), np.ones(2, F32),
                                np.zeros(2, np.int8))


def test_without_vnni_every_call_goes_to_the_reference(monkeypatch):
    monkeypatch.setattr(_qgemm, "VNNI", False)
    called = []
    monkeypatch.setattr(reference, "_quantized_linear_kernel", lambda *args: called.append("linear"))
    monkeypatch.setattr(reference, "_quantized_conv2d_kernel", lambda *args: called.append("conv"))
    _qgemm.quantized_linear(int8(2, 5), ONE, np.array(0, np.int8), int8(5, 3), ONE, np.array(0, np.int8))
    _qgemm.quantized_conv2d(int8(1, 1, 4, 4), ONE, np.array(0, np.int8), int8(1, 1, 3, 3), ONE, np.array(0, np.int8))
    assert called == ["linear", "conv"]


def test_vnni_is_only_claimed_when_numba_compiles_for_this_cpu(monkeypatch):
    monkeypatch.setattr(numba.config, "CPU_NAME", "generic")  # a cache meant for other machines
    assert not _qgemm._has_vnni()


def test_the_kernels_are_registered_where_the_cpu_has_vnni():
    kernels = registries().kernels
    for name in ("quantized_conv2d", "quantized_linear"):
        entry = kernels.lookup(name, "cpu", oar.int8)
        if _qgemm.VNNI:
            assert entry.fn is _qgemm.KERNELS[name]
        else:  # the reference: oar-slim then keeps the float QDQ program
            assert entry is None or entry.fn is not getattr(_qgemm, name)


# -- nn's op table, dispatched to these kernels ---------------------------------------------------------
CASES = [c for c in nn_op_cases() if c.op in ("quantized_conv2d", "quantized_linear")]


def test_nn_has_op_cases_for_both_layers():
    assert {c.op for c in CASES} == {"quantized_conv2d", "quantized_linear"}


@needs_vnni
@pytest.mark.parametrize("contiguous", [True, False], ids=["contiguous", "noncontiguous"])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_op_cases_run_these_kernels(case, contiguous):
    op = registries().ops.get(case.op)
    op._kernels.clear()
    with record_ops() as rec:
        check_output(case, "float32", contiguous=contiguous, recorder=rec)
    assert case.op in rec.ops and op._kernels[("cpu", np.dtype(np.int8))] is _qgemm.KERNELS[case.op]


# -- quantize_linear ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zero_point, bits", [(0, 8), (-7, 8), (100, 8), (3, 4)])
def test_quantize_in_the_input_dtype_matches_the_reference(dtype, zero_point, bits):
    """Ties of rint (k + 0.5 steps exactly), values that clip, and values beyond 2**24 steps, where
    float32 cannot add the zero point exactly (the clip decides)."""
    step = 0.25
    k = RNG.integers(-300, 300, 200)
    x = np.concatenate([(k + 0.5) * step, k * step + 0.1, [3e9, -3e9, 1e30, -1e30, 2.0 ** 26 + 1]]).astype(dtype)
    args = (x.reshape(1, -1), np.array(step, dtype), np.array(zero_point, np.int8), None, bits)
    np.testing.assert_array_equal(_quant.quantize_linear(*args), reference._quantize_linear_kernel(*args))
