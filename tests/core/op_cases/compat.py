"""Op cases of the compat family: its three random draws, checked by seeded reproducibility as the
random family's (``op_cases/random.py`` says how). Their distributions, and every composed name of
``oar._ops.compat``, are tested in ``tests/core/test_compat_api.py``.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase


def seeded(n, fn, *args):
    oar.seed(n)
    return fn(*args)


def rng(n):
    return np.random.default_rng(n)


RATES = np.array([[0.5, 1.0, 2.5], [10.0, 0.0, 40.0]])  # exact in every float dtype under test
COUNTS = np.array([[10, 0, 7], [100, 3, 50]], dtype=np.int64)
PROBS = np.array([[0.25, 0.5, 1.0], [0.75, 0.0, 0.5]])

CASES = [
    OpCase("poisson", lambda x: seeded(21, oar.poisson, x), lambda x: rng(21).poisson(x).astype(x.dtype), [RATES],
           grad=False),
    OpCase("binomial", lambda n, p: seeded(22, oar.binomial, n, p), lambda n, p: rng(22).binomial(n, p),
           [COUNTS, PROBS], grad=False),
    OpCase("standard_gamma", lambda x: seeded(23, oar.standard_gamma, x),
           lambda x: rng(23).standard_gamma(x.astype(np.float64)).astype(x.dtype), [RATES + 0.5], grad=False),
]
