"""``oar.device.cuda``: the GPU's memory statistics and queries, as ``paddle.device.cuda``.

Without a GPU backend plugin (oar-triton) there is no GPU: ``device_count()`` is 0 and the
statistics raise, naming the plugin.
"""

from __future__ import annotations

from oar._engine.registries import BACKENDS

__all__ = [
    "device_count", "empty_cache", "get_device_capability", "get_device_name", "get_device_properties",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "reset_max_memory_allocated", "reset_max_memory_reserved", "synchronize",
]


def _gpu(fn: str):
    if "gpu" not in BACKENDS:
        raise RuntimeError(f"oar.device.cuda.{fn}: no GPU backend is installed; install the oar-triton plugin "
                           f"(from a clone of oar's repository: pip install ./plugins/oar-triton)")
    backend = BACKENDS.get("gpu")
    if not hasattr(backend, fn):
        raise NotImplementedError(f"oar.device.cuda.{fn}: the GPU backend does not provide it")
    return getattr(backend, fn)


def device_count() -> int:
    """How many GPUs the GPU backend sees; 0 without one."""
    if "gpu" not in BACKENDS:
        return 0
    backend = BACKENDS.get("gpu")
    return backend.device_count() if backend.is_available() else 0


def memory_allocated(device=None) -> int:
    return _gpu("memory_allocated")(device)


def max_memory_allocated(device=None) -> int:
    return _gpu("max_memory_allocated")(device)


def memory_reserved(device=None) -> int:
    return _gpu("memory_reserved")(device)


def max_memory_reserved(device=None) -> int:
    return _gpu("max_memory_reserved")(device)


def reset_max_memory_allocated(device=None) -> None:
    return _gpu("reset_max_memory_allocated")(device)


def reset_max_memory_reserved(device=None) -> None:
    return _gpu("reset_max_memory_reserved")(device)


def empty_cache() -> None:
    """Free the GPU memory pool's cached blocks (nothing to do without a GPU)."""
    if "gpu" in BACKENDS and hasattr(BACKENDS.get("gpu"), "empty_cache"):
        BACKENDS.get("gpu").empty_cache()


def synchronize(device=None) -> None:
    """Wait for the GPU's queued work (nothing to do without a GPU)."""
    if "gpu" in BACKENDS and hasattr(BACKENDS.get("gpu"), "synchronize"):
        BACKENDS.get("gpu").synchronize()


def get_device_name(device=None) -> str:
    return _gpu("get_device_name")(device)


def get_device_properties(device=None):
    return _gpu("get_device_properties")(device)


def get_device_capability(device=None) -> tuple[int, int]:
    return _gpu("get_device_capability")(device)
