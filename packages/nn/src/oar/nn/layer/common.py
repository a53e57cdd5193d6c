"""Common layers: Linear, Bilinear, Identity, Flatten, Dropout, Embedding, Upsample, Pad, ...

>>> import oar
>>> net = oar.nn.Sequential(oar.nn.Flatten(), oar.nn.Linear(12, 2))
>>> net(oar.rand([5, 3, 4])).shape
[5, 2]
"""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
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

    def __init__(self, p: float = 0.5, axis=None, mode: str = "upscale_in_train", name=None):
        super().__init__()
        F.common._probability("Dropout", p)
        if mode not in F.common._DROPOUT_MODES:
            raise ArgumentError(f"Dropout: mode must be 'upscale_in_train' or 'downscale_in_infer', got {mode!r}")
        self.p, self.axis, self.mode, self.name = p, axis, mode, name

    def forward(self, input):  # noqa: A002 - Paddle's argument name
        return F.dropout(input, p=self.p, axis=self.axis, training=self.training, mode=self.mode)

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

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None, sparse: bool = False,
                 weight_attr=None, name=None):
        super().__init__()
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
        self._name = name
        self.weight = self.create_parameter([num_embeddings, embedding_dim], attr=weight_attr)
        if self._padding_idx is not None:
            with oar.no_grad():
                self.weight[self._padding_idx] = 0.0

    def forward(self, x):
        return F.embedding(x, self.weight, padding_idx=self._padding_idx, sparse=self._sparse)

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


class CosineSimilarity(Layer):
    """Cosine similarity of two inputs along ``axis`` (default 1)."""

    def __init__(self, axis: int = 1, eps: float = 1e-8):
        super().__init__()
        self._axis, self._eps = axis, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, axis=self._axis, eps=self._eps)

    def extra_repr(self) -> str:
        return f"axis={self._axis}, eps={self._eps}"


__all__ = [
    "Linear", "Bilinear", "Identity", "Flatten", "Dropout", "Dropout2D", "Dropout3D", "AlphaDropout", "Embedding",
    "Upsample", "UpsamplingNearest2D", "UpsamplingBilinear2D", "Pad1D", "Pad2D", "Pad3D", "ZeroPad2D",
    "CosineSimilarity",
]
