"""Transformer layers of oar.nn: MultiHeadAttention, the encoder and decoder layers and stacks,
and Transformer, with Paddle's names, sublayer names (so state dict keys), defaults and masks.

Inputs are batch first, ``[batch_size, seq_len, d_model]``. An attention mask broadcasts to
``[batch_size, num_heads, len_q, len_k]``: bool or int masks keep the positions that are True
(or 1), float masks are added to the attention scores (``-inf`` hides a position).

>>> import oar
>>> layer = oar.nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32)
>>> encoder = oar.nn.TransformerEncoder(layer, num_layers=2)
>>> encoder(oar.rand([2, 5, 16])).shape
[2, 5, 16]
"""

from __future__ import annotations

import collections
import copy

import oar
from oar.errors import ArgumentError, ShapeError
from oar.nn import functional as F
from oar.nn.functional.attention import attend
from oar.nn.layer.common import Dropout, Linear
from oar.nn.layer.container import LayerList
from oar.nn.layer.layers import Layer, size_arg
from oar.nn.layer.norm import LayerNorm
from oar.nn.param_attr import ParamAttr
from oar.ops import Tensor


def _convert_param_attr_to_list(param_attr, n: int) -> list:
    """One weight/bias attribute per sublayer, as Paddle: a list gives one each (bools: default
    or no parameter); anything else is repeated, a name getting the suffix ``_0``, ``_1``, ..."""
    if isinstance(param_attr, (list, tuple)):
        if len(param_attr) != n:
            raise ArgumentError(f"expected {n} parameter attributes (one per sublayer), got {len(param_attr)}")
        return [(ParamAttr._to_attr(None) if attr else False) if isinstance(attr, bool) else ParamAttr._to_attr(attr)
                for attr in param_attr]
    if isinstance(param_attr, bool):
        return [ParamAttr._to_attr(None) for _ in range(n)] if param_attr else [False] * n
    attr = ParamAttr._to_attr(param_attr)
    attrs = []
    for i in range(n):
        attr_i = copy.deepcopy(attr)
        if attr.name:
            attr_i.name = f"{attr.name}_{i}"
        attrs.append(attr_i)
    return attrs


def _convert_attention_mask(attn_mask, dtype):
    """A float mask to add to the scores: bool/int masks (1 = attend) become 0 / -1e9, as Paddle."""
    if attn_mask is None:
        return None
    mask = attn_mask if isinstance(attn_mask, Tensor) else oar.to_tensor(attn_mask)
    if not mask.dtype.is_floating:  # bool or int
        return (mask.astype(dtype) - 1.0) * 1e9
    return mask if mask.dtype == dtype else mask.astype(dtype)


def _resolve_activation(name: str):
    fn = getattr(F, name, None) if isinstance(name, str) and not name.startswith("_") else None
    if not callable(fn):
        raise ArgumentError(f"activation must name a function of oar.nn.functional such as 'relu' or 'gelu', got {name!r}")
    return fn


def _check_positive(owner: str, **values) -> None:
    for key, value in values.items():
        size_arg(owner, key, value)


class MultiHeadAttention(Layer):
    """Multi-head attention (``paddle.nn.MultiHeadAttention``): sublayers ``q_proj``,
    ``k_proj``, ``v_proj`` and ``out_proj`` (Linear, weights ``[in, out]``).

    ``forward(query, key=None, value=None, attn_mask=None, cache=None)``: ``query``
    ``[batch_size, len_q, embed_dim]``, ``key``/``value`` default to ``query``. Returns the
    output, or a tuple that adds the attention weights ``[batch_size, num_heads, len_q, len_k]``
    (``need_weights=True``) and the new cache (when ``cache`` is given). ``dropout`` applies to
    the attention weights in training.

    Caches serve incremental decoding: ``gen_cache(key, type=MultiHeadAttention.Cache)`` starts
    an empty ``Cache`` that each call extends with the new keys and values;
    ``gen_cache(key, value, type=MultiHeadAttention.StaticCache)`` projects fixed keys and values
    (an encoder's output) once.

    >>> import oar
    >>> mha = oar.nn.MultiHeadAttention(embed_dim=16, num_heads=4)
    >>> mha(oar.rand([2, 5, 16])).shape
    [2, 5, 16]
    >>> sorted(mha.state_dict())[:2]
    ['k_proj.bias', 'k_proj.weight']
    """

    Cache = collections.namedtuple("Cache", ["k", "v"])
    StaticCache = collections.namedtuple("StaticCache", ["k", "v"])

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, kdim: int | None = None,
                 vdim: int | None = None, need_weights: bool = False, weight_attr=None, bias_attr=None):
        super().__init__()
        kdim, vdim = embed_dim if kdim is None else kdim, embed_dim if vdim is None else vdim
        _check_positive("MultiHeadAttention", embed_dim=embed_dim, num_heads=num_heads, kdim=kdim, vdim=vdim)
        if embed_dim % num_heads:
            raise ArgumentError(f"MultiHeadAttention: embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        dropout = F.common._probability("MultiHeadAttention", dropout, "dropout")
        self.embed_dim = embed_dim
        self.kdim, self.vdim = int(kdim), int(vdim)
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.need_weights = need_weights
        self.q_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.k_proj = Linear(self.kdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.v_proj = Linear(self.vdim, embed_dim, weight_attr, bias_attr=bias_attr)
        self.out_proj = Linear(embed_dim, embed_dim, weight_attr, bias_attr=bias_attr)

    def _split_heads(self, x: Tensor) -> Tensor:
        # [batch, len, embed] -> [batch, heads, len, head_dim]
        return oar.transpose(oar.reshape(x, [0, 0, self.num_heads, self.head_dim]), [0, 2, 1, 3])

    def _check_input(self, x: Tensor, label: str, size: int) -> None:
        if x.ndim != 3 or x.shape[-1] != size:
            raise ShapeError(f"MultiHeadAttention: {label} must be [batch_size, seq_len, {size}], got shape {x.shape}")

    def compute_kv(self, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """Project ``key`` and ``value`` and split the heads: two ``[batch, num_heads, len, head_dim]``."""
        self._check_input(key, "key", self.kdim)
        self._check_input(value, "value", self.vdim)
        return self._split_heads(self.k_proj(key)), self._split_heads(self.v_proj(value))

    def gen_cache(self, key: Tensor, value: Tensor | None = None, type=Cache):  # noqa: A002 - Paddle's name
        """A ``StaticCache`` of the projected ``key``/``value``, or a ``Cache``: empty when
        ``value`` is None (``key`` gives the batch size and dtype), else ``Cache(key, value)``."""
        if type is MultiHeadAttention.StaticCache:
            return self.StaticCache(*self.compute_kv(key, key if value is None else value))
        if value is None:
            empty = oar.zeros([key.shape[0], self.num_heads, 0, self.head_dim], dtype=key.dtype)
            return self.Cache(empty, empty)
        return self.Cache(key, value)

    def forward(self, query: Tensor, key: Tensor | None = None, value: Tensor | None = None, attn_mask=None,
                cache=None):
        key = query if key is None else key
        value = query if value is None else value
        self._check_input(query, "query", self.embed_dim)
        q = self._split_heads(self.q_proj(query))
        if isinstance(cache, self.StaticCache):
            k, v = cache.k, cache.v
        else:
            k, v = self.compute_kv(key, value)
        if isinstance(cache, self.Cache):
            k = oar.concat([cache.k, k], axis=2)
            v = oar.concat([cache.v, v], axis=2)
            cache = self.Cache(k, v)
        mask = _convert_attention_mask(attn_mask, q.dtype)
        out, weights = attend(q, k, v, mask, dropout_p=self.dropout, training=self.training)
        out = oar.reshape(oar.transpose(out, [0, 2, 1, 3]), [0, 0, self.embed_dim])
        out = self.out_proj(out)
        outs = [out]
        if self.need_weights:
            outs.append(weights)
        if cache is not None:
            outs.append(cache)
        return out if len(outs) == 1 else tuple(outs)

    def extra_repr(self) -> str:
        return f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, dropout={self.dropout}"


class TransformerEncoderLayer(Layer):
    """Self attention then a feed-forward network (``paddle.nn.TransformerEncoderLayer``).

    Post-norm by default (``x = norm(x + dropout(sublayer(x)))``, as the original paper);
    ``normalize_before=True`` is pre-norm (``x = x + dropout(sublayer(norm(x)))``). The
    feed-forward network is ``linear2(dropout(activation(linear1(x))))``; ``attn_dropout`` and
    ``act_dropout`` default to ``dropout``. Sublayers: ``self_attn``, ``linear1``, ``linear2``,
    ``norm1``, ``norm2``, ``dropout``, ``dropout1``, ``dropout2``. ``weight_attr``/``bias_attr``
    may be a pair: the attention's, then the feed-forward network's.

    ``forward(src, src_mask=None, cache=None)``; with a ``cache`` (from ``gen_cache``) it returns
    ``(output, new_cache)``.

    >>> import oar
    >>> layer = oar.nn.TransformerEncoderLayer(16, 4, 32, normalize_before=True)
    >>> layer(oar.rand([2, 5, 16])).shape
    [2, 5, 16]
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.1, activation: str = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr=None, bias_attr=None, layer_norm_eps: float = 1e-05):
        super().__init__()
        # Paddle's TransformerEncoder builds its other layers from this.
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                            activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                            normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        _check_positive("TransformerEncoderLayer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 2)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 2)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0])
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[1], bias_attr=bias_attrs[1])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[1], bias_attr=bias_attrs[1])
        self.norm1 = LayerNorm(d_model, epsilon=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, epsilon=layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.activation = _resolve_activation(activation)

    def forward(self, src: Tensor, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        residual = src
        if self.normalize_before:
            src = self.norm1(src)
        if cache is None:
            src = self.self_attn(src, src, src, src_mask)
        else:
            src, cache = self.self_attn(src, src, src, src_mask, cache)
        src = residual + self.dropout1(src)
        if not self.normalize_before:
            src = self.norm1(src)

        residual = src
        if self.normalize_before:
            src = self.norm2(src)
        src = self.linear2(self.dropout(self.activation(self.linear1(src))))
        src = residual + self.dropout2(src)
        if not self.normalize_before:
            src = self.norm2(src)
        return src if cache is None else (src, cache)

    def gen_cache(self, src: Tensor):
        """An empty incremental ``MultiHeadAttention.Cache`` for this layer's self attention."""
        return self.self_attn.gen_cache(src, type=self.self_attn.Cache)


def _replicate(layer: Layer) -> Layer:
    """A fresh layer built from ``layer``'s constructor arguments (Paddle's ``_config``), so each
    copy is initialised anew; a layer without ``_config`` is deep-copied."""
    config = getattr(layer, "_config", None)
    return type(layer)(**config) if config is not None else copy.deepcopy(layer)


class TransformerEncoder(Layer):
    """A stack of ``num_layers`` encoder layers (``paddle.nn.TransformerEncoder``), then ``norm``
    if given. As in Paddle, ``encoder_layer`` itself is the first layer and the others are new
    layers built with its configuration (their own random initialisation, not copies).

    ``forward(src, src_mask=None, cache=None)``; with a ``cache`` (a list from ``gen_cache``)
    it returns ``(output, new_caches)``.

    >>> import oar
    >>> layer = oar.nn.TransformerEncoderLayer(16, 4, 32)
    >>> encoder = oar.nn.TransformerEncoder(layer, 2, norm=oar.nn.LayerNorm(16))
    >>> encoder(oar.rand([2, 5, 16])).shape, encoder.layers[0] is layer
    ([2, 5, 16], True)
    """

    def __init__(self, encoder_layer: Layer, num_layers: int, norm: Layer | None = None):
        super().__init__()
        _check_positive("TransformerEncoder", num_layers=num_layers)
        self.layers = LayerList([encoder_layer] + [_replicate(encoder_layer) for _ in range(num_layers - 1)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src: Tensor, src_mask=None, cache=None):
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        output = src
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, src_mask=src_mask)
            else:
                output, new_cache = layer(output, src_mask=src_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, src: Tensor) -> list:
        """One empty incremental cache per layer."""
        return [layer.gen_cache(src) for layer in self.layers]


class TransformerDecoderLayer(Layer):
    """Self attention, cross attention over the encoder's ``memory``, then a feed-forward
    network (``paddle.nn.TransformerDecoderLayer``); post-norm unless ``normalize_before``.

    Sublayers: ``self_attn``, ``cross_attn``, ``linear1``, ``linear2``, ``norm1``-``norm3``,
    ``dropout``, ``dropout1``-``dropout3``. ``weight_attr``/``bias_attr`` may be a triple: self
    attention, cross attention, feed-forward network.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, cache=None)``; with a cache (from
    ``gen_cache(memory)``: ``(incremental Cache, StaticCache)``) it returns ``(output, new_cache)``.

    >>> import oar
    >>> layer = oar.nn.TransformerDecoderLayer(16, 4, 32)
    >>> layer(oar.rand([2, 6, 16]), oar.rand([2, 5, 16])).shape
    [2, 6, 16]
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int, dropout: float = 0.1, activation: str = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr=None, bias_attr=None, layer_norm_eps: float = 1e-05):
        super().__init__()
        # Paddle's TransformerDecoder builds its other layers from this.
        self._config = dict(d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward, dropout=dropout,
                            activation=activation, attn_dropout=attn_dropout, act_dropout=act_dropout,
                            normalize_before=normalize_before, weight_attr=weight_attr, bias_attr=bias_attr,
                            layer_norm_eps=layer_norm_eps)
        _check_positive("TransformerDecoderLayer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        attn_dropout = dropout if attn_dropout is None else attn_dropout
        act_dropout = dropout if act_dropout is None else act_dropout
        self.normalize_before = normalize_before
        weight_attrs = _convert_param_attr_to_list(weight_attr, 3)
        bias_attrs = _convert_param_attr_to_list(bias_attr, 3)
        self.self_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[0],
                                            bias_attr=bias_attrs[0])
        self.cross_attn = MultiHeadAttention(d_model, nhead, dropout=attn_dropout, weight_attr=weight_attrs[1],
                                             bias_attr=bias_attrs[1])
        self.linear1 = Linear(d_model, dim_feedforward, weight_attrs[2], bias_attr=bias_attrs[2])
        self.dropout = Dropout(act_dropout, mode="upscale_in_train")
        self.linear2 = Linear(dim_feedforward, d_model, weight_attrs[2], bias_attr=bias_attrs[2])
        self.norm1 = LayerNorm(d_model, epsilon=layer_norm_eps)
        self.norm2 = LayerNorm(d_model, epsilon=layer_norm_eps)
        self.norm3 = LayerNorm(d_model, epsilon=layer_norm_eps)
        self.dropout1 = Dropout(dropout, mode="upscale_in_train")
        self.dropout2 = Dropout(dropout, mode="upscale_in_train")
        self.dropout3 = Dropout(dropout, mode="upscale_in_train")
        self.activation = _resolve_activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        residual = tgt
        if self.normalize_before:
            tgt = self.norm1(tgt)
        if cache is None:
            tgt = self.self_attn(tgt, tgt, tgt, tgt_mask, None)
        else:
            tgt, incremental_cache = self.self_attn(tgt, tgt, tgt, tgt_mask, cache[0])
        tgt = residual + self.dropout1(tgt)
        if not self.normalize_before:
            tgt = self.norm1(tgt)

        residual = tgt
        if self.normalize_before:
            tgt = self.norm2(tgt)
        if cache is None:
            tgt = self.cross_attn(tgt, memory, memory, memory_mask, None)
        else:
            tgt, static_cache = self.cross_attn(tgt, memory, memory, memory_mask, cache[1])
        tgt = residual + self.dropout2(tgt)
        if not self.normalize_before:
            tgt = self.norm2(tgt)

        residual = tgt
        if self.normalize_before:
            tgt = self.norm3(tgt)
        tgt = self.linear2(self.dropout(self.activation(self.linear1(tgt))))
        tgt = residual + self.dropout3(tgt)
        if not self.normalize_before:
            tgt = self.norm3(tgt)
        return tgt if cache is None else (tgt, (incremental_cache, static_cache))

    def gen_cache(self, memory: Tensor) -> tuple:
        """``(empty incremental Cache for self attention, StaticCache of memory for cross attention)``."""
        incremental = self.self_attn.gen_cache(memory, type=self.self_attn.Cache)
        static = self.cross_attn.gen_cache(memory, memory, type=self.cross_attn.StaticCache)
        return incremental, static


class TransformerDecoder(Layer):
    """A stack of ``num_layers`` decoder layers (``paddle.nn.TransformerDecoder``), then
    ``norm`` if given; the first layer is ``decoder_layer``, the others are built anew from its
    configuration, as in Paddle.

    ``forward(tgt, memory, tgt_mask=None, memory_mask=None, cache=None)``.

    >>> import oar
    >>> decoder = oar.nn.TransformerDecoder(oar.nn.TransformerDecoderLayer(16, 4, 32), 2)
    >>> decoder(oar.rand([2, 6, 16]), oar.rand([2, 5, 16])).shape
    [2, 6, 16]
    """

    def __init__(self, decoder_layer: Layer, num_layers: int, norm: Layer | None = None):
        super().__init__()
        _check_positive("TransformerDecoder", num_layers=num_layers)
        self.layers = LayerList([decoder_layer] + [_replicate(decoder_layer) for _ in range(num_layers - 1)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask=None, memory_mask=None, cache=None):
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        output = tgt
        new_caches = []
        for i, layer in enumerate(self.layers):
            if cache is None:
                output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=None)
            else:
                output, new_cache = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask, cache=cache[i])
                new_caches.append(new_cache)
        if self.norm is not None:
            output = self.norm(output)
        return output if cache is None else (output, new_caches)

    def gen_cache(self, memory: Tensor, do_zip: bool = False) -> list:
        """Each layer's ``(incremental, static)`` cache; ``do_zip=True`` regroups them into two lists' tuples."""
        cache = [layer.gen_cache(memory) for layer in self.layers]
        return list(zip(*cache)) if do_zip else cache


def _split_attrs(attr):
    """Paddle's Transformer ``weight_attr``/``bias_attr``: 1, 2 or 3 entries -> (encoder's, decoder's)."""
    if not isinstance(attr, (list, tuple)):
        return attr, attr
    if len(attr) == 1:
        return [attr[0]] * 2, [attr[0]] * 3
    if len(attr) == 2:
        return list(attr), [attr[0], attr[0], attr[1]]
    if len(attr) == 3:
        return [attr[0], attr[2]], list(attr)
    raise ArgumentError(f"Transformer: a list of parameter attributes must have 1, 2 or 3 entries, got {len(attr)}")


class Transformer(Layer):
    """An encoder-decoder Transformer without embeddings or output layer (``paddle.nn.Transformer``).

    Builds ``TransformerEncoder(encoder_layer, num_encoder_layers, LayerNorm(d_model))`` and the
    matching decoder unless ``custom_encoder``/``custom_decoder`` are given. ``forward(src, tgt,
    src_mask=None, tgt_mask=None, memory_mask=None)`` returns the decoder's output
    ``[batch_size, tgt_len, d_model]``.

    >>> import oar
    >>> model = oar.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32)
    >>> mask = model.generate_square_subsequent_mask(6)
    >>> model(oar.rand([2, 5, 16]), oar.rand([2, 6, 16]), tgt_mask=mask).shape
    [2, 6, 16]
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1, activation: str = "relu",
                 attn_dropout: float | None = None, act_dropout: float | None = None, normalize_before: bool = False,
                 weight_attr=None, bias_attr=None, custom_encoder: Layer | None = None,
                 custom_decoder: Layer | None = None):
        super().__init__()
        _check_positive("Transformer", d_model=d_model, nhead=nhead, dim_feedforward=dim_feedforward)
        encoder_weight_attr, decoder_weight_attr = _split_attrs(weight_attr)
        encoder_bias_attr, decoder_bias_attr = _split_attrs(bias_attr)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            encoder_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                                    act_dropout, normalize_before, encoder_weight_attr,
                                                    encoder_bias_attr)
            self.encoder = TransformerEncoder(encoder_layer, num_encoder_layers, LayerNorm(d_model))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            decoder_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation, attn_dropout,
                                                    act_dropout, normalize_before, decoder_weight_attr,
                                                    decoder_bias_attr)
            self.decoder = TransformerDecoder(decoder_layer, num_decoder_layers, LayerNorm(d_model))
        self.d_model = d_model
        self.nhead = nhead

    def forward(self, src: Tensor, tgt: Tensor, src_mask=None, tgt_mask=None, memory_mask=None) -> Tensor:
        src_mask = _convert_attention_mask(src_mask, src.dtype)
        memory = self.encoder(src, src_mask=src_mask)
        tgt_mask = _convert_attention_mask(tgt_mask, tgt.dtype)
        memory_mask = _convert_attention_mask(memory_mask, memory.dtype)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask)

    @staticmethod
    def generate_square_subsequent_mask(length: int) -> Tensor:
        """The float ``[length, length]`` causal mask: 0 on and below the diagonal, ``-inf`` above.

        >>> import oar
        >>> oar.nn.Transformer.generate_square_subsequent_mask(3).tolist()
        [[0.0, -inf, -inf], [0.0, 0.0, -inf], [0.0, 0.0, 0.0]]
        """
        return oar.triu(oar.full([length, length], float("-inf"), dtype=oar.get_default_dtype()), 1)


__all__ = ["MultiHeadAttention", "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer",
           "TransformerDecoder", "Transformer"]
