__path__ = __import__("pkgutil").extend_path(__path__, __name__)  # other oar-* distributions add subpackages

__doc__ = """oar: a deep-learning framework with PaddlePaddle's API, on numpy, extended by plugins.

>>> import oar
>>> x = oar.to_tensor([1.0, 2.0, 3.0], stop_gradient=False)
>>> (x * x).sum().backward()
>>> x.grad.tolist()
[2.0, 4.0, 6.0]
"""

import importlib as _importlib

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
from oar._engine.serialization import load, save  # noqa: E402
from oar._engine.tensor import Tensor, set_printoptions, to_tensor  # noqa: E402
from oar._engine.threads import set_num_threads  # noqa: E402
from oar._ops import tensor_methods as _tensor_methods  # noqa: E402,F401 - binds Tensor's op methods

# The public functions of each op family: each module's ``__all__`` is its chosen public list.
from oar._ops.assign import *  # noqa: E402,F403
from oar._ops.creation import *  # noqa: E402,F403
from oar._ops.elementwise import *  # noqa: E402,F403
from oar._ops.indexing import *  # noqa: E402,F403
from oar._ops.inplace import *  # noqa: E402,F403
from oar._ops.linalg import *  # noqa: E402,F403
from oar._ops.random import *  # noqa: E402,F403
from oar._ops.reduction import *  # noqa: E402,F403
from oar._ops.shape import *  # noqa: E402,F403
from oar._version import __version__  # noqa: E402


def _load_plugins() -> None:
    # deferred (import time): pluggy and the entry points load on the first registry read, not at import oar
    from oar.plugins import load_plugins

    load_plugins()


_registries.set_plugin_loader(_load_plugins)
_memory.keep_freed_memory()  # a process-wide malloc setting (oar._engine.memory says why)

# Subpackages and conveniences that load on first use; the value names the distribution that
# provides them, so a missing one says what to install.
_LAZY_MODULES = {
    "plugins": "oar-core",
    "ops": "oar-core",
    "utils": "oar-core",
    "hookspecs": "oar-core",
    "testing": "oar-core",
    "autograd": "oar-core",
    "nn": "oar-nn",
    "optimizer": "oar-nn",
    "regularizer": "oar-nn",
    "io": "oar-nn",
    "metric": "oar-nn",
    "vision": "oar-nn",
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
}


def __getattr__(name: str):
    if name in _LAZY_MODULES:
        try:
            module = _importlib.import_module(f"oar.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"oar.{name}":
                raise
            raise AttributeError(
                f"oar.{name} is not installed: it comes with the {_LAZY_MODULES[name]} package "
                f"(pip install {_LAZY_MODULES[name]})"
            ) from None
        globals()[name] = module
        return module
    if name in _LAZY_ATTRS:
        module_name, attr = _LAZY_ATTRS[name]
        try:
            module = _importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name != module_name:
                raise
            dist = _LAZY_MODULES.get(module_name.split(".")[1], "the package that provides it")
            raise AttributeError(f"oar.{name} is not installed: it comes with {dist} (pip install {dist})") from None
        value = getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'oar' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY_MODULES) | set(_LAZY_ATTRS))
