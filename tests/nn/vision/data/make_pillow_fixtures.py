"""Regenerate ``transforms_pillow_paddle.json`` for tests/nn/vision/test_transforms_pillow.py from
real Paddle 3.3.1 (never imported by oar or its tests):

    python tests/nn/vision/data/make_pillow_fixtures.py

Each case is a call of ``paddle.vision.transforms.functional.<fn>(image, **kwargs)`` on a PIL
image made from the fixed 6x7 RGB array ``IMAGE`` below (or its first channel, as an ``L``
image, for the ``gray`` cases): Paddle's ``pil`` backend, which calls Pillow. The output is
stored as nested lists, with its mode.
"""

from __future__ import annotations

import json
import os

import numpy as np
import paddle.vision.transforms.functional as F
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
# a 6x7 RGB image of varied hues and levels: the same formula is in the test
IMAGE = ((np.arange(6 * 7 * 3).reshape(6, 7, 3) * 53 + np.arange(3) * 91) % 256).astype(np.uint8)

CASES = [
    ("adjust_brightness", {"brightness_factor": 0.6}), ("adjust_brightness", {"brightness_factor": 1.7}),
    ("adjust_contrast", {"contrast_factor": 0.4}), ("adjust_contrast", {"contrast_factor": 1.8}),
    ("adjust_saturation", {"saturation_factor": 0.0}), ("adjust_saturation", {"saturation_factor": 1.6}),
    ("adjust_hue", {"hue_factor": 0.2}), ("adjust_hue", {"hue_factor": -0.37}), ("adjust_hue", {"hue_factor": 0.5}),
    ("hflip", {}), ("vflip", {}),
    ("crop", {"top": 1, "left": 2, "height": 4, "width": 3}), ("crop", {"top": -1, "left": 4, "height": 4, "width": 5}),
    ("center_crop", {"output_size": 4}),
    ("pad", {"padding": [1, 2, 0, 3], "fill": [9, 8, 7]}), ("pad", {"padding": 2, "padding_mode": "reflect"}),
    ("to_grayscale", {"num_output_channels": 3}),
    ("resize", {"size": [9, 4], "interpolation": "bilinear"}), ("resize", {"size": [3, 11], "interpolation": "bicubic"}),
    ("rotate", {"angle": 33.0, "interpolation": "bilinear", "expand": True}),
]
GRAY_CASES = [
    ("adjust_brightness", {"brightness_factor": 1.3}), ("adjust_contrast", {"contrast_factor": 0.5}),
    ("adjust_saturation", {"saturation_factor": 1.5}), ("adjust_hue", {"hue_factor": 0.3}),
    ("pad", {"padding": 1, "fill": 5}),
]


def record(cases, image):
    out = []
    for fn, kwargs in cases:
        call_kwargs = {k: tuple(v) if k == "fill" and isinstance(v, list) else v for k, v in kwargs.items()}
        result = getattr(F, fn)(image, **call_kwargs)  # Pillow takes a colour as a tuple, not a list
        out.append({"fn": fn, "kwargs": kwargs, "mode": result.mode, "out": np.asarray(result).tolist()})
    return out


if __name__ == "__main__":
    fixtures = {"image": IMAGE.tolist(), "rgb": record(CASES, Image.fromarray(IMAGE)),
                "gray": record(GRAY_CASES, Image.fromarray(np.ascontiguousarray(IMAGE[:, :, 0])))}
    with open(os.path.join(HERE, "transforms_pillow_paddle.json"), "w") as f:
        json.dump(fixtures, f, separators=(",", ":"))
