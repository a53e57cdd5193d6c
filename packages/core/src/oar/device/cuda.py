"""``oar.device.cuda``: the GPU's memory statistics and queries, as ``paddle.device.cuda``.

Without a GPU backend plugin (oar-triton) there is no GPU: ``device_count()`` is 0 and the
statistics raise, naming the plugin. ``Stream`` and ``Event`` are ``oar.device``'s (see
``oar.device._streams``: oar's backends are synchronous, so a stream has nothing pending);
``current_stream`` and ``stream_guard`` here ask for a GPU, as Paddle's ``cuda`` module does.
"""

from __future__ import annotations

from oar._engine.registries import BACKENDS
from oar.device._streams import Event as Event
from oar.device._streams import Stream as Stream
from oar.device._streams import current_stream as _current_stream
from oar.device._streams import device_name
from oar.device._streams import stream_guard as _stream_guard
from oar.errors import ArgumentError

__all__ = [
    "device_count", "empty_cache", "get_device_capability", "get_device_name", "get_device_properties",
    "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
    "reset_max_memory_allocated", "reset_max_memory_reserved", "synchronize", "Event", "Stream", "current_stream",
    "memory_summary", "stream_guard", "vmm_compact",
]


def _gpu(fn: str):
    _gpu_installed(fn)
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


def _gpu_device(device, fn: str) -> str:
    """``'gpu:i'`` for ``device`` (None: GPU 0), once a GPU backend is known to be installed."""
    _gpu_installed(fn)
    if device is None:
        return "gpu:0"
    name = device_name(device)
    if name.split(":")[0] != "gpu":
        raise ArgumentError(f"oar.device.cuda.{fn}: expected a GPU device, got {device!r}")
    return name


def _gpu_installed(fn: str) -> None:
    if "gpu" not in BACKENDS:
        raise RuntimeError(f"oar.device.cuda.{fn}: no GPU backend is installed; install the oar-triton plugin "
                           f"(from a clone of oar's repository: pip install ./plugins/oar-triton)")


def current_stream(device=None) -> Stream:
    """The current stream of a GPU (GPU 0 by default); see ``oar.device.current_stream``."""
    return _current_stream(_gpu_device(device, "current_stream"))


def stream_guard(stream: Stream):
    """``oar.device.stream_guard`` for a GPU stream."""
    if stream is not None:
        _gpu_device(stream.device, "stream_guard")
    return _stream_guard(stream)


def memory_summary(device=None) -> None:
    """Print the GPU's memory statistics (Paddle prints, and returns None)."""
    name = _gpu_device(device, "memory_summary")
    mib = 1024 * 1024
    rows = [("allocated", memory_allocated(name)), ("peak allocated", max_memory_allocated(name)),
            ("reserved", memory_reserved(name)), ("peak reserved", max_memory_reserved(name))]
    print(f"oar memory summary ({name})")
    for label, size in rows:
        print(f"  {label:<15} {size / mib:12.2f} MiB")


def vmm_compact(device=None) -> int:
    """Compact the GPU memory pool's virtual memory; returns the bytes moved."""
    return _gpu("vmm_compact")(_gpu_device(device, "vmm_compact"))
