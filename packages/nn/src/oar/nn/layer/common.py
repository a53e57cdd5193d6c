"""Common layers: Linear, Bilinear, Identity, Flatten, Dropout, Embedding, Upsample, the Pad
layers (by mode: Constant/Zero/Circular/Reflection/ReplicationPad1D-3D, with Paddle 3.3's
lower-case aliases), Fold, Unfold, Unflatten, PairwiseDistance, CosineSimilarity.

>>> import oar
>>> net = oar.nn.Sequential(oar.nn.Flatten(), oar.nn.Linear(12, 2))
>>> net(oar.rand([5, 3, 4])).shape
[5, 2]
"""

from __future__ import annotations

import oar
from oar import Tensor
from oar.errors import ArgumentError, ShapeError
from oar.nn import functional as F
from oar.nn.layer.layers import Layer, size_arg


class Linear(Layer):
    """``y = x @ weight + bias``, weight ``[in_features, out_features]`` (Paddle's layout),
    XavierUniform weights and zero bias by default.

    >>> import oar
    >>> fc = oar.nn.Linear(4, 2)
    >>> fc.weight.shape, fc.bias.shape
    ([4, 2], [2])
    """

    def __init__(self, in_features: int, out_features: int, weight_attr=None, bias_attr=None, name=None):
        super().__init__()
        self.in_features = size_arg("Linear", "in_features", in_features)
        self.out_features = size_arg("Linear", "out_features", out_features)
        self.weight = self.create_parameter([self.in_features, self.out_features], attr=weight_attr)
        self.bias = self.create_parameter([self.out_features], attr=bias_attr, is_bias=True)
        self.name = name

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, dtype={self._dtype}"


class Bilinear(Layer):
    """``out[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]``: weight
    ``[out_features, in1_features, in2_features]`` (XavierUniform), bias ``[1, out_features]`` (zeros).

    >>> import oar
    >>> m = oar.nn.Bilinear(2, 3, 4)
    >>> m.weight.shape, m(oar.rand([5, 2]), oar.rand([5, 3])).shape
    ([4, 2, 3], [5, 4])
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int, weight_attr=None, bias_attr=None,
                 name=None):
        super().__init__()
        in1_features, in2_features, out_features = (size_arg("Bilinear", name, v) for name, v in (
            ("in1_features", in1_features), ("in2_features", in2_features), ("out_features", out_features)))
        self._in1_features, self._in2_features, self._out_features = in1_features, in2_features, out_features
        self._name = name
        self.weight = self.create_parameter([out_features, in1_features, in2_features], attr=weight_attr)
        self.bias = self.create_parameter([1, out_features], attr=bias_attr, is_bias=True)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self._in1_features}, in2_features={self._in2_features}, "
                f"out_features={self._out_features}, dtype={self._dtype}")


class Identity(Layer):
    """Returns its input; extra constructor arguments are accepted and ignored (as in Paddle).

    >>> import oar
    >>> x = oar.ones([2])
    >>> oar.nn.Identity(54, unused="x")(x) is x
    True
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return input


class Flatten(Layer):
    """Merge the axes ``start_axis..stop_axis`` (default 1..-1) into one.

    >>> import oar
    >>> oar.nn.Flatten()(oar.ones([2, 3, 4])).shape
    [2, 12]
    """

    def __init__(self, start_axis: int = 1, stop_axis: int = -1):
        super().__init__()
        self.start_axis, self.stop_axis = start_axis, stop_axis

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return oar.flatten(input, start_axis=self.start_axis, stop_axis=self.stop_axis)

    def extra_repr(self) -> str:
        return f"start_axis={self.start_axis}, stop_axis={self.stop_axis}"


class Dropout(Layer):
    """Zero elements with probability ``p`` in training (``F.dropout``); the identity (or a
    ``1 - p`` scaling with ``mode='downscale_in_infer'``) in evaluation.

    >>> import oar
    >>> m = oar.nn.Dropout(0.5).eval()
    >>> m(oar.ones([3])).tolist()
    [1.0, 1.0, 1.0]
    """

    def __init__(self, p: float = 0.5, inplace: bool = False, axis=None, mode: str = "upscale_in_train", name=None):
        super().__init__()
        F.common._probability("Dropout", p)
        if mode not in F.common._DROPOUT_MODES:
            raise ArgumentError(f"Dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}")
        self.p, self.axis, self.mode, self.name = p, axis, mode, name
        self.inplace = inplace  # Paddle 3.3: write the result into the input

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return F.dropout(input, p=self.p, axis=self.axis, training=self.training, inplace=self.inplace, mode=self.mode)

    def extra_repr(self) -> str:
        return f"p={self.p}, axis={self.axis}, mode={self.mode}"


class Dropout2D(Layer):
    """Zero whole channels of a 4-D input with probability ``p`` in training."""

    def __init__(self, p: float = 0.5, data_format: str = "NCHW", name=None):
        super().__init__()
        F.common._probability("Dropout2D", p)
        self.p, self.data_format, self.name = p, data_format, name

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return F.dropout2d(input, p=self.p, training=self.training, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"p={self.p}, data_format={self.data_format}"


class Dropout3D(Layer):
    """Zero whole channels of a 5-D input with probability ``p`` in training."""

    def __init__(self, p: float = 0.5, data_format: str = "NCDHW", name=None):
        super().__init__()
        F.common._probability("Dropout3D", p)
        self.p, self.data_format, self.name = p, data_format, name

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return F.dropout3d(input, p=self.p, training=self.training, data_format=self.data_format)

    def extra_repr(self) -> str:
        return f"p={self.p}, data_format={self.data_format}"


class AlphaDropout(Layer):
    """Alpha dropout (for SELU networks) with probability ``p`` in training."""

    def __init__(self, p: float = 0.5, name=None):
        super().__init__()
        F.common._probability("AlphaDropout", p)
        self.p, self.name = p, name

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return F.alpha_dropout(input, p=self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"


class Embedding(Layer):
    """A lookup table ``weight [num_embeddings, embedding_dim]`` (XavierUniform, as Paddle's
    default) indexed by integer ids. The ``padding_idx`` row starts at zero, outputs zeros and
    gets no gradient.

    >>> import oar
    >>> emb = oar.nn.Embedding(10, 3, padding_idx=0)
    >>> emb.weight[0].tolist(), emb(oar.to_tensor([[1, 2]])).shape
    ([0.0, 0.0, 0.0], [1, 2, 3])
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, max_norm=None, norm_type: float = 2.0,
                 *, scale_grad_by_freq: bool = False, sparse: bool = False, _weight=None, _freeze: bool = False,
                 device=None, dtype=None, weight_attr=None, name=None):
        # Paddle 3.3's keywords: max_norm/norm_type/scale_grad_by_freq go to F.embedding, _weight is
        # the initial table, _freeze makes it untrainable, device/dtype place and type it
        super().__init__(dtype=dtype)
        num_embeddings = size_arg("Embedding", "num_embeddings", num_embeddings)
        embedding_dim = size_arg("Embedding", "embedding_dim", embedding_dim)
        if padding_idx is not None:
            padding_idx = size_arg("Embedding", "padding_idx", padding_idx, minimum=-num_embeddings)
        if padding_idx is not None and not -num_embeddings <= padding_idx < num_embeddings:
            raise ArgumentError(f"Embedding: padding_idx must lie in [{-num_embeddings}, {num_embeddings}), "
                                f"got {padding_idx}")
        self._num_embeddings, self._embedding_dim = num_embeddings, embedding_dim
        self._padding_idx = None if padding_idx is None else padding_idx % num_embeddings
        self._sparse = sparse
        self._max_norm, self._norm_type, self._scale_grad_by_freq = max_norm, norm_type, scale_grad_by_freq
        self._name = name
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr)
        if _weight is not None:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise ShapeError(f"Embedding: _weight must have shape [{num_embeddings}, {embedding_dim}], got "
                                 f"{list(_weight.shape)}")
            initial = _weight if isinstance(_weight, Tensor) else oar.to_tensor(_weight)
            self.weight.set_value(initial.astype(self.weight.dtype))
        elif self._padding_idx is not None:
            with oar.no_grad():
                self.weight[self._padding_idx] = 0.0
        if _freeze:
            self.weight.stop_gradient = True
            self.weight.trainable = False
        if device is not None:
            self.to(device=device)

    def forward(self, x):
        return F.embedding(x, self.weight, padding_idx=self._padding_idx, max_norm=self._max_norm,
                           norm_type=self._norm_type, sparse=self._sparse, scale_grad_by_freq=self._scale_grad_by_freq)

    def extra_repr(self) -> str:
        text = f"{self._num_embeddings}, {self._embedding_dim}"
        if self._padding_idx is not None:
            text += f", padding_idx={self._padding_idx}"
        return text + (", sparse=True" if self._sparse else "")


class Upsample(Layer):
    """Resize the spatial axes (``F.interpolate``): to ``size`` or by ``scale_factor``, with
    ``mode`` nearest (default), linear, bilinear, bicubic, trilinear or area.

    >>> import oar
    >>> oar.nn.Upsample(scale_factor=2)(oar.ones([1, 1, 2, 2])).shape
    [1, 1, 4, 4]
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool = False,
                 align_mode: int = 0, data_format=None, recompute_scale_factor=None, name=None):
        super().__init__()
        self.size, self.scale_factor, self.mode = size, scale_factor, str(mode).lower()
        self.align_corners, self.align_mode = align_corners, align_mode
        self.data_format, self.recompute_scale_factor, self.name = data_format, recompute_scale_factor, name

    def forward(self, x):
        return F.interpolate(x, size=self.size, scale_factor=self.scale_factor, mode=self.mode,
                             align_corners=self.align_corners, align_mode=self.align_mode,
                             data_format=self.data_format, recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        where = f"scale_factor={self.scale_factor}" if self.size is None else f"size={self.size}"
        return f"{where}, mode={self.mode}, align_corners={self.align_corners}, align_mode={self.align_mode}"


class UpsamplingNearest2D(Upsample):
    """Nearest-neighbour resizing of a 4-D input."""

    def __init__(self, size=None, scale_factor=None, data_format: str = "NCHW", name=None):
        super().__init__(size, scale_factor, mode="nearest", data_format=data_format, name=name)


class UpsamplingBilinear2D(Upsample):
    """Bilinear resizing of a 4-D input with ``align_corners=True`` (as Paddle's layer).

    >>> import oar
    >>> oar.nn.UpsamplingBilinear2D(size=[3, 3])(oar.ones([1, 1, 2, 2])).shape
    [1, 1, 3, 3]
    """

    def __init__(self, size=None, scale_factor=None, data_format: str = "NCHW", name=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True, data_format=data_format, name=name)


class _PadNd(Layer):
    _spatial = 0
    _default_format = ""

    def __init__(self, padding, mode: str = "constant", value: float = 0.0, data_format=None, name=None):
        super().__init__()
        count = 2 * self._spatial
        values = [padding] * count if isinstance(padding, int) else list(padding)
        if len(values) != count or not all(isinstance(v, int) for v in values):
            raise ArgumentError(f"{type(self).__name__}: padding must be an int or {count} ints, got {padding!r}")
        if mode not in ("constant", "reflect", "replicate", "circular"):
            raise ArgumentError(f"{type(self).__name__}: mode must be constant, reflect, replicate or circular, "
                                f"got {mode!r}")
        self._pad, self._mode, self._value = values, mode, value
        self._data_format = data_format or self._default_format
        self._name = name

    def forward(self, x):
        if x.ndim != self._spatial + 2:
            raise ArgumentError(f"{type(self).__name__}: expected a {self._spatial + 2}-D input, got shape {x.shape}")
        return F.pad(x, self._pad, mode=self._mode, value=self._value, data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"padding={self._pad}, mode={self._mode}, value={self._value}, data_format={self._data_format}"


class Pad1D(_PadNd):
    """Pad the length of ``[N, C, L]``: ``padding = [left, right]`` (or one int for both)."""

    _spatial, _default_format = 1, "NCL"

    def __init__(self, padding, mode: str = "constant", value: float = 0.0, data_format: str = "NCL", name=None):
        super().__init__(padding, mode, value, data_format, name)


class Pad2D(_PadNd):
    """Pad height and width: ``padding = [left, right, top, bottom]`` (or one int for all).

    >>> import oar
    >>> oar.nn.Pad2D([1, 1, 2, 0], mode="replicate")(oar.ones([1, 1, 2, 2])).shape
    [1, 1, 4, 4]
    """

    _spatial, _default_format = 2, "NCHW"

    def __init__(self, padding, mode: str = "constant", value: float = 0.0, data_format: str = "NCHW", name=None):
        super().__init__(padding, mode, value, data_format, name)


class Pad3D(_PadNd):
    """Pad depth, height and width: ``padding = [left, right, top, bottom, front, back]``."""

    _spatial, _default_format = 3, "NCDHW"

    def __init__(self, padding, mode: str = "constant", value: float = 0.0, data_format: str = "NCDHW", name=None):
        super().__init__(padding, mode, value, data_format, name)


class ZeroPad2D(_PadNd):
    """Zero-pad height and width: ``padding = [left, right, top, bottom]`` (or one int)."""

    _spatial, _default_format = 2, "NCHW"

    def __init__(self, padding, data_format: str = "NCHW", name=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


class ZeroPad1D(_PadNd):
    """Zero-pad the length of ``[N, C, L]``: ``padding = [left, right]`` (or one int)."""

    _spatial, _default_format = 1, "NCL"

    def __init__(self, padding, data_format: str = "NCL", name=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


class ZeroPad3D(_PadNd):
    """Zero-pad depth, height and width: ``padding = [left, right, top, bottom, front, back]`` (or one int)."""

    _spatial, _default_format = 3, "NCDHW"

    def __init__(self, padding, data_format: str = "NCDHW", name=None):
        super().__init__(padding, "constant", 0.0, data_format, name)


def _mode_pads(mode: str, doc: str):
    """The 1-D, 2-D and 3-D pad layers of one ``mode`` (Paddle's CircularPad1D, ... ReplicationPad3D)."""
    classes = []
    for spatial, base, data_format in ((1, Pad1D, "NCL"), (2, Pad2D, "NCHW"), (3, Pad3D, "NCDHW")):
        def __init__(self, padding, data_format=data_format, name=None):
            _PadNd.__init__(self, padding, mode, 0.0, data_format, name)

        name = f"{mode.capitalize()}Pad{spatial}D".replace("Reflect", "Reflection").replace("Replicate", "Replication")
        classes.append(type(name, (base,), {
            "__init__": __init__, "__module__": __name__, "__qualname__": name,
            "__doc__": f"Pad the {spatial} spatial dim(s) of a {data_format} input with {doc}: ``padding`` is "
                       f"{2 * spatial} ints (before and after each dim, from the last) or one int for all."}))
    return classes


CircularPad1D, CircularPad2D, CircularPad3D = _mode_pads("circular", "the values of the other end (wrap-around)")
ReflectionPad1D, ReflectionPad2D, ReflectionPad3D = _mode_pads("reflect", "their mirror image (the edge not repeated)")
ReplicationPad1D, ReplicationPad2D, ReplicationPad3D = _mode_pads("replicate", "copies of the edge values")


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value, data_format=None, name=None):
        super().__init__(padding, "constant", float(value), data_format, name)


class ConstantPad1D(_ConstantPadNd, Pad1D):
    """Pad the length of ``[N, C, L]`` with ``value``: ``padding = [left, right]`` (or one int).

    >>> import oar
    >>> oar.nn.ConstantPad1D([1, 2], value=7.0)(oar.zeros([1, 1, 2])).tolist()
    [[[7.0, 0.0, 0.0, 7.0, 7.0]]]
    """

    def __init__(self, padding, value, data_format: str = "NCL", name=None):
        super().__init__(padding, value, data_format, name)


class ConstantPad2D(_ConstantPadNd, Pad2D):
    """Pad height and width with ``value``: ``padding = [left, right, top, bottom]`` (or one int)."""

    def __init__(self, padding, value, data_format: str = "NCHW", name=None):
        super().__init__(padding, value, data_format, name)


class ConstantPad3D(_ConstantPadNd, Pad3D):
    """Pad depth, height and width with ``value``: ``padding = [left, right, top, bottom, front, back]``."""

    def __init__(self, padding, value, data_format: str = "NCDHW", name=None):
        super().__init__(padding, value, data_format, name)


class Unfold(Layer):
    """im2col (``F.unfold``): ``[N, C, H, W]`` -> ``[N, C * kh * kw, blocks]``.

    >>> import oar
    >>> oar.nn.Unfold(kernel_sizes=[3, 3])(oar.rand([2, 4, 5, 5])).shape
    [2, 36, 9]
    """

    def __init__(self, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.kernel_sizes, self.dilations, self.paddings, self.strides = kernel_sizes, dilations, paddings, strides
        self.name = name

    def forward(self, x):
        return F.unfold(x, self.kernel_sizes, self.strides, self.paddings, self.dilations)

    def extra_repr(self) -> str:
        return (f"kernel_sizes={self.kernel_sizes}, dilations={self.dilations}, paddings={self.paddings}, "
                f"strides={self.strides}")


class Fold(Layer):
    """col2im (``F.fold``): ``[N, C * kh * kw, blocks]`` -> ``[N, C, *output_sizes]``, overlaps summed.

    >>> import oar
    >>> oar.nn.Fold(output_sizes=[4, 5], kernel_sizes=2)(oar.rand([2, 12, 12])).shape
    [2, 3, 4, 5]
    """

    def __init__(self, output_sizes, kernel_sizes, dilations=1, paddings=0, strides=1, name=None):
        super().__init__()
        self.output_sizes, self.kernel_sizes = output_sizes, kernel_sizes
        self.dilations, self.paddings, self.strides, self.name = dilations, paddings, strides, name

    def forward(self, x):
        return F.fold(x, self.output_sizes, self.kernel_sizes, self.strides, self.paddings, self.dilations)

    def extra_repr(self) -> str:
        return (f"output_sizes={self.output_sizes}, kernel_sizes={self.kernel_sizes}, dilations={self.dilations}, "
                f"paddings={self.paddings}, strides={self.strides}")


class Unflatten(Layer):
    """Split dimension ``axis`` into ``shape`` (a list, tuple or 1-D Tensor; one entry may be -1).

    >>> import oar
    >>> oar.nn.Unflatten(1, [2, 3])(oar.rand([4, 6, 5])).shape
    [4, 2, 3, 5]
    """

    def __init__(self, axis: int, shape, name=None):
        super().__init__()
        if isinstance(axis, bool) or not isinstance(axis, int):
            raise ArgumentError(f"Unflatten: axis must be an int, got {axis!r}")
        if not isinstance(shape, (list, tuple, Tensor)):
            raise ArgumentError(f"Unflatten: shape must be a list, tuple or Tensor, got {type(shape).__name__}")
        self.axis, self.shape, self.name = axis, shape, name

    def forward(self, input):
        return oar.unflatten(input, self.axis, self.shape)

    def extra_repr(self) -> str:
        return f"axis={self.axis}, shape={self.shape}"


class PairwiseDistance(Layer):
    """The ``p``-norm distance of ``x - y + epsilon`` along the last axis (``F.pairwise_distance``).

    >>> import oar
    >>> oar.nn.PairwiseDistance()(oar.rand([3, 4]), oar.rand([3, 4])).shape
    [3]
    """

    def __init__(self, p: float = 2.0, epsilon: float = 1e-6, keepdim: bool = False, name=None):
        super().__init__()
        self.p, self.epsilon, self.keepdim, self.name = p, epsilon, keepdim, name

    def forward(self, x, y):
        return F.pairwise_distance(x, y, self.p, self.epsilon, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.p}, epsilon={self.epsilon}, keepdim={self.keepdim}"


class CosineSimilarity(Layer):
    """Cosine similarity of two inputs along ``axis`` (default 1)."""

    def __init__(self, axis: int = 1, eps: float = 1e-8):
        super().__init__()
        self._axis, self._eps = axis, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)

    def extra_repr(self) -> str:
        return f"axis={self._axis}, eps={self._eps}"


# Paddle 3.3's lower-case aliases (the same classes)
ConstantPad1d, ConstantPad2d, ConstantPad3d = ConstantPad1D, ConstantPad2D, ConstantPad3D
CircularPad1d, CircularPad2d, CircularPad3d = CircularPad1D, CircularPad2D, CircularPad3D
ReflectionPad1d, ReflectionPad2d, ReflectionPad3d = ReflectionPad1D, ReflectionPad2D, ReflectionPad3D
ReplicationPad1d, ReplicationPad2d, ReplicationPad3d = ReplicationPad1D, ReplicationPad2D, ReplicationPad3D

__all__ = [
    "Linear", "Bilinear", "Identity", "Flatten", "Dropout", "Dropout2D", "Dropout3D", "AlphaDropout", "Embedding",
    "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D", "Pad1D", "Pad2D", "Pad3D", "ZeroPad1D", "ZeroPad2D",
    "ZeroPad3D", "ConstantPad1D", "ConstantPad2D", "ConstantPad3D", "CircularPad1D", "CircularPad2D", "CircularPad3D",
    "ReflectionPad1D", "ReflectionPad2D", "ReflectionPad3D", "ReplicationPad1D", "ReplicationPad2D",
    "ReplicationPad3D", "Fold", "Unfold", "Unflatten", "PairwiseDistance", "CosineSimilarity",
    "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d",
]
