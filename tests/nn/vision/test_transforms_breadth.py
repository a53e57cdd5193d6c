"""oar.vision.transforms' affine, perspective and erase (functional) and RandomAffine,
RandomPerspective and RandomErasing: outputs equal to Paddle 3.3.1's on a fixed 7x9 image, for
numpy arrays, tensors and PIL images; the random transforms' draws, seeding, masks and errors.

``data/transforms_breadth_paddle.json`` holds Paddle 3.3.1's outputs, recorded by
``data/make_transform_fixtures.py`` through Paddle's ``pil`` backend (OpenCV is not installed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import oar
import oar.vision.transforms as T
import oar.vision.transforms.functional as F
from oar.errors import ArgumentError

with open(Path(__file__).parent / "data" / "transforms_breadth_paddle.json") as f:
    PADDLE = json.load(f)  # Paddle 3.3.1's outputs
IMAGE = ((np.arange(7 * 9 * 3).reshape(7, 9, 3) * 37) % 256).astype(np.uint8)


def fill_of(kwargs):
    return kwargs.get("fill", 0)


def outside(fn, kwargs) -> np.ndarray:
    """Where the output samples outside the image: the zeros of the map applied to an all-ones image."""
    ones = np.ones(IMAGE.shape[:2], np.uint8)
    return fn(ones, **{**kwargs, "fill": 0, "interpolation": "nearest"}) == 0


def expected_with_fill(fn, case) -> np.ndarray:
    """Paddle's pil backend passes ``fill`` to Pillow's unused ``fill`` argument, not ``fillcolor``,
    so its uncovered area is always black; oar fills it. Elsewhere the two agree."""
    expected = np.array(case["out"])
    if "fill" in case["kwargs"]:
        expected = np.where(outside(fn, case["kwargs"])[..., None], np.array(case["kwargs"]["fill"]), expected)
    return expected


@pytest.mark.parametrize(("fn", "case"), [(F.affine, c) for c in PADDLE["affine"]]
                         + [(F.perspective, c) for c in PADDLE["perspective"]],
                         ids=lambda v: getattr(v, "__name__", None) or str(v["kwargs"])[:40])
def test_numpy_and_tensor_outputs_are_paddles(fn, case):
    assert np.array_equal(np.array(PADDLE["image"]), IMAGE)
    expected = expected_with_fill(fn, case)
    got = fn(IMAGE, **case["kwargs"])
    tensor = fn(oar.to_tensor(IMAGE.transpose(2, 0, 1).copy()), **case["kwargs"])
    assert got.dtype == np.uint8 and got.shape == expected.shape
    np.testing.assert_array_equal(tensor.numpy().transpose(1, 2, 0), got)
    if case["kwargs"].get("interpolation", "nearest") == "nearest":
        np.testing.assert_array_equal(got, expected)
    else:
        # the same bilinear samples; Pillow truncates them to uint8 where oar rounds (as its rotate)
        assert np.abs(got.astype(int) - expected).max() <= 1


@pytest.mark.parametrize(("fn", "case"), [(F.affine, c) for c in PADDLE["affine"]]
                         + [(F.perspective, c) for c in PADDLE["perspective"]],
                         ids=lambda v: getattr(v, "__name__", None) or str(v["kwargs"])[:40])
def test_pil_outputs_are_paddles(fn, case):
    Image = pytest.importorskip("PIL.Image")
    kwargs = dict(case["kwargs"])
    if "fill" in kwargs:
        kwargs["fill"] = tuple(kwargs["fill"])
    got = fn(Image.fromarray(IMAGE), **kwargs)
    assert isinstance(got, Image.Image) and got.mode == "RGB"
    np.testing.assert_array_equal(np.asarray(got), expected_with_fill(fn, case))


def test_gray_images_take_the_same_map():
    for fn, kwargs in [(F.affine, PADDLE["affine"][0]["kwargs"]), (F.perspective, PADDLE["perspective"][0]["kwargs"])]:
        color = fn(IMAGE, **kwargs)
        gray = fn(np.ascontiguousarray(IMAGE[:, :, 1]), **kwargs)
        np.testing.assert_array_equal(gray, color[:, :, 1])
        floats = fn(IMAGE.astype(np.float32), **kwargs)
        assert floats.dtype == np.float32
        np.testing.assert_array_equal(floats, color)


def test_affine_identity_translation_and_center():
    assert np.array_equal(F.affine(IMAGE, 0, (0, 0), 1.0, 0), IMAGE)
    shifted = F.affine(IMAGE, 0.0, [2, -1], 1.0, [0.0, 0.0])
    np.testing.assert_array_equal(shifted[:6, 2:], IMAGE[1:, :7])
    assert not shifted[:, :2].any() and not shifted[6].any()
    # 180 degrees about the centre of the image is a flip of both axes
    np.testing.assert_array_equal(F.affine(IMAGE, 180, (0, 0), 1.0, 0), IMAGE[::-1, ::-1])
    square = IMAGE[:, :7]
    # Paddle's affine turns clockwise, its rotate counter-clockwise
    np.testing.assert_array_equal(F.affine(square, 90, (0, 0), 1.0, 0, center=(3.5, 3.5)), F.rotate(square, -90))


def test_perspective_to_a_shifted_box_is_a_translation():
    start = [[0, 0], [8, 0], [8, 6], [0, 6]]
    end = [[x + 1, y + 2] for x, y in start]
    np.testing.assert_array_equal(F.perspective(IMAGE, start, end), F.affine(IMAGE, 0, (1, 2), 1.0, 0))


@pytest.mark.parametrize("case", PADDLE["erase"], ids=lambda c: str(c["kwargs"]))
def test_erase_outputs_are_paddles(case):
    k = case["kwargs"]
    got = F.erase(IMAGE, k["i"], k["j"], k["h"], k["w"], np.array(k["v"]))
    np.testing.assert_array_equal(got, np.array(case["numpy"]))
    assert got is not IMAGE and IMAGE[1, 2, 0] != 7  # the input is untouched
    tensor = oar.to_tensor(IMAGE.transpose(2, 0, 1).astype(np.float32))
    value = oar.to_tensor(np.array(k["v"], np.float32).reshape(-1)[:, None, None])
    np.testing.assert_array_equal(F.erase(tensor, k["i"], k["j"], k["h"], k["w"], value).numpy(),
                                  np.array(case["tensor"]))


def test_erase_inplace_pil_and_gray():
    a = IMAGE.copy()
    assert F.erase(a, 0, 0, 2, 2, 5, inplace=True) is a and (a[:2, :2] == 5).all()
    t = oar.to_tensor(IMAGE.transpose(2, 0, 1).astype(np.float32))
    assert F.erase(t, 0, 0, 2, 2, oar.to_tensor(np.float32(1.0)), inplace=True) is t
    assert (t.numpy()[:, :2, :2] == 1).all()
    gray = F.erase(np.zeros((4, 4), np.uint8), 1, 1, 2, 2, np.array([[[9]]]))
    assert gray.tolist() == [[0, 0, 0, 0], [0, 9, 9, 0], [0, 9, 9, 0], [0, 0, 0, 0]]
    Image = pytest.importorskip("PIL.Image")
    pil = F.erase(Image.fromarray(IMAGE), 1, 2, 3, 4, np.array([[[7, 8, 9]]]))
    assert isinstance(pil, Image.Image)
    np.testing.assert_array_equal(np.asarray(pil), np.array(PADDLE["erase"][0]["numpy"]))


def test_functional_errors():
    with pytest.raises(ArgumentError, match="affine: scale must be a positive number, got 0"):
        F.affine(IMAGE, 0, (0, 0), 0, 0)
    with pytest.raises(ArgumentError, match="affine: translate must be a sequence"):
        F.affine(IMAGE, 0, 1, 1.0, 0)
    with pytest.raises(ArgumentError, match="affine: shear must be"):
        F.affine(IMAGE, 0, (0, 0), 1.0, (1, 2, 3))
    with pytest.raises(ArgumentError, match="affine: interpolation 'bicubic' is not available for numpy images"):
        F.affine(IMAGE, 10, (0, 0), 1.0, 0, interpolation="bicubic")
    with pytest.raises(ArgumentError, match="perspective: endpoints must be four"):
        F.perspective(IMAGE, [[0, 0], [8, 0], [8, 6], [0, 6]], [[0, 0]])
    with pytest.raises(ArgumentError, match="erase: h and w must not be negative"):
        F.erase(IMAGE, 0, 0, -1, 2, 0)
    with pytest.raises(TypeError, match="affine: expected a numpy image"):
        F.affine([[1]], 0, (0, 0), 1.0, 0)


# -- the random transforms -----------------------------------------------------------------------
def test_random_affine_with_fixed_ranges_is_the_functional():
    case = PADDLE["affine"][0]["kwargs"]
    transform = T.RandomAffine(degrees=(case["angle"], case["angle"]), scale=(case["scale"], case["scale"]),
                               shear=[case["shear"][0]] * 2 + [case["shear"][1]] * 2)
    np.testing.assert_array_equal(transform(IMAGE), F.affine(IMAGE, case["angle"], (0, 0), case["scale"],
                                                             case["shear"]))


def test_random_affine_draws_within_ranges_and_reproduces():
    transform = T.RandomAffine(30, translate=(0.2, 0.5), scale=(0.8, 1.2), shear=(-5, 5, -10, 10))
    oar.seed(3)
    first = transform(IMAGE)
    for _ in range(20):
        transform(IMAGE)
        angle, (tx, ty), scale, (sx, sy) = transform.params
        assert -30 <= angle <= 30 and 0.8 <= scale <= 1.2 and -5 <= sx <= 5 and -10 <= sy <= 10
        assert abs(tx) <= 0.2 * 9 and abs(ty) <= 0.5 * 7 and isinstance(tx, int) and isinstance(ty, int)
    oar.seed(3)
    np.testing.assert_array_equal(transform(IMAGE), first)


def test_random_affine_moves_image_and_mask_together():
    mask = (IMAGE[:, :, 0] > 100).astype(np.uint8)
    oar.seed(0)
    image_out, mask_out = T.RandomAffine(45, translate=(0.3, 0.3), keys=("image", "mask"))((IMAGE, mask))
    assert image_out.shape == IMAGE.shape and mask_out.shape == mask.shape
    oar.seed(0)
    again = T.RandomAffine(45, translate=(0.3, 0.3))
    np.testing.assert_array_equal(again(IMAGE), image_out)
    np.testing.assert_array_equal(mask_out, F.affine(mask, *again.params, interpolation="nearest"))


def test_random_affine_errors():
    with pytest.raises(ArgumentError, match="RandomAffine: degrees: a single value must be non-negative"):
        T.RandomAffine(-1)
    with pytest.raises(ArgumentError, match=r"RandomAffine: translate values must be in \[0, 1\]"):
        T.RandomAffine(0, translate=(0.5, 2))
    with pytest.raises(ArgumentError, match="RandomAffine: scale values must be positive"):
        T.RandomAffine(0, scale=(0, 1))
    with pytest.raises(ArgumentError, match="RandomAffine: shear: expected a number or a sequence of 2 or 4"):
        T.RandomAffine(0, shear=(1, 2, 3))
    with pytest.raises(ArgumentError, match="RandomAffine: interpolation must be"):
        T.RandomAffine(0, interpolation="area")


def test_random_perspective():
    assert T.RandomPerspective(prob=0.0)(IMAGE) is IMAGE
    # no distortion: every corner stays, so the warp is the identity
    np.testing.assert_array_equal(T.RandomPerspective(prob=1.0, distortion_scale=0.0)(IMAGE), IMAGE)
    transform = T.RandomPerspective(prob=1.0, distortion_scale=0.6, keys=("image", "mask"))
    oar.seed(5)
    for _ in range(20):
        start, end = transform.get_params(9, 7, 0.6)
        assert start == [[0, 0], [8, 0], [8, 6], [0, 6]]
        (x0, y0), (x1, y1), (x2, y2), (x3, y3) = end
        assert 0 <= x0 <= 2 and 0 <= y0 <= 1 and 6 <= x1 <= 8 and 5 <= y2 <= 6 and 0 <= x3 <= 2 and 5 <= y3 <= 6
        assert 0 <= y1 <= 1 and 6 <= x2 <= 8
    image_out, mask_out = transform((IMAGE, IMAGE[:, :, 0]))
    np.testing.assert_array_equal(image_out, F.perspective(IMAGE, *transform.params))
    np.testing.assert_array_equal(mask_out, image_out[:, :, 0])
    with pytest.raises(ArgumentError, match=r"RandomPerspective: distortion_scale must be in \[0, 1\]"):
        T.RandomPerspective(distortion_scale=1.5)
    with pytest.raises(ArgumentError, match=r"RandomPerspective: prob must be in \[0, 1\]"):
        T.RandomPerspective(prob=2)


def erased_box(before: np.ndarray, after: np.ndarray) -> tuple[int, int, int, int]:
    rows, cols = np.nonzero((before != after).reshape(before.shape[0], before.shape[1], -1).any(-1))
    return rows.min(), cols.min(), rows.max() - rows.min() + 1, cols.max() - cols.min() + 1


def test_random_erasing_numpy():
    image = np.full((20, 30, 3), 200, np.uint8)
    assert T.RandomErasing(prob=0.0)(image) is image
    oar.seed(1)
    transform = T.RandomErasing(prob=1.0, scale=(0.1, 0.2), ratio=(0.5, 2.0), value=(1, 2, 3))
    for _ in range(10):
        out = transform(image)
        top, left, h, w, value = transform.params
        assert erased_box(image, out) == (top, left, h, w)
        assert (out[top : top + h, left : left + w] == [1, 2, 3]).all()
        assert 0.5 * 0.1 * 600 <= h * w <= 1.5 * 0.2 * 600  # the area, within the rounding of h and w
        assert (out != image).any(-1).sum() == h * w
    assert (image == 200).all()
    inplace = image.copy()
    assert T.RandomErasing(prob=1.0, inplace=True)(inplace) is inplace and (inplace == 0).any()
    noisy = T.RandomErasing(prob=1.0, value="random")
    out = noisy(image)
    top, left, h, w, noise = noisy.params
    assert noise.shape == (h, w, 3)
    # noise * 255 is rounded and clipped into uint8, not wrapped around
    np.testing.assert_array_equal(out[top : top + h, left : left + w], np.clip(np.floor(noise + 0.5), 0, 255))


def test_random_erasing_tensor_random_value_and_seed():
    tensor = oar.ones([3, 16, 16])
    oar.seed(2)
    transform = T.RandomErasing(prob=1.0, value="random")
    out = transform(tensor)
    top, left, h, w, noise = transform.params
    assert noise.shape == (3, h, w)
    np.testing.assert_allclose(out.numpy()[:, top : top + h, left : left + w], noise, rtol=1e-6)
    assert (tensor.numpy() == 1).all()
    oar.seed(2)
    np.testing.assert_array_equal(T.RandomErasing(prob=1.0, value="random")(tensor).numpy(), out.numpy())


def test_random_erasing_gives_up_after_ten_draws():
    image = np.full((4, 4, 3), 7, np.uint8)
    # every draw covers the whole image, which Paddle never erases
    assert T.RandomErasing(prob=1.0, scale=(1.0, 1.0), ratio=(1.0, 1.0))(image) is image


def test_random_erasing_errors():
    with pytest.raises(ArgumentError, match=r"RandomErasing: scale must be \(min, max\) within \[0, 1\]"):
        T.RandomErasing(scale=(0.5, 0.2))
    with pytest.raises(ArgumentError, match="RandomErasing: ratio must be"):
        T.RandomErasing(ratio=(-1, 2))
    with pytest.raises(ArgumentError, match="RandomErasing: a string value must be 'random'"):
        T.RandomErasing(value="noise")
    with pytest.raises(ArgumentError, match="RandomErasing: value must have 1 or 3 entries"):
        T.RandomErasing(value=(1, 2))


def test_exports():
    for name in ["RandomAffine", "RandomPerspective", "RandomErasing", "affine", "perspective", "erase"]:
        assert name in T.__all__ and hasattr(T, name)
    for name in ["affine", "perspective", "erase"]:
        assert name in F.__all__
