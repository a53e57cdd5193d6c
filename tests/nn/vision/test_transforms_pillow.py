"""oar.vision.transforms on PIL images through Pillow's own operations, and the vectorized numpy
kernels: PIL outputs equal to Paddle 3.3.1's ``pil`` backend on a fixed 6x7 image (recorded in
``data/transforms_pillow_paddle.json`` by ``data/make_pillow_fixtures.py``); numpy outputs
within one level of the float64 per-pixel formulas they replaced, and of the PIL results."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import oar.vision.transforms as T
import oar.vision.transforms.functional as F
from oar.vision.transforms import _kernels as K

Image = pytest.importorskip("PIL.Image")

with open(Path(__file__).parent / "data" / "transforms_pillow_paddle.json") as f:
    PADDLE = json.load(f)  # Paddle 3.3.1's outputs for PIL images
IMAGE = ((np.arange(6 * 7 * 3).reshape(6, 7, 3) * 53 + np.arange(3) * 91) % 256).astype(np.uint8)
RANDOM = np.random.default_rng(19).integers(0, 256, (37, 41, 3), dtype=np.uint8)


def call_kwargs(kwargs: dict) -> dict:
    return {k: tuple(v) if k == "fill" and isinstance(v, list) else v for k, v in kwargs.items()}


def case_id(case) -> str:
    return f"{case['fn']}-" + "-".join(f"{v}" for v in case["kwargs"].values())


# -- PIL images: Paddle's results --------------------------------------------------------------------
@pytest.mark.parametrize(("source", "case"), [("rgb", c) for c in PADDLE["rgb"]] + [("gray", c) for c in PADDLE["gray"]],
                         ids=lambda v: v if isinstance(v, str) else case_id(v))
def test_pil_outputs_are_paddles(source, case):
    assert np.array_equal(np.array(PADDLE["image"]), IMAGE)
    image = Image.fromarray(IMAGE if source == "rgb" else np.ascontiguousarray(IMAGE[:, :, 0]))
    got = getattr(F, case["fn"])(image, **call_kwargs(case["kwargs"]))
    assert isinstance(got, Image.Image) and got.mode == case["mode"]
    np.testing.assert_array_equal(np.asarray(got), np.array(case["out"], np.uint8))


@pytest.mark.parametrize(("fn", "factor"), [("adjust_brightness", 0.6), ("adjust_brightness", 1.7),
                                            ("adjust_contrast", 0.4), ("adjust_contrast", 1.8),
                                            ("adjust_saturation", 0.0), ("adjust_saturation", 1.6)])
def test_pil_and_numpy_colour_adjustments_agree_within_one_level(fn, factor):
    pil = np.asarray(getattr(F, fn)(Image.fromarray(RANDOM), factor)).astype(int)
    array = getattr(F, fn)(RANDOM, factor)
    assert array.dtype == np.uint8
    assert 0 <= (array - pil).min() and (array - pil).max() <= 1  # Pillow truncates where numpy rounds


def test_pil_hue_is_pillows_8_bit_hsv():
    # 256 hues, shifted by whole 1/255 turns: a few levels from the float HSV of arrays
    pil = np.asarray(F.adjust_hue(Image.fromarray(RANDOM), 0.2)).astype(int)
    assert np.abs(pil - F.adjust_hue(RANDOM, 0.2)).max() <= 16
    red = Image.fromarray(np.array([[[255, 0, 0]]], np.uint8))
    assert np.asarray(F.adjust_hue(red, 1 / 3)).tolist() == [[[0, 255, 0]]]


def test_pil_alpha_is_kept_and_other_modes_go_through_numpy():
    rgba = np.concatenate([RANDOM, np.full(RANDOM.shape[:2] + (1,), 200, np.uint8)], axis=2)
    brighter = F.adjust_brightness(Image.fromarray(rgba), 1.5)
    assert brighter.mode == "RGBA" and (np.asarray(brighter)[:, :, 3] == 200).all()
    floats = Image.fromarray(RANDOM[:, :, 0].astype(np.float32))  # mode "F": not Pillow's 8-bit operations
    out = F.adjust_brightness(floats, 2.0)
    assert out.mode == "F" and np.asarray(out).max() == 2.0 * RANDOM[:, :, 0].max()
    assert np.asarray(F.pad(floats, 1, fill=3.5))[0, 0] == 3.5
    hued = F.adjust_hue(Image.fromarray(rgba), 0.25)
    np.testing.assert_array_equal(np.asarray(hued), F.adjust_hue(rgba, 0.25))


def test_pil_pad_fills_every_band_and_crop_outside_is_black():
    padded = np.asarray(F.pad(Image.fromarray(IMAGE), (1, 2), fill=7))
    np.testing.assert_array_equal(padded, F.pad(IMAGE, (1, 2), fill=7))  # Paddle's Pillow call fills red only
    assert padded[0, 0].tolist() == [7, 7, 7]
    cropped = np.asarray(F.crop(Image.fromarray(IMAGE), -2, 5, 4, 4))
    np.testing.assert_array_equal(cropped, F.crop(IMAGE, -2, 5, 4, 4))


def test_random_transforms_keep_pil_images():
    image = Image.fromarray(RANDOM)
    for transform in (T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.RandomHorizontalFlip(1.0), T.Pad(2), T.RandomCrop(20)):
        out = transform(image)
        assert isinstance(out, Image.Image) and out.mode == "RGB"


# -- numpy kernels: the float64 per-pixel formulas they replaced ---------------------------------------
def reference_hue(rgb: np.ndarray, factor: float) -> np.ndarray:
    """The HSV round trip as oar computed it before vectorizing: float64, six sectors."""
    rgb = rgb.astype(np.float64)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    v = rgb.max(axis=-1)
    span = v - rgb.min(axis=-1)
    safe = np.where(span > 0, span, 1.0)
    s = np.where(v > 0, span / np.where(v > 0, v, 1.0), 0.0)
    h = np.where(v == r, (g - b) / safe, np.where(v == g, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    h = (np.where(span > 0, (h / 6.0) % 1.0, 0.0) + factor) % 1.0
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    sectors = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    return np.stack([np.choose(i.astype(np.int64) % 6, [c[k] for c in sectors]) for k in range(3)], axis=-1)


def reference_sample(a: np.ndarray, xin, yin, interpolation: str, fill) -> np.ndarray:
    """Pillow's sampling as oar computed it before: float64 on an ``HxWxC`` array."""
    h, w = a.shape[:2]
    src = a.astype(np.float64)
    inside = ((xin >= 0) & (xin < w) & (yin >= 0) & (yin < h))[..., None]
    if interpolation == "nearest":
        out = src[np.clip(np.floor(yin), 0, h - 1).astype(int), np.clip(np.floor(xin), 0, w - 1).astype(int)]
    else:
        u, v = xin - 0.5, yin - 0.5
        x0, y0 = np.floor(u), np.floor(v)
        wx, wy = (u - x0)[..., None], (v - y0)[..., None]
        xs = [np.clip(x0 + k, 0, w - 1).astype(int) for k in (0, 1)]
        ys = [np.clip(y0 + k, 0, h - 1).astype(int) for k in (0, 1)]
        top = src[ys[0], xs[0]] * (1 - wx) + src[ys[0], xs[1]] * wx
        bottom = src[ys[1], xs[0]] * (1 - wx) + src[ys[1], xs[1]] * wx
        out = top * (1 - wy) + bottom * wy
    return np.where(inside, out, fill)


def as_uint8(values: np.ndarray) -> np.ndarray:
    return np.clip(np.floor(values + 0.5), 0, 255).astype(np.uint8)


def assert_within_one_level(got: np.ndarray, expected: np.ndarray):
    assert got.dtype == np.uint8 and got.shape == expected.shape
    assert np.abs(got.astype(int) - expected).max() <= 1


@pytest.mark.parametrize("factor", [0.2, -0.37, 0.5, -0.5, 1 / 3, 0.0])
def test_numpy_hue_matches_the_float64_hsv_round_trip(factor):
    assert_within_one_level(F.adjust_hue(RANDOM, factor), as_uint8(reference_hue(RANDOM, factor)))
    floats = RANDOM.astype(np.float64) / 255
    np.testing.assert_allclose(F.adjust_hue(floats, factor), reference_hue(floats, factor), atol=1e-12)
    gray_pixels = np.repeat(RANDOM[:, :, :1], 3, axis=2)
    np.testing.assert_array_equal(F.adjust_hue(gray_pixels, factor), gray_pixels)  # no hue to turn


def test_numpy_colour_kernels_match_float64_formulas():
    rgb = RANDOM.astype(np.float64)
    luma = rgb @ np.array([0.299, 0.587, 0.114])
    assert_within_one_level(F.to_grayscale(RANDOM)[:, :, 0], as_uint8(luma))
    assert_within_one_level(F.adjust_brightness(RANDOM, 1.3), as_uint8(rgb * 1.3))
    assert_within_one_level(F.adjust_contrast(RANDOM, 0.6), as_uint8(luma.mean() + 0.6 * (rgb - luma.mean())))
    assert_within_one_level(F.adjust_saturation(RANDOM, 1.7),
                            as_uint8(luma[..., None] + 1.7 * (rgb - luma[..., None])))
    rgba = np.concatenate([RANDOM, RANDOM[:, :, :1]], axis=2)
    np.testing.assert_array_equal(F.adjust_saturation(rgba, 1.7)[:, :, 3], RANDOM[:, :, 0])  # alpha untouched


@pytest.mark.parametrize("interpolation", ["nearest", "bilinear"])
def test_numpy_sampling_matches_the_float64_gather(interpolation):
    matrix = [0.93, 0.21, -4.0, -0.17, 1.08, 3.5]
    xs, ys = np.meshgrid(np.arange(41) + 0.5, np.arange(37) + 0.5)
    xin, yin = matrix[0] * xs + matrix[1] * ys + matrix[2], matrix[3] * xs + matrix[4] * ys + matrix[5]
    expected = reference_sample(RANDOM, xin, yin, interpolation, np.array([9.0, 8.0, 7.0]))
    got = K.affine(RANDOM, matrix, 37, 41, interpolation, (9, 8, 7))
    if interpolation == "nearest":
        np.testing.assert_array_equal(got, expected.astype(np.uint8))  # the same pixels, copied
    else:
        assert_within_one_level(got, as_uint8(expected))
    gray = K.affine(np.ascontiguousarray(RANDOM[:, :, 1]), matrix, 37, 41, interpolation, 8)
    np.testing.assert_array_equal(gray, got[:, :, 1])
    floats = K.affine(RANDOM.astype(np.float64), matrix, 37, 41, interpolation, (9, 8, 7))
    np.testing.assert_allclose(floats, expected, atol=1e-9)
