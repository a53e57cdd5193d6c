"""oar-amp's plugin: where an op's declared AMP category differs from Paddle's default lists, the
category Paddle's lists give it (``oar.amp.amp_lists.CATEGORY_OVERRIDES``), through core's hook."""

from __future__ import annotations

from oar.amp.amp_lists import CATEGORY_OVERRIDES
from oar.plugins import hookimpl


@hookimpl
def oar_register_amp_categories(amp):
    for op_name, category in CATEGORY_OVERRIDES.items():
        amp.register(op_name, category, override=True)
