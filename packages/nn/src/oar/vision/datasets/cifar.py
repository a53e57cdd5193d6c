"""CIFAR-10 and CIFAR-100 from their BINARY distributions.

The binary files are plain records: label byte(s), then 3,072 pixel bytes (1,024 red, 1,024 green,
1,024 blue, each 32x32 row-major). oar never reads the "python version" of CIFAR: it is pickled,
and unpickling a downloaded file can run any code.
"""

from __future__ import annotations

import os
import tarfile

import numpy as np

import oar
from oar.io import Dataset
from oar.vision.datasets._common import finish_sample
from oar.vision.datasets._download import check_exists_and_download, corrupt
from oar.vision.image import check_backend

_PIXELS = 3 * 32 * 32


class Cifar10(Dataset):
    """CIFAR-10 (50,000 train / 10,000 test colour images, 32x32, 10 classes), as
    ``paddle.vision.datasets.Cifar10`` but from ``cifar-10-binary.tar.gz``.

    ``data_file`` is the binary archive (or a folder holding its ``.bin`` files); when None, the
    archive is taken from the cache, downloaded when ``download`` is True (md5-checked).
    ``dataset[i]`` is ``(image, label)``: the image given to ``transform`` is ``32x32x3`` uint8
    RGB (a PIL image with ``backend='pil'``), returned as float32 without a transform; ``label``
    is a 0-d int64 array.

    Example (downloads about 160 MB on first use)::

        import oar.vision.transforms as T
        from oar.vision.datasets import Cifar10

        test = Cifar10(mode="test", transform=T.Compose([T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)]))
        image, label = test[0]           # image: Tensor [3, 32, 32]
    """

    NAME = "cifar"
    URL = "https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"
    MD5 = "c32a1d4ab5d03f1284b67883e8d87530"
    MEMBERS = {"train": [f"data_batch_{i}.bin" for i in range(1, 6)], "test": ["test_batch.bin"]}
    LABEL_BYTES = 1
    NUM_CLASSES = 10

    def __init__(self, data_file=None, mode: str = "train", transform=None, download: bool = True,
                 backend: str | None = None):
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in ("train", "test"):
            raise oar.errors.ArgumentError(f"{type(self).__name__}: mode must be 'train' or 'test', got {mode!r}")
        self.mode = mode
        self.backend = check_backend(backend, type(self).__name__)
        if data_file is not None and os.path.isdir(data_file):
            self.data_file = os.fspath(data_file)
        else:
            self.data_file = check_exists_and_download(data_file, self.URL, self.MD5, self.NAME, download)
        self.transform = transform
        self.dtype = oar.get_default_dtype()
        self.images, label_columns = self._load_data()
        self._keep_labels(label_columns)

    def _read_members(self) -> list[bytes]:
        names = self.MEMBERS[self.mode]
        if os.path.isdir(self.data_file):
            found = {}
            for root, _, files in os.walk(self.data_file):
                for name in files:
                    if name in names:
                        found.setdefault(name, os.path.join(root, name))
            missing = [n for n in names if n not in found]
            if missing:
                raise FileNotFoundError(f"{type(self).__name__}: {missing} not found under {self.data_file!r}")
            blobs = []
            for name in names:
                with open(found[name], "rb") as f:
                    blobs.append(f.read())
            return blobs
        try:
            archive = tarfile.open(self.data_file, mode="r:*")
        except tarfile.TarError as exc:
            raise corrupt(self.data_file, f"not a tar archive ({exc})") from None
        with archive:
            members = {os.path.basename(m.name): m for m in archive.getmembers() if m.isfile()}
            missing = [n for n in names if n not in members]
            if missing:
                pickled = any(n.endswith("data_batch_1") or n.endswith("train") for n in members)
                hint = (" This looks like CIFAR's pickled 'python version', which oar does not read "
                        f"(unpickling can run code); use the binary version from {self.URL}.") if pickled else ""
                raise corrupt(self.data_file, f"it has no {missing}.{hint}")
            return [archive.extractfile(members[name]).read() for name in names]

    def _load_data(self) -> tuple[np.ndarray, np.ndarray]:
        """Images ``[N, 32, 32, 3]`` uint8 and the label bytes ``[N, LABEL_BYTES]``."""
        record = self.LABEL_BYTES + _PIXELS
        images, labels = [], []
        for name, blob in zip(self.MEMBERS[self.mode], self._read_members()):
            if len(blob) % record:
                raise corrupt(self.data_file, f"{name} holds {len(blob)} bytes, not a multiple of {record}-byte records")
            rows = np.frombuffer(blob, np.uint8).reshape(-1, record)
            images.append(rows[:, self.LABEL_BYTES :].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
            labels.append(rows[:, : self.LABEL_BYTES].astype(np.int64))
        return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)

    def _keep_labels(self, columns: np.ndarray) -> None:
        self.labels = columns[:, -1].copy()
        if self.labels.size and self.labels.max() >= self.NUM_CLASSES:
            raise corrupt(self.data_file, f"label {self.labels.max()} found, expected < {self.NUM_CLASSES}")

    def __getitem__(self, idx):
        return finish_sample(self, self.images[idx], np.array(self.labels[idx], dtype=np.int64))

    def __len__(self) -> int:
        return len(self.labels)


class Cifar100(Cifar10):
    """CIFAR-100 (100 fine classes in 20 coarse superclasses), from ``cifar-100-binary.tar.gz``
    (``train.bin``/``test.bin``, records of a coarse and a fine label byte, then the pixels).
    Labels are the fine classes, as Paddle; ``coarse_labels`` holds the superclasses."""

    URL = "https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"
    MD5 = "03b5dce01913d631647c71ecec9e9cb8"
    MEMBERS = {"train": ["train.bin"], "test": ["test.bin"]}
    LABEL_BYTES = 2
    NUM_CLASSES = 100

    def _keep_labels(self, columns: np.ndarray) -> None:
        super()._keep_labels(columns)
        self.coarse_labels = columns[:, 0].copy()
        if self.coarse_labels.size and self.coarse_labels.max() >= 20:
            raise corrupt(self.data_file, f"coarse label {self.coarse_labels.max()} found, expected < 20")
