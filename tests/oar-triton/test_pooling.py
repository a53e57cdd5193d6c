"""The gpu's pooling kernels beyond the op table: float16 and bfloat16 against the cpu, 3-d
pooling, channel-last (strided) inputs, outputs of several programs, NaN and -inf windows, the
gradient ops in the half types, empty batches, and the errors."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.kernels import pooling
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import ShapeError
from oar.nn.functional.fused import max_pool_infer
from oar.nn.functional.pooling import adaptive_avg_pool_grad_op, avg_pool_grad_op, max_pool_grad_op
from oar.ops import dispatch

rng = np.random.default_rng(5)
HALVES = ["float16", "bfloat16"]


def run(fn, arrays, dtype: str, device: str) -> list[np.ndarray]:
    """``fn`` on tensors of ``arrays`` (floats in ``dtype``) on ``device``: its outputs as numpy arrays."""
    target = oar.ops.get_dtype(dtype).np
    tensors = [oar.to_tensor(a.astype(target) if a.dtype.kind == "f" else a, place=device) for a in arrays]
    outs = fn(*tensors)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    for o in outs:
        assert o.place.backend == device
    return [o.numpy() for o in outs]


def check(fn, arrays, dtype: str, where: str, terms: int = 1) -> None:
    got, expected = run(fn, arrays, dtype, "gpu"), run(fn, arrays, dtype, "cpu")
    assert_same(got, expected, dtype, f"{where} [{dtype}]", terms=terms)


# 2 x 4 channels of 17 x 17: 2 * 4 * 9 * 9 = 648 outputs, three programs of 256
X = rng.standard_normal((2, 4, 17, 17))
POOLS = {
    "max_pool_mask_stride2_pad1_ceil": lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                              return_mask=True),
    "max_pool_infer_3x2": lambda x: max_pool_infer(x, [3, 2], [2, 2], [1, 0, 0, 1]),
    "avg_pool_exclusive": lambda x: F.avg_pool2d(x, 3, stride=2, padding=1),
    "avg_pool_inclusive_ceil": lambda x: F.avg_pool2d(x, [2, 3], stride=2, padding=[1, 0], ceil_mode=True,
                                                      exclusive=False),
    "adaptive_avg_pool": lambda x: F.adaptive_avg_pool2d(x, [5, 9]),
    "adaptive_max_pool_mask": lambda x: F.adaptive_max_pool2d(x, [4, 6], return_mask=True),
}


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
@pytest.mark.parametrize("name", list(POOLS))
def test_pooling_matches_the_cpu_over_several_programs(name, dtype):
    check(POOLS[name], [X], dtype, name, terms=9)


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_pooling_a_channel_last_input_reads_it_through_its_strides(dtype):
    x = rng.standard_normal((2, 7, 6, 5))  # NHWC
    check(lambda x: F.max_pool2d(x, 3, stride=2, padding=1, data_format="NHWC"), [x], dtype, "max_pool NHWC")
    check(lambda x: F.avg_pool2d(x, 2, ceil_mode=True, data_format="NHWC"), [x], dtype, "avg_pool NHWC", terms=4)
    check(lambda x: F.adaptive_avg_pool2d(x, 3, data_format="NHWC"), [x], dtype, "adaptive_avg_pool NHWC", terms=9)
    transposed = lambda x: F.max_pool2d(oar.transpose(x, [0, 1, 3, 2]), 2, return_mask=True)  # noqa: E731
    check(transposed, [x], dtype, "max_pool of a transposed view")


def test_3d_pooling_matches_the_cpu():
    x = rng.standard_normal((2, 3, 5, 6, 7))
    check(lambda x: F.max_pool3d(x, 2, stride=[1, 2, 2], padding=[1, 0, 1], return_mask=True), [x],
          "float32", "max_pool3d")
    check(lambda x: F.avg_pool3d(x, [3, 2, 3], stride=2, padding=1, exclusive=False), [x], "float32", "avg_pool3d",
          terms=18)
    check(lambda x: F.adaptive_avg_pool3d(x, [2, 4, 3]), [x], "float32", "adaptive_avg_pool3d", terms=12)
    check(lambda x: F.adaptive_max_pool3d(x, [3, 2, 4], return_mask=True), [x], "float32", "adaptive_max_pool3d")


def test_max_pool_keeps_the_first_maximum_a_nan_and_marks_windows_of_padding_only(gpu):
    x = np.array([[[1.0, 1.0, -np.inf, np.nan, 2.0, 5.0, 5.0]]], np.float32)
    out, mask = F.max_pool1d(oar.to_tensor(x), 2, stride=2, padding=1, ceil_mode=True, return_mask=True)
    # windows: [pad, 1], [1, -inf], [nan, 2], [5, 5], [pad] (ceil_mode's overhang)
    np.testing.assert_array_equal(out.numpy(), [[[1.0, 1.0, np.nan, 5.0, -np.inf]]])
    np.testing.assert_array_equal(mask.numpy(), [[[0, 1, 3, 5, -1]]])
    y = np.array([[[3.0, 4.0]]], np.float32)
    out, mask = F.max_pool1d(oar.to_tensor(y), 2, stride=2, padding=2, ceil_mode=True, return_mask=True)
    np.testing.assert_array_equal(out.numpy(), [[[-np.inf, 4.0, -np.inf]]])  # windows: [pad, pad], [3, 4], [pad]
    np.testing.assert_array_equal(mask.numpy(), [[[-1, 1, -1]]])


@pytest.mark.parametrize("dtype", HALVES + ["float32"])
def test_the_gradient_ops_in_each_float_dtype(dtype):
    # 2 * 4 * 9 * 9 = 648 input elements: three programs
    g = rng.standard_normal((2, 4, 5, 5))
    mask = rng.integers(-1, 9 * 9, size=g.shape).astype(np.int32)
    mask[0, 0, :3, :3] = 5  # nine windows chose one position: their gradients add up
    check(lambda g, m: dispatch(max_pool_grad_op, (g, m), {"input_size": [9, 9]}), [g, mask], dtype,
          "max_pool_grad", terms=9)
    attrs = {"input_size": [9, 9], "kernel_size": [3, 3], "stride": [2, 2], "padding": [1, 1, 1, 1],
             "ceil_mode": False, "exclusive": False}
    check(lambda g: dispatch(avg_pool_grad_op, (g,), attrs), [g], dtype, "avg_pool_grad", terms=4)
    check(lambda g: dispatch(adaptive_avg_pool_grad_op, (g,), {"input_size": [9, 7]}), [g], dtype,
          "adaptive_avg_pool_grad", terms=4)


def test_pooling_gradients_through_autograd(gpu):
    x = oar.to_tensor(rng.standard_normal((2, 3, 7, 7)).astype(np.float32), stop_gradient=False)
    xc = oar.to_tensor(x.numpy(), place="cpu", stop_gradient=False)
    for t in (x, xc):
        y = F.max_pool2d(t, 3, stride=2, padding=1) + F.avg_pool2d(t, 2, ceil_mode=True).mean() \
            + F.adaptive_avg_pool2d(t, 3).sum()
        y.sum().backward()
    assert_same([x.grad.numpy()], [xc.grad.numpy()], "float32", "pooling gradients", terms=9)


def test_empty_batches_give_empty_outputs(gpu):
    x = oar.zeros([0, 3, 5, 5])
    assert max_pool_infer(x, [2, 2], [2, 2]).shape == [0, 3, 2, 2]
    assert F.adaptive_max_pool2d(x, 2, return_mask=True)[1].shape == [0, 3, 2, 2]
    g = dispatch(adaptive_avg_pool_grad_op, (oar.zeros([0, 3, 2, 2]),), {"input_size": [5, 5]})
    assert g.shape == [0, 3, 5, 5]


def test_pooling_more_than_three_spatial_dims_is_refused(gpu):
    x = oar.ones([1, 1, 2, 2, 2, 2])
    with pytest.raises(ShapeError, match=r"max_pool: the gpu kernels pool 1, 2 or 3 spatial dims; got x "
                                         r"\[1, 1, 2, 2, 2, 2\] \(rank 6\)"):
        dispatch(oar.plugins.registries().ops.lookup("max_pool"), (x,),
                 {"kernel_size": [1, 1, 1, 1], "stride": [1, 1, 1, 1], "padding": [0] * 8, "ceil_mode": False})
    with pytest.raises(ShapeError, match="adaptive_avg_pool: the gpu kernels pool 1, 2 or 3 spatial dims"):
        dispatch(oar.plugins.registries().ops.lookup("adaptive_avg_pool"), (x,), {"output_size": [1, 1, 1, 1]})


def test_the_int64_index_variant_matches(monkeypatch):
    # arrays past 2**31 elements index in int64 (the interpreter cannot hold one: force the variant)
    monkeypatch.setattr(pooling, "_wide", lambda *arrays: True)
    check(POOLS["max_pool_mask_stride2_pad1_ceil"], [X[:1, :2]], "float32", "max_pool int64")
    check(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, exclusive=False), [X[:1, :2]], "float32",
          "avg_pool int64", terms=9)
