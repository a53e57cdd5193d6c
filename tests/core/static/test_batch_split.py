"""Inference programs whose ops are all per sample run their batch in parts on several threads
(``Executor._run_split``): the same results as in one piece, and programs that mix samples are
never split."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar._graph.executor as executor_module
from oar.jit import to_static
from oar.static import InputSpec
from tests.core.static import _threads


@pytest.fixture
def two_threads():
    with _threads.two_threads():
        yield


@pytest.fixture
def parts_run(monkeypatch):
    return _threads.record_parts(monkeypatch)


def _executor(static):
    return static._last.inference_executor


W = oar.to_tensor(np.random.default_rng(0).standard_normal((12, 8)).astype(np.float32))
B = oar.to_tensor(np.random.default_rng(1).standard_normal(8).astype(np.float32))


def per_sample(x):
    y = oar.tanh(oar.matmul(x, W) + B)  # core ops only: this file runs without oar-nn too
    return (oar.unsqueeze(y, 1).transpose([0, 2, 1]) * 2.0).exp().flatten(1)


@pytest.mark.parametrize("rows", [64, 65, 17])
def test_a_per_sample_program_runs_in_parts_with_the_same_results(two_threads, parts_run, rows):
    x = oar.to_tensor(np.random.default_rng(rows).standard_normal((rows, 12)).astype(np.float32))
    with oar.no_grad():
        expected = per_sample(x).numpy()
        static = to_static(per_sample, input_spec=[InputSpec([None, 12], "float32")])
        static(x[:3])  # captures
        got = static(x).numpy()
    assert _executor(static)._split
    assert parts_run == ([2] if rows >= 2 * executor_module.SPLIT_MIN_ROWS and rows * 12 >= 2 * 8192 else [])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    assert got.shape == (rows, 8)


def test_a_large_batch_splits_and_a_small_one_does_not(two_threads, parts_run):
    static = to_static(per_sample, input_spec=[InputSpec([None, 12], "float32")])
    with oar.no_grad():
        static(oar.rand([4, 12]))  # the first call captures (and runs eagerly)
        big = oar.rand([2048, 12])
        np.testing.assert_allclose(static(big).numpy(), per_sample(big).numpy(), rtol=1e-6, atol=1e-6)
        static(oar.rand([4, 12]))  # a few rows: the hand-off would cost more than it saves
    assert parts_run == [2]


def test_a_program_whose_kernel_spreads_the_batch_itself_runs_in_one_piece(two_threads, parts_run, monkeypatch):
    """A kernel marked ``batch_parallel`` (oar-numba's convolutions and linears) runs its own
    threads, without the parts' Python threads and their hand-offs."""
    kernel_of = executor_module.Executor._kernel

    def kernel_marked_for_transpose(self, i):
        kernel = kernel_of(self, i)
        if self.program.nodes[i].op != "transpose":  # an op the fusion passes leave alone
            return kernel

        def transpose(*args, **attrs):
            return kernel(*args, **attrs)

        transpose.batch_parallel = True
        return transpose

    monkeypatch.setattr(executor_module.Executor, "_kernel", kernel_marked_for_transpose)
    x = oar.rand([2048, 12])
    with oar.no_grad():
        static = to_static(per_sample, input_spec=[InputSpec([None, 12], "float32")])
        static(x[:3])  # captures
        np.testing.assert_allclose(static(x).numpy(), per_sample(x).numpy(), rtol=1e-6, atol=1e-6)
    assert parts_run == [] and not _executor(static)._split


MIXING = {
    "sum over the batch": lambda x: x.sum(axis=0, keepdim=True) + x,
    "normalised over the batch": lambda x: x.exp() / x.exp().sum(axis=0, keepdim=True),
    "flip of the batch": lambda x: oar.flip(x, axis=[0]) * 2.0,
    "transpose of the batch": lambda x: oar.matmul(x.transpose([1, 0]), x),
    "flatten of the batch": lambda x: x.flatten() * 2.0,
}


@pytest.mark.parametrize("name", sorted(MIXING))
def test_programs_that_mix_samples_run_in_one_piece(two_threads, parts_run, name):
    fn = MIXING[name]
    x = oar.rand([2048, 12])
    with oar.no_grad():
        expected = fn(x).numpy()
        static = to_static(fn, input_spec=[InputSpec([None, 12], "float32")])
        static(x[:3])  # captures
        got = static(x).numpy()
    assert not _executor(static)._split
    assert parts_run == []
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


def test_one_thread_never_splits(parts_run):
    static = to_static(per_sample, input_spec=[InputSpec([None, 12], "float32")])
    with _threads.threads(1), oar.no_grad():
        static(oar.rand([4, 12]))
        static(oar.rand([2048, 12]))
    assert parts_run == []


def test_an_error_in_a_part_is_raised_naming_the_op(two_threads, monkeypatch):
    static = to_static(lambda x: oar.exp(x) * 2.0, input_spec=[InputSpec([None, 12], "float32")])
    with oar.no_grad():
        static(oar.rand([4, 12]))  # captures
        static(oar.rand([4, 12]))  # runs the program
    executor = _executor(static)
    assert executor._split
    original = executor._runs

    def failing(env):
        raise RuntimeError("kernel broke")

    executor._runs = ((failing,) + original[0][1:], original[1])
    with oar.no_grad(), pytest.raises(oar.errors.KernelError, match="exp"):
        static(oar.rand([2048, 12]))


def test_an_op_with_a_per_sample_that_is_no_rule_is_refused_naming_it():
    from oar._engine.op import Op

    with pytest.raises(ValueError, match=r"op 'halve': per_sample must be True, False or a rule .* got 'yes'"):
        Op("halve", reference=lambda x: x / 2, meta=lambda x: x, per_sample="yes")
