"""What only a real GPU shows (scripts/gpu_check.sh runs these; elsewhere they skip, saying why):
device memory that is not the host's, the driver's out-of-memory answer, the event timer, and
results at sizes the interpreter cannot reach."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.driver import CudaDriver, get_driver
from oar_triton.timing import do_bench

import oar
from oar.errors import ResourceExhaustedError
from oar.testing import sum_tolerance

pytestmark = pytest.mark.skipif(not isinstance(get_driver(), CudaDriver),
                                reason="needs a CUDA GPU: run scripts/gpu_check.sh on a machine with one")


def test_values_cross_the_device_both_ways():
    x = np.random.default_rng(0).standard_normal((1000, 257)).astype(np.float32)
    t = oar.to_tensor(x, place="gpu")
    np.testing.assert_array_equal(t.numpy(), x)
    np.testing.assert_array_equal(t.T.numpy(), x.T)  # a view made contiguous on the device first


def test_an_impossible_allocation_is_an_error_and_the_pool_goes_on():
    with pytest.raises(ResourceExhaustedError, match="out of memory allocating"):
        BACKEND.empty((1 << 42,), np.float32)  # 16 TiB
    assert oar.to_tensor([1.0, 2.0], place="gpu").numpy().tolist() == [1.0, 2.0]


def test_a_large_bfloat16_product_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1024, 2048)).astype(np.float32), rng.standard_normal((2048, 512)).astype(np.float32)
    ga = oar.to_tensor(a, place="gpu").astype("bfloat16")
    gb = oar.to_tensor(b, place="gpu").astype("bfloat16")
    got = oar.matmul(ga, gb).astype("float32").numpy()
    expected = ga.astype("float32").numpy() @ gb.astype("float32").numpy()
    rtol, atol = sum_tolerance("bfloat16", 2048, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def test_the_event_timer_measures_device_work():
    x = oar.to_tensor(np.ones(1 << 24, np.float32), place="gpu")
    ms = do_bench(lambda: x + x, warmup=2, rep=5)
    assert ms > 0.0
