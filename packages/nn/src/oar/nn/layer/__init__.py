"""``oar.nn`` layers, one module per family; each module's ``__all__`` is its public list."""

from __future__ import annotations

from oar.nn.layer import (
    activation,
    channel_dropout,
    common,
    container,
    conv,
    decode,
    layers,
    loss,
    norm,
    pooling,
    rnn,
    transformer,
    vision,
)

FAMILIES = (common, container, activation, conv, loss, norm, pooling, rnn, transformer, vision, channel_dropout, decode)


def public_layers() -> dict[str, type]:
    """Every public Layer class of oar.nn by name (what oar-nn registers in the layer registry)."""
    found = {"Layer": layers.Layer}
    for family in FAMILIES:
        for name in family.__all__:
            obj = getattr(family, name)
            if isinstance(obj, type) and issubclass(obj, layers.Layer):
                found[name] = obj
    return found
