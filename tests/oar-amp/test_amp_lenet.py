"""The accuracy target: a LeNet trained on the bundled digits with O1 bfloat16, O2 bfloat16 and
float16 with a GradScaler reaches within 1 point of the same LeNet trained in float32 (3 epochs
of Adam each, the same seed and batches)."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.vision.models import LeNet

EPOCHS = 3


def batches(x: np.ndarray, y: np.ndarray, size: int, seed: int):
    order = np.random.default_rng(seed).permutation(len(x))
    for start in range(0, len(x) - size + 1, size):
        i = order[start:start + size]
        yield oar.to_tensor(x[i]), oar.to_tensor(y[i].reshape(-1, 1).astype(np.int64))


def train_and_test(digits, level: str | None, dtype: str = "float32", scaler: bool = False) -> tuple[float, dict]:
    """Test accuracy of a LeNet trained at ``level`` (None: float32), and what training saw."""
    oar.seed(0)
    model = LeNet()
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=2e-3)
    if level == "O2":
        model, optimizer = oar.amp.decorate(model, optimizer, level="O2", dtype=dtype)
    grad_scaler = oar.amp.GradScaler(init_loss_scaling=1024) if scaler else None
    amp = dict(enable=level is not None, level=level or "O1", dtype=dtype if level else "float16")
    loss_fn = nn.CrossEntropyLoss()
    seen = {"loss dtype": None, "weight dtype": model.fc[0].weight.dtype.name}
    model.train()
    for epoch in range(EPOCHS):
        for xb, yb in batches(digits["x_train"], digits["y_train"], 64, epoch):
            with oar.amp.auto_cast(**amp):
                logits = model(xb)
                loss = loss_fn(logits, yb)
            seen["loss dtype"], seen["logits dtype"] = loss.dtype.name, logits.dtype.name
            if grad_scaler is not None:
                scaled = grad_scaler.scale(loss)
                scaled.backward()
                grad_scaler.minimize(optimizer, scaled)
            else:
                loss.backward()
                optimizer.step()
            optimizer.clear_grad()
    model.eval()
    with oar.no_grad(), oar.amp.auto_cast(**amp):
        logits = model(oar.to_tensor(digits["x_test"]))
    return float((logits.astype("float32").numpy().argmax(-1) == digits["y_test"]).mean()), seen


@pytest.fixture(scope="session")
def float32_accuracy(digits) -> float:
    accuracy, seen = train_and_test(digits, None)
    assert seen["logits dtype"] == "float32" and accuracy > 0.9
    return accuracy


@pytest.mark.slow
@pytest.mark.parametrize(("level", "dtype", "scaler", "loss_dtype"), [
    ("O1", "bfloat16", False, "float32"),  # cross-entropy is on O1's black list
    ("O2", "bfloat16", False, "bfloat16"),  # O2's black list is Paddle's extra one only
    ("O1", "float16", True, "float32"),
], ids=["O1-bf16", "O2-bf16", "O1-fp16-scaler"])
def test_amp_lenet_is_within_one_point_of_float32(digits, float32_accuracy, level, dtype, scaler, loss_dtype):
    accuracy, seen = train_and_test(digits, level, dtype, scaler)
    assert seen["logits dtype"] == dtype and seen["loss dtype"] == loss_dtype  # linear is on the white list
    assert seen["weight dtype"] == (dtype if level == "O2" else "float32")
    assert accuracy >= float32_accuracy - 0.01, (accuracy, float32_accuracy)
