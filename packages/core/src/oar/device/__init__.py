"""``oar.device``: which devices there are, choosing one, and how much memory tensors hold.

As ``paddle.device``. The CPU is always there; a GPU comes with a backend plugin (oar-triton),
which fills in the same memory statistics for its device.

Tensor memory on the CPU is counted from the first call of a memory statistic here (or a
profiler with ``profile_memory=True``): at that call oar finds the tensors alive, then counts
every op's new outputs as they are made and freed (about a microsecond per array, paid only once
counting is on). Set ``OAR_COUNT_MEMORY=1`` to count from ``import oar``, so that the peak covers
the whole program.

>>> import oar
>>> before = oar.device.memory_allocated()
>>> x = oar.zeros([1024, 256])  # 1 MiB of float32
>>> oar.device.memory_allocated() - before
1048576
>>> del x
>>> oar.device.memory_allocated() == before
True

Streams and events (``Stream``, ``Event``, ``current_stream``, ``stream_guard``) are honest
objects on a synchronous device: oar's backends finish every op before it returns, so a stream
never has pending work (see ``oar.device._streams``). Differences from Paddle's CPU build, which
fails on most of these: ``get_device_name``/``get_device_capability``/``get_device_properties``
and ``get_stream_from_external`` raise, naming what is missing, instead of a NameError;
``ipc_collect`` has nothing to collect and returns; ``get_rng_state`` returns oar's generator
state (a list with one dict), as ``oar.get_rng_state`` does.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys

from oar._engine import profiling as _profiling
from oar._engine.device import Place, get_device, set_device
from oar._engine.registries import BACKENDS
from oar._ops.random import get_rng_state as get_rng_state
from oar._ops.random import seed as _seed
from oar._ops.random import set_rng_state as set_rng_state
from oar.device import cuda
from oar.device._streams import Event as Event
from oar.device._streams import Stream as Stream
from oar.device._streams import StreamContext as StreamContext
from oar.device._streams import current_stream as current_stream
from oar.device._streams import device_name as _device_name
from oar.device._streams import set_stream as set_stream
from oar.device._streams import stream_guard as stream_guard
from oar.errors import ArgumentError
from oar.framework import BFloat16Tensor as BFloat16Tensor
from oar.framework import BoolTensor as BoolTensor
from oar.framework import ByteTensor as ByteTensor
from oar.framework import CharTensor as CharTensor
from oar.framework import DoubleTensor as DoubleTensor
from oar.framework import FloatTensor as FloatTensor
from oar.framework import HalfTensor as HalfTensor
from oar.framework import IntTensor as IntTensor
from oar.framework import LongTensor as LongTensor
from oar.framework import ShortTensor as ShortTensor

__all__ = [
    "cuda", "device_count", "empty_cache", "get_all_custom_device_type", "get_all_device_type",
    "get_available_custom_device", "get_available_device", "get_device", "is_available", "is_compiled_with_cinn",
    "is_compiled_with_cuda", "is_compiled_with_custom_device", "is_compiled_with_distribute", "is_compiled_with_ipu",
    "is_compiled_with_rocm", "is_compiled_with_xpu", "max_memory_allocated", "max_memory_reserved",
    "memory_allocated", "memory_reserved", "reset_max_memory_allocated", "reset_max_memory_reserved",
    "reset_peak_memory_stats", "set_device", "synchronize",
    "BFloat16Tensor", "BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor",
    "IntTensor", "LongTensor", "ShortTensor",
    "Event", "Stream", "StreamContext", "current_stream", "set_stream", "stream_guard", "get_stream_from_external",
    "is_current_stream_capturing", "device", "device_guard", "get_device_name", "get_device_capability",
    "get_device_properties", "get_rng_state", "set_rng_state", "manual_seed", "is_bf16_supported", "ipc_collect",
    "get_cudnn_version",
]

_reserved_peak = [0]


class _MallInfo2(ctypes.Structure):  # glibc's struct mallinfo2 (malloc.h)
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _heap_held() -> int | None:
    """Bytes glibc's malloc holds from the system (its heap and mapped blocks), freed blocks kept
    for reuse included (``oar._engine.memory`` keeps them); None off glibc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):  # musl, or glibc before 2.33
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return info.arena + info.hblkhd


def _backend(device, fn: str):
    """The backend a statistic asks about: None for the CPU, else a GPU backend's object."""
    name = device if isinstance(device, str) else getattr(device, "_backend", None) if device is not None else None
    if device is not None and not isinstance(device, str) and name is None:
        name = "gpu" if getattr(device, "is_gpu_place", lambda: False)() else "cpu"
    name = (name or get_device()).split(":")[0]
    if name == "cpu":
        return None
    backend = BACKENDS.get(name) if name in BACKENDS else None
    if backend is None:
        raise ValueError(f"oar.device.{fn}: no device {name!r} is installed (the CPU is; a GPU needs the oar-triton "
                         f"plugin)")
    if not hasattr(backend, fn):
        raise NotImplementedError(f"oar.device.{fn}: the {name!r} backend does not report memory")
    return backend


def _cpu_counting() -> _profiling.TensorMemory:
    _profiling.TENSOR_MEMORY.start(keep=True)
    return _profiling.TENSOR_MEMORY


def memory_allocated(device=None) -> int:
    """Bytes of tensor storage alive on ``device`` (the current one by default)."""
    backend = _backend(device, "memory_allocated")
    return _cpu_counting().allocated if backend is None else backend.memory_allocated(device)


def max_memory_allocated(device=None) -> int:
    """The highest ``memory_allocated`` since counting began or ``reset_max_memory_allocated``."""
    backend = _backend(device, "max_memory_allocated")
    return _cpu_counting().peak if backend is None else backend.max_memory_allocated(device)


def memory_reserved(device=None) -> int:
    """Bytes the allocator holds for ``device``: on the CPU, what the C allocator holds from the
    system, freed blocks kept for reuse included (at least ``memory_allocated``)."""
    backend = _backend(device, "memory_reserved")
    if backend is not None:
        return backend.memory_reserved(device)
    held = max(_heap_held() or 0, _cpu_counting().allocated)
    _reserved_peak[0] = max(_reserved_peak[0], held)
    return held


def max_memory_reserved(device=None) -> int:
    """The highest ``memory_reserved``: on the CPU, the highest value seen by the calls of these
    functions since the last reset (the C allocator keeps no peak of its own)."""
    backend = _backend(device, "max_memory_reserved")
    if backend is not None:
        return backend.max_memory_reserved(device)
    memory_reserved()
    return _reserved_peak[0]


def reset_max_memory_allocated(device=None) -> None:
    """Start ``max_memory_allocated`` again from what is allocated now."""
    backend = _backend(device, "reset_max_memory_allocated")
    _cpu_counting().reset_peak() if backend is None else backend.reset_max_memory_allocated(device)


def reset_max_memory_reserved(device=None) -> None:
    """Start ``max_memory_reserved`` again from what is reserved now."""
    backend = _backend(device, "reset_max_memory_reserved")
    if backend is not None:
        return backend.reset_max_memory_reserved(device)
    _reserved_peak[0] = 0
    memory_reserved()


def reset_peak_memory_stats(device=None) -> None:
    """Both resets at once."""
    reset_max_memory_allocated(device)
    reset_max_memory_reserved(device)


def empty_cache() -> None:
    """Hand freed memory kept for reuse back to the system (on the CPU, ``malloc_trim``)."""
    for name in BACKENDS:
        backend = BACKENDS.get(name)
        if name != "cpu" and hasattr(backend, "empty_cache"):
            backend.empty_cache()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass


def synchronize(device=None) -> None:
    """Wait for the work queued on ``device``; CPU ops finish when they return."""
    name = (device if isinstance(device, str) else get_device()).split(":")[0]
    backend = BACKENDS.get(name) if name != "cpu" and name in BACKENDS else None
    if backend is not None and hasattr(backend, "synchronize"):
        backend.synchronize()


def get_all_device_type() -> list[str]:
    """The device types installed: ``['cpu']``, plus ``'gpu'`` with a GPU plugin."""
    return ["cpu", *(name for name in BACKENDS if name != "cpu")]


def get_available_device() -> list[str]:
    """The devices usable now: ``['cpu']``, and ``'gpu:0'``, ... for each GPU a plugin sees."""
    devices = ["cpu"]
    for name in get_all_device_type()[1:]:
        backend = BACKENDS.get(name)
        if backend.is_available():
            devices += [f"{name}:{i}" for i in range(backend.device_count())]
    return devices


def device_count() -> int:
    """How many GPUs a GPU plugin sees (0 without one), as ``paddle.device.device_count``."""
    return cuda.device_count()


def is_available() -> bool:
    """Whether a GPU is usable."""
    return cuda.device_count() > 0


def get_all_custom_device_type() -> list[str]:
    """Paddle's custom devices: oar has none (its devices come as backend plugins)."""
    return []


def get_available_custom_device() -> list[str]:
    return []


def is_compiled_with_cuda() -> bool:
    """Whether a GPU backend is installed (oar compiles nothing itself: the oar-triton plugin)."""
    return "gpu" in BACKENDS


def is_compiled_with_rocm() -> bool:
    return False


def is_compiled_with_xpu() -> bool:
    return False


def is_compiled_with_ipu() -> bool:
    return False


def is_compiled_with_cinn() -> bool:
    return False


def is_compiled_with_custom_device(device_type: str) -> bool:
    return False


def is_compiled_with_distribute() -> bool:
    """Whether oar-distributed is installed."""
    return importlib.util.find_spec("oar.distributed") is not None


class device:  # noqa: N801 - Paddle's name
    """Within the block, ``device`` is the current device (None: the current one).

    >>> import oar
    >>> with oar.device.device("cpu"):
    ...     oar.device.get_device()
    'cpu'
    """

    def __init__(self, device=None) -> None:
        self.device = _device_name(device)

    def __enter__(self):
        self._previous = get_device()
        set_device(self.device)
        return self

    def __exit__(self, *exc) -> bool:
        set_device(self._previous)
        return False


class device_guard(device):  # noqa: N801 - Paddle's name
    """``device``, taking a string or a ``Place`` only, as Paddle's ``device_guard``."""

    def __init__(self, device) -> None:
        if not isinstance(device, (str, Place)):
            raise ArgumentError(f"device_guard: 'device' must be a string or a Place, got {type(device).__name__}")
        super().__init__(device)


def _gpu_query(device, fn: str):
    name = _device_name(device)
    if name.split(":")[0] == "cpu":
        raise ArgumentError(f"oar.device.{fn}: the CPU has no device properties (they describe a GPU); pass a GPU "
                            f"device, or set one with oar.device.set_device")
    return getattr(cuda, fn)(name)


def get_device_name(device=None) -> str:
    """The name of a GPU (the current device by default); raises on the CPU."""
    return _gpu_query(device, "get_device_name")


def get_device_capability(device=None) -> tuple[int, int]:
    """A GPU's compute capability ``(major, minor)``; raises on the CPU."""
    return _gpu_query(device, "get_device_capability")


def get_device_properties(device=None):
    """A GPU's properties (name, capability, memory, multiprocessors); raises on the CPU."""
    return _gpu_query(device, "get_device_properties")


def manual_seed(seed: int) -> None:
    """Seed oar's generator (one generator feeds every device), as ``oar.seed``."""
    _seed(seed)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current device computes in bfloat16: the CPU does (numpy kernels through
    ml_dtypes), as Paddle's CPU build answers; a GPU backend says for itself."""
    name = get_device().split(":")[0]
    if name == "cpu":
        return True
    backend = BACKENDS.get(name) if name in BACKENDS else None
    supported = getattr(backend, "is_bf16_supported", None)
    return bool(supported(including_emulation)) if supported is not None else False


def get_stream_from_external(data_ptr: int, device=None) -> Stream:
    """Wrap a stream another library made (a ``cudaStream_t``) on a GPU device; the CPU has none."""
    name = _device_name(device)
    if name.split(":")[0] == "cpu":
        raise ArgumentError("oar.device.get_stream_from_external: the CPU has no external streams to wrap (a "
                            "cudaStream_t belongs to a GPU device)")
    cuda.current_stream(name)  # raises, naming the plugin, without a GPU backend
    return Stream(name, stream_base=data_ptr)


def is_current_stream_capturing() -> bool:
    """Whether the current stream is being captured into a CUDA graph: oar captures none."""
    return False


def ipc_collect() -> None:
    """Free memory shared with other processes through CUDA IPC once unused: oar shares none,
    so there is nothing to collect (a GPU backend that does collects its own)."""
    for name in BACKENDS:
        backend = BACKENDS.get(name)
        if name != "cpu" and hasattr(backend, "ipc_collect"):
            backend.ipc_collect()


def get_cudnn_version() -> int | None:
    """cuDNN's version: None without it, as Paddle's CPU build returns."""
    return None
