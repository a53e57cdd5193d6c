"""oar's main job until oar-nn lands: train a small MLP with oar-core alone.

Two interleaving half moons (a classic non-linear problem), a 2-64-64-2 MLP written with raw tensors,
softmax cross-entropy, and SGD with momentum -- forward, backward and update all through oar's
ops and autograd. Prints the loss per epoch and the held-out accuracy; exits non-zero if the
model did not learn (accuracy below 95%).

    python examples/demo.py
"""

from __future__ import annotations

import sys
import time

import numpy as np

import oar


def two_moons(n_per_class: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaving half circles with noise (the classic "moons" problem)."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.0, np.pi, n_per_class)
    upper = np.stack([np.cos(theta), np.sin(theta)], axis=1)
    lower = np.stack([1.0 - np.cos(theta), 0.5 - np.sin(theta)], axis=1)
    x = np.concatenate([upper, lower]) + rng.normal(0, 0.12, (2 * n_per_class, 2))
    y = np.concatenate([np.zeros(n_per_class), np.ones(n_per_class)]).astype(np.int64)
    return (x - [0.5, 0.25]).astype(np.float32), y


def init_params(sizes: list[int]) -> list[oar.Tensor]:
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        bound = float(np.sqrt(6.0 / (fan_in + fan_out)))  # Xavier uniform, Paddle's Linear default
        params.append(oar.uniform([fan_in, fan_out], min=-bound, max=bound))
        params.append(oar.zeros([fan_out]))
    for p in params:
        p.stop_gradient = False
    return params


def forward(params: list[oar.Tensor], x: oar.Tensor) -> oar.Tensor:
    h = x
    for i in range(0, len(params) - 2, 2):
        h = oar.tanh(oar.matmul(h, params[i]) + params[i + 1])
    return oar.matmul(h, params[-2]) + params[-1]


def cross_entropy(logits: oar.Tensor, labels: oar.Tensor) -> oar.Tensor:
    log_probs = logits - oar.logsumexp(logits, axis=1, keepdim=True)
    picked = (log_probs * oar.one_hot(labels, num_classes=logits.shape[1])).sum(axis=1)
    return -picked.mean()


def main() -> int:
    oar.seed(0)
    x_train, y_train = two_moons(500, seed=1)
    x_test, y_test = two_moons(200, seed=2)
    params = init_params([2, 64, 64, 2])
    velocity = [np.zeros(p.shape, np.float32) for p in params]
    lr, momentum, batch, epochs = 0.05, 0.9, 20, 30
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        total = 0.0
        for i in range(0, len(order), batch):
            idx = order[i : i + batch]
            loss = cross_entropy(forward(params, oar.to_tensor(x_train[idx])), oar.to_tensor(y_train[idx]))
            loss.backward()
            with oar.no_grad():
                for p, v in zip(params, velocity):
                    v *= momentum
                    v += p.grad.numpy()
                    p.subtract_(oar.to_tensor(lr * v))
                    p.clear_grad()
            total += float(loss) * len(idx)
        if epoch % 5 == 0 or epoch == 1:
            print(f"epoch {epoch:3d}  loss {total / len(x_train):.4f}  ({time.perf_counter() - start:.1f} s)")
    with oar.no_grad():
        predicted = oar.argmax(forward(params, oar.to_tensor(x_test)), axis=1).numpy()
    accuracy = float((predicted == y_test).mean())
    print(f"test accuracy on {len(y_test)} held-out points: {accuracy:.1%}")
    return 0 if accuracy >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
