"""Common and vision layers: Linear, Bilinear, Identity, Flatten, Dropout*, Embedding, Upsample*,
Pad*, PixelShuffle, ...: forward and gradient through the layer, Paddle's defaults, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
import oar.nn.functional as F
from oar.errors import ArgumentError, DTypeError, IndexOutOfRangeError, ShapeError

_rng = np.random.default_rng(31)


# -- Linear, Bilinear, Identity, Flatten ----------------------------------------------------------------
def test_bilinear_layer_defaults_forward_and_gradients():
    oar.seed(0)
    m = oar.nn.Bilinear(3, 2, 4)
    assert m.weight.shape == [4, 3, 2] and m.bias.shape == [1, 4] and m.bias.numpy().sum() == 0.0
    limit = math.sqrt(6.0 / (3 * 2 + 4 * 2))  # XavierUniform with Paddle's fans of [out, in1, in2]
    assert np.abs(m.weight.numpy()).max() <= limit
    x1 = oar.to_tensor(_rng.normal(size=(5, 3)), dtype="float32", stop_gradient=False)
    x2 = oar.to_tensor(_rng.normal(size=(5, 2)), dtype="float32", stop_gradient=False)
    y = m(x1, x2)
    w = m.weight.numpy()
    np.testing.assert_allclose(y.numpy(), np.einsum("ni,oij,nj->no", x1.numpy(), w, x2.numpy()), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(x1.grad.numpy(), np.einsum("oij,nj->ni", w, x2.numpy()), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.weight.grad.numpy(), np.einsum("ni,nj->ij", x1.numpy(), x2.numpy())[None].repeat(4, 0),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m.bias.grad.numpy(), [[5.0] * 4])
    assert "in1_features=3" in repr(m)
    with pytest.raises(ShapeError, match="bilinear: x1"):
        m(oar.ones([5, 2]), oar.ones([5, 2]))


def test_identity_and_flatten():
    x = oar.ones([2, 3, 4, 5])
    assert oar.nn.Identity()(x) is x
    assert oar.nn.Flatten()(x).shape == [2, 60]
    assert oar.nn.Flatten(0, 1)(x).shape == [6, 4, 5]
    assert repr(oar.nn.Flatten()) == "Flatten(start_axis=1, stop_axis=-1)"


# -- Dropout --------------------------------------------------------------------------------------------
def test_dropout_upscale_in_train_scales_kept_values_and_is_identity_in_eval():
    oar.seed(5)
    layer = oar.nn.Dropout(p=0.25)
    x = oar.to_tensor(_rng.uniform(1, 2, size=(200, 50)), dtype="float32", stop_gradient=False)
    y = layer(x)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], x.numpy()[kept] / 0.75, rtol=1e-6)
    assert abs(1.0 - kept.mean() - 0.25) < 0.02
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), kept / 0.75, rtol=1e-6)
    layer.eval()
    assert layer(x) is x


def test_dropout_downscale_in_infer():
    oar.seed(1)
    x = oar.to_tensor(_rng.uniform(1, 2, size=(100, 40)), dtype="float32")
    train = F.dropout(x, 0.4, mode="downscale_in_infer")
    kept = train.numpy() != 0
    np.testing.assert_array_equal(train.numpy()[kept], x.numpy()[kept])
    np.testing.assert_allclose(F.dropout(x, 0.4, training=False, mode="downscale_in_infer").numpy(), x.numpy() * 0.6,
                               rtol=1e-6)
    layer = oar.nn.Dropout(0.4, mode="downscale_in_infer").eval()
    np.testing.assert_allclose(layer(x).numpy(), x.numpy() * 0.6, rtol=1e-6)


def test_dropout_axis_edge_probabilities_and_seed():
    x = oar.ones([6, 40])
    oar.seed(2)
    y = F.dropout(x, 0.5, axis=1).numpy()
    assert (y == y[0]).all()  # one draw per column, shared by the rows
    assert F.dropout(x, 0.0) is x
    assert (F.dropout(x, 1.0).numpy() == 0).all()
    oar.seed(9)
    first = F.dropout(x, 0.5).numpy()
    oar.seed(9)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), first)


def test_dropout2d_and_3d_drop_whole_channels():
    oar.seed(4)
    x = oar.ones([4, 8, 3, 3])
    y = oar.nn.Dropout2D(0.5)(x).numpy()
    per_channel = y.reshape(4, 8, -1)
    assert ((per_channel == 0).all(-1) | (per_channel == 2.0).all(-1)).all()
    assert (per_channel == 0).all(-1).any() and (per_channel == 2.0).all(-1).any()
    nhwc = F.dropout2d(oar.ones([2, 3, 3, 6]), data_format="NHWC").numpy()
    assert ((nhwc == 0).all(axis=(1, 2)) | (nhwc == 2.0).all(axis=(1, 2))).all()
    y3 = oar.nn.Dropout3D(0.5)(oar.ones([2, 4, 2, 2, 2])).numpy().reshape(2, 4, -1)
    assert ((y3 == 0).all(-1) | (y3 == 2.0).all(-1)).all()
    assert oar.nn.Dropout2D().eval()(x) is x
    with pytest.raises(ShapeError, match="dropout2d: x must be a 4-D tensor"):
        F.dropout2d(oar.ones([2, 3]))


def test_alpha_dropout_keeps_mean_and_variance():
    oar.seed(6)
    x = oar.to_tensor(_rng.standard_normal(200_000), dtype="float32")
    y = oar.nn.AlphaDropout(0.2)(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    a = ((1 - 0.2) * (1 + 0.2 * alpha_p ** 2)) ** -0.5
    dropped = np.isclose(y, a * alpha_p - a * alpha_p * 0.2)  # a * alpha' + b, Paddle's affine correction
    assert abs(dropped.mean() - 0.2) < 0.01
    assert oar.nn.AlphaDropout(0.2).eval()(x) is x
    assert (F.alpha_dropout(x, 1.0).numpy() == 0).all()


def test_dropout_errors():
    with pytest.raises(ArgumentError, match=r"dropout: p must lie in \[0, 1\]"):
        F.dropout(oar.ones([2]), 1.5)
    with pytest.raises(ArgumentError, match="Dropout: p must"):
        oar.nn.Dropout("0.5")
    with pytest.raises(ArgumentError, match="dropout: mode"):
        F.dropout(oar.ones([2]), 0.5, mode="upscale")
    with pytest.raises(DTypeError, match="dropout: x must be a floating tensor"):
        F.dropout(oar.to_tensor([1, 2]), 0.5)


# -- Embedding --------------------------------------------------------------------------------------------
def test_embedding_defaults_padding_and_gradient():
    oar.seed(7)
    emb = oar.nn.Embedding(10, 4, padding_idx=2)
    weight = emb.weight.numpy()
    assert emb.weight.shape == [10, 4] and (weight[2] == 0).all()
    assert np.abs(weight).max() <= math.sqrt(6.0 / (10 + 4))  # XavierUniform, Paddle's default
    ids = oar.to_tensor([[1, 2, 1], [9, 2, 0]])
    out = emb(ids)
    assert out.shape == [2, 3, 4]
    np.testing.assert_array_equal(out.numpy()[1, 0], weight[9])
    (out * oar.arange(24, dtype="float32").reshape([2, 3, 4])).sum().backward()
    grad = emb.weight.grad.numpy()
    assert (grad[2] == 0).all()  # the padding row gets no gradient
    np.testing.assert_allclose(grad[1], np.arange(0, 4) + np.arange(8, 12))
    np.testing.assert_allclose(grad[9], np.arange(12, 16))
    assert (grad[[3, 4, 5, 6, 7, 8]] == 0).all()
    assert repr(emb) == "Embedding(10, 4, padding_idx=2)"


def test_embedding_padding_outputs_zero_even_for_a_nonzero_row_and_negative_padding_idx():
    w = oar.to_tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    assert F.embedding(oar.to_tensor([0, 2]), w, padding_idx=-1).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    assert oar.nn.Embedding(5, 2, padding_idx=-1, sparse=True)._padding_idx == 4


def test_embedding_errors():
    w = oar.ones([3, 2])
    with pytest.raises(IndexOutOfRangeError, match="embedding: x contains the id 3, out of range for 3 embeddings"):
        F.embedding(oar.to_tensor([0, 3]), w)
    with pytest.raises(IndexOutOfRangeError):
        F.embedding(oar.to_tensor([-1]), w)
    with pytest.raises(DTypeError, match="embedding: x must be an integer tensor"):
        F.embedding(oar.to_tensor([0.0]), w)
    with pytest.raises(ArgumentError, match=r"embedding: padding_idx must lie in \[-3, 3\)"):
        F.embedding(oar.to_tensor([0]), w, padding_idx=3)
    with pytest.raises(ArgumentError, match="Embedding: padding_idx"):
        oar.nn.Embedding(3, 2, padding_idx=5)


def test_one_hot_is_core_one_hot():
    assert F.one_hot(oar.to_tensor([2, 0]), 3).tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]


# -- Upsample ------------------------------------------------------------------------------------------
def test_upsample_layers():
    x = oar.to_tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    nearest = oar.nn.Upsample(scale_factor=2)(x)
    assert nearest.tolist()[0][0] == [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]]
    assert oar.nn.UpsamplingNearest2D(size=[4, 4])(x).tolist() == nearest.tolist()
    corners = oar.nn.UpsamplingBilinear2D(size=[3, 3])(x).numpy()[0, 0]
    np.testing.assert_allclose(corners, [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])  # align_corners=True
    half_pixel = oar.nn.Upsample(scale_factor=2, mode="bilinear")(x).numpy()[0, 0]
    np.testing.assert_allclose(half_pixel[0], [1.0, 1.25, 1.75, 2.0])
    assert "mode=bilinear" in repr(oar.nn.Upsample(scale_factor=2, mode="BILINEAR"))


def test_interpolate_gradient_sums_back_to_the_sources():
    x = oar.to_tensor(_rng.normal(size=(1, 1, 3, 3)), dtype="float32", stop_gradient=False)
    F.interpolate(x, scale_factor=2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((1, 1, 3, 3), 4.0))  # each pixel copied to 2 x 2
    y = oar.to_tensor(_rng.normal(size=(1, 2, 4, 4)), dtype="float32", stop_gradient=False)
    F.interpolate(y, size=[7, 5], mode="bilinear", align_corners=True).sum().backward()
    assert abs(float(y.grad.sum()) - 2 * 7 * 5) < 1e-3  # interpolation weights sum to one per output


def test_interpolate_errors():
    x = oar.ones([1, 1, 2, 2])
    with pytest.raises(ArgumentError, match="give exactly one of size and scale_factor"):
        F.interpolate(x, size=[4, 4], scale_factor=2)
    with pytest.raises(ArgumentError, match="give exactly one"):
        F.interpolate(x)
    with pytest.raises(ArgumentError, match="mode 'linear' does not apply to a 4-D x"):
        F.interpolate(x, scale_factor=2, mode="linear")
    with pytest.raises(ArgumentError, match="align_corners=True only applies"):
        F.interpolate(x, scale_factor=2, align_corners=True)
    with pytest.raises(ArgumentError, match="size must have 2 values"):
        F.interpolate(x, size=[1, 2, 3])
    with pytest.raises(ShapeError, match="interpolate: x must be 3-D, 4-D or 5-D"):
        F.interpolate(oar.ones([2, 2]), scale_factor=2)
    with pytest.raises(ArgumentError, match="scale_factor must be positive"):
        F.interpolate(x, scale_factor=-1.0)


# -- Pad ---------------------------------------------------------------------------------------------
def test_pad_layers():
    x = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3))
    padded = oar.nn.Pad2D([1, 0, 0, 1], value=-1.0)(x).numpy()[0, 0]
    np.testing.assert_array_equal(padded, [[-1, 0, 1, 2], [-1, 3, 4, 5], [-1, -1, -1, -1]])
    reflect = oar.nn.Pad2D(1, mode="reflect")(x).numpy()[0, 0]
    np.testing.assert_array_equal(reflect[1], [1, 0, 1, 2, 1])
    assert oar.nn.ZeroPad2D([1, 1, 2, 2])(x).shape == [1, 1, 6, 5]
    assert oar.nn.Pad1D([2, 1], mode="replicate")(oar.ones([1, 2, 3])).shape == [1, 2, 6]
    assert oar.nn.Pad3D(1, mode="circular")(oar.ones([1, 1, 2, 2, 2])).shape == [1, 1, 4, 4, 4]
    assert repr(oar.nn.ZeroPad2D(1)) == "ZeroPad2D(padding=[1, 1, 1, 1], mode=constant, value=0.0, data_format=NCHW)"
    xt = oar.to_tensor(np.ones((1, 1, 2, 2), np.float32), stop_gradient=False)
    oar.nn.Pad2D(1, mode="replicate")(xt).sum().backward()
    np.testing.assert_array_equal(xt.grad.numpy()[0, 0], [[4, 4], [4, 4]])


def test_pad_errors():
    with pytest.raises(ArgumentError, match="Pad2D: padding must be an int or 4 ints"):
        oar.nn.Pad2D([1, 2])
    with pytest.raises(ArgumentError, match="Pad2D: expected a 4-D input"):
        oar.nn.Pad2D(1)(oar.ones([1, 2, 3]))
    with pytest.raises(ArgumentError, match="pad: mode 'reflect' on a 4-D x needs 4 pad values"):
        F.pad(oar.ones([1, 1, 3, 3]), [1, 1], mode="reflect")
    with pytest.raises(ArgumentError, match="pad: mode must be one of"):
        F.pad(oar.ones([1, 1, 3, 3]), [1, 1, 1, 1], mode="wrap")
    with pytest.raises(ArgumentError, match="pad: pad has 6 values, more than 2 \\* 2"):
        F.pad(oar.ones([3, 3]), [1, 1, 1, 1, 1, 1])


# -- vision layers -------------------------------------------------------------------------------------
def test_pixel_shuffle_layers_round_trip():
    x = oar.to_tensor(_rng.normal(size=(2, 8, 3, 3)), dtype="float32", stop_gradient=False)
    up = oar.nn.PixelShuffle(2)(x)
    assert up.shape == [2, 2, 6, 6]
    np.testing.assert_array_equal(oar.nn.PixelUnshuffle(2)(up).numpy(), x.numpy())
    up.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(x.shape))
    shuffled = oar.nn.ChannelShuffle(2)(oar.arange(4, dtype="float32").reshape([1, 4, 1, 1]))
    assert shuffled.flatten().tolist() == [0.0, 2.0, 1.0, 3.0]
    assert repr(oar.nn.PixelShuffle(3)) == "PixelShuffle(upscale_factor=3)"
    with pytest.raises(ShapeError, match="pixel_shuffle: the 6 channels"):
        F.pixel_shuffle(oar.ones([1, 6, 2, 2]), 2)
    with pytest.raises(ArgumentError, match="PixelShuffle: upscale_factor must be a positive int"):
        oar.nn.PixelShuffle(0)


def test_cosine_similarity_and_label_smooth():
    a, b = oar.to_tensor([[1.0, 0.0], [1.0, 1.0]]), oar.to_tensor([[0.0, 2.0], [2.0, 2.0]])
    np.testing.assert_allclose(oar.nn.CosineSimilarity()(a, b).numpy(), [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(F.label_smooth(oar.to_tensor([[0.0, 1.0]]), prior_dist=oar.to_tensor([[0.5, 0.5]]),
                                              epsilon=0.5).numpy(), [[0.25, 0.75]])


def test_common_layers_are_registered():
    from oar.plugins import registries

    layers = registries().layers
    for name in ("Bilinear", "Identity", "Flatten", "Dropout", "Dropout2D", "AlphaDropout", "Embedding", "Upsample",
                 "UpsamplingBilinear2D", "Pad2D", "ZeroPad2D", "PixelShuffle", "BatchNorm2D", "LayerNorm", "GroupNorm",
                 "InstanceNorm2D", "RMSNorm"):
        assert layers.get(name) is getattr(oar.nn, name)


def test_linear_is_one_op_whose_errors_name_linear():
    x, w, b = oar.ones([3, 5]), oar.ones([4, 2]), oar.ones([2])
    with pytest.raises(ShapeError, match=r"linear: x \[3, 5\] and y \[4, 2\]: contraction dims differ"):
        F.linear(x, w, b)
    with pytest.raises(ShapeError, match=r"linear: expected x \[..., in\], weight \[in, out\] and bias \[out\]"):
        F.linear(oar.ones([3, 4]), w, oar.ones([3]))
    layer = oar.nn.Linear(4, 2)
    y = layer(oar.ones([2, 3, 4]))
    assert y._node.op.name == "linear" and y.shape == [2, 3, 2]
    y.sum().backward()  # the weight gradient contracts over both leading dims
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.full([4, 2], 6.0))
    np.testing.assert_allclose(layer.bias.grad.numpy(), [6.0, 6.0])
    assert F.linear(oar.ones([4]), w, b).shape == [2]  # a 1-d x: matmul, then the bias added


@pytest.mark.parametrize("x_needs_grad", [True, False])
def test_linear_backward_in_one_op_and_its_second_order(x_needs_grad, monkeypatch):
    """Eager backward runs one linear_grad op (the gradients of x, weight, bias); with
    create_graph the composite rule runs, so the gradient differentiates again."""
    from oar.nn.functional import common

    ran = []
    dispatch = common.dispatch

    def recorded(op, inputs, attrs):
        if op is common.linear_grad_op:
            ran.append(attrs)
        return dispatch(op, inputs, attrs)

    monkeypatch.setattr(common, "dispatch", recorded)
    rng = np.random.default_rng(0)
    xv, wv, bv = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5)), rng.standard_normal(5)
    x = oar.to_tensor(xv, stop_gradient=not x_needs_grad)
    w, b = oar.to_tensor(wv, stop_gradient=False), oar.to_tensor(bv, stop_gradient=False)
    g = rng.standard_normal((2, 3, 5))
    (F.linear(x, w, b) * oar.to_tensor(g)).sum().backward()
    assert ran == [{"x_grad": x_needs_grad}]
    np.testing.assert_allclose(w.grad.numpy(), xv.reshape(6, 4).T @ g.reshape(6, 5), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), g.reshape(6, 5).sum(0), rtol=1e-12)
    assert (x.grad is None) != x_needs_grad
    if x_needs_grad:
        np.testing.assert_allclose(x.grad.numpy(), g @ wv.T, rtol=1e-12)
    # second order: d/dw of sum((dL/dx)^2) with L = sum(linear(x) * g)
    x2 = oar.to_tensor(xv, stop_gradient=False)
    (gx,) = oar.grad((F.linear(x2, w, b) * oar.to_tensor(g)).sum(), [x2], create_graph=True)
    (gw,) = oar.grad((gx * gx).sum(), [w])
    g2 = g.reshape(6, 5)
    np.testing.assert_allclose(gw.numpy(), 2 * (g2 @ wv.T).T @ g2, rtol=1e-10)


def test_linear_grad_keeps_small_products_on_one_blas_thread(monkeypatch):
    """A threaded OpenBLAS product leaves its worker spinning (oar._engine.threads): linear_grad's
    products go through blas_threads_for, as matmul's and linear's do (W2 at 2 threads lost a
    third of its speed when they did not)."""
    from oar.nn.functional import common

    sizes = []
    real = common.blas_threads_for

    def recorded(m, k, n):
        sizes.append((m, k, n))
        return real(m, k, n)

    monkeypatch.setattr(common, "blas_threads_for", recorded)
    g, x, w = np.ones((128, 10), np.float32), np.ones((128, 512), np.float32), np.ones((512, 10), np.float32)
    common._linear_grad_kernel(g, x, w, x_grad=True)
    assert sizes == [(512, 128, 10), (128, 10, 512)]  # gw = x.T @ g, gx = g @ w.T
