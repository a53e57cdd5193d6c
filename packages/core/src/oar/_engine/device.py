"""Devices: the ``Backend`` a plugin registers, places, and the current device.

A backend owns storage (``from_numpy``, ``to_numpy``, ``zeros``, ``full``) and says whether its
device is available; its kernels are registered separately, under its name. Core has ``cpu``
(numpy arrays); oar-triton adds ``gpu``. ``oar.set_device`` selects where new tensors go.
"""

from __future__ import annotations

import numpy as np

from oar._engine.registries import BACKENDS
from oar.errors import DeviceError

GPU_HINT = " Install the oar-triton plugin (pip install oar-triton) for GPU support."


class Backend:
    """Storage and basic allocation of one device kind; kernels are registered separately.

    Subclass this in a plugin and register it with ``oar_register_backends``.
    """

    name = "cpu"

    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def from_numpy(self, array: np.ndarray):
        return array

    def to_numpy(self, data) -> np.ndarray:
        return data

    def zeros(self, shape, np_dtype):
        return np.zeros(shape, np_dtype)

    def full(self, shape, value, np_dtype):
        return np.full(shape, value, np_dtype)

    def copy(self, data):
        """A new buffer with ``data``'s values (a leaf's ``.grad`` gets one of its own)."""
        return np.array(data)


class CPUBackend(Backend):
    """The numpy backend of core."""

    name = "cpu"


class Place:
    """Where a tensor lives: ``Place(cpu)``; ``oar.CPUPlace()`` and ``oar.CUDAPlace(0)`` make one."""

    __slots__ = ("backend", "index")

    def __init__(self, backend: str = "cpu", index: int = 0):
        self.backend = backend
        self.index = index

    def is_cpu_place(self) -> bool:
        return self.backend == "cpu"

    def is_gpu_place(self) -> bool:
        return self.backend == "gpu"

    def get_device_id(self) -> int:
        return self.index

    def __eq__(self, other) -> bool:
        return isinstance(other, Place) and (self.backend, self.index) == (other.backend, other.index)

    def __hash__(self) -> int:
        return hash((self.backend, self.index))

    def __repr__(self) -> str:
        return "Place(cpu)" if self.backend == "cpu" else f"Place({self.backend}:{self.index})"


def CPUPlace() -> Place:  # noqa: N802 - Paddle's name
    return Place("cpu")


def CUDAPlace(index: int = 0) -> Place:  # noqa: N802 - Paddle's name
    return Place("gpu", index)


def place_backend(place) -> str | None:
    """The backend name of a place (``Place``, ``'cpu'``, ``'gpu:0'``, ``'cuda'``), or None for None."""
    if place is None:
        return None
    if isinstance(place, Place):
        return place.backend
    name = str(place).split(":")[0].lower()
    return "gpu" if name == "cuda" else name


_current_device = ["cpu"]


def current_device() -> str:
    return _current_device[0]


def backend_for(place, fn: str) -> str:
    """The backend a tensor made by ``fn`` goes to, or a DeviceError saying what to install."""
    backend = place_backend(place) or _current_device[0]
    if backend != "cpu" and backend not in BACKENDS:
        hint = GPU_HINT if backend == "gpu" else ""
        raise DeviceError(f"{fn}: place {place!r} needs the {backend!r} backend, which is not installed.{hint}")
    return backend


def set_device(device: str) -> str:
    """Select the device new tensors go to: ``'cpu'`` or ``'gpu'``/``'gpu:0'`` (needs oar-triton).

    >>> import oar
    >>> oar.set_device("cpu")
    'cpu'
    """
    name = str(device).split(":")[0].lower()
    if name == "cuda":
        name = "gpu"
    if name not in BACKENDS:
        known = ", ".join(BACKENDS)
        hint = GPU_HINT if name == "gpu" else ""
        raise DeviceError(f"set_device: no backend {name!r} is installed (installed: {known}).{hint}")
    backend = BACKENDS.get(name)
    if not backend.is_available():
        why = backend.unavailable_reason() if hasattr(backend, "unavailable_reason") else ""
        raise DeviceError(f"set_device: backend {name!r} is installed but no {name} device is available here"
                          + (f": {why}" if why else ""))
    _current_device[0] = name
    return str(device)


def get_device() -> str:
    """The current device as a string, e.g. ``'cpu'``."""
    return _current_device[0]
