"""Regenerate the model-zoo fixtures of tests/nn/vision/test_model_zoo.py from real Paddle 3.3.1.

Run from the repository root, in an environment with paddlepaddle==3.3.1 (never imported by oar or
its tests):

    python tests/nn/vision/data/make_model_zoo_fixtures.py

It writes, next to itself:

- ``model_zoo_state_dicts.json.gz`` (gzipped JSON): for each constructor call in ``CONFIGS``, the state dict of
  ``paddle.vision.models.<name>(**kwargs)`` as ``[[key, shape], ...]`` in Paddle's order, and the
  shape (or, for GoogLeNet, the shapes) of its output on a ``1x3xSxS`` input, one config a line.
- ``<name>_weights.npz`` for the small models in ``WEIGHTS``: Paddle's randomly initialized
  parameters (batch-norm scales, shifts and running statistics drawn from a seeded numpy
  generator instead of Paddle's ones and zeros, so that they matter), a fixed input ``x``
  and Paddle's eval-mode output ``y``. Each file is kept under 5 MB.
"""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import paddle

HERE = os.path.dirname(os.path.abspath(__file__))

# (fixture name, constructor, kwargs, input side)
CONFIGS = [
    ("alexnet", "alexnet", {}, 224),
    ("alexnet_features", "alexnet", {"num_classes": 0}, 64),
    ("densenet121", "densenet121", {}, 64),
    ("densenet161", "densenet161", {}, 64),
    ("densenet169", "densenet169", {}, 64),
    ("densenet201", "densenet201", {}, 64),
    ("densenet264", "densenet264", {}, 64),
    ("googlenet", "googlenet", {}, 224),
    ("googlenet_features", "googlenet", {"num_classes": 0}, 96),
    ("inception_v3", "inception_v3", {}, 75),
    ("inception_v3_features", "inception_v3", {"num_classes": 0, "with_pool": False}, 75),
    ("mobilenet_v1", "mobilenet_v1", {}, 64),
    ("mobilenet_v1_x0_5", "mobilenet_v1", {"scale": 0.5, "num_classes": 10}, 64),
    ("mobilenet_v3_large", "mobilenet_v3_large", {}, 64),
    ("mobilenet_v3_large_x0_75", "mobilenet_v3_large", {"scale": 0.75, "with_pool": False, "num_classes": 0}, 64),
    ("mobilenet_v3_small", "mobilenet_v3_small", {}, 64),
    ("mobilenet_v3_small_x0_5", "mobilenet_v3_small", {"scale": 0.5, "num_classes": 10}, 64),
    ("shufflenet_v2_x0_25", "shufflenet_v2_x0_25", {}, 64),
    ("shufflenet_v2_x0_33", "shufflenet_v2_x0_33", {}, 64),
    ("shufflenet_v2_x0_5", "shufflenet_v2_x0_5", {}, 64),
    ("shufflenet_v2_x1_0", "shufflenet_v2_x1_0", {}, 64),
    ("shufflenet_v2_x1_5", "shufflenet_v2_x1_5", {}, 64),
    ("shufflenet_v2_x2_0", "shufflenet_v2_x2_0", {}, 64),
    ("shufflenet_v2_swish", "shufflenet_v2_swish", {"num_classes": 0, "with_pool": False}, 64),
    ("squeezenet1_0", "squeezenet1_0", {}, 64),
    ("squeezenet1_1", "squeezenet1_1", {"with_pool": False}, 64),
]

# small models whose Paddle weights, input and output are stored: (name, constructor, kwargs, input side)
WEIGHTS = [
    ("squeezenet1_1", "squeezenet1_1", {"num_classes": 10}, 64),
    ("mobilenet_v3_small", "mobilenet_v3_small", {"scale": 0.5, "num_classes": 10}, 64),
    ("shufflenet_v2_x0_25", "shufflenet_v2_x0_25", {"num_classes": 10, "act": "swish"}, 64),
]


def shapes_of(out):
    return [list(o.shape) for o in out] if isinstance(out, (tuple, list)) else list(out.shape)


def record_state_dicts() -> None:
    lines = []
    for name, ctor, kwargs, side in CONFIGS:
        paddle.seed(0)
        model = getattr(paddle.vision.models, ctor)(**kwargs)
        model.eval()
        with paddle.no_grad():
            out = model(paddle.rand([1, 3, side, side]))
        entry = {"ctor": ctor, "kwargs": kwargs, "input": [1, 3, side, side], "output": shapes_of(out),
                 "state": [[k, list(v.shape)] for k, v in model.state_dict().items()]}
        lines.append(json.dumps(name) + ": " + json.dumps(entry, separators=(",", ":")))
    # mtime=0: the same models give the same bytes, so regenerating changes nothing in git
    with gzip.GzipFile(os.path.join(HERE, "model_zoo_state_dicts.json.gz"), "wb", mtime=0) as f:
        f.write(("{\n" + ",\n".join(lines) + "\n}\n").encode())


def record_weights() -> None:
    for name, ctor, kwargs, side in WEIGHTS:
        paddle.seed(1)
        rng = np.random.default_rng(1)
        model = getattr(paddle.vision.models, ctor)(**kwargs)
        state = {k: v.numpy() for k, v in model.state_dict().items()}
        for key, value in state.items():
            if key.endswith("._mean") or (key.endswith(".bias") and key.replace(".bias", "._mean") in state):
                state[key] = rng.normal(0.0, 0.1, value.shape).astype(np.float32)
            elif key.endswith("._variance"):
                state[key] = rng.uniform(0.5, 1.5, value.shape).astype(np.float32)
            elif key.endswith(".weight") and key.replace(".weight", "._mean") in state:
                state[key] = rng.uniform(0.5, 1.5, value.shape).astype(np.float32)
        model.set_state_dict({k: paddle.to_tensor(v) for k, v in state.items()})
        model.eval()
        x = rng.uniform(-1.0, 1.0, (1, 3, side, side)).astype(np.float32)
        with paddle.no_grad():
            y = model(paddle.to_tensor(x)).numpy()
        path = os.path.join(HERE, f"{name}_weights.npz")
        np.savez_compressed(path, x=x, y=y, kwargs=json.dumps(kwargs), ctor=ctor,
                            **{f"state/{k}": v for k, v in state.items()})
        size = os.path.getsize(path)
        assert size < 5_000_000, f"{path} is {size} bytes; keep each weights fixture under 5 MB"
        print(path, size)


if __name__ == "__main__":
    record_state_dicts()
    record_weights()
