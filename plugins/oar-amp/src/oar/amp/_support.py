"""Which devices compute in float16 and bfloat16."""

from __future__ import annotations

import oar
from oar.errors import ArgumentError
from oar.plugins import registries


def _supports(device, dtype: str, where: str) -> bool:
    if device is None:
        device = oar.get_device()
    if not isinstance(device, str):
        raise ArgumentError(f"{where}: device must be a string such as 'cpu' or 'gpu:0', got {device!r}")
    name = device.split(":")[0].lower()
    name = "gpu" if name == "cuda" else name
    backends = registries().backends
    if name not in backends:
        return False
    backend = backends.get(name)
    if not backend.is_available():
        return False
    query = getattr(backend, "supports_dtype", None)  # a backend plugin says what its kernels compute in
    if query is not None:
        return bool(query(dtype))
    # Core's cpu kernels compute float16 through numpy and bfloat16 through ml_dtypes (in float32
    # where a kernel has no native one); a backend without the query is not assumed to.
    return name == "cpu"


def is_float16_supported(device: str | None = None) -> bool:
    """Whether ``device`` (``'cpu'``, ``'gpu:0'``, ...; None: the current one) computes in float16.

    >>> import oar
    >>> oar.amp.is_float16_supported("cpu")
    True
    """
    return _supports(device, "float16", "is_float16_supported")


def is_bfloat16_supported(device: str | None = None) -> bool:
    """Whether ``device`` (None: the current one) computes in bfloat16: the cpu does, through
    ml_dtypes (Paddle's CPU build answers from its oneDNN kernels); another backend answers through
    its ``supports_dtype(dtype)``.

    >>> import oar
    >>> oar.amp.is_bfloat16_supported()
    True
    """
    return _supports(device, "bfloat16", "is_bfloat16_supported")
