"""Models train (issue 4's "Done when"): a LeNet, an MLP, a small ResNet and a Transformer encoder
each learn small synthetic data with an oar optimizer and an oar.nn loss, until the loss falls by
the factor the test states, in a fixed number of steps; and a LeNet learns the bundled digits.

The synthetic data are learnable on purpose: every class has a fixed random template and each
sample is its class's template plus fresh Gaussian noise, so a model that learns generalises to
new samples, which each test checks on a held-out batch. Everything is seeded: the loss
curves are the same on every run.
"""

from __future__ import annotations

import numpy as np

import oar
from oar import nn
from oar.vision.models import MLP, BasicBlock, LeNet

LAST = 5  # the final loss is the mean of the last LAST steps' losses


def noisy_templates(shape, num_classes, noise=1.0, seed=0):
    """An endless stream of ``(x, labels)`` batch makers: ``make(batch)`` draws labels uniformly
    and returns each class's fixed template (N(0, 1) per value) plus N(0, noise**2) noise."""
    rng = np.random.default_rng(seed)
    templates = rng.normal(0.0, 1.0, (num_classes, *shape)).astype(np.float32)

    def make(batch: int):
        labels = rng.integers(0, num_classes, batch)
        x = templates[labels] + noise * rng.normal(0.0, 1.0, (batch, *shape)).astype(np.float32)
        return oar.to_tensor(x), oar.to_tensor(labels[:, None].astype(np.int64))

    return make


def train(model, optimizer, loss_fn, make_batch, steps: int, batch: int, scheduler=None) -> list[float]:
    """``steps`` optimizer steps, each on a fresh batch (and a ``scheduler`` step after each);
    the loss of every step."""
    model.train()
    losses = []
    for _ in range(steps):
        x, y = make_batch(batch)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if scheduler is not None:
            scheduler.step()
        losses.append(float(loss))
    return losses


def assert_loss_fell(losses: list[float], factor: float) -> None:
    initial, final = losses[0], float(np.mean(losses[-LAST:]))
    assert final * factor <= initial, (
        f"the loss fell from {initial:.4f} to {final:.4f} (x{initial / final:.1f}), expected at least x{factor}")


def accuracy(model, x, y) -> float:
    model.eval()
    with oar.no_grad():
        predicted = model(x).numpy().argmax(axis=-1)
    return float((predicted == y.numpy().reshape(-1)).mean())


def test_lenet_trains_on_synthetic_images():
    """LeNet + Adam + CrossEntropyLoss on 10 noisy 28x28 templates: the loss falls at least 20x in
    60 steps of 32."""
    oar.seed(0)
    make = noisy_templates((1, 28, 28), num_classes=10)
    model = LeNet()
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=1e-3)
    losses = train(model, optimizer, nn.CrossEntropyLoss(), make, steps=60, batch=32)
    assert_loss_fell(losses, factor=20)
    assert accuracy(model, *make(200)) >= 0.95


def test_mlp_trains_on_synthetic_vectors():
    """MLP + Momentum + CrossEntropyLoss on 10 noisy 8x8 templates: the loss falls at least 10x in
    60 steps of 32."""
    oar.seed(0)
    make = noisy_templates((1, 8, 8), num_classes=10, noise=1.5)
    model = MLP(input_size=64, hidden_sizes=(64, 64), num_classes=10)
    optimizer = oar.optimizer.Momentum(parameters=model.parameters(), learning_rate=0.05, momentum=0.9)
    losses = train(model, optimizer, nn.CrossEntropyLoss(), make, steps=60, batch=32)
    assert_loss_fell(losses, factor=10)
    assert accuracy(model, *make(200)) >= 0.95


class SmallResNet(nn.Layer):
    """A 3->32 conv + batch norm + ReLU stem, two 32-channel BasicBlocks, a global average pool
    and a Linear classifier."""

    def __init__(self, num_classes: int):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 32, 3, padding=1, bias_attr=False), nn.BatchNorm2D(32), nn.ReLU())
        self.blocks = nn.Sequential(BasicBlock(32, 32), BasicBlock(32, 32))
        self.pool = nn.AdaptiveAvgPool2D(1)
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(oar.flatten(self.pool(self.blocks(self.stem(x))), 1))


def test_small_resnet_trains_on_synthetic_images():
    """The small ResNet + Adam (cosine-annealed learning rate) + CrossEntropyLoss on 4 noisy
    3x8x8 templates: the loss falls at least 10x in 40 steps of 16, and every parameter gets a
    gradient (the residual wiring). The annealing lets the weights settle at the end, so batch
    norm's running statistics (momentum 0.9) catch up and the model does as well in eval mode."""
    oar.seed(0)
    make = noisy_templates((3, 8, 8), num_classes=4)
    model = SmallResNet(num_classes=4)
    loss_fn = nn.CrossEntropyLoss()
    x, y = make(16)
    loss_fn(model(x), y).backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and np.abs(param.grad.numpy()).max() > 0, name
    model.clear_gradients()
    scheduler = oar.optimizer.lr.CosineAnnealingDecay(learning_rate=0.01, T_max=40)
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=scheduler)
    losses = train(model, optimizer, loss_fn, make, steps=40, batch=16, scheduler=scheduler)
    assert_loss_fell(losses, factor=10)
    assert accuracy(model, *make(64)) >= 0.95  # eval mode: batch norm uses its running statistics


class TokenClassifier(nn.Layer):
    """Token and position embeddings, a 2-layer Transformer encoder, and a Linear head on the
    last position."""

    def __init__(self, vocab: int, length: int, d_model: int = 32):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(length, d_model)
        layer = nn.TransformerEncoderLayer(d_model, nhead=4, dim_feedforward=64, dropout=0.0)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2)
        self.head = nn.Linear(d_model, vocab)
        self.length = length

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(oar.arange(self.length).unsqueeze(0))
        return self.head(self.encoder(x)[:, -1])


def test_transformer_encoder_learns_to_recall_the_first_token():
    """Random sequences of 6 tokens from 8; the target is the first token, read out at the last
    position, so the encoder must attend across positions. Adam + CrossEntropyLoss: the loss
    falls at least 50x in 150 steps of 32."""
    vocab, length = 8, 6
    rng = np.random.default_rng(0)

    def make(batch: int):
        ids = rng.integers(0, vocab, (batch, length))
        return oar.to_tensor(ids), oar.to_tensor(ids[:, :1].astype(np.int64))

    oar.seed(0)
    model = TokenClassifier(vocab, length)
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=3e-3)
    losses = train(model, optimizer, nn.CrossEntropyLoss(), make, steps=150, batch=32)
    assert_loss_fell(losses, factor=50)
    assert accuracy(model, *make(200)) >= 0.98


def test_lenet_learns_the_bundled_digits():
    """The real task, offline: LeNet + Adam on the bundled digits through a DataLoader, 3 epochs
    of 22 batches of 64, reaches at least 92% on the 364 test images."""
    import oar.vision.transforms as T
    from oar.vision.datasets import Digits

    oar.seed(0)
    normalize = T.Normalize(mean=[127.5], std=[127.5])
    train_set, test_set = Digits(mode="train", transform=normalize), Digits(mode="test", transform=normalize)
    loader = oar.io.DataLoader(train_set, batch_size=64, shuffle=True, drop_last=True)
    model = LeNet()
    optimizer = oar.optimizer.Adam(parameters=model.parameters(), learning_rate=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(3):
        model.train()
        for x, y in loader:
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            optimizer.clear_grad()
            losses.append(float(loss))
    assert len(losses) == 3 * 22
    assert_loss_fell(losses, factor=10)
    x = oar.to_tensor(np.stack([test_set[i][0] for i in range(len(test_set))]))
    y = oar.to_tensor(test_set.labels)
    assert accuracy(model, x, y) >= 0.92
