"""The op table: every family's ``CASES`` list of ``oar.testing.OpCase`` rows.

Add a case to the family file of the op; ``test_op_table.py`` runs every check on it and
fails when a registered op has no case.
"""

from __future__ import annotations

from oar.testing import load_cases

FAMILIES = ("creation", "elementwise", "reduction", "shape", "indexing", "linalg", "linalg_ext", "random", "assign",
            "fusion", "control_flow", "special", "manipulation", "statistics", "complex", "compat")


def all_cases():
    return load_cases(__name__, FAMILIES)
