"""``oar.amp``: automatic mixed precision, with Paddle 3's names and rules (oar-amp).

>>> import oar
>>> model = oar.nn.Linear(4, 2)
>>> optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
>>> scaler = oar.amp.GradScaler(init_loss_scaling=1024)
>>> with oar.amp.auto_cast():
...     output = model(oar.ones([3, 4]))
...     loss = output.mean()
>>> output.dtype, loss.dtype
(oar.float16, oar.float32)
>>> scaled = scaler.scale(loss)
>>> scaled.backward()
>>> _ = scaler.minimize(optimizer, scaled)

The parts load on first use: the plugin's registration (which imports this package) loads
neither oar.nn nor the scaler.
"""

from __future__ import annotations

from oar.utils import lazy_exports

__getattr__, __dir__ = lazy_exports(globals(), {
    "oar.amp._auto_cast": ["auto_cast", "amp_guard", "is_autocast_enabled", "get_autocast_dtype",
                           "get_autocast_cpu_dtype", "get_autocast_gpu_dtype"],
    "oar.amp._decorate": ["decorate", "amp_decorate"],
    "oar.amp._grad_scaler": ["GradScaler", "AmpScaler", "OptimizerState"],
    "oar.amp._support": ["is_float16_supported", "is_bfloat16_supported"],
    "oar.amp.amp_lists": ["white_list", "black_list"],
})


__all__ = sorted(["auto_cast", "amp_guard", "is_autocast_enabled", "get_autocast_dtype", "get_autocast_cpu_dtype",
                  "get_autocast_gpu_dtype", "decorate", "amp_decorate", "GradScaler", "AmpScaler",
                  "is_float16_supported", "is_bfloat16_supported", "white_list", "black_list", "debugging",
                  "amp_lists"])
