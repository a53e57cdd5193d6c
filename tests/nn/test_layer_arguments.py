"""Layer constructors check their size arguments (issue #24): a size that is not an int (a
string, a float, a bool: ``True`` is not an int here) or not positive raises an
``oar.errors.ArgumentError`` that names the layer, the argument and the value, instead of
building a layer that fails later or silently computes with ``True == 1``."""

from __future__ import annotations

import re

import pytest

from oar import nn
from oar.errors import ArgumentError

BAD = [
    # (call, layer, argument, value as the message shows it)
    (lambda: nn.Linear("4", 5), "Linear", "in_features", "'4'"),
    (lambda: nn.Linear(4, 0), "Linear", "out_features", "0"),
    (lambda: nn.Linear(True, 3), "Linear", "in_features", "True"),
    (lambda: nn.Linear(4.0, 3), "Linear", "in_features", "4.0"),
    (lambda: nn.Linear(-1, 3), "Linear", "in_features", "-1"),
    (lambda: nn.Bilinear(2, 3, False), "Bilinear", "out_features", "False"),
    (lambda: nn.Conv1D(2, "3", 3), "Conv1D", "out_channels", "'3'"),
    (lambda: nn.Conv2D(True, 3, 3), "Conv2D", "in_channels", "True"),
    (lambda: nn.Conv2D(2, 3, 0), "Conv2D", "kernel_size", "0"),
    (lambda: nn.Conv3D(2, 3, 2, groups=0), "Conv3D", "groups", "0"),
    (lambda: nn.Conv1DTranspose(2, 0, 3), "Conv1DTranspose", "out_channels", "0"),
    (lambda: nn.Conv2DTranspose(2, 2.0, 3), "Conv2DTranspose", "out_channels", "2.0"),
    (lambda: nn.Conv3DTranspose(2, 2, True), "Conv3DTranspose", "kernel_size", "True"),
    (lambda: nn.Embedding("5", 3), "Embedding", "num_embeddings", "'5'"),
    (lambda: nn.Embedding(5, True), "Embedding", "embedding_dim", "True"),
    (lambda: nn.Embedding(5, 2.0), "Embedding", "embedding_dim", "2.0"),
    (lambda: nn.Embedding(0, 3), "Embedding", "num_embeddings", "0"),
    (lambda: nn.Embedding(5, 3, padding_idx=1.5), "Embedding", "padding_idx", "1.5"),
    (lambda: nn.BatchNorm1D(True), "BatchNorm1D", "num_features", "True"),
    (lambda: nn.BatchNorm2D("3"), "BatchNorm2D", "num_features", "'3'"),
    (lambda: nn.BatchNorm3D(0), "BatchNorm3D", "num_features", "0"),
    (lambda: nn.BatchNorm(0), "BatchNorm", "num_channels", "0"),
    (lambda: nn.LayerNorm(0), "LayerNorm", "normalized_shape", "0"),
    (lambda: nn.LayerNorm("4"), "LayerNorm", "normalized_shape", "'4'"),
    (lambda: nn.LayerNorm(True), "LayerNorm", "normalized_shape", "True"),
    (lambda: nn.LayerNorm([4, 2.5]), "LayerNorm", "normalized_shape", "[4, 2.5]"),
    (lambda: nn.GroupNorm(0, 4), "GroupNorm", "num_groups", "0"),
    (lambda: nn.GroupNorm(True, 4), "GroupNorm", "num_groups", "True"),
    (lambda: nn.GroupNorm(2, "4"), "GroupNorm", "num_channels", "'4'"),
    (lambda: nn.InstanceNorm2D(0), "InstanceNorm2D", "num_features", "0"),
    (lambda: nn.LSTM("4", 8), "LSTM", "input_size", "'4'"),
    (lambda: nn.LSTM(4, 0), "LSTM", "hidden_size", "0"),
    (lambda: nn.LSTM(4, 8, num_layers=True), "LSTM", "num_layers", "True"),
    (lambda: nn.GRU(4, True), "GRU", "hidden_size", "True"),
    (lambda: nn.SimpleRNN(4, 8.0), "SimpleRNN", "hidden_size", "8.0"),
    (lambda: nn.LSTM(4, 8, dropout="0.1"), "LSTM", "dropout", "'0.1'"),
    (lambda: nn.GRUCell(True, 3), "GRUCell", "input_size", "True"),
    (lambda: nn.MultiHeadAttention(8, True), "MultiHeadAttention", "num_heads", "True"),
    (lambda: nn.MultiHeadAttention("8", 2), "MultiHeadAttention", "embed_dim", "'8'"),
    (lambda: nn.MultiHeadAttention(8, 2, kdim=0), "MultiHeadAttention", "kdim", "0"),
    (lambda: nn.MultiHeadAttention(8, 2, vdim=2.0), "MultiHeadAttention", "vdim", "2.0"),
    (lambda: nn.MultiHeadAttention(8, 2, dropout=1.5), "MultiHeadAttention", "dropout", "1.5"),
    (lambda: nn.Dropout(1.5), "Dropout", "p", "1.5"),
    (lambda: nn.Dropout(-0.1), "Dropout", "p", "-0.1"),
    (lambda: nn.Dropout("0.5"), "Dropout", "p", "'0.5'"),
    (lambda: nn.Dropout(True), "Dropout", "p", "True"),
    (lambda: nn.Dropout2D(2), "Dropout2D", "p", "2"),
    (lambda: nn.AlphaDropout(-1), "AlphaDropout", "p", "-1"),
]


@pytest.mark.parametrize("make, layer, argument, value", BAD,
                         ids=[f"{layer}-{arg}-{value}" for _, layer, arg, value in BAD])
def test_a_bad_size_argument_names_the_layer_the_argument_and_the_value(make, layer, argument, value):
    with pytest.raises(ArgumentError) as caught:
        make()
    message = str(caught.value)
    assert message.startswith(f"{layer}: "), message
    assert re.search(rf"\b{argument}\b", message) and f"got {value}" in message, message


def test_argument_errors_are_value_errors():
    with pytest.raises(ValueError):
        nn.Linear("4", 5)


def test_numpy_integers_and_good_sizes_are_accepted():
    import numpy as np

    assert nn.Linear(np.int64(4), 3).weight.shape == [4, 3]
    assert nn.Embedding(np.int32(5), 2, padding_idx=np.int64(1)).weight.shape == [5, 2]
    assert nn.LayerNorm((2, np.int64(3))).weight.shape == [6]
    assert nn.GroupNorm(2, 4).weight.shape == [4]
    assert nn.LSTM(4, 8, num_layers=2, dropout=0).num_layers == 2
    assert nn.MultiHeadAttention(8, 2, kdim=4, vdim=6).k_proj.weight.shape == [4, 8]
    assert nn.Dropout(0).p == 0 and nn.Dropout(1.0).p == 1.0
