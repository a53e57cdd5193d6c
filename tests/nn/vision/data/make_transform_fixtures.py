"""Regenerate ``transforms_breadth_paddle.json`` for tests/nn/vision/test_transforms_breadth.py from
real Paddle 3.3.1 (never imported by oar or its tests):

    python tests/nn/vision/data/make_transform_fixtures.py

Each case is a call of ``paddle.vision.transforms.functional.{affine, perspective, erase}`` on
the fixed 7x9 RGB image ``IMAGE`` below, given as a PIL image (Paddle's ``pil`` backend: OpenCV,
its backend for numpy arrays, is not installed here) or, for ``erase``, as a numpy array and as a
CHW tensor; the output is stored as nested lists.
"""

from __future__ import annotations

import json
import os

import numpy as np
import paddle
import paddle.vision.transforms.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
# a 7x9 RGB image whose pixels all differ: the same formula is in the test
IMAGE = ((np.arange(7 * 9 * 3).reshape(7, 9, 3) * 37) % 256).astype(np.uint8)

AFFINE = [
    {"angle": 30.0, "translate": [1, -2], "scale": 1.2, "shear": [10.0, 5.0]},
    {"angle": -37.0, "translate": [0, 0], "scale": 0.85, "shear": 13.0, "fill": [10, 20, 30], "center": [2, 3]},
    {"angle": 90.0, "translate": [0, 0], "scale": 1.0, "shear": 0.0},
    {"angle": 0.0, "translate": [2, 1], "scale": 1.0, "shear": [0.0, 20.0]},
    {"angle": 20.0, "translate": [1, 1], "scale": 1.0, "shear": 0.0, "interpolation": "bilinear"},
]
PERSPECTIVE = [
    {"startpoints": [[0, 0], [8, 0], [8, 6], [0, 6]], "endpoints": [[1, 1], [7, 0], [8, 5], [0, 6]]},
    {"startpoints": [[0, 0], [8, 0], [8, 6], [0, 6]], "endpoints": [[2, 0], [8, 2], [6, 6], [0, 4]],
     "fill": [255, 0, 0]},
    {"startpoints": [[0, 0], [8, 0], [8, 6], [0, 6]], "endpoints": [[1, 1], [7, 0], [8, 5], [0, 6]],
     "interpolation": "bilinear"},
]
ERASE = [
    {"i": 1, "j": 2, "h": 3, "w": 4, "v": [[[7, 8, 9]]]},
    {"i": 5, "j": 6, "h": 4, "w": 4, "v": 0},
]


def main() -> None:
    pil = Image.fromarray(IMAGE)
    cases = {"image": IMAGE.tolist(), "affine": [], "perspective": [], "erase": []}
    for kwargs in AFFINE:
        out = F.affine(pil, **{**kwargs, "fill": tuple(kwargs.get("fill", [0, 0, 0]))})
        cases["affine"].append({"kwargs": kwargs, "out": np.asarray(out).tolist()})
    for kwargs in PERSPECTIVE:
        out = F.perspective(pil, **{**kwargs, "fill": tuple(kwargs.get("fill", [0, 0, 0]))})
        cases["perspective"].append({"kwargs": kwargs, "out": np.asarray(out).tolist()})
    for kwargs in ERASE:
        numpy_out = F.erase(IMAGE, kwargs["i"], kwargs["j"], kwargs["h"], kwargs["w"], np.array(kwargs["v"]))
        tensor = paddle.to_tensor(IMAGE.transpose(2, 0, 1).astype(np.float32))
        v = paddle.to_tensor(np.array(kwargs["v"], np.float32).reshape(-1)[:, None, None])
        tensor_out = F.erase(tensor, kwargs["i"], kwargs["j"], kwargs["h"], kwargs["w"], v)
        cases["erase"].append({"kwargs": kwargs, "numpy": numpy_out.tolist(), "tensor": tensor_out.numpy().tolist()})
    with open(os.path.join(HERE, "transforms_breadth_paddle.json"), "w") as f:
        json.dump(cases, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
