"""``oar.utils.run_check()``, as ``paddle.utils.run_check()``: train a tiny model on every device
oar has a backend for and say whether it works.

It needs oar-core alone (no oar.nn): a linear regression written with core ops and autograd on
each available backend (``cpu`` always, ``gpu`` with a GPU plugin), checked against numpy: the
forward values and both gradients of the first step (numpy's closed form), then that twenty steps
of gradient descent lower the loss. ``python -m oar doctor`` reports the rest of an install
(versions, plugins, BLAS, environment switches).
"""

from __future__ import annotations

import numpy as np

from oar._engine.registries import BACKENDS
from oar._engine.tensor import to_tensor
from oar._ops.linalg import matmul
from oar.errors import OarError

_STEPS = 20
_LEARNING_RATE = 0.1
_TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}  # float32 products of a few terms
_LABELS = {"cpu": "CPU", "gpu": "GPU"}


def _largest_difference(got, want) -> str:
    return f"largest difference {float(np.max(np.abs(np.asarray(got, np.float64) - want))):.3g}"


def _problem_on(backend: str) -> str | None:
    """What is wrong with training the model on ``backend``, in a sentence, or None when it works."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = x @ rng.standard_normal((4, 1)).astype(np.float32) + np.float32(0.5)  # a target the model can fit
    weight, bias = np.zeros((4, 1), np.float32), np.zeros((1,), np.float32)
    inputs, targets = to_tensor(x, place=backend), to_tensor(y, place=backend)
    losses = []
    for step in range(_STEPS):
        w = to_tensor(weight, place=backend, stop_gradient=False)
        b = to_tensor(bias, place=backend, stop_gradient=False)
        out = matmul(inputs, w) + b
        expected = x @ weight + bias
        if step == 0 and not np.allclose(out.numpy(), expected, **_TOLERANCE):
            return f"the forward pass (matmul + add) differs from numpy's: {_largest_difference(out.numpy(), expected)}"
        loss = ((out - targets) ** 2).mean()
        loss.backward()
        if step == 0:
            residual = 2 * (expected - y) / len(x)  # d loss / d out
            for name, grad, want in (("weight", w.grad, x.T @ residual), ("bias", b.grad, residual.sum(0))):
                if grad is None:
                    return f"no gradient reached the {name}: backward() did not run through the model"
                if not np.allclose(grad.numpy(), want, **_TOLERANCE):
                    return f"the {name}'s gradient differs from numpy's: {_largest_difference(grad.numpy(), want)}"
        losses.append(float(loss))
        weight = weight - np.float32(_LEARNING_RATE) * w.grad.numpy()
        bias = bias - np.float32(_LEARNING_RATE) * b.grad.numpy()
    if not losses[-1] < 0.5 * losses[0]:
        return f"training did not lower the loss: {losses[0]:.4g} -> {losses[-1]:.4g} in {_STEPS} steps"
    return None


def run_check() -> None:
    """Check that oar is installed and works: train a tiny model for a few steps on every available
    device, compare its values and gradients with numpy, and print the result. Raises ``OarError``
    saying what is wrong when a device does not work.

    >>> import oar
    >>> oar.utils.run_check()  # doctest: +ELLIPSIS
    Running verify oar program ...
    oar works well on 1 CPU.
    ...oar is installed successfully! Let's start deep learning with oar now.
    """
    print("Running verify oar program ... ")
    problems = []
    for name, backend in BACKENDS.items():
        label = _LABELS.get(name, name.upper())
        if not backend.is_available():
            print(f"oar's {name!r} backend is installed but finds no {label} here: skipped.")
            continue
        try:
            problem = _problem_on(name)
        except Exception as exc:  # any failure is the answer, said in the user's terms below
            problem = f"training raised {type(exc).__name__}: {exc}"
        if problem is None:
            print(f"oar works well on 1 {label}.")
        else:
            print(f"oar does not work on {label}: {problem}.")
            problems.append(f"{label}: {problem}")
    if problems:
        raise OarError("oar is not installed correctly (" + "; ".join(problems) + "). "
                       "Run `python -m oar doctor` to see the installed packages, plugins and the fix for each problem.")
    print("oar is installed successfully! Let's start deep learning with oar now.")


__all__ = ["run_check"]
