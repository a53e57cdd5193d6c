"""Op-table rows for attention: ``scaled_dot_product_attention`` against a numpy reference.

The function is composed from core ops, so each row names ``matmul`` (an op it dispatches) and
the table checks it in float32 and float64, on strided inputs, and its gradient with respect to
query, key and value against finite differences.
"""

from __future__ import annotations

import numpy as np

from oar.nn import functional as F
from oar.testing import OpCase

rng = np.random.default_rng(7)


def np_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_sdpa(q, k, v, mask=None, is_causal=False):
    """Paddle's layout [batch, seq, heads, dim], written out with einsum."""
    scores = np.einsum("blhd,bshd->bhls", q, k) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    if is_causal:
        len_q, len_k = scores.shape[-2:]
        allowed = np.arange(len_k)[None, :] <= np.arange(len_q)[:, None]  # query i sees keys 0..i
        scores = np.where(allowed, scores, -np.inf)
    return np.einsum("bhls,bshd->blhd", np_softmax(scores), v)


def qkv(batch=2, len_q=3, len_k=4, heads=2, dim=3, dim_v=None):
    return [rng.standard_normal((batch, len_q, heads, dim)), rng.standard_normal((batch, len_k, heads, dim)),
            rng.standard_normal((batch, len_k, heads, dim_v or dim))]


float_mask = rng.standard_normal((2, 1, 3, 4))
bool_mask = np.array([[True, True, False, True], [False, True, True, True], [True, False, False, True]])

CASES = [
    OpCase("matmul", F.scaled_dot_product_attention, np_sdpa, qkv(dim_v=5), id="sdpa"),
    OpCase("matmul", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
           np_sdpa, [*qkv(), float_mask], grad_inputs=[0, 1, 2, 3], id="sdpa_float_mask"),
    OpCase("matmul", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
           np_sdpa, [*qkv(), bool_mask], grad_inputs=[0, 1, 2], id="sdpa_bool_mask"),
    OpCase("matmul", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: np_sdpa(q, k, v, is_causal=True), qkv(len_q=4, len_k=4), id="sdpa_causal"),
    OpCase("matmul", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: np_sdpa(q, k, v, is_causal=True), qkv(len_q=2, len_k=4), id="sdpa_causal_fewer_queries"),
    OpCase("matmul", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
           lambda q, k, v: np_sdpa(q, k, v, is_causal=True), qkv(len_q=4, len_k=3), id="sdpa_causal_more_queries"),
    OpCase("matmul", F.scaled_dot_product_attention,
           lambda q, k, v: np_sdpa(q[None], k[None], v[None])[0], [a[0] for a in qkv()], id="sdpa_unbatched"),
]
