"""The gpu's embedding kernels beyond the op table: float16 and bfloat16, more ids and a wider
embedding than one program takes, repeated ids adding up in the gradient, non-contiguous
inputs, and the out-of-range ids the reference refuses."""

from __future__ import annotations

import numpy as np
import pytest
from oar_triton.backend import BACKEND
from oar_triton.kernels import embedding as E
from triton_test_support import assert_same

import oar
import oar.nn.functional as F
from oar.errors import IndexOutOfRangeError
from oar.ops import dispatch
from oar.plugins import registries

rng = np.random.default_rng(11)
NUM, DIM = 20, 600  # 600 columns: two column blocks of 512
IDS = rng.integers(0, NUM, size=(4, 25))  # 100 ids, many repeated: 13 programs of 8 ids


def run(fn, arrays, device: str):
    tensors = [oar.to_tensor(a, place=device) for a in arrays]
    out = fn(*tensors)
    assert out.place.backend == device
    return out.numpy()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_embedding_and_its_gradient_match_the_cpu(dtype):
    target = oar.ops.get_dtype(dtype).np
    weight = rng.standard_normal((NUM, DIM)).astype(target)
    grad = rng.standard_normal(IDS.shape + (DIM,)).astype(target)
    padding = int(IDS[0, 0])

    def forward(w, ids):
        return F.embedding(ids, w, padding_idx=padding)

    def backward(g, ids):
        return dispatch(registries().ops.lookup("embedding_grad"), (g, ids),
                        {"num_embeddings": NUM, "padding_idx": padding})

    got = run(forward, [weight, IDS], "gpu")
    assert_same([got], [run(forward, [weight, IDS], "cpu")], dtype, f"embedding [{dtype}]")
    assert not got[0, 0].any()  # the padding id reads zeros
    got = run(backward, [grad, IDS.astype(np.int32)], "gpu")
    counts = np.bincount(IDS.ravel(), minlength=NUM)
    assert_same([got], [run(backward, [grad, IDS.astype(np.int32)], "cpu")], dtype, f"embedding_grad [{dtype}]",
                terms=int(counts.max()))
    assert not got[padding].any()  # the padding row gets no gradient


def test_gradient_through_embedding_on_the_gpu():
    w = oar.to_tensor(rng.standard_normal((NUM, 8)).astype(np.float32), place="gpu", stop_gradient=False)
    ids = oar.to_tensor(np.array([[1, 3, 1], [1, 0, 3]]), place="gpu")
    F.embedding(ids, w).sum().backward()
    expected = np.zeros((NUM, 8), np.float32)
    expected[[0, 1, 3]] = np.array([1, 3, 2])[:, None]
    np.testing.assert_array_equal(w.grad.numpy(), expected)


def test_non_contiguous_weight_and_ids():
    table = rng.standard_normal((6, 10)).astype(np.float32)
    weight_t = BACKEND.from_numpy(table).view((10, 6), (1, 10))  # the transpose, a view
    ids = np.array([[9, 0, 4], [2, 2, 7]])
    ids_t = BACKEND.from_numpy(ids).view((3, 2), (1, 3))
    out = BACKEND.to_numpy(E.embedding(weight_t, ids_t, -1))
    np.testing.assert_array_equal(out, table.T[ids.T])


@pytest.mark.parametrize("bad", [NUM, -1])
def test_out_of_range_ids_are_refused(bad):
    ids = IDS.copy()
    ids[2, 3] = bad
    w = oar.to_tensor(np.ones((NUM, 4), np.float32), place="gpu")
    with pytest.raises(IndexOutOfRangeError, match=f"embedding: x contains the id {bad}, out of range for {NUM}"):
        F.embedding(oar.to_tensor(ids, place="gpu"), w)
    g = oar.to_tensor(np.ones(ids.shape + (4,), np.float32), place="gpu")
    with pytest.raises(IndexOutOfRangeError, match=f"embedding_grad: x contains the id {bad}"):
        dispatch(registries().ops.lookup("embedding_grad"), (g, oar.to_tensor(ids, place="gpu")),
                 {"num_embeddings": NUM, "padding_idx": -1})
