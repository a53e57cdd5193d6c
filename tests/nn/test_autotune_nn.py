"""oar.incubate.autotune with oar-nn: the DataLoader's num_workers is tuned on its first pass,
the choice is logged, and every sample still comes once, in order."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import oar
from oar.incubate import autotune
from oar.io import DataLoader, Dataset


class Numbered(Dataset):
    def __init__(self, count: int):
        self.count = count

    def __getitem__(self, idx):
        return np.full([3], idx, np.float32), idx

    def __len__(self) -> int:
        return self.count


@pytest.fixture
def dataloader_tuning():
    autotune.set_config({"dataloader": {"enable": True, "tuning_steps": 12}})
    yield
    autotune.set_config({"dataloader": {"enable": False, "tuning_steps": 500}})


@pytest.mark.parametrize("shuffle", [False, True])
def test_num_workers_is_chosen_logged_and_the_data_unchanged(dataloader_tuning, caplog, shuffle):
    dataset = Numbered(64)
    oar.seed(7)
    loader = DataLoader(dataset, batch_size=2, shuffle=shuffle)
    with caplog.at_level(logging.INFO, logger="oar.io"):
        first = [(x.numpy(), y.tolist()) for x, y in loader]
    assert [y for _, y in first] != [] and len(first) == len(loader) == 32
    labels = [y for _, y in first]
    assert sorted(i for batch in labels for i in batch) == list(range(64))  # every sample once
    for x, y in first:
        np.testing.assert_array_equal(x[:, 0], y)
    if not shuffle:
        assert labels == [[2 * i, 2 * i + 1] for i in range(32)]  # in order
    (record,) = [r for r in caplog.records if "DataLoader autotune" in r.getMessage()]
    assert f"num_workers={loader.num_workers} chosen" in record.getMessage()
    assert set(loader.autotune_rates) >= {0, 1, 2}  # the values tried
    # the next pass runs on the chosen count, untuned, and still gives every sample once
    second = [i for _, y in loader for i in y.tolist()]
    assert sorted(second) == list(range(64))
    assert len([r for r in caplog.records if "DataLoader autotune" in r.getMessage()]) == 1


def test_same_order_as_without_tuning_when_shuffled():
    oar.seed(11)
    plain = [y.tolist() for _, y in DataLoader(Numbered(40), batch_size=4, shuffle=True)]
    autotune.set_config({"dataloader": {"enable": True, "tuning_steps": 6}})
    try:
        oar.seed(11)
        tuned = [y.tolist() for _, y in DataLoader(Numbered(40), batch_size=4, shuffle=True)]
    finally:
        autotune.set_config({"dataloader": {"enable": False, "tuning_steps": 500}})
    assert tuned == plain


def test_off_means_no_tuning(caplog):
    loader = DataLoader(Numbered(8), batch_size=2)
    with caplog.at_level(logging.INFO, logger="oar.io"):
        assert [y.tolist() for _, y in loader] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert loader.num_workers == 0 and not hasattr(loader, "autotune_rates")
    assert not [r for r in caplog.records if "autotune" in r.getMessage()]


def test_each_batch_is_a_step():
    autotune.set_config({"kernel": {"enable": False}})
    for _ in DataLoader(Numbered(6), batch_size=2):
        pass
    assert autotune.step() == 4  # three batches, then this call
