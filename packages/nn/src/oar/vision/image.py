"""The image backend of ``oar.vision`` and ``image_load``, as ``paddle.vision``.

The backend decides what datasets hand to transforms and what ``image_load`` returns:
``'cv2'`` (the default) means numpy ``HxWxC`` arrays in RGB order (oar needs no OpenCV; Paddle's
OpenCV backend gives BGR), ``'pil'`` means PIL images and needs Pillow. Paddle's default is
``'pil'``; oar's is numpy, so that nothing beyond numpy is required.
"""

from __future__ import annotations

import os

import numpy as np

from oar.errors import ArgumentError

_BACKENDS = ("pil", "cv2")
_image_backend = ["cv2"]


def set_image_backend(backend: str) -> None:
    """Choose what datasets and ``image_load`` return: ``'cv2'`` (numpy arrays) or ``'pil'``."""
    if backend not in _BACKENDS:
        raise ArgumentError(f"set_image_backend: expected one of {list(_BACKENDS)}, got {backend!r}")
    if backend == "pil":
        require_pillow("the 'pil' image backend")
    _image_backend[0] = backend


def get_image_backend() -> str:
    """The current image backend, ``'cv2'`` (numpy arrays) unless ``set_image_backend`` changed it.

    >>> import oar
    >>> oar.vision.get_image_backend()
    'cv2'
    """
    return _image_backend[0]


def check_backend(backend: str | None, what: str) -> str:
    backend = get_image_backend() if backend is None else backend
    if backend not in _BACKENDS:
        raise ArgumentError(f"{what}: backend must be one of {list(_BACKENDS)}, got {backend!r}")
    if backend == "pil":
        require_pillow(f"{what} with backend='pil'")
    return backend


def require_pillow(what: str):
    try:
        from PIL import Image
    except ImportError:
        raise ImportError(f"{what} needs Pillow: pip install pillow") from None
    return Image


def image_load(path, backend: str | None = None):
    """Read an image file: a PIL image in the file's mode (``'pil'``), or an RGB ``HxWx3`` uint8
    array (``'cv2'``, as ``cv2.imread`` reads colour, but in RGB order).
    ``.npy`` files are read with numpy (never pickle) and returned as they are stored.

    >>> import numpy as np, os, tempfile
    >>> import oar
    >>> path = os.path.join(tempfile.mkdtemp(), "x.npy")
    >>> np.save(path, np.zeros((2, 2, 3), np.uint8))
    >>> oar.vision.image_load(path).shape
    (2, 2, 3)
    """
    backend = get_image_backend() if backend is None else backend
    if backend not in _BACKENDS:
        raise ArgumentError(f"image_load: backend must be one of {list(_BACKENDS)}, got {backend!r}")
    if os.fspath(path).lower().endswith(".npy"):
        return np.load(path, allow_pickle=False)
    image_module = require_pillow(f"image_load({os.fspath(path)!r})")
    with open(path, "rb") as f:
        img = image_module.open(f)
        img.load()
    return img if backend == "pil" else np.asarray(img.convert("RGB"))
