"""oar-nn's ops through ONNX Runtime.

The op table first: each case exported alone, run by ORT, equal to eager within float32
tolerance (``onnx_test_support.parity_tests``). Then the corners the table does not reach, each
checked against eager oar and, where the lowering promises a form, against the nodes written:
convolutions of every rank, grouped, dilated and asymmetrically padded (a conv + bias + relu layer
is exactly Conv, Relu), transposed convolutions whose output_padding ONNX Runtime refuses,
pooling with ceil_mode and windows of padding only, adaptive pools, normalisation at the opsets
where ONNX gained its ops, every interpolate mode, a QDQ model, the fused ops' epilogues, and
one model of most lowerings written at every opset.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx_test_support import export_and_compare, flat_outputs, nn_op_cases, parity_tests, session

import oar
import oar.nn as nn
import oar.nn.functional as F
import oar.onnx
from oar.nn import quant
from oar.nn.functional.fused import fused_conv2d
from oar.ops import dispatch
from oar.plugins import registries
from oar.static import InputSpec

globals().update(parity_tests(nn_op_cases(), not_exported={}))

RNG = np.random.default_rng(11)
NEWEST = onnx.defs.onnx_opset_version()


def rand(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def op_types(model) -> list[str]:
    return [n.op_type for n in model.graph.node]


def call_op(name: str, inputs, attrs):
    """The op itself, as a program records it (for attributes no public function reaches)."""
    return dispatch(registries().ops.get(name), tuple(inputs), attrs)


def eval_layer(layer):
    layer.eval()
    return layer


def ort_and_oar(model, fn, inputs) -> tuple[list, list]:
    """The outputs of ``model`` in ONNX Runtime and of ``fn`` in eager oar, on ``inputs``."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, {i.name: a for i, a in zip(sess.get_inputs(), inputs)})
    with oar.no_grad():
        expected = flat_outputs(fn(*[oar.to_tensor(a) for a in inputs]))
    return got, expected


def finite_outputs_match(model, fn, inputs) -> None:
    """ORT's outputs equal eager oar's: infinities at the same places, the finite values within
    float32 tolerance (the support helper's tolerance scales with the largest value, inf here)."""
    for g, e in zip(*ort_and_oar(model, fn, inputs)):
        np.testing.assert_array_equal(np.isinf(g), np.isinf(e))
        np.testing.assert_allclose(g[np.isfinite(e)], e[np.isfinite(e)], rtol=1e-6, atol=1e-6)


def outputs_equal(model, fn, inputs) -> None:
    """ORT's outputs are eager oar's, bit for bit."""
    for g, e in zip(*ort_and_oar(model, fn, inputs)):
        np.testing.assert_array_equal(g, e)


# -- convolution --------------------------------------------------------------------------------
CONVS = {
    "conv1d_stride_asymmetric": (lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=[1, 2]),
                                 [rand(2, 3, 9), rand(4, 3, 3), rand(4)]),
    "conv2d_depthwise": (lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=4),
                         [rand(1, 4, 6, 5), rand(4, 1, 3, 3), rand(4)]),
    "conv2d_groups_dilation": (lambda x, w, b: F.conv2d(x, w, b, stride=[1, 2], padding=[0, 1, 2, 0], dilation=2,
                                                        groups=2),
                               [rand(2, 4, 9, 8), rand(6, 2, 3, 2), rand(6)]),
    "conv3d": (lambda x, w, b: F.conv3d(x, w, b, stride=[1, 2, 1], padding=1, dilation=[1, 1, 2]),
               [rand(1, 2, 4, 5, 6), rand(3, 2, 2, 3, 3), rand(3)]),
}


@pytest.mark.parametrize("opset", [13, NEWEST])
@pytest.mark.parametrize("case", sorted(CONVS))
def test_conv_with_its_bias_is_one_conv_node(case, opset, tmp_path):
    fn, inputs = CONVS[case]
    model = export_and_compare(fn, inputs, tmp_path, opset=opset)
    assert op_types(model) == ["Conv"]  # the bias add and its reshape are Conv's B


def test_conv_bias_relu_layer_exports_as_conv_relu(tmp_path):
    layer = eval_layer(nn.Sequential(nn.Conv2D(3, 8, 3, padding=1), nn.ReLU()))
    model = export_and_compare(layer, [rand(2, 3, 8, 8)], tmp_path)
    assert op_types(model) == ["Conv", "Relu"]
    assert len(model.graph.initializer) == 2  # weight and bias, nothing else


def test_conv_batch_norm_layer(tmp_path):
    layer = eval_layer(nn.Sequential(nn.Conv2D(3, 4, 3), nn.BatchNorm2D(4), nn.ReLU()))
    for p in layer[1].parameters():
        p.set_value(oar.to_tensor(rand(*p.shape) * 0.5 + 1.0))
    export_and_compare(layer, [rand(2, 3, 6, 6)], tmp_path)


def test_conv_cropping_padding_is_a_slice(tmp_path):
    # a negative after-padding (gradient rules write it) crops the input's end
    model = export_and_compare(lambda x, w: call_op("conv", [x, w], {"stride": [2], "padding": [1, -2], "dilation": [1],
                                                                     "groups": 1}),
                               [rand(1, 2, 9), rand(3, 2, 3)], tmp_path)
    assert op_types(model) == ["Slice", "Conv"]


CONV_TRANSPOSES = {
    # output_padding below the stride: ConvTranspose's own attribute, the bias folded
    "1d_stride_output_padding": (lambda x, w, b: F.conv1d_transpose(x, w, b, stride=2, padding=1, output_padding=1),
                                 [rand(2, 4, 5), rand(4, 3, 3), rand(3)], ["ConvTranspose"]),
    "3d": (lambda x, w, b: F.conv3d_transpose(x, w, b, stride=2, padding=[1, 0, 1], output_padding=[1, 0, 1]),
           [rand(1, 2, 3, 3, 2), rand(2, 3, 3, 2, 3), rand(3)], ["ConvTranspose"]),
    "2d_output_size": (lambda x, w, b: F.conv2d_transpose(x, w, b, stride=2, padding=1, output_size=[10, 9]),
                       [rand(1, 2, 5, 5), rand(2, 2, 3, 3), rand(2)], ["ConvTranspose"]),
    # output_padding at or above the stride (oar allows it below the dilation): zeros past the
    # kernels' reach, a Pad, then the bias
    "2d_groups_dilation_output_padding": (
        lambda x, w, b: F.conv2d_transpose(x, w, b, stride=1, dilation=2, output_padding=1, groups=2),
        [rand(2, 4, 4, 5), rand(4, 3, 3, 3), rand(6)], ["ConvTranspose", "Pad", "Reshape", "Add"]),
}


@pytest.mark.parametrize("opset", [13, NEWEST])
@pytest.mark.parametrize("case", sorted(CONV_TRANSPOSES))
def test_conv_transpose(case, opset, tmp_path):
    fn, inputs, nodes = CONV_TRANSPOSES[case]
    model = export_and_compare(fn, inputs, tmp_path, opset=opset)
    assert op_types(model) == nodes


# -- pooling --------------------------------------------------------------------------------------
AVG_POOLS = {
    "1d_padding": (lambda x, e, c: F.avg_pool1d(x, 3, stride=2, padding=1, exclusive=e, ceil_mode=c), [rand(2, 3, 8)]),
    "2d_asymmetric": (lambda x, e, c: F.avg_pool2d(x, [3, 2], stride=2, padding=[1, 0, 0, 1], exclusive=e, ceil_mode=c),
                      [rand(1, 2, 6, 7)]),
    # ceil_mode's last window lies in the padding only (ONNX Runtime drops it, oar keeps a 0)
    "1d_window_of_padding_only": (lambda x, e, c: F.avg_pool1d(x, 2, stride=2, padding=1, exclusive=e, ceil_mode=c),
                                  [rand(1, 2, 5)]),
    # padding as large as the kernel (ONNX pools refuse it)
    "2d_padding_as_large_as_kernel": (lambda x, e, c: F.avg_pool2d(x, 2, stride=1, padding=2, exclusive=e,
                                                                   ceil_mode=c), [rand(1, 1, 3, 4)]),
}


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("exclusive", [True, False])
@pytest.mark.parametrize("case", sorted(AVG_POOLS))
def test_avg_pool(case, exclusive, ceil_mode, tmp_path):
    fn, inputs = AVG_POOLS[case]
    model = export_and_compare(lambda x: fn(x, exclusive, ceil_mode), inputs, tmp_path)
    if case in ("1d_padding", "2d_asymmetric"):
        assert op_types(model) == ["AveragePool"]


def test_avg_pool_exclusive_and_inclusive_differ_at_the_border(tmp_path):
    # the two divisors must both reach the file: a lowering that ignored exclusive would pass
    # one of the parametrized cases above only by chance, never both
    x = rand(1, 1, 6)
    a = export_and_compare(lambda x: F.avg_pool1d(x, 3, stride=1, padding=1, exclusive=True), [x], tmp_path, name="a")
    b = export_and_compare(lambda x: F.avg_pool1d(x, 3, stride=1, padding=1, exclusive=False), [x], tmp_path, name="b")
    attrs = [{a.name: a.i for a in m.graph.node[0].attribute}["count_include_pad"] for m in (a, b)]
    assert attrs == [0, 1]


MAX_POOLS = {
    "2d_padding_mask": (lambda x: F.max_pool2d(x, 3, stride=2, padding=1, return_mask=True), [rand(2, 3, 7, 6)],
                        ["MaxPool", "Mod", "Cast"]),
    "1d_ceil_mask": (lambda x: F.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True, return_mask=True),
                     [rand(2, 3, 6)], ["MaxPool", "Mod", "Cast"]),
    # a window of padding only: -inf and mask -1, through an explicit -inf Pad
    "1d_window_of_padding_only": (lambda x: F.max_pool1d(x, 2, stride=2, padding=1, ceil_mode=True, return_mask=True),
                                  [rand(1, 2, 5)], None),
    "2d_padding_as_large_as_kernel": (lambda x: F.max_pool2d(x, 2, stride=2, padding=[2, 0, 1, 1], return_mask=True),
                                      [rand(1, 2, 4, 5)], None),
    "2d_no_mask": (lambda x: F.max_pool2d(x, 2, ceil_mode=True), [rand(1, 2, 5, 5)], ["MaxPool"]),
}


@pytest.mark.parametrize("case", sorted(MAX_POOLS))
def test_max_pool(case, tmp_path):
    fn, inputs, nodes = MAX_POOLS[case]
    model = export_and_compare(fn, inputs, tmp_path)
    finite_outputs_match(model, fn, inputs)
    if nodes is not None:
        assert op_types(model) == nodes
    else:
        assert op_types(model)[0] == "Pad"


def test_pooling_refuses_what_it_cannot_know_at_a_dynamic_size(tmp_path):
    # with ceil_mode and a dynamic length, the last window may lie in the padding only: ONNX
    # Runtime would drop it where oar keeps it, so the export says so instead
    fn = oar.jit.to_static(lambda x: F.max_pool1d(x, 2, stride=2, padding=1, ceil_mode=True),
                           input_spec=[InputSpec([1, 2, None], "float32", "x")], full_graph=True)
    with pytest.raises(oar.onnx.ExportError, match="max_pool.*dynamic spatial sizes"):
        oar.onnx.export(fn, str(tmp_path / "m"))
    # without ceil_mode no window can: the plain MaxPool, at any length
    specs = [InputSpec([1, 2, None], "float32", "x0")]
    model = export_and_compare(lambda x: F.max_pool1d(x, 3, stride=2, padding=1), [rand(1, 2, 7)], tmp_path,
                               specs=specs, feeds_for=[[rand(1, 2, 12)]], name="dynamic")
    assert op_types(model) == ["MaxPool"]


def _adaptive(name, output_size, mask=False):
    op = registries().ops.get(name)

    def fn(x):
        out = dispatch(op, (x,), {"output_size": output_size})
        return out if mask else (out[0] if isinstance(out, tuple) else out)

    return fn


ADAPTIVE = {
    "avg_global": (_adaptive("adaptive_avg_pool", [1, 1]), [rand(2, 3, 5, 7)], ["GlobalAveragePool"]),
    "avg_dividing": (_adaptive("adaptive_avg_pool", [2, 3]), [rand(2, 3, 6, 9)], ["AveragePool"]),
    "avg_3d_dividing": (_adaptive("adaptive_avg_pool", [2, 1, 3]), [rand(1, 2, 4, 3, 6)], ["AveragePool"]),
    "avg_uneven": (_adaptive("adaptive_avg_pool", [3, 4]), [rand(2, 3, 7, 9)], ["MatMul", "MatMul"]),
    "avg_3d_uneven": (_adaptive("adaptive_avg_pool", [3, 2, 4]), [rand(1, 2, 5, 4, 7)], None),
    "avg_1d_upsampling": (_adaptive("adaptive_avg_pool", [5]), [rand(2, 2, 3)], ["MatMul"]),
    "max_global": (_adaptive("adaptive_max_pool", [1, 1]), [rand(2, 3, 5, 7)], ["GlobalMaxPool"]),
    "max_dividing_mask": (_adaptive("adaptive_max_pool", [2, 3], mask=True), [rand(2, 3, 6, 9)],
                          ["MaxPool", "Mod", "Cast"]),
    "max_global_mask": (_adaptive("adaptive_max_pool", [1, 1], mask=True), [rand(2, 3, 5, 7)],
                        ["MaxPool", "Mod", "Cast"]),
    "max_uneven": (_adaptive("adaptive_max_pool", [3, 4]), [rand(2, 3, 7, 9)], ["Reshape", "Gather", "ReduceMax"]),
    "max_uneven_mask": (_adaptive("adaptive_max_pool", [3, 4], mask=True), [rand(2, 3, 7, 9)], None),
    "max_3d_upsampling_mask": (_adaptive("adaptive_max_pool", [3, 2, 5], mask=True), [rand(1, 2, 2, 4, 3)], None),
}


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("case", sorted(ADAPTIVE))
def test_adaptive_pool(case, opset, tmp_path):
    fn, inputs, nodes = ADAPTIVE[case]
    model = export_and_compare(fn, inputs, tmp_path, opset=opset)
    if nodes is not None:
        assert op_types(model) == nodes


# -- normalisation --------------------------------------------------------------------------------
@pytest.mark.parametrize("opset", [13, 17])
def test_layer_norm_is_layer_normalization_from_opset_17(opset, tmp_path):
    fn = lambda x, w, b: F.layer_norm(x, [3, 4], w, b, epsilon=1e-3)  # noqa: E731
    model = export_and_compare(fn, [rand(2, 3, 4) * 3 + 1, rand(12), rand(12)], tmp_path, opset=opset)
    assert ("LayerNormalization" in op_types(model)) == (opset >= 17)


@pytest.mark.parametrize("opset", [13, 17])
def test_layer_norm_layer(opset, tmp_path):
    layer = eval_layer(nn.LayerNorm(6))
    layer.weight.set_value(oar.to_tensor(rand(6)))
    model = export_and_compare(layer, [rand(2, 5, 6)], tmp_path, opset=opset)
    assert op_types(model) == (["LayerNormalization"] if opset >= 17 else
                               ["ReduceMean", "Sub", "Mul", "ReduceMean", "Add", "Sqrt", "Div", "Mul", "Add"])


def test_layer_norm_statistics(tmp_path):
    # mean and variance read: the formula, whatever the opset
    op = registries().ops.get("layer_norm")
    fn = lambda x, w, b: dispatch(op, (x, w, b), {"begin_norm_axis": 1, "epsilon": 1e-5})  # noqa: E731
    model = export_and_compare(fn, [rand(3, 2, 4), rand(8), rand(8)], tmp_path, opset=NEWEST)
    assert "LayerNormalization" not in op_types(model)


@pytest.mark.parametrize("opset", [13, 18, 21])
@pytest.mark.parametrize("affine", ["default", "trained"])
def test_group_norm(opset, affine, tmp_path):
    layer = eval_layer(nn.GroupNorm(2, 6))
    if affine == "trained":
        layer.weight.set_value(oar.to_tensor(rand(6)))
        layer.bias.set_value(oar.to_tensor(rand(6)))
    model = export_and_compare(layer, [rand(2, 6, 3, 4)], tmp_path, opset=opset)
    assert "GroupNormalization" not in op_types(model)  # see the lowering: onnx's checker refuses both forms


def test_batch_norm_layers(tmp_path):
    first = eval_layer(nn.BatchNorm2D(3))
    last = eval_layer(nn.BatchNorm2D(3, data_format="NHWC"))
    for layer in (first, last):
        layer._mean.set_value(oar.to_tensor(rand(3)))
        layer._variance.set_value(oar.to_tensor(np.abs(rand(3)) + 0.5))
        layer.weight.set_value(oar.to_tensor(rand(3)))
    assert op_types(export_and_compare(first, [rand(2, 3, 4, 5)], tmp_path, name="first")) == ["BatchNormalization"]
    # channels last: the kernel's scale and shift from the parameters, no transposes
    nodes = op_types(export_and_compare(last, [rand(2, 4, 5, 3)], tmp_path, name="last"))
    assert nodes == ["Add", "Sqrt", "Div", "Mul", "Sub", "Mul", "Add"]


def test_batch_norm_infer_channels_last_from_inputs(tmp_path):
    fn = lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, data_format="NHWC")  # noqa: E731
    export_and_compare(fn, [rand(2, 3, 4), rand(4), np.abs(rand(4)) + 0.1, rand(4), rand(4)], tmp_path)


# -- embedding, activations -----------------------------------------------------------------------
def test_embedding_layer_is_one_gather(tmp_path):
    layer = eval_layer(nn.Embedding(10, 4, padding_idx=0))
    ids = np.array([[0, 3, 9], [2, 0, 1]], np.int64)
    assert op_types(export_and_compare(layer, [ids], tmp_path)) == ["Gather"]


def test_embedding_padding_idx_zeroes_a_nonzero_row(tmp_path):
    ids = np.array([[0, 3, 2], [2, 0, 1]], np.int32)
    fn = lambda w, x: F.embedding(x, w, padding_idx=2)  # noqa: E731
    export_and_compare(fn, [rand(4, 3), ids], tmp_path)


ACTIVATIONS = {
    "gelu": (lambda x: F.gelu(x), {20: "Gelu"}),
    "gelu_tanh": (lambda x: F.gelu(x, approximate=True), {20: "Gelu"}),
    "hardswish": (F.hardswish, {14: "HardSwish"}),
    "hardsigmoid": (lambda x: F.hardsigmoid(x, slope=0.2, offset=0.4), {13: "HardSigmoid"}),
    "mish": (F.mish, {18: "Mish"}),
    "silu": (F.silu, {13: "Sigmoid"}),
    "elu": (lambda x: F.elu(x, 0.7), {13: "Elu"}),
    "selu": (F.selu, {13: "Selu"}),
    "leaky_relu": (lambda x: F.leaky_relu(x, 0.2), {13: "LeakyRelu"}),
    "softsign": (F.softsign, {13: "Softsign"}),
    "softplus": (F.softplus, {13: "Softplus"}),
    "softplus_beta_threshold": (lambda x: F.softplus(x, beta=2.0, threshold=1.0), {13: "Where"}),
    "relu6": (F.relu6, {13: "Clip"}),
    "softmax_axis0": (lambda x: F.softmax(x, axis=0), {13: "Softmax"}),
    "log_softmax_axis1": (lambda x: F.log_softmax(x, axis=1), {13: "LogSoftmax"}),
}


@pytest.mark.parametrize("opset", [13, 14, 18, 20])
@pytest.mark.parametrize("case", sorted(ACTIVATIONS))
def test_activation(case, opset, tmp_path):
    fn, native = ACTIVATIONS[case]
    x = rand(3, 4, 5) * 4
    x[0, 0, :3] = [25.0, -25.0, 0.0]  # beyond softplus's threshold, both sides
    model = export_and_compare(fn, [x], tmp_path, opset=opset)
    (since, node), = native.items()
    assert (node in op_types(model)) == (opset >= since)


def test_softmax_of_a_0d_input(tmp_path):
    export_and_compare(lambda x: F.softmax(x), [np.asarray(1.5, np.float32)], tmp_path)


@pytest.mark.parametrize("opset", [13, 17])
def test_transformer_encoder_layer(opset, tmp_path):
    # attention is core ops around nn's softmax; with the linears and layer norms of the block
    layer = eval_layer(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, activation="gelu"))
    mask = np.triu(np.full((5, 5), -1e9, np.float32), 1)
    model = export_and_compare(lambda x: layer(x, oar.to_tensor(mask)), [rand(2, 5, 8)], tmp_path, opset=opset)
    assert "Softmax" in op_types(model)


# -- interpolate ----------------------------------------------------------------------------------
INTERPOLATIONS = {
    "nearest_size": (lambda x: F.interpolate(x, size=[7, 9]), [rand(1, 2, 4, 5)]),
    "nearest_scale": (lambda x: F.interpolate(x, scale_factor=[2.5, 1.5]), [rand(1, 2, 4, 5)]),
    "nearest_down": (lambda x: F.interpolate(x, size=[3, 2]), [rand(1, 2, 7, 5)]),
    "bilinear_half_pixel": (lambda x: F.interpolate(x, size=[7, 3], mode="bilinear"), [rand(2, 2, 4, 5)]),
    "bilinear_align_corners": (lambda x: F.interpolate(x, size=[7, 1], mode="bilinear", align_corners=True),
                               [rand(2, 2, 4, 5)]),
    "bilinear_align_mode_1": (lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear", align_mode=1),
                              [rand(1, 3, 4, 5)]),
    "bilinear_nhwc": (lambda x: F.interpolate(x, size=[6, 8], mode="bilinear", data_format="NHWC"),
                      [rand(1, 3, 4, 2)]),
    "bicubic": (lambda x: F.interpolate(x, size=[9, 6], mode="bicubic"), [rand(1, 2, 5, 4)]),
    "bicubic_align_corners": (lambda x: F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=True),
                              [rand(1, 2, 3, 4)]),
    "linear": (lambda x: F.interpolate(x, size=11, mode="linear"), [rand(2, 3, 5)]),
    "linear_align_corners_down": (lambda x: F.interpolate(x, size=3, mode="linear", align_corners=True),
                                  [rand(2, 3, 8)]),
    "trilinear": (lambda x: F.interpolate(x, size=[3, 5, 4], mode="trilinear"), [rand(1, 2, 2, 3, 3)]),
    "trilinear_align_mode_1": (lambda x: F.interpolate(x, scale_factor=[1.5, 2, 0.5], mode="trilinear", align_mode=1),
                               [rand(1, 1, 4, 3, 6)]),
}


@pytest.mark.parametrize("opset", [13, 18])
@pytest.mark.parametrize("case", sorted(INTERPOLATIONS))
def test_interpolate_is_resize(case, opset, tmp_path):
    fn, inputs = INTERPOLATIONS[case]
    model = export_and_compare(fn, inputs, tmp_path, opset=opset)
    assert op_types(model) == ["Resize"]


def test_interpolate_with_a_dynamic_batch(tmp_path):
    # below opset 18 Resize's sizes cover every dim: the batch comes from Shape at run time
    specs = [InputSpec([None, 2, 4, 5], "float32", "x0")]
    fn = lambda x: F.interpolate(x, size=[6, 7], mode="bilinear")  # noqa: E731
    model = export_and_compare(fn, [rand(1, 2, 4, 5)], tmp_path, specs=specs, opset=13, feeds_for=[[rand(3, 2, 4, 5)]])
    assert op_types(model) == ["Shape", "Where", "Resize"]


def test_interpolate_nearest_where_resize_floors_elsewhere(tmp_path):
    # 6 -> 94: ONNX Runtime's float32 k / (94 / 6) floors below oar's k * 6 / 94 at some k; oar's
    # own indices are a Gather
    model = export_and_compare(lambda x: F.interpolate(x, size=[94]), [rand(1, 2, 6)], tmp_path)
    assert op_types(model) == ["Gather"]


def test_interpolate_area_is_a_weighted_gather(tmp_path):
    export_and_compare(lambda x: F.interpolate(x, size=[3, 2], mode="area"), [rand(1, 2, 7, 5)], tmp_path)


# -- quantization -----------------------------------------------------------------------------------
SCALE = np.array([0.02, 0.05, 0.1], np.float32)
ZERO_POINT = np.array([0, 3, -4], np.int8)


@pytest.mark.parametrize("opset", [13, 19, 21, 23, 25])
def test_quantize_linear_matches_oar_exactly(opset, tmp_path):
    x = (RNG.integers(-200, 200, (4, 3, 5)) + RNG.uniform(-0.45, 0.45, (4, 3, 5))).astype(np.float32)
    x *= SCALE.reshape(1, 3, 1)
    fn = lambda x: quant.quantize_linear(x, oar.to_tensor(SCALE), oar.to_tensor(ZERO_POINT), axis=1)  # noqa: E731
    model = export_and_compare(fn, [x], tmp_path, opset=opset)
    assert op_types(model) == ["QuantizeLinear"]
    outputs_equal(model, fn, [x])


def test_quantize_linear_below_8_bits_clips(tmp_path):
    fn = lambda x: quant.quantize_linear(x, oar.to_tensor(np.float32(0.1)), bit_length=4)  # noqa: E731
    model = export_and_compare(fn, [rand(5, 6) * 2], tmp_path)
    assert op_types(model) == ["QuantizeLinear", "Clip"]


class QDQLinear(nn.Layer):
    """A QAT-style linear: the input quantized per tensor, the weight per output channel."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 3)
        self.w_scale = oar.to_tensor(np.abs(self.linear.weight.numpy()).max(axis=0) / 127)

    def forward(self, x):
        xq = quant.fake_quantize_dequantize(x, oar.to_tensor(np.float32(0.03)))
        wq = quant.fake_quantize_dequantize(self.linear.weight, self.w_scale, axis=1)
        return F.linear(xq, wq, self.linear.bias)


@pytest.mark.parametrize("bit_length", [8, 5])
def test_fake_quantize_dequantize_is_the_qdq_pair_bit_for_bit(bit_length, tmp_path):
    x = (RNG.integers(-150, 150, (2, 3, 4)) + RNG.uniform(-0.45, 0.45, (2, 3, 4))).astype(np.float32)
    x *= SCALE.reshape(1, 3, 1)
    fn = lambda x: quant.fake_quantize_dequantize(x, oar.to_tensor(SCALE), oar.to_tensor(ZERO_POINT), axis=1,  # noqa: E731
                                                  bit_length=bit_length)
    model = export_and_compare(fn, [x], tmp_path)
    assert op_types(model) == ["QuantizeLinear"] + ["Clip"] * (bit_length < 8) + ["DequantizeLinear"]
    outputs_equal(model, fn, [x])


def test_qdq_model_runs_as_oar_computes(tmp_path):
    layer = eval_layer(QDQLinear())
    model = export_and_compare(layer, [rand(4, 6)], tmp_path)
    assert op_types(model).count("QuantizeLinear") == 2 and op_types(model).count("DequantizeLinear") == 2


def test_dequantize_and_int8_linears(tmp_path):
    q, s = quant.weight_quantize(oar.to_tensor(rand(8, 5)))
    q, s = q.numpy(), s.numpy()
    export_and_compare(lambda q, s: quant.dequantize_linear(q, s, oar.to_tensor(np.zeros(5, np.int8)), axis=0),
                       [q, s], tmp_path, name="dq")
    export_and_compare(lambda x, q, s: quant.weight_only_linear(x, q, weight_scale=s), [rand(2, 3, 8), q, s], tmp_path,
                       name="wol")
    x = rand(6, 8) * 0.5
    x[:, 2] += 10.0  # an outlier column
    export_and_compare(lambda x, q, s: quant.llm_int8_linear(x, q, weight_scale=s, threshold=6.0), [x, q, s],
                       tmp_path, name="llm")
    # leading dims known at run time only: the output shape from Shape
    x3 = x.reshape(2, 3, 8)
    specs = [InputSpec([None, 3, 8], "float32", "x0"), InputSpec.from_numpy(q, name="x1"),
             InputSpec.from_numpy(s, name="x2")]
    export_and_compare(lambda x, q, s: quant.llm_int8_linear(x, q, weight_scale=s, threshold=6.0), [x3, q, s],
                       tmp_path, specs=specs, feeds_for=[[np.concatenate([x3, x3 * 0.5]), q, s]], name="llm3")


# -- fused ops ------------------------------------------------------------------------------------
def test_fused_conv2d_epilogues(tmp_path):
    fn = lambda x, w, b: fused_conv2d(x, w, b, padding=[1, 1, 0, 0], act="hardswish", max_pool=2)  # noqa: E731
    model = export_and_compare(fn, [rand(1, 3, 6, 8), rand(4, 3, 3, 3), rand(1, 4, 1, 1)], tmp_path, opset=14)
    assert op_types(model) == ["Reshape", "Conv", "HardSwish", "MaxPool"]


def test_fused_linear_with_transposed_weight(tmp_path):
    fn = lambda x, w, b: call_op("fused_linear", [x, w, b], {  # noqa: E731
        "transpose_x": False, "transpose_y": True, "act": "leaky_relu", "act_attrs": {"negative_slope": 0.3}})
    model = export_and_compare(fn, [rand(3, 5), rand(4, 5), rand(4)], tmp_path)
    assert op_types(model) == ["Gemm", "LeakyRelu"]


def test_fused_elementwise_of_nn_activations(tmp_path):
    chain = [["multiply", [0, 1], {}], ["gelu", [2], {"approximate": True}], ["softplus", [3],
                                                                             {"beta": 1.0, "threshold": 20.0}]]
    fn = lambda x, y: oar.ops.fused_elementwise(x, y, chain=chain)  # noqa: E731
    model = export_and_compare(fn, [rand(2, 3), rand(3)], tmp_path, opset=20)
    assert op_types(model) == ["Mul", "Gelu", "Softplus"]


FUSIBLE_ATTRS = {
    "clip": {"min": 0.3, "max": 1.7}, "elu": {"alpha": 0.5}, "gelu": {"approximate": False},
    "hardsigmoid": {"slope": 0.2, "offset": 0.5}, "leaky_relu": {"negative_slope": 0.1}, "pow": {"factor": 1.5},
    "scale": {"scale": 2.0, "bias": -1.0, "bias_after_scale": True}, "softplus": {"beta": 2.0, "threshold": 3.0},
}


@pytest.mark.parametrize("op", sorted(n for n, o in registries().ops.items() if "fusible" in o.traits))
def test_fused_elementwise_step_of_every_fusible_op(op, tmp_path):
    # each step through its op's own lowering: 1 + |x| keeps log, sqrt and pow in their domain
    binary = "binary" in registries().ops.get(op).traits
    chain = [["abs", [0], {}], ["add", [2, 1], {}], [op, [3, 1] if binary else [3], FUSIBLE_ATTRS.get(op, {})],
             ["multiply", [4, 0], {}]]
    fn = lambda x, y: oar.ops.fused_elementwise(x, y, chain=chain)  # noqa: E731
    export_and_compare(fn, [rand(3, 4) * 2, np.abs(rand(4)) + 1.0], tmp_path)


# -- every opset ----------------------------------------------------------------------------------
class ManyOps(nn.Layer):
    """One model of most of nn's lowerings, written at every opset oar supports."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2D(3, 6, 3, padding=1)
        self.norm = nn.GroupNorm(3, 6)
        self.up = nn.Conv2DTranspose(6, 4, 2, stride=2)
        self.ln = nn.LayerNorm(4)
        self.fc = nn.Linear(4, 5)

    def forward(self, x):
        y = F.gelu(self.norm(self.conv(x)))
        y = F.max_pool2d(y, 2, ceil_mode=True)
        y = F.interpolate(self.up(y), size=[5, 7], mode="bilinear")
        y = F.hardswish(F.avg_pool2d(y, 3, stride=2, padding=1, exclusive=False))
        y = F.adaptive_avg_pool2d(y, 1).flatten(1)
        return F.log_softmax(self.fc(F.mish(self.ln(y))), axis=-1)


@pytest.mark.parametrize("opset", list(range(13, NEWEST + 1)))
def test_every_opset_writes_a_valid_model(opset, tmp_path):
    specs = [InputSpec([None, 3, 9, 9], "float32", "x0")]
    export_and_compare(eval_layer(ManyOps()), [rand(2, 3, 9, 9)], tmp_path, specs=specs, opset=opset,
                       feeds_for=[[rand(3, 3, 9, 9)]])


def test_gradient_ops_say_why_they_have_no_lowering():
    from oar.onnx.lowerings import not_lowered_ops

    reasons = not_lowered_ops()
    assert oar.onnx.lowering_of("conv_weight_grad") is None
    assert "inference" in reasons["conv_weight_grad"] and "CTC" in reasons["warpctc"]


def test_an_exported_model_runs_on_other_batches(tmp_path):
    layer = eval_layer(nn.Sequential(nn.Conv2D(2, 3, 3), nn.BatchNorm2D(3), nn.AdaptiveAvgPool2D(1)))
    path = str(tmp_path / "m")
    oar.onnx.export(layer, path, input_spec=[InputSpec([None, 2, 5, 5], "float32", "x")])
    sess = session(path + ".onnx")
    x = rand(4, 2, 5, 5)
    with oar.no_grad():
        expected = layer(oar.to_tensor(x)).numpy()
    np.testing.assert_allclose(sess.run(None, {"x": x})[0], expected, rtol=1e-5, atol=1e-5)
