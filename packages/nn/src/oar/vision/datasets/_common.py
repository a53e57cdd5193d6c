"""What every vision dataset does with a sample before returning it."""

from __future__ import annotations

import numpy as np

import oar


def finish_sample(dataset, image: np.ndarray, label):
    """Paddle's tail of ``__getitem__``: a PIL image for the ``'pil'`` backend, then the
    transform; with the numpy backend, arrays and tensors come out in the default float dtype."""
    if dataset.backend == "pil":
        from PIL import Image

        image = Image.fromarray(np.ascontiguousarray(image))
    if dataset.transform is not None:
        image = dataset.transform(image)
    if dataset.backend != "pil" and isinstance(image, (np.ndarray, oar.Tensor)):
        image = image.astype(dataset.dtype)
    return image, label
