"""Datasets read from a folder tree: ``DatasetFolder`` (one subfolder per class) and ``ImageFolder``
(unlabelled images), as Paddle's."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

import numpy as np

from oar.errors import ArgumentError
from oar.io import Dataset
from oar.vision.image import image_load

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
NPY_EXTENSIONS = (".npy",)


def has_valid_extension(filename: str, extensions: Sequence[str]) -> bool:
    return filename.lower().endswith(tuple(e.lower() for e in extensions))


def default_loader(path: str):
    """``.npy`` files through numpy (``allow_pickle=False``); images through Pillow, in RGB, as a
    numpy array or, with the ``'pil'`` backend, a PIL image."""
    sample = image_load(path)
    return sample if isinstance(sample, np.ndarray) else sample.convert("RGB")


def _validity_check(extensions, is_valid_file, what: str) -> Callable[[str], bool]:
    if extensions is not None and is_valid_file is not None:
        raise ArgumentError(f"{what}: pass extensions or is_valid_file, not both")
    if is_valid_file is not None:
        return is_valid_file
    extensions = IMG_EXTENSIONS + NPY_EXTENSIONS if extensions is None else tuple(extensions)
    return lambda path: has_valid_extension(path, extensions)


def _walk_files(folder: str):
    """Every file below ``folder``, in sorted order (following links, as Paddle)."""
    for root, dirs, files in os.walk(folder, followlinks=True):
        dirs.sort()
        for name in sorted(files):
            yield os.path.join(root, name)


class DatasetFolder(Dataset):
    """Samples arranged as ``root/<class>/**/<file>``: classes are the subfolders of ``root``
    in sorted order, ``dataset[i]`` is ``(sample, class_index)``, as
    ``paddle.vision.datasets.DatasetFolder``.

    ``loader`` reads a path (default: ``.npy`` files with numpy, images with Pillow if it is
    installed); files are kept when their name ends with one of ``extensions`` (default: the
    image extensions and ``.npy``) or, instead, when ``is_valid_file(path)`` is true.
    Attributes: ``classes``, ``class_to_idx``, ``samples`` (``(path, class_index)`` pairs) and
    ``targets``.

    >>> import numpy as np, os, tempfile
    >>> from oar.vision.datasets import DatasetFolder
    >>> root = tempfile.mkdtemp()
    >>> for cls in ("cat", "dog"):
    ...     os.makedirs(os.path.join(root, cls))
    ...     np.save(os.path.join(root, cls, "0.npy"), np.zeros((4, 4, 3), np.uint8))
    >>> ds = DatasetFolder(root)
    >>> ds.classes, len(ds), ds[1][0].shape, ds[1][1]
    (['cat', 'dog'], 2, (4, 4, 3), 1)
    """

    def __init__(self, root, loader: Callable | None = None, extensions: Sequence[str] | None = None,
                 transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None):
        self.root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"DatasetFolder: {self.root!r} is not a folder")
        self.transform = transform
        valid = _validity_check(extensions, is_valid_file, "DatasetFolder")
        self.classes = sorted(entry.name for entry in os.scandir(self.root) if entry.is_dir())
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self.samples = [
            (path, self.class_to_idx[name])
            for name in self.classes
            for path in _walk_files(os.path.join(self.root, name))
            if valid(path)
        ]
        if not self.samples:
            wanted = f"extensions {list(extensions or IMG_EXTENSIONS + NPY_EXTENSIONS)}" if is_valid_file is None \
                else "is_valid_file"
            raise FileNotFoundError(f"DatasetFolder: no files matching {wanted} in the class folders of {self.root!r}")
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.targets = [target for _, target in self.samples]

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(Dataset):
    """Every matching file below ``root`` (any depth), unlabelled: ``dataset[i]`` is
    ``[sample]``, a one-element list, as ``paddle.vision.datasets.ImageFolder``; ``samples``
    lists the paths. Arguments as ``DatasetFolder``.

    >>> import numpy as np, os, tempfile
    >>> from oar.vision.datasets import ImageFolder
    >>> root = tempfile.mkdtemp()
    >>> np.save(os.path.join(root, "a.npy"), np.ones((2, 2), np.uint8))
    >>> ds = ImageFolder(root)
    >>> len(ds), ds[0][0].tolist()
    (1, [[1, 1], [1, 1]])
    """

    def __init__(self, root, loader: Callable | None = None, extensions: Sequence[str] | None = None,
                 transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None):
        self.root = os.path.expanduser(os.fspath(root))
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"ImageFolder: {self.root!r} is not a folder")
        valid = _validity_check(extensions, is_valid_file, "ImageFolder")
        self.samples = [path for path in _walk_files(self.root) if valid(path)]
        if not self.samples:
            raise FileNotFoundError(f"ImageFolder: no matching files below {self.root!r}")
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.transform = transform

    def __getitem__(self, index):
        sample = self.loader(self.samples[index])
        if self.transform is not None:
            sample = self.transform(sample)
        return [sample]

    def __len__(self) -> int:
        return len(self.samples)
