"""oar-nn's op table: every family's ``CASES`` list of ``oar.testing.OpCase`` rows."""

from __future__ import annotations

import importlib

FAMILIES = ("activation", "attention", "common", "conv", "loss", "norm", "pooling", "vision")


def all_cases():
    cases = []
    for family in FAMILIES:
        try:
            module = importlib.import_module(f"{__name__}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{family}":
                raise
            continue
        cases.extend(module.CASES)
    return cases
