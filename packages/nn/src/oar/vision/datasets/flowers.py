"""Oxford 102 Flowers in Paddle's format: ``102flowers.tgz`` (``jpg/image_00001.jpg`` ...),
``imagelabels.mat`` (``labels``: the class, 1 to 102, of each image) and ``setid.mat``
(``trnid``, ``valid``, ``tstid``: 1-based image numbers of each split). The ``.mat`` files are
read by oar's own level-5 reader (no scipy).

As Paddle's, ``mode='train'`` reads the ``tstid`` split (6,149 images) and ``mode='test'`` the
``trnid`` one (1,020): Paddle swaps the two so that training has the larger set; and the
archive is extracted once into a folder next to it (``102flowers/``), since reading JPEGs one at
a time out of a gzipped tar would decompress it from the start each time.
"""

from __future__ import annotations

import os
import tarfile

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.io import Dataset
from oar.vision.datasets._download import check_exists_and_download, corrupt
from oar.vision.datasets._matlab import load_mat
from oar.vision.image import check_backend, image_load

DATA_URL = "http://paddlemodels.bj.bcebos.com/flowers/102flowers.tgz"
LABEL_URL = "http://paddlemodels.bj.bcebos.com/flowers/imagelabels.mat"
SETID_URL = "http://paddlemodels.bj.bcebos.com/flowers/setid.mat"
DATA_MD5 = "52808999861908f626f3c1f4e79d11fa"
LABEL_MD5 = "e0620be6f572b9609742df49c70aed4d"
SETID_MD5 = "a5357ecc9cb78c4bef273ce3793fc85c"
MODE_FLAG_MAP = {"train": "tstid", "test": "trnid", "valid": "valid"}


def _extract_images(data_file: str) -> str:
    """The folder holding ``jpg/``: ``data_file`` itself when it is a folder, else the archive
    extracted (once) into ``data_file`` without ``.tgz``."""
    if os.path.isdir(data_file):
        return data_file
    folder = data_file[: -len(".tgz")] if data_file.endswith(".tgz") else data_file + ".extracted"
    if not os.path.isdir(os.path.join(folder, "jpg")):
        try:
            with tarfile.open(data_file) as archive:
                members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith("jpg/")]
                if not members:
                    raise corrupt(data_file, "it holds no jpg/ folder")
                archive.extractall(folder, members=members, filter="data")  # "data": no links, no paths outside
        except tarfile.TarError as exc:
            raise corrupt(data_file, f"not a tar archive ({exc})") from None
    return folder


class Flowers(Dataset):
    """Oxford 102 Flowers (8,189 images, 102 classes), as ``paddle.vision.datasets.Flowers``.

    ``data_file`` (the ``.tgz``, or a folder holding ``jpg/``), ``label_file`` and ``setid_file``
    are taken from the cache when None, downloaded there when ``download`` is True (md5-checked).
    ``mode`` is ``'train'``, ``'valid'`` or ``'test'`` (see the module docstring for Paddle's
    swap of train and test). ``dataset[i]`` is ``(image, label)``: the image given to
    ``transform`` is an RGB ``HxWx3`` uint8 array (a PIL image with ``backend='pil'``), returned
    in the default float dtype with the numpy backend; ``label`` is an int64 array of shape
    ``[1]`` holding the class, 1 to 102 (Paddle's labels are not shifted to 0). Decoding JPEGs
    needs Pillow.

    Example (downloads about 330 MB on first use)::

        from oar.vision.datasets import Flowers

        train = Flowers(mode="train")
        image, label = train[0]          # image: float32 [H, W, 3]; label: int64 [1]
    """

    def __init__(self, data_file=None, label_file=None, setid_file=None, mode: str = "train", transform=None,
                 download: bool = True, backend: str | None = None):
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in MODE_FLAG_MAP:
            raise ArgumentError(f"Flowers: mode must be 'train', 'valid' or 'test', got {mode!r}")
        self.mode = mode
        self.backend = check_backend(backend, "Flowers")
        if data_file is not None and os.path.isdir(data_file):
            self.data_file = os.fspath(data_file)
        else:
            self.data_file = check_exists_and_download(data_file, DATA_URL, DATA_MD5, "flowers", download)
        self.label_file = check_exists_and_download(label_file, LABEL_URL, LABEL_MD5, "flowers", download)
        self.setid_file = check_exists_and_download(setid_file, SETID_URL, SETID_MD5, "flowers", download)
        self.transform = transform
        self.dtype = oar.get_default_dtype()
        self.labels = self._vector(self.label_file, "labels").astype(np.int64)
        self.indexes = self._vector(self.setid_file, MODE_FLAG_MAP[mode]).astype(np.int64)
        if self.indexes.size and (self.indexes.min() < 1 or self.indexes.max() > self.labels.size):
            raise corrupt(self.setid_file, f"image numbers must be in [1, {self.labels.size}] (one label each), "
                                           f"got {self.indexes.min()}..{self.indexes.max()}")
        self.data_path = _extract_images(self.data_file)

    @staticmethod
    def _vector(path: str, name: str) -> np.ndarray:
        variables = load_mat(path)
        if name not in variables:
            raise corrupt(path, f"no variable {name!r} (found {sorted(variables)})")
        return variables[name].reshape(-1)

    def __getitem__(self, idx):
        index = int(self.indexes[idx])
        label = np.array([self.labels[index - 1]], dtype=np.int64)
        image = image_load(os.path.join(self.data_path, "jpg", f"image_{index:05}.jpg"), self.backend)
        if self.transform is not None:
            image = self.transform(image)
        if self.backend == "pil":
            return image, label
        return image.astype(self.dtype), label

    def __len__(self) -> int:
        return len(self.indexes)
