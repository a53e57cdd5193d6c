"""UCI Housing (Boston house prices), read from ``housing.data`` as ``paddle.text.UCIHousing``."""

from __future__ import annotations

import numpy as np

import oar
from oar.io import Dataset
from oar.text.datasets._files import check_mode, corrupt, locate

FEATURE_NAMES = ["CRIM", "ZN", "INDUS", "CHAS", "NOX", "RM", "AGE", "DIS", "RAD", "TAX", "PTRATIO", "B", "LSTAT"]


class UCIHousing(Dataset):
    """The 506 houses of UCI Housing: ``dataset[i]`` is ``(features, price)``, 13 features and a
    ``[1]`` price in the default dtype (float32 unless ``oar.set_default_dtype`` changed it).

    As Paddle, each feature is centred on its mean over the whole file and divided by its range
    (max - min); the first 80% of the rows are ``'train'``, the rest ``'test'``.

    Example (``housing.data`` from http://paddlemodels.bj.bcebos.com/uci_housing/housing.data)::

        from oar.text import UCIHousing

        train = UCIHousing("housing.data", mode="train")
        features, price = train[0]          # float32 (13,), float32 (1,): array([24.])
    """

    URL = "http://paddlemodels.bj.bcebos.com/uci_housing/housing.data"
    MD5 = "d4accdce7a25600298819f8e28e8d593"

    def __init__(self, data_file=None, mode="train", download=True):
        self.mode = check_mode("UCIHousing", mode, ("train", "test"))
        self.data_file = locate(data_file, dataset="UCIHousing", argument="data_file", url=self.URL, md5=self.MD5,
                                module_name="uci_housing", download=download)
        self._load_data()
        self.dtype = oar.get_default_dtype()

    def _load_data(self, feature_num: int = 14, ratio: float = 0.8) -> None:
        data = np.fromfile(self.data_file, sep=" ")
        if data.size == 0 or data.size % feature_num:
            raise corrupt(self.data_file, f"it holds {data.size} numbers, not rows of {feature_num}")
        data = data.reshape(data.shape[0] // feature_num, feature_num)
        maximums, minimums, averages = data.max(axis=0), data.min(axis=0), data.sum(axis=0) / data.shape[0]
        for i in range(feature_num - 1):
            data[:, i] = (data[:, i] - averages[i]) / (maximums[i] - minimums[i])
        offset = int(data.shape[0] * ratio)
        self.data = data[:offset] if self.mode == "train" else data[offset:]

    def __getitem__(self, idx):
        row = self.data[idx]
        return np.array(row[:-1]).astype(self.dtype), np.array(row[-1:]).astype(self.dtype)

    def __len__(self) -> int:
        return len(self.data)
