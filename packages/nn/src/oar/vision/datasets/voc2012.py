"""PASCAL VOC 2012 segmentation in Paddle's format: ``VOCtrainval_11-May-2012.tar``, read in
place (an uncompressed tar, so each sample is one seek): the split lists
``VOCdevkit/VOC2012/ImageSets/Segmentation/{trainval,train,val}.txt``, the images
``JPEGImages/<name>.jpg`` and the class masks ``SegmentationClass/<name>.png`` (palette PNGs
whose pixel values are the class indices, 255 on object borders).

As Paddle's, ``mode='train'`` reads ``trainval`` (2,913 images), ``mode='test'`` reads
``train`` (1,464) and ``mode='valid'`` reads ``val`` (1,449).
"""

from __future__ import annotations

import io
import tarfile

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.io import Dataset
from oar.vision.datasets._download import check_exists_and_download, corrupt
from oar.vision.image import check_backend, require_pillow

VOC_URL = "https://dataset.bj.bcebos.com/voc/VOCtrainval_11-May-2012.tar"
VOC_MD5 = "6cd6e144f989b92b3379bac3b3de84fd"
SET_FILE = "VOCdevkit/VOC2012/ImageSets/Segmentation/{}.txt"
DATA_FILE = "VOCdevkit/VOC2012/JPEGImages/{}.jpg"
LABEL_FILE = "VOCdevkit/VOC2012/SegmentationClass/{}.png"
CACHE_DIR = "voc2012"
MODE_FLAG_MAP = {"train": "trainval", "test": "train", "valid": "val"}


class VOC2012(Dataset):
    """PASCAL VOC 2012 semantic segmentation, as ``paddle.vision.datasets.VOC2012``.

    ``data_file`` is the tar archive; when None it is taken from the cache, downloaded there when
    ``download`` is True (md5-checked, about 2 GB). ``dataset[i]`` is ``(image, label)``: with the
    numpy backend an RGB ``HxWx3`` image (through ``transform``) and the ``HxW`` class mask, both
    in the default float dtype, as Paddle's ``cv2`` backend; with ``backend='pil'``, PIL images
    (the mask in palette mode). Only the image goes through ``transform``. Needs Pillow.

    Example (downloads about 2 GB on first use)::

        from oar.vision.datasets import VOC2012

        val = VOC2012(mode="valid")
        image, mask = val[0]             # float32 [H, W, 3] and [H, W]
    """

    def __init__(self, data_file=None, mode: str = "train", transform=None, download: bool = True,
                 backend: str | None = None):
        mode = mode.lower() if isinstance(mode, str) else mode
        if mode not in MODE_FLAG_MAP:
            raise ArgumentError(f"VOC2012: mode must be 'train', 'valid' or 'test', got {mode!r}")
        self.mode = mode
        self.backend = check_backend(backend, "VOC2012")
        self.flag = MODE_FLAG_MAP[mode]
        self.data_file = check_exists_and_download(data_file, VOC_URL, VOC_MD5, CACHE_DIR, download)
        self.transform = transform
        self.dtype = oar.get_default_dtype()
        self.data_tar = None
        self._load_anno()

    def _load_anno(self) -> None:
        try:
            self.data_tar = tarfile.open(self.data_file)
        except tarfile.TarError as exc:
            raise corrupt(self.data_file, f"not a tar archive ({exc})") from None
        self.name2mem = {member.name: member for member in self.data_tar.getmembers()}
        set_file = SET_FILE.format(self.flag)
        if set_file not in self.name2mem:
            raise corrupt(self.data_file, f"it has no {set_file}")
        names = [line.strip().decode("utf-8") for line in self.data_tar.extractfile(self.name2mem[set_file])]
        names = [name for name in names if name]
        self.data = [DATA_FILE.format(name) for name in names]
        self.labels = [LABEL_FILE.format(name) for name in names]
        missing = [path for path in self.data + self.labels if path not in self.name2mem]
        if missing:
            raise corrupt(self.data_file, f"{len(missing)} files of the {self.flag} split are missing, "
                                          f"e.g. {missing[0]}")

    def _read_image(self, name: str):
        image_module = require_pillow("VOC2012")
        image = image_module.open(io.BytesIO(self.data_tar.extractfile(self.name2mem[name]).read()))
        image.load()
        return image

    def __getitem__(self, idx):
        data = self._read_image(self.data[idx])
        label = self._read_image(self.labels[idx])
        if self.backend != "pil":
            data, label = np.asarray(data.convert("RGB")), np.asarray(label)
        if self.transform is not None:
            data = self.transform(data)
        if self.backend != "pil":
            return data.astype(self.dtype), label.astype(self.dtype)
        return data, label

    def __len__(self) -> int:
        return len(self.data)

    def __del__(self) -> None:
        if getattr(self, "data_tar", None) is not None:
            self.data_tar.close()
