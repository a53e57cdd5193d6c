"""The UCI optical handwritten digits, bundled with oar so that everything works offline."""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.io import Dataset
from oar.vision.datasets._common import finish_sample
from oar.vision.datasets._download import corrupt, md5file
from oar.vision.image import check_backend
from oar.vision.transforms._kernels import resize_bilinear

DATA_FILE = Path(__file__).parent / "data" / "digits.csv.gz"
DATA_MD5 = "9b335364a7bfd63947c7480a5bd51f2d"
NUM_SAMPLES = 1797
TEST_EVERY = 5  # every fifth sample of each class is a test sample


@functools.lru_cache(maxsize=1)
def load_digits_file(path: str = str(DATA_FILE)) -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 images ``[N, 8, 8]`` (uint8, 0..16) and labels ``[N]`` (int64) of the bundled
    file, whose md5 is checked."""
    if md5file(path) != DATA_MD5:
        raise corrupt(path, f"its md5 is not {DATA_MD5}; reinstall oar-nn")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.shape != (NUM_SAMPLES, 65) or table[:, :64].min() < 0 or table[:, :64].max() > 16:
        raise corrupt(path, f"expected {NUM_SAMPLES} rows of 64 pixels in 0..16 and a label, got {table.shape}")
    images = table[:, :64].reshape(-1, 8, 8).astype(np.uint8)
    images.flags.writeable = False
    labels = table[:, 64].copy()
    labels.flags.writeable = False
    return images, labels


def split_indices(labels: np.ndarray, mode: str) -> np.ndarray:
    """The fixed split: within each class, in file order, samples 0, 5, 10, ... are test samples
    and the rest train samples. No random numbers: the split is the same everywhere, always."""
    test = np.zeros(len(labels), bool)
    for c in np.unique(labels):
        test[np.flatnonzero(labels == c)[::TEST_EVERY]] = True
    return np.flatnonzero(test if mode == "test" else ~test)


class Digits(Dataset):
    """The UCI optical recognition of handwritten digits set (1,797 gray 8x8 images of the digits
    0-9, 16 gray levels), shipped inside oar-nn, with a fixed train/test split of 1,433 / 364
    images (every fifth image of each class, in file order, is a test image).

    Images are upsampled to ``image_size x image_size`` with bilinear interpolation (OpenCV's
    half-pixel convention) and scaled to 0..255, so they look like MNIST's: bright strokes on a
    dark background, 28x28 by default, which fits LeNet. ``dataset[i]`` follows ``MNIST``: the
    image given to ``transform`` is an ``HxW`` uint8 array (a PIL "L" image with
    ``backend='pil'``), without a transform it comes back as float32 (0..255), and the label is
    an int64 array of shape ``[1]``.

    >>> import oar.vision.transforms as T
    >>> from oar.vision.datasets import Digits
    >>> train = Digits(mode="train", transform=T.Normalize(mean=[127.5], std=[127.5]))
    >>> image, label = train[0]
    >>> len(train), image.shape, image.dtype, label
    (1433, (1, 28, 28), dtype('float32'), array([0]))
    """

    def __init__(self, mode: str = "train", image_size: int = 28, transform=None, backend: str | None = None):
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in ("train", "test"):
            raise ArgumentError(f"Digits: mode must be 'train' or 'test', got {mode!r}")
        if isinstance(image_size, bool) or not isinstance(image_size, (int, np.integer)) or image_size < 1:
            raise ArgumentError(f"Digits: image_size must be a positive int, got {image_size!r}")
        self.mode = mode
        self.image_size = int(image_size)
        self.backend = check_backend(backend, "Digits")
        self.transform = transform
        self.dtype = oar.get_default_dtype()
        images, labels = load_digits_file()
        self.indices = split_indices(labels, mode)
        self.labels = labels[self.indices]
        self.images = _upsample(images[self.indices], self.image_size)

    def __getitem__(self, idx):
        return finish_sample(self, self.images[idx], np.array([self.labels[idx]], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.labels)


def _upsample(images: np.ndarray, size: int) -> np.ndarray:
    """``[N, 8, 8]`` levels 0..16 -> ``[N, size, size]`` uint8 0..255."""
    levels = images.transpose(1, 2, 0).astype(np.float32) * np.float32(255.0 / 16.0)  # N images as N channels
    if size != levels.shape[0]:
        levels = resize_bilinear(levels, size, size)
    return np.ascontiguousarray(np.clip(np.floor(levels + 0.5), 0, 255).astype(np.uint8).transpose(2, 0, 1))
