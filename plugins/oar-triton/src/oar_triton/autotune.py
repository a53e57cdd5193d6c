"""Choosing a kernel's launch configuration by timing the candidates, with the plugin's own timer.

``Autotuner(name, configs)`` keeps, per key (the shapes and dtypes that decide the best tiles),
the fastest of ``configs`` — dicts of constexprs plus ``num_warps``/``num_stages`` — timed once
with ``oar_triton.timing.do_bench`` on the first call with that key. Triton's own
``triton.autotune`` is not used: its default benchmarker imports torch.

In Triton's interpreter the first configuration is used without timing (the interpreter's
speed says nothing about a GPU's), so tests see one deterministic configuration.

>>> tuner = Autotuner("matmul", [{"BLOCK_M": 128, "num_warps": 8}, {"BLOCK_M": 64, "num_warps": 4}])
>>> tuner.choose(("f32", 512, 512, 512), lambda config: None)  # doctest: +SKIP
{'BLOCK_M': 128, 'num_warps': 8}
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Sequence

from oar_triton.driver import interpreting
from oar_triton.timing import do_bench
from triton.runtime.errors import OutOfResources


class Autotuner:
    """The fastest of ``configs`` per key, timed on first use of the key."""

    def __init__(self, name: str, configs: Sequence[dict]):
        if not configs:
            raise ValueError(f"autotuner {name!r}: needs at least one configuration")
        self.name, self.configs = name, [dict(c) for c in configs]
        self.best: dict[Hashable, dict] = {}
        self.timings: dict[Hashable, list[float]] = {}  # per key, the time of each config (ms)
        self._lock = threading.Lock()

    def choose(self, key: Hashable, run: Callable[[dict], object]) -> dict:
        """The configuration for ``key``; ``run(config)`` launches the kernel with one (it is called
        for each candidate while timing, with the real arguments, so it must not accumulate)."""
        config = self.best.get(key)
        if config is not None:
            return config
        with self._lock:
            if key in self.best:
                return self.best[key]
            if interpreting() or len(self.configs) == 1:
                self.best[key] = self.configs[0]
                return self.configs[0]
            times = []
            for candidate in self.configs:
                try:
                    times.append(do_bench(lambda c=candidate: run(c), warmup=3, rep=10))
                except OutOfResources:  # more shared memory or registers than this device has: never chosen
                    times.append(float("inf"))
            self.timings[key] = times
            self.best[key] = self.configs[min(range(len(times)), key=times.__getitem__)]
            return self.best[key]
