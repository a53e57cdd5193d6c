"""``to_device`` from the gpu: a tensor's values leave the device through the driver's copy.

Moving a tensor to the gpu is core's ``to_device`` reference kernel (on the cpu), which hands the
array to this backend's ``from_numpy``; the way back is this kernel. A view is made contiguous on
the device first, so only its own elements cross.
"""

from __future__ import annotations

from oar_triton.array import DeviceArray
from oar_triton.backend import BACKEND

from oar.ops import get_backend


def to_device(x: DeviceArray, device: str):
    host = BACKEND.to_numpy(x)
    return host if device == "cpu" else get_backend(device).from_numpy(host)


KERNELS = {"to_device": to_device}


def aot_configs() -> list[tuple]:
    return []  # no Triton kernel of its own (the contiguous copy is elementwise's assign)
