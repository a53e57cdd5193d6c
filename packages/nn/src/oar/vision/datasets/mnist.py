"""MNIST and Fashion-MNIST, read from the IDX files their publishers distribute."""

from __future__ import annotations

import gzip
import os

import numpy as np

import oar
from oar.io import Dataset
from oar.vision.datasets._common import finish_sample
from oar.vision.datasets._download import check_exists_and_download, corrupt
from oar.vision.image import check_backend

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path) -> np.ndarray:
    """An IDX file (gzip-compressed or not) as a numpy array: 4 magic bytes (0, 0, type, ndim),
    ``ndim`` big-endian uint32 dimensions, then the values."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise corrupt(path, f"the gzip data is damaged ({exc})") from None
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] not in _IDX_DTYPES:
        raise corrupt(path, "it does not start with an IDX magic number")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise corrupt(path, "the IDX header is truncated")
    shape = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    expected = int(np.prod(shape)) * dtype.itemsize
    if len(raw) - header != expected:
        raise corrupt(path, f"the header says {shape} values ({expected} bytes) but {len(raw) - header} follow")
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


class MNIST(Dataset):
    """The MNIST handwritten digits (60,000 train / 10,000 test images, 28x28), as
    ``paddle.vision.datasets.MNIST``.

    Reads ``image_path``/``label_path`` (IDX files, gzip or not), or, when they are None, the
    files of ``mode`` from the cache, downloading them when ``download`` is True (md5-checked).
    ``dataset[i]`` is ``(image, label)``: with the default numpy backend the image given to
    ``transform`` is the ``28x28`` uint8 array, and without a transform the result is that array
    as float32 (values 0..255); ``label`` is an int64 array of shape ``[1]``. With
    ``backend='pil'`` the image is a PIL "L" image. Add ``Normalize(mean=[127.5], std=[127.5])``
    for Paddle's ``1x28x28`` float input.

    Example (downloads about 11 MB on first use)::

        import oar.vision.transforms as T
        from oar.vision.datasets import MNIST

        train = MNIST(mode="train", transform=T.Normalize(mean=[127.5], std=[127.5]))
        image, label = train[0]          # image: float32 (1, 28, 28) in [-1, 1]; label: array([5])
    """

    NAME = "mnist"
    URL_PREFIXES = ("https://dataset.bj.bcebos.com/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/")
    FILES = {  # mode -> ((image file, md5), (label file, md5))
        "train": (("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                  ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432")),
        "test": (("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")),
    }

    def __init__(self, image_path=None, label_path=None, mode: str = "train", transform=None,
                 download: bool = True, backend: str | None = None):
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in ("train", "test"):
            raise oar.errors.ArgumentError(f"{type(self).__name__}: mode must be 'train' or 'test', got {mode!r}")
        self.mode = mode
        self.backend = check_backend(backend, type(self).__name__)
        (image_file, image_md5), (label_file, label_md5) = self.FILES[mode]
        self.image_path = check_exists_and_download(
            image_path, [p + image_file for p in self.URL_PREFIXES], image_md5, self.NAME, download)
        self.label_path = check_exists_and_download(
            label_path, [p + label_file for p in self.URL_PREFIXES], label_md5, self.NAME, download)
        self.transform = transform
        self.dtype = oar.get_default_dtype()
        self.images, self.labels = self._parse_dataset()

    def _parse_dataset(self) -> tuple[np.ndarray, np.ndarray]:
        images = read_idx(self.image_path)
        labels = read_idx(self.label_path)
        if images.ndim != 3 or images.dtype != np.uint8:
            raise corrupt(self.image_path, f"expected uint8 images [N, rows, cols], got {images.dtype} {list(images.shape)}")
        if labels.ndim != 1:
            raise corrupt(self.label_path, f"expected labels [N], got shape {list(labels.shape)}")
        if len(images) != len(labels):
            raise corrupt(self.label_path, f"{len(labels)} labels for {len(images)} images in {os.fspath(self.image_path)!r}")
        return images, labels.astype(np.int64)

    def __getitem__(self, idx):
        image, label = self.images[idx], self.labels[idx]
        return finish_sample(self, image, np.array([label], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.labels)


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (10 kinds of clothing, 28x28 gray), in MNIST's format and with
    MNIST's interface, as ``paddle.vision.datasets.FashionMNIST``."""

    NAME = "fashion-mnist"
    URL_PREFIXES = ("https://dataset.bj.bcebos.com/fashion_mnist/",
                    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/")
    FILES = {
        "train": (("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                  ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe")),
        "test": (("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
                 ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310")),
    }
