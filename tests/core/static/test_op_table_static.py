"""Every case of core's op table: to_static gives eager's results, forward and gradient."""

from __future__ import annotations

import pytest

from ..op_cases import all_cases
from ._equivalence import check_forward, check_gradient, check_graph_break, check_random_case, random_case

CASES = all_cases()
# Cases whose function itself reads a tensor into Python: they cannot be captured, by design.
BREAKS = {"matmul_reflected_operator": "x.numpy() @ y"}
DETERMINISTIC = [c for c in CASES if not random_case(c) and c.id not in BREAKS]
RANDOM = [c for c in CASES if random_case(c)]
BREAKING = [c for c in CASES if c.id in BREAKS]


def test_known_breaks_exist():
    assert {c.id for c in BREAKING} == set(BREAKS)


@pytest.mark.parametrize("case", DETERMINISTIC, ids=[c.id for c in DETERMINISTIC])
def test_forward_matches_eager(case):
    for dtype in case.dtypes:
        check_forward(case, dtype)


@pytest.mark.parametrize("case", BREAKING, ids=[c.id for c in BREAKING])
def test_data_dependent_case_breaks_the_graph(case):
    check_graph_break(case, case.dtypes[0])


GRAD_CASES = [c for c in DETERMINISTIC if c.grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.id for c in GRAD_CASES])
def test_gradient_matches_eager(case):
    check_gradient(case)


@pytest.mark.parametrize("case", RANDOM, ids=[c.id for c in RANDOM])
def test_random_case_replays_or_falls_back(case):
    check_random_case(case)
