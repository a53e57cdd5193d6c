"""Normalisation layers of oar.nn: BatchNorm (legacy), BatchNorm1D/2D/3D, LayerNorm, GroupNorm,
InstanceNorm1D/2D/3D, RMSNorm, SyncBatchNorm (single-process: a BatchNorm of any rank) and
LocalResponseNorm, with Paddle's parameter names, initial values and state-dict
keys (``weight``, ``bias``, ``_mean``, ``_variance`` for batch norm; ``scale``, ``bias`` for
instance norm).

>>> import oar
>>> bn = oar.nn.BatchNorm2D(3)
>>> list(bn.state_dict())
['weight', 'bias', '_mean', '_variance']
"""

from __future__ import annotations

import numbers

import numpy as np

import oar
from oar.errors import ArgumentError, ShapeError
from oar.nn import functional as F
from oar.nn.initializer import Constant, Normal
from oar.nn.layer.layers import Layer, size_arg
from oar.nn.param_attr import ParamAttr


def _frozen_when_lr_zero(param, attr) -> None:
    # Paddle: a parameter whose ParamAttr has learning_rate 0 gets stop_gradient=True.
    if param is not None and isinstance(attr, ParamAttr) and attr.learning_rate == 0:
        param.stop_gradient = True


def _affine_pair(layer: Layer, shape, weight_attr, bias_attr) -> None:
    """``weight`` (ones) and ``bias`` (zeros) as Paddle's batch and group norms make them: with
    ``False`` the parameter still exists but is fixed (not trainable)."""
    for name, attr, value, is_bias in (("weight", weight_attr, 1.0, False), ("bias", bias_attr, 0.0, True)):
        fixed = attr is False
        param = layer.create_parameter(shape, attr=None if fixed else attr, is_bias=is_bias,
                                       default_initializer=Constant(value))
        if fixed:
            param.trainable = False
        _frozen_when_lr_zero(param, attr)
        setattr(layer, name, param)


class _BatchNormBase(Layer):
    """Batch normalisation with running statistics in the buffers ``_mean`` (zeros) and
    ``_variance`` (ones), updated in training with Paddle's momentum convention."""

    _formats: tuple = ()
    _ndims: tuple = ()

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr=None,
                 bias_attr=None, data_format: str = "NCHW", use_global_stats=None, name=None):
        # The default dtype, but float32 under a float16 default (Paddle's rule): statistics in half
        # precision lose the running averages.
        super().__init__(dtype="float32" if oar.get_default_dtype() == "float16" else None)
        if data_format not in self._formats:
            raise ArgumentError(f"{type(self).__name__}: data_format must be one of {list(self._formats)}, "
                                f"got {data_format!r}")
        self._num_features = size_arg(type(self).__name__, "num_features", num_features)
        self._momentum = momentum
        self._epsilon = epsilon
        self._data_format = data_format
        self._use_global_stats = use_global_stats
        self._name = name
        _affine_pair(self, [self._num_features], weight_attr, bias_attr)
        self.register_buffer("_mean", oar.zeros([self._num_features], dtype=self._dtype))
        self.register_buffer("_variance", oar.ones([self._num_features], dtype=self._dtype))

    def _check_input_dim(self, x) -> None:
        if x.ndim not in self._ndims:
            expected = " or ".join(f"{d}-D" for d in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected a {expected} input, got shape {x.shape}")

    def forward(self, x):
        self._check_input_dim(x)
        return F.batch_norm(x, self._mean, self._variance, weight=self.weight, bias=self.bias, training=self.training,
                            momentum=self._momentum, epsilon=self._epsilon, data_format=self._data_format,
                            use_global_stats=self._use_global_stats)

    def extra_repr(self) -> str:
        text = (f"num_features={self._num_features}, momentum={self._momentum}, epsilon={self._epsilon}, "
                f"data_format={self._data_format}")
        if self._use_global_stats is not None:
            text += f", use_global_stats={self._use_global_stats}"
        return text + (f", name={self._name}" if self._name else "")


class BatchNorm1D(_BatchNormBase):
    """Batch normalisation of ``[N, C]`` or ``[N, C, L]`` inputs (``NC``/``NCL``) or ``[N, L, C]``
    (``NLC``).

    >>> import oar
    >>> oar.nn.BatchNorm1D(4)(oar.rand([8, 4])).shape
    [8, 4]
    """

    _formats = ("NC", "NCL", "NLC")
    _ndims = (2, 3)

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr=None,
                 bias_attr=None, data_format: str = "NCL", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats, name)


class BatchNorm2D(_BatchNormBase):
    """Batch normalisation of ``[N, C, H, W]`` (``NCHW``) or ``[N, H, W, C]`` (``NHWC``) inputs.

    >>> import oar
    >>> bn = oar.nn.BatchNorm2D(2)
    >>> _ = bn(oar.rand([4, 2, 3, 3]))
    >>> bn.eval().training
    False
    """

    _formats = ("NCHW", "NHWC")
    _ndims = (4,)


class BatchNorm3D(_BatchNormBase):
    """Batch normalisation of ``[N, C, D, H, W]`` (``NCDHW``) or ``[N, D, H, W, C]`` (``NDHWC``) inputs."""

    _formats = ("NCDHW", "NDHWC")
    _ndims = (5,)

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr=None,
                 bias_attr=None, data_format: str = "NCDHW", use_global_stats=None, name=None):
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, use_global_stats, name)


class BatchNorm(Layer):
    """Paddle's legacy batch norm layer (``paddle.nn.BatchNorm``): any input of rank >= 2 with the
    channels on axis 1 (``data_layout='NCHW'``) or last (``'NHWC'``), an optional activation
    ``act`` by name, ``is_test`` to always use the running statistics and
    ``trainable_statistics`` to use batch statistics even in evaluation.

    >>> import oar
    >>> oar.nn.BatchNorm(3, act="relu")(oar.rand([2, 3, 4])).shape
    [2, 3, 4]
    """

    def __init__(self, num_channels: int, act=None, is_test: bool = False, momentum: float = 0.9,
                 epsilon: float = 1e-05, param_attr=None, bias_attr=None, dtype="float32", data_layout: str = "NCHW",
                 in_place: bool = False, moving_mean_name=None, moving_variance_name=None,
                 do_model_average_for_mean_and_var: bool = True, use_global_stats: bool = False,
                 trainable_statistics: bool = False):
        super().__init__(dtype="float32" if dtype == "float16" else dtype)  # Paddle's rule, as above
        if data_layout not in ("NCHW", "NHWC"):
            raise ArgumentError(f"BatchNorm: data_layout must be 'NCHW' or 'NHWC', got {data_layout!r}")
        if act is not None and not callable(getattr(F, str(act), None)):
            raise ArgumentError(f"BatchNorm: act must name a function of oar.nn.functional (e.g. 'relu'), got {act!r}")
        self._num_channels = size_arg("BatchNorm", "num_channels", num_channels)
        self._act = act
        self._is_test = is_test
        self._momentum = momentum
        self._epsilon = epsilon
        self._data_layout = data_layout
        self._use_global_stats = use_global_stats
        self._trainable_statistics = trainable_statistics
        _affine_pair(self, [self._num_channels], param_attr, bias_attr)
        self.register_buffer("_mean", oar.zeros([self._num_channels], dtype=self._dtype))
        self.register_buffer("_variance", oar.ones([self._num_channels], dtype=self._dtype))

    def forward(self, x):
        if x.ndim < 2:
            raise ShapeError(f"BatchNorm: expected an input of rank >= 2, got shape {x.shape}")
        if self._use_global_stats:
            use_global = True
        elif self._trainable_statistics:
            use_global = False
        else:
            use_global = None
        out = F.batch_norm(x, self._mean, self._variance, weight=self.weight, bias=self.bias,
                           training=self.training and not self._is_test, momentum=self._momentum,
                           epsilon=self._epsilon, data_format="NCHW" if self._data_layout == "NCHW" else "NHWC",
                           use_global_stats=use_global)
        return getattr(F, self._act)(out) if self._act else out

    def extra_repr(self) -> str:
        return (f"num_channels={self._num_channels}, momentum={self._momentum}, epsilon={self._epsilon}, "
                f"data_layout={self._data_layout}" + (f", act={self._act}" if self._act else ""))


def _shape_list(fn: str, normalized_shape) -> list[int]:
    if not isinstance(normalized_shape, (list, tuple)):
        return [size_arg(fn, "normalized_shape", normalized_shape)]
    dims = list(normalized_shape)
    if not dims or any(isinstance(d, bool) or not isinstance(d, numbers.Integral) or d <= 0 for d in dims):
        raise ArgumentError(f"{fn}: normalized_shape must be a positive int or a non-empty list of them, got "
                            f"{normalized_shape!r}")
    return [int(d) for d in dims]


class SyncBatchNorm(_BatchNormBase):
    """Batch normalisation whose statistics Paddle syncs over the GPUs of data-parallel training
    (its CPU build has no kernel for it). oar trains in one process, where it is BatchNorm of any
    rank: ``[N, C, ...]`` with ``data_format`` NC/NCL/NCHW/NCDHW, or channels last (NLC/NHWC/NDHWC).
    ``convert_sync_batchnorm`` swaps the BatchNorm1D/2D/3D layers of a model for it.

    >>> import oar
    >>> net = oar.nn.SyncBatchNorm.convert_sync_batchnorm(oar.nn.Sequential(oar.nn.BatchNorm2D(3)))
    >>> type(net[0]).__name__, net(oar.rand([2, 3, 4, 4])).shape
    ('SyncBatchNorm', [2, 3, 4, 4])
    """

    _formats = ("NC", "NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC")
    _ndims = (2, 3, 4, 5)

    def __init__(self, num_features: int, momentum: float = 0.9, epsilon: float = 1e-05, weight_attr=None,
                 bias_attr=None, data_format: str = "NCHW", name=None):
        # Paddle's sync batch norm always uses batch statistics in training (use_global_stats=False)
        super().__init__(num_features, momentum, epsilon, weight_attr, bias_attr, data_format, None, name)

    @classmethod
    def convert_sync_batchnorm(cls, layer: Layer) -> Layer:
        """``layer`` with every BatchNorm1D/2D/3D in it (itself included) replaced by a
        SyncBatchNorm sharing its parameters and running statistics."""
        converted = layer
        if isinstance(layer, _BatchNormBase) and not isinstance(layer, cls):
            converted = cls(layer._num_features, layer._momentum, layer._epsilon, data_format=layer._data_format,
                            name=layer._name)
            converted.weight, converted.bias = layer.weight, layer.bias
            converted._mean, converted._variance = layer._mean, layer._variance
            converted.training = layer.training
        for name, sublayer in layer.named_children():
            converted.add_sublayer(name, cls.convert_sync_batchnorm(sublayer))
        return converted


class LocalResponseNorm(Layer):
    """Local response normalisation across channels (``F.local_response_norm``).

    >>> import oar
    >>> oar.nn.LocalResponseNorm(size=5)(oar.rand([2, 8, 4, 4])).shape
    [2, 8, 4, 4]
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0, data_format: str = "NCHW",
                 name=None):
        super().__init__()
        self.size = size_arg("LocalResponseNorm", "size", size)
        self.alpha, self.beta, self.k, self.data_format, self.name = alpha, beta, k, data_format, name

    def forward(self, input):
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k, self.data_format)

    def extra_repr(self) -> str:
        return f"size={self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}, data_format={self.data_format}"


class LayerNorm(Layer):
    """Layer normalisation over the trailing ``normalized_shape`` dimensions, with a ``weight``
    (ones) and ``bias`` (zeros) of ``prod(normalized_shape)`` elements, as Paddle keeps them;
    ``weight_attr=False`` / ``bias_attr=False`` leave them out, and so do Paddle 3.3's
    ``elementwise_affine=False`` (both) and ``bias=False`` (the bias).

    >>> import oar
    >>> ln = oar.nn.LayerNorm([3, 4])
    >>> ln.weight.shape, ln(oar.rand([2, 3, 4])).shape
    ([12], [2, 3, 4])
    """

    def __init__(self, normalized_shape, epsilon: float = 1e-05, *, elementwise_affine: bool = True, bias: bool = True,
                 device=None, dtype=None, weight_attr=None, bias_attr=None, name=None):
        # device is accepted for Paddle 3.3's signature; oar's parameters live where oar's tensors do
        super().__init__(dtype=dtype)
        self._normalized_shape = _shape_list("LayerNorm", normalized_shape)
        self._epsilon = epsilon
        self._name = name
        size = [int(np.prod(self._normalized_shape))]
        # elementwise_affine=False drops both parameters, bias=False the bias (Paddle 3.3)
        with_weight = elementwise_affine and weight_attr is not False
        with_bias = elementwise_affine and bias and bias_attr is not False
        self.weight = self.create_parameter(size, attr=weight_attr, default_initializer=Constant(1.0)) \
            if with_weight else None
        self.bias = self.create_parameter(size, attr=bias_attr, is_bias=True) if with_bias else None

    def forward(self, x):
        return F.layer_norm(x, self._normalized_shape, weight=self.weight, bias=self.bias, epsilon=self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class RMSNorm(Layer):
    """Root-mean-square normalisation over the trailing ``normalized_shape`` dimensions, with a
    ``weight`` of that shape initialised to ones (``weight_attr=False``: no weight).

    >>> import oar
    >>> oar.nn.RMSNorm(4)(oar.rand([2, 4])).shape
    [2, 4]
    """

    def __init__(self, normalized_shape, epsilon: float = 1e-05, weight_attr=None, name=None):
        super().__init__()
        self._normalized_shape = _shape_list("RMSNorm", normalized_shape)
        self._epsilon = epsilon
        self._name = name
        self.weight = None if weight_attr is False else self.create_parameter(
            self._normalized_shape, attr=weight_attr, default_initializer=Constant(1.0))

    def forward(self, x):
        return F.rms_norm(x, self._normalized_shape, weight=self.weight, epsilon=self._epsilon)

    def extra_repr(self) -> str:
        return f"normalized_shape={self._normalized_shape}, epsilon={self._epsilon}"


class GroupNorm(Layer):
    """Group normalisation: ``num_channels`` split into ``num_groups`` groups normalised per
    sample, then a per-channel ``weight`` (ones) and ``bias`` (zeros), which ``affine=False``
    leaves out.

    >>> import oar
    >>> oar.nn.GroupNorm(num_groups=2, num_channels=4)(oar.rand([2, 4, 3, 3])).shape
    [2, 4, 3, 3]
    """

    def __init__(self, num_groups: int, num_channels: int, epsilon: float = 1e-05, *, affine: bool = True,
                 device=None, dtype=None, weight_attr=None, bias_attr=None, data_format: str = "NCHW", name=None):
        # device is accepted for Paddle 3.3's signature; oar's parameters live where oar's tensors do
        super().__init__(dtype=dtype)
        if data_format not in ("NCL", "NCHW", "NCDHW", "NLC", "NHWC", "NDHWC"):
            raise ArgumentError(f"GroupNorm: data_format must be NCL, NCHW, NCDHW, NLC, NHWC or NDHWC, got {data_format!r}")
        num_groups, num_channels = size_arg("GroupNorm", "num_groups", num_groups), size_arg(
            "GroupNorm", "num_channels", num_channels)
        if num_channels % num_groups:
            raise ArgumentError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self._num_groups = int(num_groups)
        self._num_channels = int(num_channels)
        self._epsilon = epsilon
        self._data_format = data_format
        self._name = name
        if affine:
            _affine_pair(self, [self._num_channels], weight_attr, bias_attr)
        else:  # Paddle 3.3: no weight and no bias
            self.weight = self.bias = None

    def forward(self, x):
        channels = x.shape[1] if self._data_format[1] == "C" else x.shape[-1]
        if x.ndim < 2 or channels != self._num_channels:
            raise ShapeError(f"GroupNorm: expected {self._num_channels} channels ({self._data_format}), got x {x.shape}")
        return F.group_norm(x, self._num_groups, epsilon=self._epsilon, weight=self.weight, bias=self.bias,
                            data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_groups={self._num_groups}, num_channels={self._num_channels}, epsilon={self._epsilon}"


class _InstanceNormBase(Layer):
    """Instance normalisation with a per-channel ``scale`` (ones) and ``bias`` (zeros): Paddle's
    parameter names. ``weight_attr=False`` and ``bias_attr=False`` (together) leave both out."""

    _formats: tuple = ()
    _ndims: tuple = ()

    def __init__(self, num_features: int, epsilon: float = 1e-05, momentum: float = 0.9, weight_attr=None,
                 bias_attr=None, data_format: str = "NCHW", name=None):
        super().__init__()
        if (weight_attr is False) != (bias_attr is False):
            raise ArgumentError(f"{type(self).__name__}: weight_attr and bias_attr must be False together")
        if data_format not in self._formats:
            raise ArgumentError(f"{type(self).__name__}: data_format must be one of {list(self._formats)}, "
                                f"got {data_format!r}")
        self._num_features = size_arg(type(self).__name__, "num_features", num_features)
        self._epsilon = epsilon
        self._momentum = momentum
        self._data_format = data_format
        self._name = name
        if weight_attr is False:
            self.scale = None
            self.bias = None
        else:
            self.scale = self.create_parameter([self._num_features], attr=weight_attr, default_initializer=Constant(1.0))
            self.bias = self.create_parameter([self._num_features], attr=bias_attr, is_bias=True)

    def forward(self, x):
        if x.ndim not in self._ndims:
            expected = " or ".join(f"{d}-D" for d in self._ndims)
            raise ShapeError(f"{type(self).__name__}: expected a {expected} input, got shape {x.shape}")
        return F.instance_norm(x, weight=self.scale, bias=self.bias, eps=self._epsilon, data_format=self._data_format)

    def extra_repr(self) -> str:
        return f"num_features={self._num_features}, epsilon={self._epsilon}"


class InstanceNorm1D(_InstanceNormBase):
    """Instance normalisation of ``[N, C, L]`` (or ``[N, C]``) inputs."""

    _formats = ("NC", "NCL", "NLC")
    _ndims = (2, 3)

    def __init__(self, num_features: int, epsilon: float = 1e-05, momentum: float = 0.9, weight_attr=None,
                 bias_attr=None, data_format: str = "NCL", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name)


class InstanceNorm2D(_InstanceNormBase):
    """Instance normalisation of ``[N, C, H, W]`` inputs.

    >>> import oar
    >>> m = oar.nn.InstanceNorm2D(3)
    >>> sorted(m.state_dict()), m(oar.rand([2, 3, 4, 4])).shape
    (['bias', 'scale'], [2, 3, 4, 4])
    """

    _formats = ("NCHW", "NHWC")
    _ndims = (4,)


class InstanceNorm3D(_InstanceNormBase):
    """Instance normalisation of ``[N, C, D, H, W]`` inputs."""

    _formats = ("NCDHW", "NDHWC")
    _ndims = (5,)

    def __init__(self, num_features: int, epsilon: float = 1e-05, momentum: float = 0.9, weight_attr=None,
                 bias_attr=None, data_format: str = "NCDHW", name=None):
        super().__init__(num_features, epsilon, momentum, weight_attr, bias_attr, data_format, name)


class SpectralNorm(Layer):
    """Divide a weight by its spectral norm (``paddle.nn.SpectralNorm``): ``forward(weight)``
    returns ``weight / sigma``, ``sigma = u . W v`` for ``W`` the ``[h, w]`` matrix of ``weight``
    (axis ``dim`` first, the rest flattened) after ``power_iters`` steps ``v = W^T u / (||W^T u|| + eps)``,
    ``u = W v / (||W v|| + eps)`` from the parameters ``weight_u`` ([h]) and ``weight_v`` ([w]).

    As Paddle's kernel, the iteration works on copies: ``weight_u`` and ``weight_v`` (drawn from
    N(0, 1), ``stop_gradient=True``) keep their values, and the gradient treats ``u`` and ``v``
    as constants.

    >>> import oar
    >>> norm = oar.nn.SpectralNorm([2, 8, 3, 3], dim=1, power_iters=2)
    >>> norm(oar.rand([2, 8, 3, 3])).shape
    [2, 8, 3, 3]
    >>> norm.weight_u.shape, norm.weight_v.shape
    ([8], [18])
    """

    def __init__(self, weight_shape, dim: int = 0, power_iters: int = 1, eps: float = 1e-12,
                 dtype: str = "float32"):
        super().__init__(dtype=dtype)
        self._weight_shape = [size_arg("SpectralNorm", "weight_shape[i]", d) for d in weight_shape]
        rank = len(self._weight_shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
            raise ArgumentError(f"SpectralNorm: dim must be an int in [0, {rank}) for weight_shape "
                                f"{self._weight_shape}, got {dim!r}")
        self._dim = dim
        self._power_iters = size_arg("SpectralNorm", "power_iters", power_iters)
        self._eps = float(eps)
        height = self._weight_shape[dim]
        width = int(np.prod(self._weight_shape)) // height
        self.weight_u = self.create_parameter([height], attr=ParamAttr(), default_initializer=Normal(0.0, 1.0))
        self.weight_u.stop_gradient = True
        self.weight_v = self.create_parameter([width], attr=ParamAttr(), default_initializer=Normal(0.0, 1.0))
        self.weight_v.stop_gradient = True

    def forward(self, weight):
        if list(weight.shape) != self._weight_shape:
            raise ShapeError(f"SpectralNorm: expected a weight of shape {self._weight_shape} (its weight_shape), "
                             f"got {weight.shape}")
        dim = self._dim
        matrix = weight
        if dim != 0:
            matrix = oar.transpose(weight, [dim] + [axis for axis in range(weight.ndim) if axis != dim])
        matrix = oar.reshape(matrix, [self._weight_shape[dim], -1])
        with oar.no_grad():
            u, v = self.weight_u.detach(), self.weight_v.detach()
            for _ in range(self._power_iters):
                v = oar.matmul(matrix, u, transpose_x=True)
                v = v / (oar.sqrt(oar.sum(oar.square(v))) + self._eps)
                u = oar.matmul(matrix, v)
                u = u / (oar.sqrt(oar.sum(oar.square(u))) + self._eps)
        return weight / oar.dot(u, oar.mv(matrix, v))

    def extra_repr(self) -> str:
        return f"weight_shape={self._weight_shape}, dim={self._dim}, power_iters={self._power_iters}, eps={self._eps}"


__all__ = [
    "BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "SyncBatchNorm", "LayerNorm", "RMSNorm", "GroupNorm",
    "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "SpectralNorm", "LocalResponseNorm",
]
