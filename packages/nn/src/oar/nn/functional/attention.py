"""Attention functions of oar.nn.functional: ``scaled_dot_product_attention``.

Attention is composed from core ops (matmul, softmax, masked_fill, ...), so autograd, every
backend and tracing apply to it unchanged; a plugin may later register a fused kernel.
"""

from __future__ import annotations

import numpy as np

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.functional.activation import softmax
from oar.nn.functional.common import dropout
from oar.ops import Tensor

OPS: list = []


def attend(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, is_causal: bool = False,
           dropout_p: float = 0.0, training: bool = True) -> tuple[Tensor, Tensor]:
    """Attention in the heads-first layout ``[..., seq_len, head_dim]``: ``(out, weights)``.

    ``mask`` is a bool mask (True = attend) or an additive float mask, broadcast to the scores
    ``[..., seq_len_q, seq_len_k]``. The shared core of ``scaled_dot_product_attention`` and
    ``MultiHeadAttention`` (which passes the weights back with ``need_weights=True``).
    """
    # Paddle scales the query before the product (q * d^-0.5) @ k^T: the same rounding as Paddle.
    scores = oar.matmul(q * (q.shape[-1] ** -0.5), k, transpose_y=True)
    if mask is not None:
        if mask.dtype.is_bool:
            scores = oar.masked_fill(scores, oar.logical_not(mask), float("-inf"))
        else:
            scores = scores + (mask if mask.dtype is scores.dtype else mask.astype(scores.dtype))
    if is_causal:
        scores = oar.masked_fill(scores, causal_block(scores.shape[-2], scores.shape[-1]), float("-inf"))
    weights = softmax(scores, axis=-1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, training=True, mode="upscale_in_train")
    return oar.matmul(weights, v), weights


def causal_block(len_q: int, len_k: int) -> Tensor:
    """The bool ``[len_q, len_k]`` mask of the keys a causal query may NOT see: query ``i`` sees
    keys ``0..i``.

    Aligned to the top left, as PyTorch's SDPA and Paddle's flash-attention fork (which took
    flash-attention's bottom-right alignment for ``len_q != len_k`` in and reverted it).
    """
    return oar.to_tensor(np.triu(np.ones((len_q, len_k), dtype=bool), k=1))


def _check_qkv(query: Tensor, key: Tensor, value: Tensor) -> None:
    name = "scaled_dot_product_attention"
    shapes = {"query": query.shape, "key": key.shape, "value": value.shape}
    if query.ndim not in (3, 4) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ShapeError(f"{name}: query, key and value must all be 4-D [batch_size, seq_len, num_heads, "
                         f"head_dim] (or 3-D without the batch), got {shapes}")
    for t, label in ((query, "query"), (key, "key"), (value, "value")):
        if not t.dtype.is_floating:
            raise DTypeError(f"{name}: {label} must be a floating tensor, got {t.dtype.name}")
    q, k, v = query.shape, key.shape, value.shape
    if q[:-3] != k[:-3] or k[:-3] != v[:-3]:
        raise ShapeError(f"{name}: query, key and value must share the batch size, got {shapes}")
    if k[-3] != v[-3]:
        raise ShapeError(f"{name}: key and value must have the same seq_len, got {shapes}")
    if not q[-2] == k[-2] == v[-2]:
        raise ShapeError(f"{name}: query, key and value must have the same num_heads, got {shapes}")
    if q[-1] != k[-1]:
        raise ShapeError(f"{name}: query and key must have the same head_dim, got {shapes}")


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, training: bool = True,
                                 name=None) -> Tensor:
    """``softmax(Q K^T / sqrt(head_dim) + mask) V`` in Paddle's layout
    ``[batch_size, seq_len, num_heads, head_dim]`` (3-D ``[seq_len, num_heads, head_dim]`` too).

    ``attn_mask`` broadcasts to the scores ``[batch_size, num_heads, seq_len_q, seq_len_k]``: a
    float mask is added to the scores, a bool mask keeps the positions that are True.
    ``is_causal`` hides the keys after the query's own position (query ``i`` sees keys ``0..i``,
    also when ``seq_len_q != seq_len_k``, as PyTorch). Dropout
    with ``dropout_p`` applies to the attention weights when ``training`` is True. A query that
    may see no key at all gets NaN, as its softmax is over nothing.

    Unlike Paddle, whose fused kernels take only float16/bfloat16, every floating dtype works.

    >>> import oar
    >>> q = oar.rand([2, 5, 4, 8])  # batch 2, 5 positions, 4 heads of size 8
    >>> oar.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    [2, 5, 4, 8]
    """
    _check_qkv(query, key, value)
    if not 0.0 <= dropout_p <= 1.0:
        raise ArgumentError(f"scaled_dot_product_attention: dropout_p must lie in [0, 1], got {dropout_p}")
    batched = query.ndim == 4
    perm = [0, 2, 1, 3] if batched else [1, 0, 2]
    q, k, v = (oar.transpose(t, perm) for t in (query, key, value))
    mask = None
    if attn_mask is not None:
        mask = attn_mask if isinstance(attn_mask, Tensor) else oar.to_tensor(attn_mask)
        if not (mask.dtype.is_bool or mask.dtype.is_floating):
            raise DTypeError(f"scaled_dot_product_attention: attn_mask must be bool (True = attend) or a "
                             f"float mask added to the scores, got {mask.dtype.name}")
        try:
            np.broadcast_shapes(tuple(mask.shape), tuple(q.shape[:-1]) + (k.shape[-2],))
        except ValueError:
            raise ShapeError(f"scaled_dot_product_attention: attn_mask of shape {mask.shape} does not broadcast "
                             f"to the scores [batch_size, num_heads, seq_len_q, seq_len_k] = "
                             f"{q.shape[:-1] + [k.shape[-2]]}") from None
    out, _ = attend(q, k, v, mask, is_causal=is_causal, dropout_p=dropout_p, training=training)
    return oar.transpose(out, perm)


__all__ = ["scaled_dot_product_attention"]
