"""Regenerate ``flowers_imagelabels.mat`` and ``flowers_setid.mat`` for
tests/nn/vision/test_datasets_breadth.py with scipy (which oar never imports):

    python tests/nn/vision/data/make_flowers_mat_fixtures.py

They have the variables of the real Flowers files (``labels``; ``trnid``, ``valid``, ``tstid``)
for 6 images, as 1xN double matrices like the originals; the labels file is written without
compression and the split file with it, so both element layouts are read.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.io

HERE = os.path.dirname(os.path.abspath(__file__))
LABELS = [3, 1, 102, 7, 7, 50]
SPLITS = {"trnid": [2, 5], "valid": [6], "tstid": [1, 3, 4]}

if __name__ == "__main__":
    scipy.io.savemat(os.path.join(HERE, "flowers_imagelabels.mat"), {"labels": np.array([LABELS], np.float64)},
                     do_compression=False)
    scipy.io.savemat(os.path.join(HERE, "flowers_setid.mat"),
                     {k: np.array([v], np.float64) for k, v in SPLITS.items()}, do_compression=True)
    for name in ("flowers_imagelabels.mat", "flowers_setid.mat"):
        print(name, {k: v.tolist() for k, v in scipy.io.loadmat(os.path.join(HERE, name)).items()
                     if not k.startswith("__")})
