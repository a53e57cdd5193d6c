"""``oar.io``: datasets, samplers and the DataLoader (oar-nn), with Paddle's names and behaviour.

>>> import numpy as np
>>> import oar
>>> from oar.io import DataLoader, TensorDataset
>>> ds = TensorDataset([oar.to_tensor(np.arange(12, dtype="float32").reshape([6, 2])), oar.arange(6)])
>>> [y.tolist() for x, y in DataLoader(ds, batch_size=4)]
[[0, 1, 2, 3], [4, 5]]
"""

from oar.io._collate import default_collate_fn, default_convert_fn
from oar.io._dataloader import DataLoader
from oar.io._dataset import (
    ChainDataset,
    ComposeDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    TensorDataset,
    random_split,
)
from oar.io._sampler import (
    BatchSampler,
    DistributedBatchSampler,
    RandomSampler,
    Sampler,
    SequenceSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from oar.io._worker import WorkerInfo, get_worker_info

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ComposeDataset", "ChainDataset", "ConcatDataset", "Subset",
    "random_split", "Sampler", "SequenceSampler", "RandomSampler", "WeightedRandomSampler", "SubsetRandomSampler",
    "BatchSampler", "DistributedBatchSampler", "DataLoader", "get_worker_info", "WorkerInfo",
    "default_collate_fn", "default_convert_fn",
]
