"""``oar.static.InputSpec`` (what a to_static input looks like) and ``BuildStrategy``."""

from __future__ import annotations

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.tensor import Tensor
from oar.errors import ArgumentError


class InputSpec:
    """The shape, dtype and name of one input of a ``to_static`` function, as
    ``paddle.static.InputSpec``. ``None`` or ``-1`` in ``shape`` is a dynamic dim (any size);
    it is stored as ``-1``, as Paddle does.

    >>> from oar.static import InputSpec
    >>> InputSpec([None, 784], "float32", "x")
    InputSpec(shape=(-1, 784), dtype=oar.float32, name=x, stop_gradient=False)
    >>> InputSpec([784]).batch(16).shape
    (16, 784)
    """

    def __init__(self, shape, dtype="float32", name: str | None = None, stop_gradient: bool = False):
        self.shape = self._check_shape(shape)
        self.dtype = _dt.get_dtype(dtype)
        if name is not None and not isinstance(name, str):
            raise ArgumentError(f"InputSpec: name must be a str or None, got {type(name).__name__}")
        self.name = name
        self.stop_gradient = bool(stop_gradient)

    @staticmethod
    def _check_shape(shape) -> tuple:
        if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
            shape = [shape]
        if not isinstance(shape, (list, tuple)):
            raise ArgumentError(f"InputSpec: shape must be a list or tuple of ints (None or -1 for a dynamic dim), "
                                f"got {type(shape).__name__}")
        dims = []
        for d in shape:
            if d is None:
                dims.append(-1)
            elif isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= -1:
                dims.append(int(d))
            else:
                raise ArgumentError(f"InputSpec: shape {list(shape)} must hold ints >= 0, or None / -1 for a "
                                    f"dynamic dim; got {d!r}")
        return tuple(dims)

    @classmethod
    def from_tensor(cls, tensor: Tensor, name: str | None = None) -> InputSpec:
        """The spec of ``tensor``: its shape and dtype (and its name unless ``name`` is given)."""
        if not isinstance(tensor, Tensor):
            raise ArgumentError(f"InputSpec.from_tensor: expected a Tensor, got {type(tensor).__name__}")
        return cls(tensor.shape, tensor.dtype, name if name is not None else tensor._name)

    @classmethod
    def from_numpy(cls, ndarray, name: str | None = None) -> InputSpec:
        """The spec of a numpy array: its shape and dtype."""
        array = np.asarray(ndarray)
        return cls(array.shape, array.dtype, name)

    def batch(self, batch_size) -> InputSpec:
        """Insert a leading batch dim (``None``/-1 for a dynamic batch); returns this spec."""
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 1:
                raise ArgumentError(f"InputSpec.batch: batch_size must be an int or a list of one int, got {batch_size}")
            batch_size = batch_size[0]
        if batch_size is not None and (not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool)):
            raise ArgumentError(f"InputSpec.batch: batch_size must be an int, got {type(batch_size).__name__}")
        self.shape = self._check_shape([batch_size, *self.shape])
        return self

    def unbatch(self) -> InputSpec:
        """Remove the leading dim; returns this spec."""
        if not self.shape:
            raise ArgumentError("InputSpec.unbatch: the spec has no dimension to remove")
        self.shape = self.shape[1:]
        return self

    @property
    def dynamic_shape(self) -> tuple:
        """The shape with ``None`` for the dynamic dims (what a program's input value holds)."""
        return tuple(None if d == -1 else d for d in self.shape)

    def fits(self, tensor: Tensor) -> bool:
        """Whether ``tensor`` matches this spec (rank, the static dims and the dtype)."""
        shape = tensor._data.shape
        return (tensor.dtype is self.dtype and len(shape) == len(self.shape)
                and all(d == -1 or d == s for d, s in zip(self.shape, shape)))

    def __repr__(self) -> str:
        return f"InputSpec(shape={self.shape}, dtype={self.dtype}, name={self.name}, stop_gradient={self.stop_gradient})"

    def __eq__(self, other) -> bool:
        return (isinstance(other, InputSpec) and self.shape == other.shape and self.dtype is other.dtype
                and self.name == other.name and self.stop_gradient == other.stop_gradient)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype.name, self.name, self.stop_gradient))


class BuildStrategy:
    """How ``to_static`` optimizes its programs (``paddle.static.BuildStrategy``'s role).

    ``optimization_level``: 0 runs the program as captured; 1 adds constant folding,
    common-subexpression and dead-code elimination; 2 (the default) adds the inference passes
    (conv + batch-norm folding, ...) to the program that runs without gradients.
    ``enable_passes`` / ``disable_passes`` name registered passes to add or leave out;
    ``memory_optimize`` (default True) lets the executor write an elementwise result into a
    dead input's buffer.

    >>> from oar.static import BuildStrategy
    >>> BuildStrategy(optimization_level=1, disable_passes=["constant_folding"]).optimization_level
    1
    """

    def __init__(self, optimization_level: int = 2, enable_passes=(), disable_passes=(),
                 memory_optimize: bool = True):
        if not isinstance(optimization_level, int) or isinstance(optimization_level, bool) or optimization_level < 0:
            raise ArgumentError(f"BuildStrategy: optimization_level must be an int >= 0, got {optimization_level!r}")
        self.optimization_level = optimization_level
        self.enable_passes = list(enable_passes)
        self.disable_passes = list(disable_passes)
        self.memory_optimize = bool(memory_optimize)

    @classmethod
    def coerce(cls, value) -> BuildStrategy:
        """``None`` (the defaults), an int (the level), a dict of the arguments, or a BuildStrategy."""
        if value is None:
            return cls()
        if isinstance(value, BuildStrategy):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(optimization_level=value)
        if isinstance(value, dict):
            return cls(**value)
        raise ArgumentError(f"build_strategy must be None, an optimization level (int), a dict or an "
                            f"oar.static.BuildStrategy, got {type(value).__name__}")

    def __repr__(self) -> str:
        return (f"BuildStrategy(optimization_level={self.optimization_level}, enable_passes={self.enable_passes}, "
                f"disable_passes={self.disable_passes}, memory_optimize={self.memory_optimize})")
