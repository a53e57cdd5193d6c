"""Initializers (``oar.nn.initializer``): fill a parameter in place, with Paddle's formulas.

Every initializer draws from oar's global generator, so ``oar.seed(n)`` makes model
initialisation reproducible. Values are drawn in float64 and cast to the parameter's dtype.

Fans follow Paddle's convention (``compute_fans``): Linear weights are ``[in, out]``, so
fan_in is ``shape[0]``; conv weights are ``[out_channels, in_channels, *kernel]``, so fan_in is
``in_channels * prod(kernel)``.

>>> import oar
>>> from oar.nn.initializer import Constant
>>> w = oar.zeros([2, 2])
>>> Constant(0.5)(w).tolist()
[[0.5, 0.5], [0.5, 0.5]]
"""

from __future__ import annotations

import math

import numpy as np

from oar.errors import ArgumentError, ShapeError
from oar.ops import Tensor, get_backend
from oar.ops import default_generator as _generator


def compute_fans(shape) -> tuple[int, int]:
    """(fan_in, fan_out) with Paddle's convention: Linear weights are ``[in, out]``, conv weights
    ``[out_channels, in_channels, *kernel]``; a 1-D shape has fan_in = fan_out = its length."""
    shape = list(shape)
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    if len(shape) == 2:
        return shape[0], shape[1]
    receptive = int(np.prod(shape[2:]))
    return shape[1] * receptive, shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity, as ``paddle.nn.initializer.calculate_gain``:
    1 for sigmoid, linear and the conv/conv_transpose names, 5/3 for tanh, sqrt(2) for relu,
    sqrt(2 / (1 + param**2)) for leaky_relu (param defaults to 0.01), 3/4 for selu.

    >>> from oar.nn.initializer import calculate_gain
    >>> round(calculate_gain("relu"), 6), calculate_gain("tanh")
    (1.414214, 1.6666666666666667)
    """
    if param is None:
        param = 0.01
    elif isinstance(param, bool) or not isinstance(param, (int, float)):
        raise ArgumentError(f"calculate_gain: param must be a number, got {type(param).__name__}")
    gains = {
        "sigmoid": 1.0, "linear": 1.0, "conv1d": 1.0, "conv2d": 1.0, "conv3d": 1.0,
        "conv1d_transpose": 1.0, "conv2d_transpose": 1.0, "conv3d_transpose": 1.0,
        "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "leaky_relu": math.sqrt(2.0 / (1 + param**2)),
        "selu": 3.0 / 4,
    }
    if nonlinearity not in gains:
        raise ArgumentError(f"calculate_gain: nonlinearity {nonlinearity!r} is not supported; expected one of {sorted(gains)}")
    return gains[nonlinearity]


class Initializer:
    """Base class: subclasses implement ``generate(shape, np_dtype) -> np.ndarray``; calling the
    initializer on a parameter (or any tensor) fills it in place and returns it."""

    def generate(self, shape: list[int], np_dtype) -> np.ndarray:
        raise NotImplementedError

    def __call__(self, param: Tensor, block=None) -> Tensor:
        if not isinstance(param, Tensor):
            raise ArgumentError(f"{type(self).__name__}: expected a Parameter or Tensor to fill, got {type(param).__name__}")
        shape = list(param._data.shape)
        values = np.asarray(self.generate(shape, param._data.dtype))
        if list(values.shape) != shape:
            raise ShapeError(f"{type(self).__name__}: generated shape {list(values.shape)} for a parameter of shape {shape}")
        values = values.astype(param._data.dtype, copy=False)
        if param._backend != "cpu":
            param._set_buffer(get_backend(param._backend).from_numpy(values))
        else:
            if not param._data.flags.writeable:
                param._set_buffer(param._data.copy())
            param._data[...] = values
        param._bump_version()
        return param

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({fields})"


def _fans(initializer, shape) -> tuple[float, float]:
    fan_in, fan_out = compute_fans(shape)
    fan_in = initializer.fan_in if getattr(initializer, "fan_in", None) is not None else fan_in
    fan_out = initializer.fan_out if getattr(initializer, "fan_out", None) is not None else fan_out
    return float(fan_in), float(fan_out)


class Constant(Initializer):
    """Every element equals ``value`` (default 0.0)."""

    def __init__(self, value: float = 0.0):
        self.value = value

    def generate(self, shape, np_dtype):
        return np.full(shape, self.value, dtype=np_dtype)


class Normal(Initializer):
    """Gaussian N(mean, std**2)."""

    def __init__(self, mean: float = 0.0, std: float = 1.0, name=None):
        if std < 0:
            raise ArgumentError(f"Normal: std must be >= 0, got {std}")
        self.mean, self.std = mean, std

    def generate(self, shape, np_dtype):
        return _generator().normal(self.mean, self.std, size=shape)


def _normal_cdf(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


class TruncatedNormal(Initializer):
    """N(mean, std**2) restricted to ``[a, b]``, as Paddle 3: ``a`` and ``b`` bound the values
    themselves (default [-2, 2]), they are not multiples of std. Keep ``a <= mean <= b``: the
    samples are drawn by rejection, and an interval that holds less than one millionth of the
    distribution is refused.
    """

    def __init__(self, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, name=None):
        if std < 0:
            raise ArgumentError(f"TruncatedNormal: std must be >= 0, got {std}")
        if not a < b:
            raise ArgumentError(f"TruncatedNormal: the bounds must satisfy a < b, got a={a}, b={b}")
        self.mean, self.std, self.a, self.b = mean, std, a, b

    def generate(self, shape, np_dtype):
        n = int(np.prod(shape))
        if self.std == 0:
            return np.full(shape, min(max(self.mean, self.a), self.b), np.float64)
        mass = _normal_cdf((self.b - self.mean) / self.std) - _normal_cdf((self.a - self.mean) / self.std)
        if mass < 1e-6:
            raise ArgumentError(
                f"TruncatedNormal: [a, b] = [{self.a}, {self.b}] holds {mass:.2g} of N({self.mean}, {self.std}**2); "
                f"choose bounds with a <= mean <= b"
            )
        out = np.empty(n, np.float64)
        filled = 0
        generator = _generator()
        while filled < n:
            need = n - filled
            draw = generator.normal(self.mean, self.std, size=int(need / mass * 1.1) + 16)
            kept = draw[(draw >= self.a) & (draw <= self.b)][:need]
            out[filled:filled + kept.size] = kept
            filled += kept.size
        return out.reshape(shape)


class Uniform(Initializer):
    """Uniform on ``[low, high)``."""

    def __init__(self, low: float = -1.0, high: float = 1.0, name=None):
        if low > high:
            raise ArgumentError(f"Uniform: low={low} must not exceed high={high}")
        self.low, self.high = low, high

    def generate(self, shape, np_dtype):
        return _generator().uniform(self.low, self.high, size=shape)


class XavierUniform(Initializer):
    """Glorot uniform: U(-x, x) with x = gain * sqrt(6 / (fan_in + fan_out)). Paddle's default for
    weights (Linear, and every layer without its own default)."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def generate(self, shape, np_dtype):
        fan_in, fan_out = _fans(self, shape)
        limit = self.gain * math.sqrt(6.0 / (fan_in + fan_out))
        return _generator().uniform(-limit, limit, size=shape)


class XavierNormal(Initializer):
    """Glorot normal: N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""

    def __init__(self, fan_in: float | None = None, fan_out: float | None = None, gain: float = 1.0, name=None):
        self.fan_in, self.fan_out, self.gain = fan_in, fan_out, gain

    def generate(self, shape, np_dtype):
        fan_in, fan_out = _fans(self, shape)
        return _generator().normal(0.0, self.gain * math.sqrt(2.0 / (fan_in + fan_out)), size=shape)


class KaimingNormal(Initializer):
    """He normal: N(0, std**2) with std = gain / sqrt(fan_in), gain =
    ``calculate_gain(nonlinearity, negative_slope)`` (sqrt(2) for the default relu)."""

    def __init__(self, fan_in: float | None = None, negative_slope: float = 0.0, nonlinearity: str = "relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity
        calculate_gain(nonlinearity, negative_slope)  # an unknown nonlinearity fails here, not at first use

    def generate(self, shape, np_dtype):
        fan_in, _ = _fans(self, shape)
        std = calculate_gain(self.nonlinearity, self.negative_slope) / math.sqrt(fan_in)
        return _generator().normal(0.0, std, size=shape)


class KaimingUniform(Initializer):
    """He uniform: U(-x, x) with x = gain * sqrt(3 / fan_in), gain =
    ``calculate_gain(nonlinearity, negative_slope)``."""

    def __init__(self, fan_in: float | None = None, negative_slope: float = 0.0, nonlinearity: str = "relu", name=None):
        self.fan_in, self.negative_slope, self.nonlinearity = fan_in, negative_slope, nonlinearity
        calculate_gain(nonlinearity, negative_slope)

    def generate(self, shape, np_dtype):
        fan_in, _ = _fans(self, shape)
        limit = calculate_gain(self.nonlinearity, self.negative_slope) * math.sqrt(3.0 / fan_in)
        return _generator().uniform(-limit, limit, size=shape)


class Orthogonal(Initializer):
    """A (semi-)orthogonal matrix times ``gain``. The weight is seen as ``rows = shape[0]`` by
    ``cols = prod(shape[1:])``: its rows are orthonormal when rows <= cols, its columns when
    rows >= cols. Needs 2 or more dimensions."""

    def __init__(self, gain: float = 1.0, name=None):
        self.gain = gain

    def generate(self, shape, np_dtype):
        if len(shape) < 2:
            raise ShapeError(f"Orthogonal: only tensors with 2 or more dimensions can be orthogonal, got shape {shape}")
        rows, cols = shape[0], int(np.prod(shape[1:]))
        flat = _generator().normal(0.0, 1.0, size=(max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(flat)
        q *= np.where(np.diag(r) < 0, -1.0, 1.0)  # signs of R's diagonal: a uniform draw over orthogonal matrices
        if rows < cols:
            q = q.T
        return self.gain * q.reshape(shape)


class Assign(Initializer):
    """Copy ``value`` (a numpy array, nested list, tuple, scalar or Tensor) of the parameter's shape."""

    def __init__(self, value, name=None):
        if isinstance(value, Tensor):
            value = value.numpy(copy=False)
        self.value = np.array(value)
        if self.value.dtype.kind not in "biuf" and self.value.dtype.name != "bfloat16":
            raise ArgumentError(f"Assign: value must hold numbers, got {self.value.dtype} values")

    def generate(self, shape, np_dtype):
        if list(self.value.shape) != list(shape):
            raise ShapeError(f"Assign: the value has shape {list(self.value.shape)}, the parameter {list(shape)}")
        return self.value

    def __repr__(self) -> str:
        return f"Assign(value of shape {list(self.value.shape)})"


class Bilinear(Initializer):
    """Bilinear interpolation weights for a transposed convolution that upsamples: a
    ``[C_out, C_in, K, K]`` weight gets the same K x K interpolation kernel for every channel pair.

    Paddle's Python code computes the kernel's row index with ``/`` where Caffe's integer
    division was meant, so its rows are not the bilinear ones; oar gives Caffe's true kernel.
    """

    def generate(self, shape, np_dtype):
        if len(shape) != 4:
            raise ShapeError(f"Bilinear: the weight must have 4 dimensions [C_out, C_in, K, K], got shape {shape}")
        if shape[2] != shape[3]:
            raise ShapeError(f"Bilinear: the kernel must be square, got shape {shape}")
        size = shape[3]
        factor = math.ceil(size / 2.0)
        center = (2 * factor - 1 - factor % 2) / (2.0 * factor)
        line = 1 - np.abs(np.arange(size) / factor - center)
        return np.broadcast_to(np.outer(line, line), shape).copy()


class Dirac(Initializer):
    """Identity-preserving conv weights: for ``[out, in, *kernel]`` (3 to 5 dimensions) each group's
    first ``min(out // groups, in)`` output channels copy their input channel at the kernel's centre."""

    def __init__(self, groups: int = 1, name=None):
        if not isinstance(groups, int) or groups < 1:
            raise ArgumentError(f"Dirac: groups must be a positive int, got {groups!r}")
        self.groups = groups

    def generate(self, shape, np_dtype):
        if len(shape) not in (3, 4, 5):
            raise ShapeError(f"Dirac: only 3-, 4- and 5-dimensional conv weights, got shape {shape}")
        if shape[0] % self.groups:
            raise ShapeError(f"Dirac: out_channels {shape[0]} is not divisible by groups={self.groups}")
        out = np.zeros(shape, np.float64)
        per_group = shape[0] // self.groups
        centre = tuple(k // 2 for k in shape[2:])
        for g in range(self.groups):
            for i in range(min(per_group, shape[1])):
                out[(g * per_group + i, i, *centre)] = 1.0
        return out


# -- the global initializers (``set_global_initializer``) ------------------------------------
_GLOBAL = {"weight": None, "bias": None}


def set_global_initializer(weight_init: Initializer | None, bias_init: Initializer | None = None) -> None:
    """Initializers for every parameter created afterwards whose ParamAttr names none, as
    ``paddle.nn.initializer.set_global_initializer``. They take precedence over a layer's own
    default (Conv's, Embedding's, ...) but not over an initializer given in ``weight_attr`` /
    ``bias_attr``. ``set_global_initializer(None)`` restores the defaults.

    >>> import oar
    >>> from oar.nn.initializer import Constant, set_global_initializer
    >>> set_global_initializer(Constant(0.5), Constant(0.0))
    >>> oar.nn.Linear(2, 2).weight.tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    >>> set_global_initializer(None)
    """
    for arg, value in (("weight_init", weight_init), ("bias_init", bias_init)):
        if value is not None and not isinstance(value, Initializer):
            raise TypeError(f"set_global_initializer: {arg} must be an Initializer or None, got {type(value).__name__}")
    _GLOBAL["weight"] = weight_init
    _GLOBAL["bias"] = bias_init


def global_initializer(is_bias: bool) -> Initializer | None:
    """The initializer ``set_global_initializer`` set for biases or weights, or None."""
    return _GLOBAL["bias" if is_bias else "weight"]


__all__ = [
    "Initializer", "Constant", "Normal", "TruncatedNormal", "Uniform", "XavierUniform", "XavierNormal",
    "KaimingNormal", "KaimingUniform", "Orthogonal", "Assign", "Bilinear", "Dirac", "calculate_gain",
    "set_global_initializer", "compute_fans",
]
