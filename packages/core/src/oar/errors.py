"""The exceptions oar raises for mistakes a user can make.

Each derives from the standard exception a Python user would catch (``ValueError``,
``TypeError``, ``RuntimeError``, ``LookupError``) so that ``except ValueError`` keeps working,
and from ``OarError`` so that ``except oar.errors.OarError`` catches them all. Messages name the
op or function, the argument, what was given and what was expected.
"""

from __future__ import annotations


class OarError(Exception):
    """Base class of every error oar raises on purpose."""


class ShapeError(OarError, ValueError):
    """Shapes that do not fit an op: ``add: cannot broadcast x [2, 3] with y [4]``."""


class DTypeError(OarError, TypeError):
    """A dtype an op does not support, or an unknown dtype name."""


class DeviceError(OarError, RuntimeError):
    """Tensors on different devices, or a device that is not available."""


class ArgumentError(OarError, ValueError):
    """A bad argument value (an axis out of range, a negative size, ...)."""


class IndexOutOfRangeError(ArgumentError, IndexError):
    """An index outside the dimension it indexes: ``gather: index 7 is out of range for axis 0 of size 5``."""


class KernelError(OarError, RuntimeError):
    """A kernel failed on inputs its op accepted; the message names the op and the inputs."""


class GradientError(OarError, RuntimeError):
    """Autograd cannot compute what was asked (a second backward, a tensor modified in place, ...)."""


class RegistryError(OarError, LookupError):
    """A name not found in one of oar's registries (ops, kernels, layers, passes, ...)."""


class PluginError(OarError, RuntimeError):
    """A plugin that could not be loaded or registered."""


class SerializationError(OarError, ValueError):
    """A file that is truncated, corrupted, foreign or from a newer format version."""


class ResourceExhaustedError(OarError, MemoryError):
    """Memory that cannot be had, as Paddle's ResourceExhaustedError (a ``MemoryError`` in Python):
    ``zeros: out of memory: a float32 tensor of shape [1099511627776] needs 4,398,046,511,104
    bytes (4 TiB)``, or a size past what an array can address."""


class PluginWarning(UserWarning):
    """Warns that a plugin failed to load; the other plugins keep working."""


__all__ = [
    "OarError", "ShapeError", "DTypeError", "DeviceError", "ArgumentError", "IndexOutOfRangeError", "KernelError",
    "GradientError", "RegistryError", "PluginError", "SerializationError", "ResourceExhaustedError", "PluginWarning",
]
