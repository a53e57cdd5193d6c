"""The module the ``oar`` entry point names: one function per hook this plugin implements.

oar calls each ``@hookimpl`` function with its registry the first time any registry or op is
used (or at once, if the plugin is registered after that). The hook names and arguments are
documented in ``oar.hookspecs``.
"""

from __future__ import annotations

import numpy as np

from oar.plugins import PLUGIN_PRIORITY, Lazy, hookimpl
from oar_plugin_example.ops import logcosh_op


def exp_float32(x: np.ndarray) -> np.ndarray:
    """A float32 cpu kernel for core's ``exp`` that counts its calls.

    It computes what the numpy reference computes; the counter lets you (and the tests) see that
    dispatch picked it over the reference. A real plugin (oar-numba, say) puts a compiled kernel
    in this place.
    """
    exp_float32.calls += 1
    return np.exp(x, dtype=np.float32)


exp_float32.calls = 0


@hookimpl
def oar_register_ops(ops):
    ops.add(logcosh_op)  # also registers its reference kernel on cpu at priority 0


@hookimpl
def oar_register_kernels(kernels):
    # Priority above the reference kernel (0): this one serves exp on float32; every other dtype
    # still goes to the reference, since only float32 is declared.
    kernels.register("exp", "cpu", exp_float32, dtypes=["float32"], priority=PLUGIN_PRIORITY)


@hookimpl
def oar_register_layers(layers):
    # The layer subclasses oar.nn.Layer: register it where oar-nn is installed, and let the op and
    # kernel above work with oar-core alone (a plugin adapts to what is installed, it does not fail).
    from importlib.util import find_spec

    if find_spec("oar.nn") is None:
        return
    from oar_plugin_example.layers import LogCoshLoss

    layers.register("LogCoshLoss", LogCoshLoss)


@hookimpl
def oar_register_passes(passes):
    # Lazy: the pass module (and oar's static graph, which it imports) loads when a program is
    # optimised, not when the plugin loads, so eager code never pays for it.
    passes.register("skip_negation_under_logcosh", Lazy("oar_plugin_example.passes:skip_negation_under_logcosh"))
