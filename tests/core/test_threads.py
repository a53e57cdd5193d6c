"""``oar.set_num_threads``: every registered thread control gets the count, a control registered
later gets it at once, core's own ``blas`` control limits numpy's BLAS through threadpoolctl, and a
count that is not a positive int is refused."""

from __future__ import annotations

import pytest

import oar
from oar.errors import ArgumentError
from oar.plugins import hookimpl, plugin_infos, registries


class PoolPlugin:
    """A plugin with a thread pool of its own, recording what it was asked for."""

    def __init__(self):
        self.sizes: list[int] = []

    @hookimpl
    def oar_register_thread_controls(self, thread_controls):
        thread_controls.register("fake-pool", self.sizes.append)


@pytest.fixture
def fresh_count():
    """No count set yet; afterwards BLAS gets its limits back (other pools only run slower)."""
    try:
        import threadpoolctl
    except ModuleNotFoundError:
        threadpoolctl = None
    blas = threadpoolctl.threadpool_info() if threadpoolctl else []
    controls = registries().thread_controls
    before = controls.num_threads
    controls.num_threads = None
    yield controls
    controls.num_threads = before
    if threadpoolctl:
        threadpoolctl.threadpool_limits(limits={lib["prefix"]: lib["num_threads"] for lib in blas})


def test_every_registered_control_gets_the_count(fresh_count):
    pool = PoolPlugin()
    oar.plugins.register(pool, name="pool")
    try:
        assert pool.sizes == []  # nothing was set yet: registering asks for nothing
        oar.set_num_threads(3)
        assert pool.sizes == [3]
        assert fresh_count.num_threads == 3
        info = next(i for i in plugin_infos() if i.name == "pool")
        assert info.registered == {"thread_controls": ["fake-pool"]}
    finally:
        oar.plugins.unregister("pool")
    oar.set_num_threads(2)
    assert pool.sizes == [3]  # unregistered: no longer asked
    assert "fake-pool" not in registries().thread_controls


def test_a_control_registered_after_set_num_threads_gets_the_count_at_once(fresh_count):
    oar.set_num_threads(1)
    pool = PoolPlugin()
    oar.plugins.register(pool, name="late-pool")
    try:
        assert pool.sizes == [1]
    finally:
        oar.plugins.unregister("late-pool")


def test_core_registers_blas():
    assert registries().thread_controls.source_of("blas") == "oar.core"


def test_blas_follows_set_num_threads(fresh_count):
    threadpoolctl = pytest.importorskip("threadpoolctl")  # BLAS is sized through it when installed
    if not any(lib["user_api"] == "blas" for lib in threadpoolctl.threadpool_info()):
        pytest.skip("numpy's BLAS is not visible to threadpoolctl here")
    oar.set_num_threads(1)
    assert {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"} == {1}


@pytest.mark.parametrize("bad", [0, -1, 2.0, "4", True, None])
def test_set_num_threads_refuses_what_is_not_a_positive_int(bad):
    with pytest.raises(ArgumentError, match="set_num_threads: n must be a positive int"):
        oar.set_num_threads(bad)


def test_small_products_run_on_one_blas_thread_and_the_count_comes_back(fresh_count):
    # A threaded small product leaves OpenBLAS's worker spinning for ~0.1 s (oar._engine.threads):
    # matmuls between the two bounds run on one BLAS thread, and the user's setting returns after.
    import numpy as np

    from oar._engine.threads import SMALL_PRODUCT, one_blas_thread, small_product

    assert small_product(np.ones((64, 400)), np.ones((400, 120)))  # LeNet's fc1 at batch 64
    assert not small_product(np.ones((4, 4)), np.ones((4, 4)))  # OpenBLAS keeps it on one thread anyway
    assert not small_product(np.ones((1024, 1024)), np.ones((1024, 1024)))  # big: worth the threads
    assert SMALL_PRODUCT < 1024 ** 3
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if not any(lib["user_api"] == "blas" for lib in threadpoolctl.threadpool_info()):
        pytest.skip("numpy's BLAS is not visible to threadpoolctl here")
    oar.set_num_threads(2)

    def blas_threads():
        return {lib["num_threads"] for lib in threadpoolctl.threadpool_info() if lib["user_api"] == "blas"}

    with one_blas_thread():
        assert blas_threads() == {1}
    assert blas_threads() == {2}
    x, w = np.random.default_rng(0).standard_normal((2, 64, 400)).astype("float32")[0], np.ones((400, 120), "float32")
    np.testing.assert_allclose((oar.to_tensor(x) @ oar.to_tensor(w)).numpy(), x @ w, rtol=1e-5)
