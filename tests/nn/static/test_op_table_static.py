"""Every case of nn's op table: to_static gives eager's results, forward and gradient."""

from __future__ import annotations

import pytest

from tests.core.static._equivalence import check_forward, check_gradient, random_case

from ..op_cases import all_cases

CASES = all_cases()


def test_no_case_needs_the_random_or_break_checks():
    # Core's table has random cases and a data-dependent one, checked by their own helpers
    # (tests/core/static); nn's has neither. A new one must be routed to those helpers here.
    assert not [c.id for c in CASES if random_case(c)]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_matches_eager(case):
    for dtype in case.dtypes:
        check_forward(case, dtype)


GRAD_CASES = [c for c in CASES if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient_matches_eager(case):
    check_gradient(case)
