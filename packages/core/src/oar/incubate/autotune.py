"""``oar.incubate.autotune``: Paddle's auto-tuning switch -- the fastest kernel per shape, the
DataLoader's best ``num_workers``.

>>> import oar
>>> from oar.incubate import autotune
>>> autotune.set_config({"kernel": {"enable": True, "tuning_range": [1, 10]}})
>>> autotune.get_config()["kernel"]
{'enable': True, 'tuning_range': [1, 10]}
>>> autotune.set_config({"kernel": {"enable": False}})

**Kernels.** A plugin may register, beside an op's kernel, *alternatives* for the same (op,
backend, dtype) (``KernelRegistry.register_alternative``, documented with the hook
``oar_register_kernels``): oar-numba registers its convolution's paths (bands, im2col, wide
patches, numpy's reference). With kernel tuning on, the first call of such an op on a new *shape
key* (the input shapes and dtypes and the op's attributes) during the tuning range runs every
alternative on the call's own inputs -- once each to warm up (numba compiles, caches fill), then
``REPEATS`` rounds taking turns -- and keeps the fastest for that key from then on (the op's kernel unless
another is ``MARGIN`` faster); an alternative that raises
or disagrees with the op's kernel (beyond the dtype's rounding, ``TOLERANCE``) is left out with a
warning. Shapes first seen outside the range get the op's kernel, as with autotune off.

The choices are kept in a small JSON file (``cache_path()``: ``$OAR_AUTOTUNE_CACHE``, else
``~/.cache/oar/autotune.json``), one section per machine (CPU model, core count) and oar version,
written atomically after each choice; a shape found there is not timed again.

Why it costs nothing when off: the engine caches one kernel per (op, backend, dtype) on the op.
Turning tuning on makes the ops that have alternatives forget that cache, and the next lookup
caches a ``TunedKernel`` in its place; turning it off puts the plain kernels back. Ops without
alternatives, and every op while tuning is off, run exactly the code they ran before.

**Steps.** ``tuning_range: [start, end]`` counts steps as Paddle does: tuning happens while
``start <= step < end``. Each batch an ``oar.io.DataLoader`` hands out is a step; a loop that
does not read a DataLoader calls ``step()`` once per iteration. ``set_config`` restarts the count.

**DataLoader.** With ``dataloader.enable``, the first ``tuning_steps`` batches of each
``oar.io.DataLoader``'s first pass are shared among a few ``num_workers`` values; the one with
the best throughput is kept for the rest of the run and logged (logger ``oar.io``). oar-nn reads
``dataloader_tuning_steps()``.

**Layout** is accepted for Paddle's configs: oar's CPU kernels have one layout each, so there is
nothing to tune, which a warning says when it is enabled.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import warnings
from collections.abc import Callable
from pathlib import Path
from time import perf_counter
from typing import Any

import numpy as np

from oar._engine.registries import KERNELS
from oar._engine.serialization import atomic_file
from oar._version import __version__
from oar.errors import ArgumentError

REPEATS = 3  # timed runs per alternative after the warm-up run; the fastest run counts
MARGIN = 0.05  # an alternative replaces the op's kernel when it is this much faster, not on a tie
TOLERANCE = {"float16": 1e-2, "bfloat16": 5e-2, "float32": 1e-4, "float64": 1e-9}  # relative to max |result|
CACHE_ENV = "OAR_AUTOTUNE_CACHE"
_FORMAT = 1

_config: dict[str, dict[str, Any]] = {
    "kernel": {"enable": False, "tuning_range": [1, 10]},  # Paddle's default range
    "layout": {"enable": False},
    "dataloader": {"enable": False, "tuning_steps": 500},  # Paddle's default steps
}
_KEYS = {"kernel": {"enable", "tuning_range"}, "layout": {"enable"}, "dataloader": {"enable", "tuning_steps"}}
_step = 0
_cache: dict[str, str] | None = None  # this machine's section of the cache file, read on first use
_tuned: dict[str, dict[str, Any]] = {}  # key -> what was timed and chosen in this process (``choices()``)
# op|backend|dtype -> shape key -> the name chosen: outlives the TunedKernels, which set_config replaces
_chosen_names: dict[str, dict[Any, str]] = {}


def set_config(config: dict | str | None = None) -> None:
    """Configure kernel, layout and DataLoader tuning, with Paddle's keys; ``None`` turns all on.

    ``config`` is a dict (or the path of a JSON file holding one) mapping ``"kernel"``,
    ``"layout"`` and ``"dataloader"`` to their settings; a kind left out keeps its settings.

    >>> from oar.incubate import autotune
    >>> autotune.set_config({"dataloader": {"enable": True, "tuning_steps": 20}})
    >>> autotune.dataloader_tuning_steps()
    20
    >>> autotune.set_config({"dataloader": {"enable": False, "tuning_steps": 500}})
    >>> autotune.set_config({"kernel": {"tuning_range": [5]}})
    Traceback (most recent call last):
    ...
    oar.errors.ArgumentError: autotune: kernel.tuning_range must be [start_step, end_step] with 0 <= start <= end, got [5]
    """
    global _step
    if config is None:
        config = {kind: {"enable": True} for kind in _KEYS}
    elif isinstance(config, (str, os.PathLike)):
        try:
            with open(config, encoding="utf-8") as f:
                config = json.load(f)
        except (OSError, ValueError) as exc:
            raise ArgumentError(f"autotune: cannot read the config file {str(config)!r}: {exc}") from exc
    if not isinstance(config, dict):
        raise ArgumentError(f"autotune: config must be a dict, a JSON file path or None, got {type(config).__name__}")
    new = {kind: dict(settings) for kind, settings in _config.items()}
    for kind, settings in config.items():
        if kind not in _KEYS:
            raise ArgumentError(f"autotune: unknown kind {kind!r}; expected some of {sorted(_KEYS)}")
        if not isinstance(settings, dict):
            raise ArgumentError(f"autotune: {kind} must be a dict of settings, got {settings!r}")
        unknown = set(settings) - _KEYS[kind]
        if unknown:
            raise ArgumentError(f"autotune: unknown {kind} setting(s) {sorted(unknown)}; expected {sorted(_KEYS[kind])}")
        new[kind].update(settings)
        if not isinstance(new[kind]["enable"], bool):
            raise ArgumentError(f"autotune: {kind}.enable must be True or False, got {new[kind]['enable']!r}")
    window = new["kernel"]["tuning_range"]
    if (not isinstance(window, (list, tuple)) or len(window) != 2 or not all(_is_int(s) for s in window)
            or not 0 <= window[0] <= window[1]):
        raise ArgumentError(f"autotune: kernel.tuning_range must be [start_step, end_step] with 0 <= start <= end, "
                            f"got {window!r}")
    new["kernel"]["tuning_range"] = [int(s) for s in window]
    steps = new["dataloader"]["tuning_steps"]
    if not _is_int(steps) or steps < 1:
        raise ArgumentError(f"autotune: dataloader.tuning_steps must be an int >= 1, got {steps!r}")
    if new["layout"]["enable"]:
        warnings.warn("autotune: layout tuning has nothing to tune on oar's CPU kernels (each has one layout); "
                      "the setting is accepted and ignored", UserWarning, stacklevel=2)
    _config.update(new)
    _step = 0
    KERNELS.set_tuner(TunedKernel if new["kernel"]["enable"] else None)


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def get_config() -> dict[str, dict[str, Any]]:
    """The settings in force, in ``set_config``'s form (a copy).

    >>> from oar.incubate import autotune
    >>> sorted(autotune.get_config())
    ['dataloader', 'kernel', 'layout']
    """
    return {kind: dict(settings) for kind, settings in _config.items()}


def step() -> int:
    """Count one training step (each DataLoader batch does); returns the step number.

    >>> from oar.incubate import autotune
    >>> autotune.set_config({"kernel": {"enable": False}})
    >>> autotune.step(), autotune.step()
    (1, 2)
    """
    global _step
    _step += 1
    return _step


def tuning() -> bool:
    """Whether kernel tuning is on and the current step is in the tuning range."""
    kernel = _config["kernel"]
    return kernel["enable"] and kernel["tuning_range"][0] <= _step < kernel["tuning_range"][1]


def dataloader_tuning_steps() -> int | None:
    """How many batches a DataLoader's first pass may spend trying ``num_workers`` values, or None
    when DataLoader tuning is off (what oar-nn reads)."""
    dataloader = _config["dataloader"]
    return dataloader["tuning_steps"] if dataloader["enable"] else None


def choices() -> dict[str, dict[str, Any]]:
    """What kernel tuning decided in this process: shape key -> ``{"chosen": name, "ms": {name:
    fastest run}}`` (``"ms"`` is empty for a choice read from the cache file)."""
    return {key: dict(value) for key, value in _tuned.items()}


# -- the cache file ----------------------------------------------------------------------------------

def cache_path() -> Path:
    """Where the choices are kept: ``$OAR_AUTOTUNE_CACHE``, else ``~/.cache/oar/autotune.json``
    (under ``$XDG_CACHE_HOME`` when set)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "oar" / "autotune.json"


def machine_key() -> str:
    """The cache file's section for this machine and oar version: choices made on another CPU, or
    with other kernels, are not reused."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:  # not Linux: platform's name
        pass
    return f"{model} | {os.cpu_count()} cores | oar {__version__}"


def _read_file() -> dict:
    try:
        with open(cache_path(), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):  # none yet, or unreadable: start afresh (it is only a cache)
        return {"format": _FORMAT, "machines": {}}
    if not isinstance(data, dict) or data.get("format") != _FORMAT or not isinstance(data.get("machines"), dict):
        return {"format": _FORMAT, "machines": {}}
    return data


def _cached() -> dict[str, str]:
    global _cache
    if _cache is None:
        section = _read_file()["machines"].get(machine_key(), {})
        _cache = {k: v for k, v in section.items() if isinstance(v, str)}
    return _cache


def _remember(key: str, name: str) -> None:
    _cached()[key] = name
    data = _read_file()  # another process may have added its choices since
    data["machines"].setdefault(machine_key(), {})[key] = name
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(path, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=1, sort_keys=True)
    except OSError as exc:  # a read-only home must not stop training: the choice still holds in memory
        warnings.warn(f"autotune: could not write the cache file {path}: {exc}", UserWarning, stacklevel=3)


def clear_cache() -> None:
    """Forget the choices, in this process and in the cache file (for tests and after upgrades)."""
    global _cache
    _cache = None
    _tuned.clear()
    _chosen_names.clear()
    KERNELS.set_tuner(KERNELS.tuner)  # the TunedKernels cached on ops hold choices too
    with contextlib.suppress(FileNotFoundError):
        cache_path().unlink()


# -- the kernel that tunes -----------------------------------------------------------------------------

def _shape_key(arrays: tuple, attrs: dict) -> str:
    shapes = ",".join(f"{getattr(a, 'dtype', type(a).__name__)}{list(getattr(a, 'shape', ()))}" for a in arrays)
    return f"{shapes}|{attrs}"


def _agrees(out: Any, reference: Any, tolerance: float) -> bool:
    if isinstance(reference, tuple):
        return isinstance(out, tuple) and len(out) == len(reference) and all(
            _agrees(o, r, tolerance) for o, r in zip(out, reference))
    out, reference = np.asarray(out), np.asarray(reference)
    if out.shape != reference.shape or out.dtype != reference.dtype:
        return False
    if reference.dtype.kind not in "fc":
        return bool(np.array_equal(out, reference))
    scale = float(np.max(np.abs(reference))) if reference.size else 0.0
    return bool(np.allclose(out, reference, rtol=tolerance, atol=tolerance * max(scale, 1e-30), equal_nan=True))


class TunedKernel:
    """The kernel cached for an op with alternatives while kernel tuning is on: per shape key, the
    alternative chosen (timed now, or read from the cache file), else the op's kernel.

    >>> import numpy as np
    >>> from oar.incubate.autotune import TunedKernel
    >>> kernel = TunedKernel("twice", "cpu", "float64", [("default", lambda x: x * 2), ("add", lambda x: x + x)])
    >>> kernel(np.ones(2)).tolist()  # outside the tuning range: the op's kernel
    [2.0, 2.0]
    """

    def __init__(self, op: str, backend: str, dtype: Any, alternatives: list[tuple[str, Callable[..., Any]]]):
        self.prefix = f"{op}|{backend}|{getattr(dtype, 'name', dtype)}"
        self.tolerance = TOLERANCE.get(getattr(dtype, "name", str(dtype)), 0.0)
        self.alternatives = dict(alternatives)
        self.default = alternatives[0][1]
        self.chosen: dict[Any, Callable[..., Any]] = {}  # shape key -> kernel
        self.names = _chosen_names.setdefault(self.prefix, {})

    def __call__(self, *arrays, **attrs):
        # a tuple: the text key of the cache file is built only on a miss, it costs several lookups
        key = (tuple([a.shape for a in arrays]), tuple([a.dtype for a in arrays]), tuple(attrs),
               tuple([tuple(v) if v.__class__ is list else v for v in attrs.values()]))
        try:
            kernel = self.chosen.get(key)
        except TypeError:  # an attribute that does not hash (nested lists): its text
            key = _shape_key(arrays, attrs)
            kernel = self.chosen.get(key)
        if kernel is None:
            name = self.names.get(key)  # chosen before set_config made this TunedKernel
            if name in self.alternatives:
                kernel = self.chosen[key] = self.alternatives[name]
                return kernel(*arrays, **attrs)
            text = _shape_key(arrays, attrs)
            full_key = f"{self.prefix}|{text}"
            name = _cached().get(full_key)
            if name in self.alternatives:
                kernel = self.chosen[key] = self.alternatives[name]
                self.names[key] = name
                _tuned.setdefault(full_key, {"chosen": name, "ms": {}})
            elif tuning():
                return self._tune(key, text, full_key, arrays, attrs)
            else:
                if _step >= _config["kernel"]["tuning_range"][1]:  # the range is over: the op's kernel for good
                    self.chosen[key] = self.default
                return self.default(*arrays, **attrs)
        return kernel(*arrays, **attrs)

    def _tune(self, key: Any, text: str, full_key: str, arrays: tuple, attrs: dict):
        result = None
        kept = []
        for name, kernel in self.alternatives.items():
            try:
                out = kernel(*arrays, **attrs)  # warm-up: compilation, first-touch buffers
            except Exception as exc:  # noqa: BLE001 - a failing alternative is left out, the op's kernel reports its own errors
                if result is None:
                    raise
                warnings.warn(f"autotune: {self.prefix} alternative {name!r} raised {type(exc).__name__}: {exc} "
                              f"on {text}; left out", UserWarning, stacklevel=2)
                continue
            if result is None:
                result = out  # the op's kernel runs first: what the others must agree with
            elif not _agrees(out, result, self.tolerance):
                warnings.warn(f"autotune: {self.prefix} alternative {name!r} disagrees with the op's kernel "
                              f"on {text}; left out", UserWarning, stacklevel=2)
                continue
            kept.append((name, kernel))
        times = dict.fromkeys([name for name, _ in kept], float("inf"))
        # in turns, not one alternative after the other: whichever ran first would pay for
        # waking the thread pools and for a busy moment of the machine
        for _ in range(REPEATS):
            for name, kernel in kept:
                begin = perf_counter()
                kernel(*arrays, **attrs)
                times[name] = min(times[name], (perf_counter() - begin) * 1e3)
        chosen = min(times, key=times.__getitem__)
        if times[chosen] > (1 - MARGIN) * times["default"]:  # within the noise: the kernel's own rules stand
            chosen = "default"
        self.chosen[key] = self.alternatives[chosen]
        self.names[key] = chosen
        _tuned[full_key] = {"chosen": chosen, "ms": times}
        _remember(full_key, chosen)
        return result


__all__ = ["set_config", "get_config", "step", "tuning", "dataloader_tuning_steps", "choices", "cache_path",
           "machine_key", "clear_cache", "TunedKernel", "REPEATS", "MARGIN", "TOLERANCE"]
