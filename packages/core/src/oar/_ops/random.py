"""Random numbers: one global numpy ``Generator`` that ``oar.seed`` resets, and the random ops.

A random op draws where its result goes (the current device, or the device of the op's input)
when that backend has a kernel for it -- oar-triton's gpu kernels use a counter-based generator
keyed from the global one, so one ``oar.seed(n)`` still makes a whole run reproducible, though
the gpu's numbers are not the cpu's -- and otherwise on the host, moving the result there. The
ops are ``nondiff`` and ``random``; those that make a tensor from attributes alone are also
``creation`` ops and carry the ``place`` they draw on.

``oar.get_rng_state()`` returns the generator's state as plain data (dicts of ints and
strings) that ``oar.set_rng_state`` takes back, and that JSON can store.
"""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.device import current_device
from oar._engine.op import Op
from oar._engine.registries import KERNELS
from oar._ops._common import Tensor, TensorMeta, as_tensor, dispatch, fmt_shape
from oar._ops.creation import _scalar_arg, dtype_arg, shape_arg
from oar._ops.elementwise import cast, to_device
from oar._ops.shape import reshape_to
from oar.errors import ArgumentError, ShapeError

RANDOM = ("nondiff", "random")
CREATION = RANDOM + ("creation",)
FLOAT = ("float",)

_GENERATOR: list = []  # made on first use: importing numpy.random costs import time
_SEED: list = []  # the seed the global generator was last seeded with (``oar.Generator().initial_seed()``)


def default_generator() -> np.random.Generator:
    """The global numpy Generator every random op of oar draws from."""
    if not _GENERATOR:
        _SEED[:] = [np.random.SeedSequence().entropy % 2**64]  # a fresh seed, kept so that it can be read back
        _GENERATOR.append(np.random.default_rng(_SEED[0]))
    return _GENERATOR[0]


def initial_seed() -> int:
    """The seed the global generator was last seeded with (by ``oar.seed``, or at its creation)."""
    default_generator()
    return _SEED[0]


def _generator_for(seed: int) -> np.random.Generator:
    # A nonzero op-level seed (``uniform(seed=...)``) gives the same numbers on every call.
    return default_generator() if not seed else np.random.default_rng(seed)


def _copy_state(state: dict) -> dict:
    return {k: dict(v) if isinstance(v, dict) else v for k, v in state.items()}


def seed(seed: int) -> np.random.Generator:
    """Reset the global generator: the same seed gives the same random numbers. Returns it.

    ``oar.seed(n)`` draws the same stream as ``numpy.random.default_rng(n)``.

    >>> import oar
    >>> _ = oar.seed(7); a = oar.rand([3]).tolist()
    >>> _ = oar.seed(7); a == oar.rand([3]).tolist()
    True
    """
    if isinstance(seed, Tensor):
        seed = seed.item()
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ArgumentError(f"seed: expected an int, got {type(seed).__name__}")
    generator = default_generator()
    generator.bit_generator.state = np.random.PCG64(int(seed) % 2**64).state
    _SEED[:] = [int(seed) % 2**64]
    return generator


def get_rng_state(device=None) -> list[dict]:
    """The state of the global generator, as a list with one plain dict (Paddle returns a
    list of generator states); pass it to ``set_rng_state`` to replay the same numbers.

    >>> import oar
    >>> state = oar.get_rng_state()
    >>> a = oar.randn([2]).tolist()
    >>> oar.set_rng_state(state)
    >>> a == oar.randn([2]).tolist()
    True
    """
    return [_copy_state(default_generator().bit_generator.state)]


def set_rng_state(state_list, device=None) -> None:
    """Restore a state from ``get_rng_state`` (the list, or the one dict in it)."""
    state = state_list[0] if isinstance(state_list, (list, tuple)) and len(state_list) == 1 else state_list
    bit_generator = default_generator().bit_generator
    kind = type(bit_generator).__name__
    if not isinstance(state, dict) or state.get("bit_generator") != kind:
        raise ArgumentError(
            f"set_rng_state: expected what get_rng_state() returned (a list with one {kind} state dict), "
            f"got {type(state_list).__name__}"
        )
    try:
        bit_generator.state = _copy_state(state)
    except (TypeError, ValueError, KeyError) as exc:
        raise ArgumentError(f"set_rng_state: the state is malformed: {exc}") from None


def _moved(out: Tensor, device: str) -> Tensor:
    if device == out._backend:
        return out
    return to_device(out, device)


def _on_current_device(out: Tensor) -> Tensor:
    return _moved(out, current_device())


def _drawing_device(op: Op, dtype: _dt.DType, device: str) -> str:
    """Where ``op`` draws a result for ``device``: there when that backend has a kernel for it, else
    on the host."""
    if device == "cpu" or KERNELS.lookup(op.name, device, dtype) is not None:
        return device
    return "cpu"


def _draw_from(op: Op, x: Tensor, attrs: dict) -> Tensor:
    """Run a random op with an input on the device that draws it; the result goes to ``x``'s device."""
    there = _drawing_device(op, x.dtype, x._backend)
    return _moved(dispatch(op, (_moved(x, there),), attrs), x._backend)


def _creation_meta(*, shape, dtype, **attrs) -> TensorMeta:
    return TensorMeta(tuple(shape), _dt.get_dtype(dtype))


def _float_draw_dtype(d: _dt.DType):
    # float16 and bfloat16 are drawn in float32 and rounded, as Paddle's kernels do.
    return np.float64 if d is _dt.float64 else np.float32


# -- uniform ------------------------------------------------------------------------------------
def _uniform_kernel(*, shape, dtype, min, max, seed, place):
    d = _dt.get_dtype(dtype)
    u = _generator_for(seed).random(shape, dtype=_float_draw_dtype(d))
    out = np.asarray(min + (max - min) * u).astype(d.np)
    if max > min:  # rounding must not reach max: the interval is [min, max)
        top = np.asarray(max).astype(d.np)
        out = np.where(out >= top, np.nextafter(top, np.asarray(-np.inf, d.np)), out)
    return out


uniform_op = Op("uniform", reference=_uniform_kernel, meta=_creation_meta, traits=CREATION)


def _uniform(shape, d: _dt.DType, low: float, high: float, seed: int, fn: str) -> Tensor:
    device = current_device()
    attrs = {"shape": shape_arg(shape, fn), "dtype": d.name, "min": low, "max": high, "seed": seed,
             "place": _drawing_device(uniform_op, d, device)}
    return _moved(dispatch(uniform_op, (), attrs), device)


def uniform(shape, dtype=None, min=-1.0, max=1.0, seed=0, name=None) -> Tensor:
    """Values drawn uniformly from ``[min, max)`` (default dtype float32). A nonzero ``seed``
    gives the same values on every call; 0 draws from the global generator (``oar.seed``).

    >>> import oar
    >>> x = oar.uniform([2, 3], min=2.0, max=3.0)
    >>> x.shape, bool(((x >= 2.0) & (x < 3.0)).all())
    ([2, 3], True)
    """
    d = dtype_arg(dtype, "uniform", kinds=FLOAT)
    low, high = float(_scalar_arg(min, "uniform", "min")), float(_scalar_arg(max, "uniform", "max"))
    if not low <= high:
        raise ArgumentError(f"uniform: min ({low}) must not be greater than max ({high})")
    seed = _scalar_arg(seed, "uniform", "seed")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ArgumentError(f"uniform: seed must be an int, got {seed!r}")
    return _uniform(shape, d, low, high, seed, "uniform")


def rand(shape, dtype=None, name=None) -> Tensor:
    """Values drawn uniformly from ``[0, 1)`` (default dtype float32).

    >>> import oar
    >>> oar.rand([2, 3]).dtype
    oar.float32
    """
    return _uniform(shape, dtype_arg(dtype, "rand", kinds=FLOAT), 0.0, 1.0, 0, "rand")


# -- gaussian -----------------------------------------------------------------------------------
def _gaussian_kernel(*, shape, dtype, mean, std, seed, place):
    d = _dt.get_dtype(dtype)
    z = _generator_for(seed).standard_normal(shape, dtype=_float_draw_dtype(d))
    return np.asarray(z * std + mean).astype(d.np)


gaussian_op = Op("gaussian", paddle=("normal", "randn", "standard_normal"), reference=_gaussian_kernel, meta=_creation_meta, traits=CREATION)


def _gaussian(shape, d: _dt.DType, mean: float, std: float, fn: str, device: str | None = None) -> Tensor:
    device = device or current_device()
    attrs = {"shape": shape_arg(shape, fn), "dtype": d.name, "mean": mean, "std": std, "seed": 0,
             "place": _drawing_device(gaussian_op, d, device)}
    return _moved(dispatch(gaussian_op, (), attrs), device)


def standard_normal(shape, dtype=None, name=None) -> Tensor:
    """Values drawn from the normal distribution of mean 0 and standard deviation 1.

    >>> import oar
    >>> oar.standard_normal([2, 3]).shape
    [2, 3]
    """
    return _gaussian(shape, dtype_arg(dtype, "standard_normal", kinds=FLOAT), 0.0, 1.0, "standard_normal")


def randn(shape, dtype=None, name=None) -> Tensor:
    """Values drawn from the standard normal distribution (default dtype float32).

    >>> import oar
    >>> oar.randn([4]).shape
    [4]
    """
    return _gaussian(shape, dtype_arg(dtype, "randn", kinds=FLOAT), 0.0, 1.0, "randn")


def normal(mean=0.0, std=1.0, shape=None, name=None) -> Tensor:
    """Values drawn from a normal distribution, as ``paddle.normal``.

    With numbers for ``mean`` and ``std`` the result has ``shape`` and the default float
    dtype. A tensor ``mean`` (or ``std``) gives one value per element, with its shape and
    dtype; ``shape`` is then ignored, and the result is ``standard_normal * std + mean`` --
    differentiable in a tensor ``mean`` and ``std``.

    >>> import oar
    >>> oar.normal(shape=[2, 3]).shape
    [2, 3]
    >>> oar.normal(oar.to_tensor([0.0, 10.0, 100.0]), 0.0).tolist()
    [0.0, 10.0, 100.0]
    """
    mean_t, std_t = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mean_t and not std_t:
        if shape is None:
            raise ArgumentError("normal: give shape when mean and std are numbers")
        m, s = float(_scalar_arg(mean, "normal", "mean")), float(_scalar_arg(std, "normal", "std"))
        if s < 0:
            raise ArgumentError(f"normal: std must be >= 0, got {s}")
        return _gaussian(shape, _dt.default_float(), m, s, "normal")
    like = mean if mean_t else std
    if not like.dtype.is_floating:
        raise ArgumentError(f"normal: a tensor mean/std must be floating, got {like.dtype.name}")
    if mean_t and std_t:
        if mean.size != std.size:
            raise ShapeError(f"normal: mean {fmt_shape(mean.shape)} and std {fmt_shape(std.shape)} must have "
                             f"the same number of elements")
        std = reshape_to(std if std.dtype is mean.dtype else cast(std, mean.dtype), mean.shape)  # as Paddle
    return _gaussian(like.shape, like.dtype, 0.0, 1.0, "normal", like._backend) * std + mean


# -- randint ------------------------------------------------------------------------------------
def _randint_kernel(*, shape, dtype, low, high, place):
    return default_generator().integers(low, high, size=shape, dtype=np.int64).astype(_dt.get_dtype(dtype).np)


randint_op = Op("randint", reference=_randint_kernel, meta=_creation_meta, traits=CREATION)


def randint(low=0, high=None, shape=(1,), dtype=None, name=None) -> Tensor:
    """Integers drawn uniformly from ``[low, high)`` (``[0, low)`` when ``high`` is None),
    default dtype int64.

    >>> import oar
    >>> x = oar.randint(0, 10, [5])
    >>> x.dtype, bool(((x >= 0) & (x < 10)).all())
    (oar.int64, True)
    """
    d = dtype_arg(dtype, "randint", default=_dt.int64, kinds=("int",))
    if high is None:
        low, high = 0, low
    low, high = _scalar_arg(low, "randint", "low"), _scalar_arg(high, "randint", "high")
    for label, v in (("low", low), ("high", high)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ArgumentError(f"randint: {label} must be an int, got {v!r}")
    if low >= high:
        raise ArgumentError(f"randint: low ({low}) must be less than high ({high})")
    info = np.iinfo(d.np)
    if low < info.min or high - 1 > info.max:
        raise ArgumentError(f"randint: [{low}, {high}) does not fit dtype {d.name}")
    device = current_device()
    attrs = {"shape": shape_arg(shape, "randint"), "dtype": d.name, "low": low, "high": high,
             "place": _drawing_device(randint_op, d, device)}
    return _moved(dispatch(randint_op, (), attrs), device)


# -- randperm -----------------------------------------------------------------------------------
def _randperm_kernel(*, n, dtype, place):
    return default_generator().permutation(n).astype(_dt.get_dtype(dtype).np)


def _randperm_meta(*, n, dtype, place) -> TensorMeta:
    return TensorMeta((n,), _dt.get_dtype(dtype))


randperm_op = Op("randperm", reference=_randperm_kernel, meta=_randperm_meta, traits=CREATION)


def randperm(n, dtype="int64", name=None) -> Tensor:
    """A random permutation of ``0 .. n-1`` (default dtype int64).

    >>> import oar
    >>> sorted(oar.randperm(5).tolist())
    [0, 1, 2, 3, 4]
    """
    n = _scalar_arg(n, "randperm", "n")
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ArgumentError(f"randperm: n must be a non-negative int, got {n!r}")
    d = dtype_arg(dtype, "randperm", kinds=("int", "float"))
    return _on_current_device(dispatch(randperm_op, (), {"n": n, "dtype": d.name, "place": "cpu"}))


# -- bernoulli ----------------------------------------------------------------------------------
def _bernoulli_kernel(x, p=None):
    prob = x if p is None else np.full(x.shape, p)
    if prob.size and not (np.all(prob >= 0) and np.all(prob <= 1)):
        raise ArgumentError(f"bernoulli: probabilities must lie in [0, 1]; x has values from {np.nanmin(prob)} "
                            f"to {np.nanmax(prob)}" + (" and NaN" if np.isnan(prob).any() else ""))
    return (default_generator().random(x.shape) < prob).astype(x.dtype)


def _bernoulli_meta(x: TensorMeta, p=None) -> TensorMeta:
    return x


bernoulli_op = Op(
    "bernoulli", reference=_bernoulli_kernel, meta=_bernoulli_meta, traits=RANDOM,
    dtypes=(_dt.float16, _dt.float32, _dt.float64, _dt.int32, _dt.int64),
)


def bernoulli(x, p=None, name=None) -> Tensor:
    """Draws 1 with probability ``x[i]`` (or ``p`` for every element when given), else 0;
    the result has ``x``'s shape and dtype.

    >>> import oar
    >>> oar.bernoulli(oar.to_tensor([0.0, 1.0, 1.0])).tolist()
    [0.0, 1.0, 1.0]
    """
    x = as_tensor(x, "x", "bernoulli")
    if p is not None:
        p = float(_scalar_arg(p, "bernoulli", "p"))
        if not 0.0 <= p <= 1.0:
            raise ArgumentError(f"bernoulli: p must lie in [0, 1], got {p}")
    return _draw_from(bernoulli_op, x, {"p": p})


# -- multinomial --------------------------------------------------------------------------------
def _multinomial_kernel(x, num_samples=1, replacement=False):
    probs = np.atleast_2d(x).astype(np.float64)
    if not np.all(np.isfinite(probs)) or np.any(probs < 0):
        raise ArgumentError("multinomial: probabilities must be finite and >= 0")
    sums = probs.sum(axis=-1)
    if np.any(sums <= 0):
        raise ArgumentError("multinomial: every row of x needs a positive sum (not all zeros)")
    if not replacement:
        fewest = int((probs > 0).sum(axis=-1).min(initial=num_samples))
        if num_samples > fewest:
            raise ArgumentError(f"multinomial: without replacement, num_samples ({num_samples}) must not exceed "
                                f"the number of nonzero probabilities in a row ({fewest})")
    generator = default_generator()
    rows = [generator.choice(probs.shape[-1], size=num_samples, replace=replacement, p=row / total)
            for row, total in zip(probs, sums)]
    out = np.stack(rows) if rows else np.zeros((0, num_samples))
    return out.astype(np.int64).reshape(x.shape[:-1] + (num_samples,))


def _multinomial_meta(x: TensorMeta, num_samples=1, replacement=False) -> TensorMeta:
    if len(x.shape) not in (1, 2):
        raise ShapeError(f"multinomial: x {fmt_shape(x.shape)} must be 1-d (one distribution) or 2-d (one per row)")
    if not replacement and x.shape[-1] is not None and num_samples > x.shape[-1]:
        raise ArgumentError(f"multinomial: without replacement, num_samples ({num_samples}) must not exceed the "
                            f"number of categories ({x.shape[-1]})")
    return TensorMeta(tuple(x.shape[:-1]) + (num_samples,), _dt.int64)


multinomial_op = Op(
    "multinomial", reference=_multinomial_kernel, meta=_multinomial_meta, traits=RANDOM,
    dtypes=(_dt.float16, _dt.float32, _dt.float64),
)


def multinomial(x, num_samples=1, replacement=False, name=None) -> Tensor:
    """Category indices drawn with probabilities proportional to ``x`` (1-d, or 2-d: one
    distribution per row), ``num_samples`` per distribution, int64.

    >>> import oar
    >>> oar.multinomial(oar.to_tensor([0.0, 1.0, 0.0]), 2, replacement=True).tolist()
    [1, 1]
    """
    x = as_tensor(x, "x", "multinomial")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) or num_samples < 1:
        raise ArgumentError(f"multinomial: num_samples must be a positive int, got {num_samples!r}")
    attrs = {"num_samples": int(num_samples), "replacement": bool(replacement)}
    _multinomial_meta(TensorMeta(tuple(x.shape), x.dtype), **attrs)
    return _draw_from(multinomial_op, x, attrs)


OPS = [uniform_op, gaussian_op, randint_op, randperm_op, bernoulli_op, multinomial_op]
__all__ = [
    "seed", "get_rng_state", "set_rng_state", "rand", "randn", "standard_normal", "normal", "uniform",
    "randint", "randperm", "bernoulli", "multinomial",
]

METHODS: dict = {}
