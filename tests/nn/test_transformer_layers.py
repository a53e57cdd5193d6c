"""MultiHeadAttention and the Transformer layers against numpy references of Paddle's formulas;
Paddle's sublayer names, masks, caches and defaults; and a small encoder that learns a task."""

from __future__ import annotations

import doctest
import inspect

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn import functional as F
from oar.testing import OpCase, check_grad

from .op_cases.attention import np_softmax


# -- numpy references --------------------------------------------------------------------------
def np_layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    var = x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def np_linear(p, prefix, x):
    out = x @ p[f"{prefix}.weight"]
    return out + p[f"{prefix}.bias"] if f"{prefix}.bias" in p else out


def np_mha(p, prefix, query, key, value, heads, mask=None):
    """Returns (output, weights); ``mask`` is additive, already converted."""
    at = lambda name: f"{prefix}.{name}" if prefix else name  # noqa: E731
    q, k, v = (np_linear(p, at(f"{name}_proj"), t) for name, t in (("q", query), ("k", key), ("v", value)))
    split = lambda t: t.reshape(t.shape[0], t.shape[1], heads, -1).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = split(q), split(k), split(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + mask
    weights = np_softmax(scores)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(query.shape[0], query.shape[1], -1)
    return np_linear(p, at("out_proj"), out), weights


def np_ffn(p, x, act):
    hidden = np_linear(p, "linear1", x)
    hidden = np.maximum(hidden, 0) if act == "relu" else hidden
    return np_linear(p, "linear2", hidden)


def np_encoder_layer(p, x, heads, mask=None, normalize_before=False, act="relu"):
    norm = lambda name, t: np_layer_norm(t, p[f"{name}.weight"], p[f"{name}.bias"])  # noqa: E731
    if normalize_before:
        x = x + np_mha(p, "self_attn", norm("norm1", x), norm("norm1", x), norm("norm1", x), heads, mask)[0]
        return x + np_ffn(p, norm("norm2", x), act)
    x = norm("norm1", x + np_mha(p, "self_attn", x, x, x, heads, mask)[0])
    return norm("norm2", x + np_ffn(p, x, act))


def np_decoder_layer(p, x, memory, heads, tgt_mask=None, memory_mask=None, normalize_before=False):
    norm = lambda name, t: np_layer_norm(t, p[f"{name}.weight"], p[f"{name}.bias"])  # noqa: E731
    if normalize_before:
        y = norm("norm1", x)
        x = x + np_mha(p, "self_attn", y, y, y, heads, tgt_mask)[0]
        x = x + np_mha(p, "cross_attn", norm("norm2", x), memory, memory, heads, memory_mask)[0]
        return x + np_ffn(p, norm("norm3", x), "relu")
    x = norm("norm1", x + np_mha(p, "self_attn", x, x, x, heads, tgt_mask)[0])
    x = norm("norm2", x + np_mha(p, "cross_attn", x, memory, memory, heads, memory_mask)[0])
    return norm("norm3", x + np_ffn(p, x, "relu"))


def params_of(layer, prefix=""):
    return {name[len(prefix):]: v.numpy().astype(np.float64) for name, v in layer.state_dict().items()
            if name.startswith(prefix)}


def randomize(layer, seed):
    """Random values for every parameter (LayerNorm's ones/zeros would hide a swapped weight/bias)."""
    rng = np.random.default_rng(seed)
    layer.set_state_dict({k: rng.standard_normal(v.shape) * 0.5 for k, v in layer.state_dict().items()})
    return layer


rng = np.random.default_rng(0)


# -- scaled_dot_product_attention ----------------------------------------------------------------
def test_sdpa_dropout_scales_kept_weights_and_is_off_outside_training():
    oar.seed(1)
    q, k, v = (oar.to_tensor(rng.standard_normal((2, 6, 2, 4))) for _ in range(3))
    plain = F.scaled_dot_product_attention(q, k, v).numpy()
    np.testing.assert_allclose(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, training=False).numpy(), plain)
    # With v = identity rows the output exposes the (dropped) weights themselves.
    eye = oar.to_tensor(np.broadcast_to(np.eye(6)[None, :, None, :], (2, 6, 2, 6)).copy())
    weights = F.scaled_dot_product_attention(q, k, eye).numpy()
    dropped = F.scaled_dot_product_attention(q, k, eye, dropout_p=0.5).numpy()
    kept = dropped != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(dropped[kept], 2 * weights[kept], rtol=1e-6)


def test_sdpa_rejects_bad_arguments():
    q = oar.rand([2, 3, 2, 4])
    with pytest.raises(ShapeError, match="4-D"):
        F.scaled_dot_product_attention(q, q, oar.rand([3, 2, 4]))
    with pytest.raises(ShapeError, match="head_dim"):
        F.scaled_dot_product_attention(q, oar.rand([2, 3, 2, 5]), oar.rand([2, 3, 2, 5]))
    with pytest.raises(ShapeError, match="broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=oar.rand([2, 2, 3, 5]))
    with pytest.raises(DTypeError, match="bool"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=oar.ones([3, 3], dtype="int64"))


# -- MultiHeadAttention --------------------------------------------------------------------------
def test_mha_sublayers_state_dict_and_shapes_follow_paddle():
    mha = nn.MultiHeadAttention(8, 2, kdim=3, vdim=5)
    assert list(mha.state_dict()) == ["q_proj.weight", "q_proj.bias", "k_proj.weight", "k_proj.bias",
                                      "v_proj.weight", "v_proj.bias", "out_proj.weight", "out_proj.bias"]
    assert mha.k_proj.weight.shape == [3, 8] and mha.v_proj.weight.shape == [5, 8]  # Linear: [in, out]
    assert mha.head_dim == 4
    out = mha(oar.rand([2, 4, 8]), oar.rand([2, 6, 3]), oar.rand([2, 6, 5]))
    assert out.shape == [2, 4, 8]
    no_bias = nn.MultiHeadAttention(8, 2, bias_attr=False)
    assert list(no_bias.state_dict()) == ["q_proj.weight", "k_proj.weight", "v_proj.weight", "out_proj.weight"]
    with pytest.raises(ArgumentError, match="divisible"):
        nn.MultiHeadAttention(10, 4)
    with pytest.raises(ShapeError, match=r"\[batch_size, seq_len, 8\]"):
        mha(oar.rand([2, 4, 6]))


MASKS = {
    "none": None,
    "bool": np.array([[True, False, True, True, False], [True, True, True, False, True]])[:, None, None, :],
    "int": np.array([[1, 1, 0, 1, 1], [0, 1, 1, 1, 1]])[:, None, None, :],
    "float": rng.standard_normal((2, 2, 3, 5)),
}


@pytest.mark.parametrize("kind", list(MASKS))
def test_mha_matches_numpy(kind):
    oar.seed(2)
    mha = nn.MultiHeadAttention(8, 2, kdim=6, vdim=4, need_weights=True).to(dtype="float64")
    q, k, v = rng.standard_normal((2, 3, 8)), rng.standard_normal((2, 5, 6)), rng.standard_normal((2, 5, 4))
    mask = MASKS[kind]
    additive = None if mask is None else (mask if kind == "float" else (mask.astype(np.float64) - 1.0) * 1e9)
    want_out, want_weights = np_mha(params_of(mha), "", q, k, v, 2, additive)
    given = None if mask is None else oar.to_tensor(mask)
    out, weights = mha(oar.to_tensor(q), oar.to_tensor(k), oar.to_tensor(v), attn_mask=given)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.numpy(), want_weights, rtol=1e-10, atol=1e-12)
    if mask is not None and kind != "float":
        assert not weights.numpy()[np.broadcast_to(mask == 0, weights.shape)].any()


def test_mha_defaults_key_and_value_to_query_and_matches_sdpa():
    mha = nn.MultiHeadAttention(8, 2).to(dtype="float64")
    x = oar.to_tensor(rng.standard_normal((2, 4, 8)))
    split = lambda t: oar.reshape(t, [2, 4, 2, 4])  # noqa: E731
    attended = F.scaled_dot_product_attention(split(mha.q_proj(x)), split(mha.k_proj(x)), split(mha.v_proj(x)))
    want = mha.out_proj(oar.reshape(attended, [2, 4, 8]))
    np.testing.assert_allclose(mha(x).numpy(), want.numpy(), rtol=1e-10, atol=1e-12)


def test_mha_gradients_match_finite_differences():
    oar.seed(3)
    mha = nn.MultiHeadAttention(4, 2, kdim=3).to(dtype="float64")
    p = params_of(mha)
    mask = np.array([[0.0, -1.0, 0.5], [0.0, 0.0, -2.0]])
    case = OpCase("matmul", lambda q, k, v: mha(q, k, v, attn_mask=oar.to_tensor(mask)),
                  lambda q, k, v: np_mha(p, "", q, k, v, 2, mask)[0],
                  [rng.standard_normal((2, 2, 4)), rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 4))],
                  dtypes=("float64",), id="mha")
    check_grad(case)


def test_mha_dropout_acts_on_the_weights_in_training():
    oar.seed(4)
    mha = nn.MultiHeadAttention(8, 2, dropout=0.5, need_weights=True)
    x = oar.rand([2, 6, 8])
    mha.eval()
    _, weights = mha(x)
    mha.train()
    _, dropped = mha(x)
    kept = dropped.numpy() != 0
    assert 0.3 < kept.mean() < 0.7
    np.testing.assert_allclose(dropped.numpy()[kept], 2 * weights.numpy()[kept], rtol=1e-5)


def test_mha_incremental_cache_equals_causal_attention():
    oar.seed(5)
    mha = nn.MultiHeadAttention(8, 2).to(dtype="float64")
    x = oar.to_tensor(rng.standard_normal((2, 5, 8)))
    causal = nn.Transformer.generate_square_subsequent_mask(5).astype("float64")
    full = mha(x, attn_mask=causal).numpy()
    cache = mha.gen_cache(x)
    assert isinstance(cache, nn.MultiHeadAttention.Cache) and cache.k.shape == [2, 2, 0, 4]
    for t in range(5):
        step, cache = mha(x[:, t:t + 1], cache=cache)
        np.testing.assert_allclose(step.numpy()[:, 0], full[:, t], rtol=1e-10, atol=1e-12)
    assert cache.k.shape == [2, 2, 5, 4]
    # A StaticCache holds projected keys/values: the same result as passing them again.
    memory = oar.to_tensor(rng.standard_normal((2, 3, 8)))
    static = mha.gen_cache(memory, memory, type=nn.MultiHeadAttention.StaticCache)
    out, same = mha(x, cache=static)
    assert same is static
    np.testing.assert_allclose(out.numpy(), mha(x, memory, memory).numpy(), rtol=1e-12)


# -- encoder and decoder layers ------------------------------------------------------------------
@pytest.mark.parametrize("normalize_before", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer_matches_numpy(normalize_before, activation):
    oar.seed(6)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation,
                                       normalize_before=normalize_before).to(dtype="float64")
    randomize(layer, 7)
    x = rng.standard_normal((2, 5, 8))
    mask = np.array([[True, True, True, False, False], [True, True, True, True, True]])[:, None, None, :]
    p = params_of(layer)
    if activation == "gelu":
        from math import erf

        gelu = np.vectorize(lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))))
        np_hidden = lambda h: gelu(h)  # noqa: E731
    else:
        np_hidden = lambda h: np.maximum(h, 0)  # noqa: E731

    def np_layer(x):
        norm = lambda name, t: np_layer_norm(t, p[f"{name}.weight"], p[f"{name}.bias"])  # noqa: E731
        add = (mask.astype(np.float64) - 1) * 1e9
        ffn = lambda t: np_linear(p, "linear2", np_hidden(np_linear(p, "linear1", t)))  # noqa: E731
        if normalize_before:
            y = norm("norm1", x)
            x = x + np_mha(p, "self_attn", y, y, y, 2, add)[0]
            return x + ffn(norm("norm2", x))
        x = norm("norm1", x + np_mha(p, "self_attn", x, x, x, 2, add)[0])
        return norm("norm2", x + ffn(x))

    got = layer(oar.to_tensor(x), src_mask=oar.to_tensor(mask)).numpy()
    np.testing.assert_allclose(got, np_layer(x), rtol=1e-9, atol=1e-10)
    if activation == "relu":
        np.testing.assert_allclose(got, np_encoder_layer(p, x, 2, (mask - 1.0) * 1e9, normalize_before), rtol=1e-9)


def test_encoder_layer_sublayer_names_and_paddle_defaults():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"]
    assert list(layer.state_dict())[:4] == ["self_attn.q_proj.weight", "self_attn.q_proj.bias",
                                            "self_attn.k_proj.weight", "self_attn.k_proj.bias"]
    assert layer.linear1.weight.shape == [8, 16] and layer.linear2.weight.shape == [16, 8]
    np.testing.assert_array_equal(layer.norm1.weight.numpy(), np.ones(8))
    sig = inspect.signature(nn.TransformerEncoderLayer)
    assert {k: v.default for k, v in sig.parameters.items() if v.default is not inspect.Parameter.empty} == {
        "dropout": 0.1, "activation": "relu", "attn_dropout": None, "act_dropout": None, "normalize_before": False,
        "weight_attr": None, "bias_attr": None, "layer_norm_eps": 1e-05}
    # attn_dropout / act_dropout default to dropout.
    assert layer.self_attn.dropout == 0.1 and layer.dropout.p == 0.1
    other = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.2, attn_dropout=0.0, act_dropout=0.3)
    assert other.self_attn.dropout == 0.0 and other.dropout.p == 0.3 and other.dropout1.p == 0.2
    # A pair of attrs: the attention's, then the feed-forward network's.
    split = nn.TransformerEncoderLayer(8, 2, 16, bias_attr=[False, None])
    assert split.self_attn.q_proj.bias is None and split.linear1.bias is not None
    with pytest.raises(ArgumentError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, 16, activation="no_such_function")


def test_encoder_builds_fresh_layers_from_the_config_as_paddle():
    oar.seed(8)
    first = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, normalize_before=True)
    norm = nn.TransformerEncoderLayer(8, 2, 16).norm1  # any LayerNorm(8)
    encoder = nn.TransformerEncoder(first, 3, norm=norm)
    assert encoder.layers[0] is first and len(encoder.layers) == 3
    for other in encoder.layers[1:]:
        assert type(other) is type(first) and other.normalize_before and other.self_attn.dropout == 0.0
        assert not np.allclose(other.linear1.weight.numpy(), first.linear1.weight.numpy())
    assert "norm.weight" in encoder.state_dict() and "layers.2.norm2.bias" in encoder.state_dict()

    encoder.to(dtype="float64")
    randomize(encoder, 9)
    x = rng.standard_normal((2, 4, 8))
    want = x
    for i in range(3):
        want = np_encoder_layer(params_of(encoder, f"layers.{i}."), want, 2, normalize_before=True)
    want = np_layer_norm(want, *(params_of(encoder)[f"norm.{k}"] for k in ("weight", "bias")))
    np.testing.assert_allclose(encoder(oar.to_tensor(x)).numpy(), want, rtol=1e-9, atol=1e-10)


class Residual(nn.Layer):
    """A user layer without Paddle's ``_config``: the encoder deep-copies it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, src, src_mask=None):
        return src + self.fc(src)


def test_encoder_deep_copies_layers_without_a_config():
    first = Residual()
    encoder = nn.TransformerEncoder(first, 2)
    copy = encoder.layers[1]
    assert copy is not first and copy.fc.weight is not first.fc.weight
    np.testing.assert_array_equal(copy.fc.weight.numpy(), first.fc.weight.numpy())
    assert encoder(oar.rand([2, 3, 8])).shape == [2, 3, 8]


@pytest.mark.parametrize("normalize_before", [False, True])
def test_decoder_layer_matches_numpy(normalize_before):
    oar.seed(10)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, normalize_before=normalize_before).to(dtype="float64")
    randomize(layer, 11)
    assert [name for name, _ in layer.named_children()] == [
        "self_attn", "cross_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "norm3",
        "dropout1", "dropout2", "dropout3"]
    tgt, memory = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 3, 8))
    causal = nn.Transformer.generate_square_subsequent_mask(4).astype("float64")
    memory_mask = np.array([[1, 1, 0], [1, 1, 1]])[:, None, None, :]
    got = layer(oar.to_tensor(tgt), oar.to_tensor(memory), tgt_mask=causal, memory_mask=oar.to_tensor(memory_mask))
    want = np_decoder_layer(params_of(layer), tgt, memory, 2, causal.numpy(), (memory_mask - 1.0) * 1e9,
                            normalize_before)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-9, atol=1e-10)


def test_decoder_with_cache_decodes_step_by_step():
    oar.seed(12)
    decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2).to(dtype="float64")
    decoder.eval()
    tgt, memory = oar.to_tensor(rng.standard_normal((2, 4, 8))), oar.to_tensor(rng.standard_normal((2, 3, 8)))
    full = decoder(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(4).astype("float64")).numpy()
    cache = decoder.gen_cache(memory)
    assert len(cache) == 2 and isinstance(cache[0][1], nn.MultiHeadAttention.StaticCache)
    for t in range(4):
        step, cache = decoder(tgt[:, t:t + 1], memory, cache=cache)
        np.testing.assert_allclose(step.numpy()[:, 0], full[:, t], rtol=1e-9, atol=1e-10)
    zipped = decoder.gen_cache(memory, do_zip=True)
    assert len(zipped) == 2 and len(zipped[0]) == 2


def test_encoder_with_cache_returns_new_caches():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), 2)
    x = oar.rand([2, 3, 8])
    out, caches = encoder(x, cache=encoder.gen_cache(x))
    assert out.shape == [2, 3, 8] and [c.k.shape for c in caches] == [[2, 2, 3, 4]] * 2


# -- Transformer ---------------------------------------------------------------------------------
def test_transformer_defaults_masks_and_composition():
    sig = inspect.signature(nn.Transformer)
    assert {k: v.default for k, v in sig.parameters.items()} == {
        "d_model": 512, "nhead": 8, "num_encoder_layers": 6, "num_decoder_layers": 6, "dim_feedforward": 2048,
        "dropout": 0.1, "activation": "relu", "attn_dropout": None, "act_dropout": None, "normalize_before": False,
        "weight_attr": None, "bias_attr": None, "custom_encoder": None, "custom_decoder": None}
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == oar.float32
    assert mask.tolist() == [[0.0, -np.inf, -np.inf], [0.0, 0.0, -np.inf], [0.0, 0.0, 0.0]]

    oar.seed(13)
    model = nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, bias_attr=[None, False, None]).to(dtype="float64")
    # Three attrs: self attention, cross attention, feed-forward network (the encoder takes 1st and 3rd).
    assert model.decoder.layers[0].cross_attn.q_proj.bias is None
    assert model.decoder.layers[0].self_attn.q_proj.bias is not None
    assert model.encoder.layers[1].self_attn.q_proj.bias is not None
    assert model.encoder.norm is not None and model.decoder.norm is not None
    src, tgt = oar.to_tensor(rng.standard_normal((2, 3, 8))), oar.to_tensor(rng.standard_normal((2, 4, 8)))
    causal = model.generate_square_subsequent_mask(4).astype("float64")
    want = model.decoder(tgt, model.encoder(src), tgt_mask=causal)
    np.testing.assert_allclose(model(src, tgt, tgt_mask=causal).numpy(), want.numpy(), rtol=1e-12)
    custom = nn.Transformer(8, 2, custom_encoder=model.encoder, custom_decoder=model.decoder)
    assert custom.encoder is model.encoder


# -- training ------------------------------------------------------------------------------------
class ReverseModel(nn.Layer):
    """Token one-hots -> Linear embedding + learned positions -> TransformerEncoder -> logits."""

    def __init__(self, vocab, length, d_model):
        super().__init__()
        self.vocab = vocab
        self.embed = nn.Linear(vocab, d_model)
        self.position = self.create_parameter([length, d_model], default_initializer=nn.initializer.Normal(0.0, 0.5))
        layer = nn.TransformerEncoderLayer(d_model, 4, 2 * d_model, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens):
        return self.head(self.encoder(self.embed(oar.one_hot(tokens, self.vocab)) + self.position))


def cross_entropy(logits, targets, vocab):
    log_probs = logits - oar.logsumexp(logits, axis=-1, keepdim=True)
    return -(log_probs * oar.one_hot(targets, vocab)).sum(axis=-1).mean()


def test_transformer_encoder_learns_to_reverse_sequences():
    oar.seed(14)
    data = np.random.default_rng(15)
    vocab, length = 6, 5
    model = ReverseModel(vocab, length, 32)
    opt = oar.optimizer.Adam(learning_rate=0.005, parameters=model.parameters())
    losses = []
    for _ in range(400):  # a step budget, not a time one: the outcome must not depend on the machine
        tokens = data.integers(0, vocab, size=(32, length))
        loss = cross_entropy(model(oar.to_tensor(tokens)), oar.to_tensor(tokens[:, ::-1].copy()), vocab)
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
        if np.mean(losses[-10:]) < losses[0] / 10:
            break
    first, last = losses[0], float(np.mean(losses[-10:]))
    assert last < first / 10, f"loss went from {first:.3f} to {last:.3f} in {len(losses)} steps"
    model.eval()
    tokens = data.integers(0, vocab, size=(64, length))
    predicted = model(oar.to_tensor(tokens)).numpy().argmax(-1)
    assert (predicted == tokens[:, ::-1]).mean() > 0.9


def test_docstring_examples_run():
    from oar.nn.functional import attention
    from oar.nn.layer import transformer

    for module in (transformer, attention):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__
