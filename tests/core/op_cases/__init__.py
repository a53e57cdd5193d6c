"""The op table: every family's ``CASES`` list of ``oar.testing.OpCase`` rows.

Add a case to the family file of the op; ``test_op_table.py`` runs every check on it and
fails when a registered op has no case.
"""

from __future__ import annotations

import importlib

FAMILIES = ("creation", "elementwise", "reduction", "shape", "indexing", "linalg", "random", "assign")


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
