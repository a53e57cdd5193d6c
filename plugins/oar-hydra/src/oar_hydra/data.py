"""The ``data`` options of ``oar-run``: functions that return the training and evaluation data.

A ``data`` config names one of them (or your own function) with ``_target_``; it must return a
``DataSplits`` (or a pair ``(train, eval)`` of ``oar.io.Dataset``s, whose first sample gives the
input shape).
"""

from __future__ import annotations

from dataclasses import dataclass

import oar.vision.transforms as T
from oar.io import Dataset, Subset


@dataclass
class DataSplits:
    """The data of a run: ``train`` and ``eval`` datasets of ``(image, label)`` samples.

    ``input_shape`` is one sample's shape (without the batch axis): the exported model's input.
    """

    train: Dataset
    eval: Dataset
    input_shape: tuple[int, ...]


def _limited(dataset: Dataset, limit: int | None) -> Dataset:
    return dataset if limit is None or limit >= len(dataset) else Subset(dataset, list(range(limit)))


def _splits(make, augment: bool, limit: int | None, normalize, size: int, padding: int) -> DataSplits:
    # Paddle's quick-start augmentation: small rotations and shifts, drawn from oar.seed's generator.
    train_transform = T.Compose([T.RandomRotation(10), T.Pad(padding), T.RandomCrop(size), normalize]) \
        if augment else normalize
    train = _limited(make("train", train_transform), limit)
    test = _limited(make("test", normalize), limit)
    return DataSplits(train, test, tuple(test[0][0].shape))


def digits(augment: bool = True, limit: int | None = None) -> DataSplits:
    """The 1,797 8x8 UCI digits bundled with oar-nn, upsampled to 28x28 (1,433 train, 364 test).

    >>> from oar_hydra.data import digits
    >>> data = digits(limit=10)
    >>> len(data.train), data.input_shape
    (10, (1, 28, 28))
    """
    from oar.vision.datasets import Digits

    normalize = T.Normalize(mean=[127.5], std=[127.5])
    return _splits(lambda mode, t: Digits(mode=mode, transform=t), augment, limit, normalize, 28, 2)


def mnist(augment: bool = False, limit: int | None = None, download: bool = True) -> DataSplits:
    """MNIST (60,000 + 10,000 28x28 images), from oar's dataset cache, downloaded when absent."""
    from oar.vision.datasets import MNIST

    normalize = T.Normalize(mean=[127.5], std=[127.5])
    return _splits(lambda mode, t: MNIST(mode=mode, transform=t, download=download), augment, limit, normalize, 28, 2)


def fashion_mnist(augment: bool = False, limit: int | None = None, download: bool = True) -> DataSplits:
    """Fashion-MNIST (60,000 + 10,000 28x28 images), from oar's dataset cache, downloaded when absent."""
    from oar.vision.datasets import FashionMNIST

    normalize = T.Normalize(mean=[127.5], std=[127.5])
    return _splits(lambda mode, t: FashionMNIST(mode=mode, transform=t, download=download), augment, limit,
                   normalize, 28, 2)


def cifar10(augment: bool = True, limit: int | None = None, download: bool = True) -> DataSplits:
    """CIFAR-10 (50,000 + 10,000 32x32 colour images, CHW), downloaded when absent."""
    from oar.vision.datasets import Cifar10

    normalize = T.Compose([T.Transpose(), T.Normalize(mean=[127.5] * 3, std=[127.5] * 3)])
    return _splits(lambda mode, t: Cifar10(mode=mode, transform=t, download=download), augment, limit,
                   normalize, 32, 4)
