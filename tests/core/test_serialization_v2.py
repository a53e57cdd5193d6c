"""oar.save's format version 2: each entry named once in the metadata (a leaf whose entry is its
path's name stores null), the checksums as a list in the order the structure names the entries;
version 1 files (what oar wrote before) still load, and damage still names the tensor."""

from __future__ import annotations

import collections
import json
import zlib

import numpy as np
import pytest
from safetensors.numpy import save_file

import oar
from oar.errors import SerializationError

from .test_serialization import assert_same


def header_of(path) -> tuple[dict, dict]:
    """The safetensors header of ``path`` (without ``__metadata__``) and the metadata."""
    data = open(path, "rb").read()
    header = json.loads(data[8:8 + int.from_bytes(data[:8], "little")])
    return header, header.pop("__metadata__")


def sample() -> dict:
    """One of every leaf kind, a tensor met twice, and two keys ("1" and 1) whose entry names collide."""
    w = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    w.name = "linear_0.w_0"
    return {"model": collections.OrderedDict([("fc.weight", w), ("fc.bias", oar.to_tensor(np.array([0.5, -1], np.float32)))]),
            "tied": [w], "steps": np.array([1, 2, 3], np.int8), "best": np.float64(0.25),
            "1": oar.to_tensor(np.array([7], np.int64)), 1: oar.to_tensor(np.array([True, False])),
            "meta": (None, 3, "x", float("inf"))}


# What oar.save wrote for sample() in format version 1 (oar 0.1.0), kept byte for byte.
V1_STRUCTURE = (
    '{"dict":[["model",{"odict":[["fc.weight",{"tensor":"model/fc.weight","name":"linear_0.w_0"}],["fc.bias",'
    '{"tensor":"model/fc.bias"}]]}],["tied",{"list":[{"tensor":"model/fc.weight","name":"linear_0.w_0"}]}],["steps",'
    '{"ndarray":"steps"}],["best",{"npscalar":"best"}],["1",{"tensor":"1"}],[1,{"tensor":"1#1"}],["meta",{"tuple":'
    '[null,3,"x",{"float":"inf"}]}]]}'
)
V1_CRC32 = ('{"model/fc.weight":2447872023,"model/fc.bias":638502504,"steps":1438416925,"best":1383872331,'
            '"1":1877464688,"1#1":1489118142}')


def v1_arrays() -> dict[str, np.ndarray]:
    s = sample()
    return {"model/fc.weight": s["model"]["fc.weight"].numpy(), "model/fc.bias": s["model"]["fc.bias"].numpy(),
            "steps": s["steps"], "best": np.asarray(s["best"]), "1": s["1"].numpy(), "1#1": s[1].numpy()}


def test_a_version_1_file_still_loads(tmp_path):
    path = tmp_path / "v1.pdparams"
    save_file(v1_arrays(), path, metadata={"format": "oar.save", "version": "1", "writer": "oar 0.1.0",
                                            "structure": V1_STRUCTURE, "crc32": V1_CRC32})
    loaded = oar.load(path)
    assert_same(sample(), loaded)
    assert loaded["tied"][0] is loaded["model"]["fc.weight"] and loaded["tied"][0].name == "linear_0.w_0"


def test_a_version_1_file_with_a_flipped_bit_names_the_tensor(tmp_path):
    arrays = v1_arrays()
    arrays["steps"] = arrays["steps"] ^ np.int8(4)
    path = tmp_path / "v1.pdparams"
    save_file(arrays, path, metadata={"format": "oar.save", "version": "1", "structure": V1_STRUCTURE,
                                      "crc32": V1_CRC32})
    with pytest.raises(SerializationError, match="tensor 'steps' does not match its checksum"):
        oar.load(path)


def test_version_2_names_each_entry_once(tmp_path):
    path = tmp_path / "v2.pdparams"
    oar.save(sample(), path)
    entries, metadata = header_of(path)
    assert metadata["version"] == "2"
    assert sorted(entries) == ["1", "1#1", "best", "model/fc.bias", "model/fc.weight", "steps"]
    structure = json.loads(metadata["structure"])
    model, tied, steps, _, one, one_int, _ = (node for _, node in structure["dict"])
    assert model == {"odict": [["fc.weight", {"tensor": None, "name": "linear_0.w_0"}], ["fc.bias", {"tensor": None}]]}
    assert tied == {"list": [{"tensor": "model/fc.weight", "name": "linear_0.w_0"}]}  # the first place's entry
    assert steps == {"ndarray": None} and one == {"tensor": None}
    assert one_int == {"tensor": "1#1"}  # "1" was taken: the entry is named
    # The checksums in the order the structure first names the entries (depth first).
    order = ["model/fc.weight", "model/fc.bias", "steps", "best", "1", "1#1"]
    assert json.loads(metadata["crc32"]) == [zlib.crc32(v1_arrays()[name]) for name in order]
    assert_same(sample(), oar.load(path))


def test_a_state_dict_names_its_parameters_only_as_dict_keys(tmp_path):
    # a state dict as oar-nn's Sequential of 20 Linears has it (core is tested without oar-nn)
    state = {f"{i}.{kind}": oar.rand([4, 4] if kind == "weight" else [4]) for i in range(20) for kind in ("weight", "bias")}
    path = tmp_path / "model.pdparams"
    oar.save({"model": state, "epoch": 3}, path)
    entries, metadata = header_of(path)
    text = "".join(metadata.values())
    assert len(entries) == 40 and all(text.count(f'"{name.split("/")[1]}"') == 1 for name in entries)
    loaded = oar.load(path)
    for name, value in state.items():
        np.testing.assert_array_equal(loaded["model"][name].numpy(), value.numpy())


@pytest.mark.parametrize("victim", ["a", "b/0", "c"])
def test_a_flipped_bit_names_the_damaged_tensor(tmp_path, victim):
    path = tmp_path / "model.pdparams"
    oar.save({"a": oar.rand([8]), "b": [np.arange(5, dtype=np.int16)], "c": oar.rand([3, 3], dtype="float64")}, path)
    data = bytearray(path.read_bytes())
    entries, _ = header_of(path)
    start = 8 + int.from_bytes(data[:8], "little") + entries[victim]["data_offsets"][0]
    data[start + 1] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(SerializationError, match=f"tensor '{victim}' does not match its checksum"):
        oar.load(path)


def metadata(**changes) -> dict:
    metadata = {"format": "oar.save", "version": "2", "structure": json.dumps({"dict": [["w", {"tensor": None}]]}),
                "crc32": json.dumps([zlib.crc32(np.ones(2, np.float32))])}
    metadata.update(changes)
    return metadata


@pytest.mark.parametrize("changes, arrays, message", [
    ({}, {"w": np.ones(2, np.float32)}, None),  # the hand-written file itself loads
    ({"crc32": json.dumps({"w": zlib.crc32(np.ones(2, np.float32))})}, {"w": np.ones(2, np.float32)},
     "checksum table is damaged"),  # version 1's table in a version 2 file
    ({"crc32": "[]"}, {"w": np.ones(2, np.float32)}, "tensor 'w' does not match its checksum"),
    ({"crc32": json.dumps([zlib.crc32(np.ones(2, np.float32)), 7])}, {"w": np.ones(2, np.float32)},
     "checksum table has 2 entries for 1 tensors"),
    ({}, {"v": np.ones(2, np.float32)}, "structure is damaged.*tensor 'w' the file does not hold"),
    ({}, {"w": np.ones(2, np.float32), "x": np.ones(1, np.float32)}, r"tensors its saved structure does not name \(\['x'\]\)"),
    ({"version": "1", "crc32": json.dumps({"w": zlib.crc32(np.ones(2, np.float32))})}, {"w": np.ones(2, np.float32)},
     "structure is damaged.*tensor None"),  # null means a path's entry in version 2 only
])
def test_a_damaged_version_2_table_or_structure_is_a_clear_error(tmp_path, changes, arrays, message):
    path = tmp_path / "bad.pdparams"
    save_file(arrays, path, metadata=metadata(**changes))
    if message is None:
        np.testing.assert_array_equal(oar.load(path)["w"].numpy(), np.ones(2, np.float32))
        return
    with pytest.raises(SerializationError, match=message):
        oar.load(path)
