"""oar-nn's op table: every family's ``CASES`` list of ``oar.testing.OpCase`` rows."""

from __future__ import annotations

from oar.testing import load_cases

FAMILIES = ("activation", "attention", "common", "conv", "loss", "norm", "pooling", "vision", "fused", "quant", "sequence",
            "sliding")


def all_cases():
    return load_cases(__name__, FAMILIES)
