__path__ = __import__("pkgutil").extend_path(__path__, __name__)  # other oar-* distributions add subpackages

__doc__ = """oar: a deep-learning framework with PaddlePaddle's API, on numpy, extended by plugins.

>>> import oar
>>> x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]
"""

import importlib as _importlib
import importlib.util as _importlib_util
import os as _os

from oar import errors  # noqa: E402
from oar._engine import memory as _memory  # noqa: E402
from oar._engine import registries as _registries  # noqa: E402
from oar._engine.autograd import (  # noqa: E402
    enable_grad,
    grad,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from oar._engine.device import CPUPlace, CUDAPlace, Place, get_device, set_device  # noqa: E402
from oar._engine.dtypes import (  # noqa: E402
    DType,
    bfloat16,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from oar._engine.dtypes import bool_ as bool  # noqa: E402,A001 - Paddle's name: oar.bool
from oar._engine.dtypes import float16 as half  # noqa: E402 - Paddle 3's dtype aliases
from oar._engine.dtypes import float32 as float  # noqa: E402,A001
from oar._engine.dtypes import float64 as double  # noqa: E402
from oar._engine.serialization import load, save  # noqa: E402
from oar._engine.tensor import Tensor, from_numpy, set_printoptions, to_tensor  # noqa: E402
from oar._engine.threads import set_num_threads  # noqa: E402
from oar._ops import tensor_methods as _tensor_methods  # noqa: E402,F401 - binds Tensor's op methods

# The public functions of each op family: each module's ``__all__`` is its chosen public list.
from oar._ops.assign import *  # noqa: E402,F403
from oar._ops.compat import *  # noqa: E402,F403
from oar._ops.complex import *  # noqa: E402,F403
from oar._ops.creation import *  # noqa: E402,F403
from oar._ops.elementwise import *  # noqa: E402,F403
from oar._ops.indexing import *  # noqa: E402,F403
from oar._ops.inplace import *  # noqa: E402,F403
from oar._ops.linalg import *  # noqa: E402,F403
from oar._ops.linalg_ext import *  # noqa: E402,F403
from oar._ops.manipulation import *  # noqa: E402,F403
from oar._ops.random import *  # noqa: E402,F403
from oar._ops.reduction import *  # noqa: E402,F403
from oar._ops.shape import *  # noqa: E402,F403
from oar._ops.special import *  # noqa: E402,F403
from oar._ops.statistics import *  # noqa: E402,F403
from oar._version import __version__  # noqa: E402
from oar.framework import *  # noqa: E402,F403


def _load_plugins() -> None:
    # deferred (import time): pluggy and the entry points load on the first registry read, not at import oar
    from oar.plugins import load_plugins

    load_plugins()


_registries.set_plugin_loader(_load_plugins)
_memory.keep_freed_memory()  # a process-wide malloc setting (oar._engine.memory says why)
if _os.environ.get("OAR_COUNT_MEMORY") == "1":  # oar.device's memory statistics from the start (oar.device says why)
    from oar._engine import profiling as _profiling

    _profiling.TENSOR_MEMORY.start(keep=True)

# Subpackages and conveniences that load on first use; the value names the distribution that
# provides them, so a missing one says what to install.
_LAZY_MODULES = {
    "plugins": "oar-core",
    "ops": "oar-core",
    "utils": "oar-core",
    "hookspecs": "oar-core",
    "testing": "oar-core",
    "autograd": "oar-core",
    "linalg": "oar-core",
    "distribution": "oar-core",
    "fft": "oar-core",
    "signal": "oar-core",
    "sparse": "oar-core",
    "device": "oar-core",
    "profiler": "oar-core",
    "incubate": "oar-core",
    "nn": "oar-nn",
    "optimizer": "oar-nn",
    "regularizer": "oar-nn",
    "io": "oar-nn",
    "metric": "oar-nn",
    "vision": "oar-nn",
    "text": "oar-nn",
    "callbacks": "oar-nn",
    "hapi": "oar-nn",
    "jit": "oar-core",
    "static": "oar-core",
    "slim": "oar-slim",
    "quantization": "oar-slim",
    "inference": "oar-serving",
    "serving": "oar-serving",
    "distributed": "oar-distributed",
    "amp": "oar-amp",
    "onnx": "oar-onnx",
}
_LAZY_ATTRS = {  # name -> (module, attribute)
    "hookimpl": ("oar.plugins", "hookimpl"),
    "hookspec": ("oar.plugins", "hookspec"),
    "Model": ("oar.hapi", "Model"),
    "summary": ("oar.hapi", "summary"),
    "flops": ("oar.hapi", "flops"),
    "DataParallel": ("oar.distributed", "DataParallel"),
    "ParamAttr": ("oar.nn", "ParamAttr"),
    **{name: ("oar.device", name) for name in (  # Paddle's top-level build queries (#19)
        "is_compiled_with_cuda", "is_compiled_with_cinn", "is_compiled_with_custom_device",
        "is_compiled_with_distribute", "is_compiled_with_ipu", "is_compiled_with_rocm", "is_compiled_with_xpu")},
    **{name: ("oar.amp", name) for name in (
        "get_autocast_dtype", "get_autocast_cpu_dtype", "get_autocast_gpu_dtype", "is_autocast_enabled")},
    **{name: ("oar.nn.functional", name) for name in (  # Paddle 3's top-level functionals (#19)
        "conv1d", "conv2d", "conv3d", "group_norm", "layer_norm", "adaptive_avg_pool1d")},
}


# oar's distributions install from a clone of its repository (none is on a package index), from
# packages/<name> for oar-<name>, plugins/oar-<name> for a plugin; a planned one has no folder there
# yet. tests/core/test_namespace_hygiene.py holds both sets to the repository.
_PLUGINS = {"oar-amp", "oar-onnx"}
_PLANNED: set[str] = set()  # a distribution named in _LAZY_MODULES whose folder does not exist yet


def _absent(name: str, module_name: str) -> AttributeError:
    """Why ``oar.<name>`` is missing: ``module_name``, which serves it, comes with a distribution
    that is not installed, or that is planned and not written yet."""
    dist = _LAZY_MODULES[module_name.split(".")[1]]
    folder = f"plugins/{dist}" if dist in _PLUGINS else f"packages/{dist.removeprefix('oar-')}"
    install = f"from a clone of oar's repository: pip install ./{folder}"
    if dist in _PLANNED:
        return AttributeError(f"oar.{name} is planned: it will come with the {dist} package, not written yet; "
                              f"once it is, {install}")
    return AttributeError(f"oar.{name} is not installed: it comes with the {dist} package, which is on no "
                          f"package index; {install}")


def __getattr__(name: str):
    if name not in _LAZY_MODULES and name not in _LAZY_ATTRS:
        raise AttributeError(f"module 'oar' has no attribute {name!r}")
    module_name, attr = _LAZY_ATTRS.get(name, (f"oar.{name}", None))
    try:
        module = _importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise _absent(name, module_name) from None
    value = module if attr is None else getattr(module, attr)
    globals()[name] = value
    return value


def __dir__():
    # What works here: the public names, without module plumbing (oar._engine, _LAZY_MODULES, ...) and
    # without the subpackages and conveniences whose distribution is absent (find_spec imports nothing).
    public = {name for name in globals() if not name.startswith("_")} | {"__version__"}
    modules = {**{name: f"oar.{name}" for name in _LAZY_MODULES}, **{n: m for n, (m, _) in _LAZY_ATTRS.items()}}
    # (the subpackage decides: find_spec of oar.nn.functional would import oar.nn, or fail without it)
    installed = {name for name, module in modules.items() if _importlib_util.find_spec(".".join(module.split(".")[:2]))}
    return sorted(public | installed)
