"""Op cases of the random family.

A random op is checked here by seeded reproducibility: after ``oar.seed(n)`` it must give
exactly what numpy's ``default_rng(n)`` gives for the documented draw, on every dtype case,
non-contiguous input and meta check of the op table. Distributions, defaults and errors are
tested in ``tests/core/test_creation_random.py``.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.testing import OpCase

from ._data import rand


def seeded(n, fn, *args, **kwargs):
    oar.seed(n)
    return fn(*args, **kwargs)


def rng(n):
    return np.random.default_rng(n)


def _multinomial_ref(x, n, replacement, seed):
    g = rng(seed)
    rows = np.atleast_2d(x)
    out = [g.choice(rows.shape[-1], size=n, replace=replacement, p=r / r.sum()) for r in rows]
    return np.stack(out).reshape(x.shape[:-1] + (n,))


PROBS = np.array([[0.1, 0.5, 0.0, 0.4], [0.3, 0.3, 0.2, 0.2]])

CASES = [
    OpCase("uniform", lambda: seeded(5, oar.uniform, [3, 4], min=-2.0, max=3.0),
           lambda: -2.0 + 5.0 * rng(5).random((3, 4), dtype=np.float32), [], grad=False, dtypes=("float32",)),
    OpCase("uniform", lambda: seeded(6, oar.rand, [2, 3], dtype="float64"), lambda: rng(6).random((2, 3)), [],
           grad=False, dtypes=("float64",), id="rand_float64"),
    OpCase("uniform", lambda: oar.uniform([4], seed=11), lambda: -1.0 + 2.0 * rng(11).random(4, dtype=np.float32),
           [], grad=False, dtypes=("float32",), id="uniform_op_seed"),
    OpCase("gaussian", lambda: seeded(7, oar.randn, [2, 5]), lambda: rng(7).standard_normal((2, 5), dtype=np.float32),
           [], grad=False, dtypes=("float32",)),
    OpCase("gaussian", lambda: seeded(8, oar.normal, 3.0, 2.0, [6]),
           lambda: rng(8).standard_normal(6, dtype=np.float32) * 2.0 + 3.0, [], grad=False, dtypes=("float32",),
           id="normal_numbers"),
    OpCase("gaussian", lambda m: seeded(9, oar.normal, m, 0.5),
           lambda m: rng(9).standard_normal(m.shape) * 0.5 + m, [rand(2, 3)], grad=True,
           dtypes=("float64",), id="normal_tensor_mean"),
    OpCase("randint", lambda: seeded(10, oar.randint, -5, 5, [3, 3]), lambda: rng(10).integers(-5, 5, (3, 3)), [],
           grad=False, dtypes=("float32",)),
    OpCase("randperm", lambda: seeded(12, oar.randperm, 7), lambda: rng(12).permutation(7), [], grad=False,
           dtypes=("float32",)),
    OpCase("bernoulli", lambda x: seeded(13, oar.bernoulli, x), lambda x: (rng(13).random(x.shape) < x).astype(x.dtype),
           [np.linspace(0.0, 1.0, 12).reshape(3, 4)], grad=False),
    OpCase("bernoulli", lambda x: seeded(14, oar.bernoulli, x, p=0.3),
           lambda x: (rng(14).random(x.shape) < 0.3).astype(x.dtype), [rand(2, 3)], grad=False, id="bernoulli_p"),
    OpCase("multinomial", lambda x: seeded(15, oar.multinomial, x, 3, True), lambda x: _multinomial_ref(x, 3, True, 15),
           [PROBS], grad=False, id="multinomial_replacement"),
    OpCase("multinomial", lambda x: seeded(16, oar.multinomial, x, 3), lambda x: _multinomial_ref(x, 3, False, 16),
           [PROBS], grad=False, id="multinomial_no_replacement"),
    OpCase("multinomial", lambda x: seeded(17, oar.multinomial, x, 2), lambda x: _multinomial_ref(x, 2, False, 17),
           [PROBS[1]], grad=False, id="multinomial_1d"),
]
