"""Attention functions of oar.nn.functional: ``scaled_dot_product_attention`` and the packed-qkv
forms of Paddle's flash-attention API (``flash_attn_qkvpacked``, ``flash_attn_varlen_qkvpacked``).

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
        scores = oar.masked_fill(scores, causal_block(scores.shape[-2], scores.shape[-1], scores.place), float("-inf"))
    weights = softmax(scores, axis=-1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, training=True, mode="upscale_in_train")
    return oar.matmul(weights, v), weights


def causal_block(len_q: int, len_k: int, place=None) -> Tensor:
    """The bool ``[len_q, len_k]`` mask of the keys a causal query may NOT see: query ``i`` sees
    keys ``0..i``.

    Aligned to the top left, as PyTorch's SDPA and Paddle's flash-attention fork (which took
    flash-attention's bottom-right alignment for ``len_q != len_k`` in and reverted it).
    """
    return oar.to_tensor(np.triu(np.ones((len_q, len_k), dtype=bool), k=1), place=place)


def _check_qkv(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool = False) -> None:
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
    if k[-2] != v[-2] or (q[-2] != k[-2] and not (enable_gqa and k[-2] and q[-2] % k[-2] == 0)):
        rule = "a multiple of key's (grouped heads, enable_gqa=True)" if enable_gqa else "key's"
        raise ShapeError(f"{name}: key and value must have the same num_heads, and query's must be {rule}; "
                         f"got {shapes}")
    if q[-1] != k[-1]:
        raise ShapeError(f"{name}: query and key must have the same head_dim, got {shapes}")


_BACKENDS = (None, "math", "flash_attn", "mem_efficient", "p2p")


def _repeat_heads(t: Tensor, repeats: int) -> Tensor:
    """``[..., seq_len, heads, dim] -> [..., seq_len, heads * repeats, dim]``, each head repeated
    in place (head ``h`` of the result is head ``h // repeats``), as Paddle's grouped attention."""
    if repeats == 1:
        return t
    shape = list(t.shape)
    tiled = oar.tile(oar.unsqueeze(t, -2), [1] * (t.ndim - 1) + [repeats, 1])
    return oar.reshape(tiled, shape[:-2] + [shape[-2] * repeats, shape[-1]])


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, training: bool = True,
                                 backend=None, scale=None, enable_gqa: bool = True, name=None) -> Tensor:
    """``softmax(Q K^T / sqrt(head_dim) + mask) V`` in Paddle's layout
    ``[batch_size, seq_len, num_heads, head_dim]`` (3-D ``[seq_len, num_heads, head_dim]`` too).

    ``attn_mask`` broadcasts to the scores ``[batch_size, num_heads, seq_len_q, seq_len_k]``: a
    float mask is added to the scores, a bool mask keeps the positions that are True.
    ``is_causal`` hides the keys after the query's own position (query ``i`` sees keys ``0..i``,
    also when ``seq_len_q != seq_len_k``, as PyTorch). Dropout
    with ``dropout_p`` applies to the attention weights when ``training`` is True. A query that
    may see no key at all gets NaN, as its softmax is over nothing.

    ``scale`` replaces ``1 / sqrt(head_dim)``. With ``enable_gqa`` (the default) key and value
    may have fewer heads than the query, a divisor of its count: query head ``h`` reads key head
    ``h // (num_heads / num_heads_k)``. ``backend`` names one of Paddle's kernels (``'math'``,
    ``'flash_attn'``, ``'mem_efficient'``, ``'p2p'``); oar has one composed implementation, used
    for all of them.

    Unlike Paddle, whose fused kernels take only float16/bfloat16, every floating dtype works.

    >>> import oar
    >>> q = oar.rand([2, 5, 4, 8])  # batch 2, 5 positions, 4 heads of size 8
    >>> oar.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True).shape
    [2, 5, 4, 8]
    """
    _check_qkv(query, key, value, enable_gqa)
    if not 0.0 <= dropout_p <= 1.0:
        raise ArgumentError(f"scaled_dot_product_attention: dropout_p must lie in [0, 1], got {dropout_p}")
    if backend not in _BACKENDS:
        raise ArgumentError(f"scaled_dot_product_attention: backend must be one of {list(_BACKENDS)}, got {backend!r}")
    if query.shape[-2] != key.shape[-2]:
        repeats = query.shape[-2] // key.shape[-2]
        key, value = _repeat_heads(key, repeats), _repeat_heads(value, repeats)
    if scale is not None:  # attend scales by head_dim ** -0.5; fold the requested scale into the query
        query = query * (float(scale) * query.shape[-1] ** 0.5)
    batched = query.ndim == 4
    perm = [0, 2, 1, 3] if batched else [1, 0, 2]
    q, k, v = (oar.transpose(t, perm) for t in (query, key, value))
    mask = None
    if attn_mask is not None:
        mask = attn_mask if isinstance(attn_mask, Tensor) else oar.to_tensor(attn_mask, place=query.place)
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


def _unpack_qkv(fn: str, qkv: Tensor, batched: bool) -> tuple[Tensor, Tensor, Tensor]:
    """Query, key and value from a packed ``[..., num_heads / num_heads_k + 2, num_heads_k,
    head_dim]`` tensor; with grouped heads (more query heads than key heads) query head ``h``
    reads key head ``h // group``, as flash-attention's kernels do."""
    rank = 5 if batched else 4
    if not isinstance(qkv, Tensor) or qkv.ndim != rank or qkv.shape[-3] < 3:
        layout = "[batch_size, seq_len, " if batched else "[total_seq_len, "
        raise ShapeError(f"{fn}: qkv must be {rank}-D {layout}num_heads / num_heads_k + 2, num_heads_k, head_dim] "
                         f"with at least 3 on axis -3, got shape {getattr(qkv, 'shape', None)}")
    if not qkv.dtype.is_floating:
        raise DTypeError(f"{fn}: qkv must be a floating tensor, got {qkv.dtype.name}")
    group, heads_k, head_dim = qkv.shape[-3] - 2, qkv.shape[-2], qkv.shape[-1]
    lead = list(qkv.shape[:-3])
    query = oar.reshape(qkv[..., :group, :, :], lead + [group * heads_k, head_dim])
    key, value = qkv[..., group, :, :], qkv[..., group + 1, :, :]
    return query, _repeat_heads(key, group), _repeat_heads(value, group)


def flash_attn_qkvpacked(qkv, dropout=0.0, causal=False, return_softmax=False, *, fixed_seed_offset=None, rng_name="",
                         training=True, name=None):
    """Attention of a packed ``qkv`` ([batch_size, seq_len, num_heads / num_heads_k + 2,
    num_heads_k, head_dim]: the query heads, then the key, then the value), scaled by
    ``1 / sqrt(head_dim)``: ``(out [batch_size, seq_len, num_heads, head_dim], weights)``, the
    attention weights [batch_size, num_heads, seq_len, seq_len] with ``return_softmax`` (else
    None). Composed of ``scaled_dot_product_attention``'s steps; every floating dtype works.
    ``fixed_seed_offset`` and ``rng_name`` (the CUDA generator's state) are not used.

    >>> import oar
    >>> q = oar.rand([1, 6, 2, 8])
    >>> out, _ = oar.nn.functional.flash_attn_qkvpacked(oar.stack([q, q, q], axis=2), causal=True)
    >>> out.shape
    [1, 6, 2, 8]
    """
    fn = "flash_attn_qkvpacked"
    if not 0.0 <= dropout <= 1.0:
        raise ArgumentError(f"{fn}: dropout must lie in [0, 1], got {dropout}")
    query, key, value = _unpack_qkv(fn, qkv, batched=True)
    q, k, v = (oar.transpose(t, [0, 2, 1, 3]) for t in (query, key, value))
    out, weights = attend(q, k, v, is_causal=causal, dropout_p=dropout, training=training)
    return oar.transpose(out, [0, 2, 1, 3]), (weights if return_softmax else None)


def flash_attn_varlen_qkvpacked(qkv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, scale, dropout=0.0,
                                causal=False, return_softmax=False, fixed_seed_offset=None, rng_name="",
                                varlen_padded=True, training=True, name=None):
    """Attention over a batch of sequences of different lengths packed along the first axis of
    ``qkv`` ([total_seq_len, num_heads / num_heads_k + 2, num_heads_k, head_dim]): sequence
    ``i`` has ``cu_seqlens[i + 1] - cu_seqlens[i]`` tokens, which start at row ``cu_seqlens[i]``
    (``varlen_padded=False``) or at row ``i * max_seqlen`` (``varlen_padded=True``, every
    sequence padded to ``max_seqlen`` rows). The scores are scaled by ``scale``; padding rows
    of the output are zeros. Returns ``(out [total_seq_len, num_heads, head_dim], None)``.

    ``return_softmax=True`` is refused (the per-sequence weights have no one shape), and
    ``fixed_seed_offset`` and ``rng_name`` are not used.

    >>> import oar
    >>> qkv = oar.rand([5, 3, 2, 4])  # sequences of 2 and 3 tokens, 2 heads of size 4
    >>> cu = oar.to_tensor([0, 2, 5], dtype="int32")
    >>> out, _ = oar.nn.functional.flash_attn_varlen_qkvpacked(qkv, cu, cu, 3, 3, 0.5, varlen_padded=False)
    >>> out.shape
    [5, 2, 4]
    """
    fn = "flash_attn_varlen_qkvpacked"
    if return_softmax:
        raise ArgumentError(f"{fn}: return_softmax=True is not supported; the attention weights of sequences of "
                            f"different lengths have no common shape")
    if not 0.0 <= dropout <= 1.0:
        raise ArgumentError(f"{fn}: dropout must lie in [0, 1], got {dropout}")
    query, key, value = _unpack_qkv(fn, qkv, batched=False)
    starts = []
    for arg, cu, max_len in (("cu_seqlens_q", cu_seqlens_q, max_seqlen_q), ("cu_seqlens_k", cu_seqlens_k,
                                                                            max_seqlen_k)):
        offsets = np.asarray(cu.numpy() if isinstance(cu, Tensor) else cu, dtype=np.int64).reshape(-1)
        lengths = np.diff(offsets)
        if offsets.size < 2 or (lengths < 0).any() or lengths.max() > int(max_len):
            raise ArgumentError(f"{fn}: {arg} must be non-decreasing offsets [0, ..., total] with every length at "
                                f"most {int(max_len)}, got {offsets.tolist()}")
        first_rows = np.arange(lengths.size) * int(max_len) if varlen_padded else offsets[:-1]
        if (first_rows + lengths).max() > qkv.shape[0]:
            raise ShapeError(f"{fn}: {arg} reaches row {int((first_rows + lengths).max())}, past the "
                             f"{qkv.shape[0]} rows of qkv")
        starts.append((first_rows, lengths))
    (q_rows, q_lens), (k_rows, k_lens) = starts
    if q_lens.size != k_lens.size:
        raise ShapeError(f"{fn}: cu_seqlens_q and cu_seqlens_k must describe the same number of sequences, got "
                         f"{q_lens.size} and {k_lens.size}")
    # attend scales by head_dim ** -0.5; fold the requested scale into the query
    query = query * (float(scale) * query.shape[-1] ** 0.5)
    pieces, covered = [], 0
    for q0, lq, k0, lk in zip(q_rows.tolist(), q_lens.tolist(), k_rows.tolist(), k_lens.tolist()):
        if q0 > covered:
            pieces.append(oar.zeros([q0 - covered] + query.shape[1:], dtype=query.dtype, device=query.place))
        q, k, v = (oar.transpose(t[a:a + n], [1, 0, 2]) for t, a, n in ((query, q0, lq), (key, k0, lk),
                                                                       (value, k0, lk)))
        out, _ = attend(q, k, v, is_causal=causal, dropout_p=dropout, training=training)
        pieces.append(oar.transpose(out, [1, 0, 2]))
        covered = q0 + lq
    if covered < query.shape[0]:
        pieces.append(oar.zeros([query.shape[0] - covered] + query.shape[1:], dtype=query.dtype, device=query.place))
    return oar.concat(pieces, axis=0), None


__all__ = ["scaled_dot_product_attention", "flash_attn_qkvpacked", "flash_attn_varlen_qkvpacked"]
