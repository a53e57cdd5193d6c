"""default_collate_fn / default_convert_fn, and the structure of the batches a DataLoader yields."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.io import DataLoader, Dataset, default_collate_fn, default_convert_fn


def test_collate_stacks_arrays_and_numbers_as_numpy():
    batch = default_collate_fn([(np.zeros([2, 3], np.float32), 1, 0.5), (np.ones([2, 3], np.float32), 2, 1.5)])
    assert isinstance(batch, list) and len(batch) == 3
    assert isinstance(batch[0], np.ndarray) and batch[0].shape == (2, 2, 3) and batch[0].dtype == np.float32
    assert batch[1].tolist() == [1, 2] and batch[1].dtype == np.int64
    assert batch[2].tolist() == [0.5, 1.5] and batch[2].dtype == np.float64


def test_collate_stacks_tensors_into_a_tensor():
    batch = default_collate_fn([oar.to_tensor([1.0, 2.0]), oar.to_tensor([3.0, 4.0])])
    assert isinstance(batch, oar.Tensor) and batch.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_collate_nested_dicts_lists_and_strings():
    samples = [
        {"image": np.full([2], i, np.float32), "meta": {"name": f"s{i}", "boxes": [np.array([i, i]), i * 10]}}
        for i in range(3)
    ]
    batch = default_collate_fn(samples)
    assert set(batch) == {"image", "meta"}
    assert batch["image"].tolist() == [[0, 0], [1, 1], [2, 2]]
    assert batch["meta"]["name"] == ["s0", "s1", "s2"]
    boxes, scores = batch["meta"]["boxes"]
    assert boxes.tolist() == [[0, 0], [1, 1], [2, 2]] and scores.tolist() == [0, 10, 20]


def test_collate_rejects_ragged_samples_and_unknown_types():
    with pytest.raises(RuntimeError, match="same number of fields"):
        default_collate_fn([(1, 2), (1, 2, 3)])
    with pytest.raises(TypeError, match="object"):
        default_collate_fn([object(), object()])


def test_convert_keeps_samples_and_lists_tuples():
    array = np.arange(3)
    out = default_convert_fn((array, {"k": ("a", 2)}))
    assert out[0] is array and out[1] == {"k": ["a", 2]}
    tensor = oar.to_tensor([1])
    assert default_convert_fn(tensor) is tensor


class Samples(Dataset):
    """Sample ``i`` shaped by ``kind``."""

    def __init__(self, kind: str, n: int = 5):
        self.kind, self.n = kind, n

    def __getitem__(self, i):
        image = np.full([2, 2], i, np.float32)
        if self.kind == "array":
            return image
        if self.kind == "pair":
            return image, i
        if self.kind == "dict":
            return {"image": image, "label": i, "name": f"n{i}"}
        if self.kind == "nested":
            return image, (np.array([i, -i]), {"w": float(i)})
        raise AssertionError(self.kind)

    def __len__(self):
        return self.n


def test_loader_yields_a_list_of_tensors_for_tuple_samples():
    images, labels = next(iter(DataLoader(Samples("pair"), batch_size=2)))
    assert isinstance(images, oar.Tensor) and images.shape == [2, 2, 2] and images.dtype == oar.float32
    assert isinstance(labels, oar.Tensor) and labels.dtype == oar.int64 and labels.tolist() == [0, 1]
    assert isinstance(next(iter(DataLoader(Samples("pair"), batch_size=2))), list)


def test_loader_yields_one_tensor_for_single_array_samples():
    batch = next(iter(DataLoader(Samples("array"), batch_size=3)))
    assert isinstance(batch, oar.Tensor) and batch.shape == [3, 2, 2]


def test_loader_keeps_dicts_and_strings():
    batch = next(iter(DataLoader(Samples("dict"), batch_size=2)))
    assert isinstance(batch["image"], oar.Tensor) and batch["label"].tolist() == [0, 1]
    assert batch["name"] == ["n0", "n1"]


def test_loader_nested_structure():
    images, (pairs, extra) = next(iter(DataLoader(Samples("nested"), batch_size=2)))
    assert images.shape == [2, 2, 2] and pairs.tolist() == [[0, 0], [1, -1]]
    assert extra["w"].dtype == oar.float64 and extra["w"].tolist() == [0.0, 1.0]


def test_loader_tensors_do_not_alias_the_dataset():
    data = np.zeros([4, 2], np.float32)

    class Rows(Dataset):
        def __getitem__(self, i):
            return data[i]

        def __len__(self):
            return 4

    batch = next(iter(DataLoader(Rows(), batch_size=None)))
    data[0, 0] = 9.0
    assert batch.tolist() == [0.0, 0.0]


def test_a_shape_mismatch_names_the_field_and_the_shapes():
    samples = [(np.zeros([3, 32, 32], np.float32), i) for i in range(4)] + [(np.zeros([3, 28, 28], np.float32), 4)]
    with pytest.raises(ValueError, match=r"^default_collate_fn: field 0: samples 0\.\.3 have \[3, 32, 32\], sample 4 "
                                         r"has \[3, 28, 28\]"):
        default_collate_fn(samples)


@pytest.mark.parametrize(("samples", "field"), [
    ([{"image": np.zeros([2])}, {"image": np.zeros([3])}], r"field 'image': sample 0 has \[2\], sample 1 has \[3\]"),
    ([(1, {"w": np.zeros([1])}), (2, {"w": np.zeros([1])}), (3, {"w": np.zeros([1, 1])})],
     r"field 1\['w'\]: samples 0\.\.1 have \[1\], sample 2 has \[1, 1\]"),
    ([np.zeros([2]), np.zeros([2, 1])], r"^default_collate_fn: sample 0 has \[2\], sample 1 has \[2, 1\]"),
    ([oar.zeros([2]), oar.zeros([2]), oar.zeros([4])], r"samples 0\.\.1 have \[2\], sample 2 has \[4\]"),
])
def test_shape_mismatches_in_dicts_nested_fields_bare_arrays_and_tensors(samples, field):
    with pytest.raises(ValueError, match=field):
        default_collate_fn(samples)


def test_a_missing_dict_key_names_the_sample():
    with pytest.raises(KeyError, match=r"sample 1 has no key 'label'"):
        default_collate_fn([{"image": 1, "label": 2}, {"image": 3}])
