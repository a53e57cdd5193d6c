"""oar.save / oar.load: round trips of nested structures and every dtype, files that are not what
oar.save wrote (pickles, truncated, corrupted, foreign or newer files) rejected with a clear error
and never executed, and atomic writes that survive a process killed mid-save."""

from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

import oar
from oar._engine.dtypes import ALL_DTYPES
from oar.errors import ArgumentError, SerializationError


def assert_same(a, b):
    """Equal types, structure and bits (NaN equals NaN), recursively."""
    assert type(a) is type(b), (type(a), type(b))
    if isinstance(a, oar.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.numpy().tobytes() == b.numpy().tobytes()
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    elif isinstance(a, dict):
        assert list(a) == list(b)
        for key in a:
            assert type(key) is type(next(k for k in b if k == key))
            assert_same(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, float):
        assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    else:
        assert a == b


def round_trip(obj, tmp_path, **configs):
    path = tmp_path / "obj.pdparams"
    oar.save(obj, path)
    return oar.load(path, **configs)


# ------------------------------------------------------------------------------------------
# round trips
# ------------------------------------------------------------------------------------------
def test_nested_structure_round_trips(tmp_path):
    obj = {
        "model": collections.OrderedDict([("fc.weight", oar.rand([3, 2])), ("fc.bias", oar.zeros([2]))]),
        "optimizer": {"state": [oar.ones([2]), (oar.arange(4), "x")], "LR_Scheduler": {"last_epoch": 3, "last_lr": 0.1}},
        "plain": [None, True, False, 0, -7, 2**70, 1.5, -0.0, float("nan"), float("inf"), float("-inf"), "", "ünï ☃"],
        "nested": ((), [], {}, [[[]]]),
        3: "int key", 2.5: "float key", None: "None key", True: "bool key",
        "numpy": np.arange(6, dtype=np.int16).reshape(2, 3), "scalar": np.float64(0.25),
    }
    assert_same(obj, round_trip(obj, tmp_path))


# complex tensors are refused by oar.save with a clear error (tests/core/test_complex.py)
@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if not d.is_complex], ids=lambda d: d.name)
@pytest.mark.parametrize("shape", [[], [0, 3], [2, 3, 4]], ids=str)
def test_every_dtype_round_trips_bit_exactly(tmp_path, dtype, shape):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(shape) * 50
    if dtype.is_bool:
        values = values > 0
    elif dtype.is_integer:
        values = np.abs(values) % 100
    tensor = oar.to_tensor(values.astype(dtype.np))
    loaded = round_trip({"t": tensor, "a": values.astype(dtype.np)}, tmp_path)
    assert_same({"t": tensor, "a": values.astype(dtype.np)}, loaded)


def test_special_float_values_and_bfloat16_survive(tmp_path):
    special = np.array([np.nan, np.inf, -np.inf, -0.0, 1e-40, 3.0], np.float32)
    for dtype in ("float16", "bfloat16", "float32", "float64"):
        t = oar.to_tensor(special).astype(dtype)
        assert_same(t, round_trip(t, tmp_path))


def test_strided_arrays_are_saved_by_value(tmp_path):
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    loaded = round_trip({"t": base.T, "s": base[::2, 1::3]}, tmp_path)
    np.testing.assert_array_equal(loaded["t"], base.T)
    np.testing.assert_array_equal(loaded["s"], base[::2, 1::3])


def test_loaded_tensors_are_plain_tensors_with_their_names(tmp_path):
    w = oar.rand([2, 2])
    w.stop_gradient = False
    w.name = "linear_0.w_0"
    unnamed = oar.ones([1])
    loaded = round_trip({"w": w, "u": unnamed}, tmp_path)
    assert type(loaded["w"]) is oar.Tensor
    assert loaded["w"].stop_gradient is True  # as Paddle: only the name and the values are kept
    assert loaded["w"].name == "linear_0.w_0"
    assert loaded["w"].is_leaf and loaded["w"]._data.flags.writeable
    loaded["w"].add_(oar.ones([2, 2]))  # a loaded tensor is an ordinary, writable tensor
    np.testing.assert_allclose(loaded["w"].numpy(), w.numpy() + 1)


def test_a_tensor_saved_twice_loads_as_one_tensor(tmp_path):
    shared = oar.rand([3])
    loaded = round_trip({"a": shared, "b": [shared], "c": oar.rand([3])}, tmp_path)
    assert loaded["a"] is loaded["b"][0]
    assert loaded["a"] is not loaded["c"]
    assert_same(shared, loaded["a"])


def test_return_numpy_gives_arrays(tmp_path):
    loaded = round_trip({"w": oar.ones([2], dtype="bfloat16"), "n": 1}, tmp_path, return_numpy=True)
    assert isinstance(loaded["w"], np.ndarray) and loaded["w"].dtype == oar.bfloat16.np
    assert loaded["n"] == 1


def test_a_bare_tensor_and_plain_values_round_trip(tmp_path):
    assert_same(oar.arange(5), round_trip(oar.arange(5), tmp_path))
    assert_same({"epoch": 7, "best": 0.93}, round_trip({"epoch": 7, "best": 0.93}, tmp_path))
    assert round_trip(None, tmp_path) is None


def test_save_to_and_load_from_a_binary_buffer():
    buffer = io.BytesIO()
    obj = {"w": oar.rand([4, 4]), "step": 10}
    oar.save(obj, buffer)
    buffer.seek(0)
    assert_same(obj, oar.load(buffer))


def test_the_file_is_a_safetensors_file_named_by_state_dict_keys(tmp_path):
    state = {"fc.weight": oar.rand([3, 2]), "fc.bias": oar.zeros([2]), "opt": {"moment1": oar.ones([2])}}
    path = tmp_path / "model.pdparams"
    oar.save(state, path)
    tensors = load_file(path)
    assert sorted(tensors) == ["fc.bias", "fc.weight", "opt/moment1"]
    np.testing.assert_array_equal(tensors["fc.weight"], state["fc.weight"].numpy())


def test_save_creates_missing_directories(tmp_path):
    path = tmp_path / "a" / "b" / "model.pdparams"
    oar.save({"w": oar.ones([1])}, path)
    assert_same({"w": oar.ones([1])}, oar.load(str(path)))


def test_import_oar_does_not_import_safetensors():
    code = "import sys, oar; print('safetensors' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


# ------------------------------------------------------------------------------------------
# what oar.save refuses (before it touches the file)
# ------------------------------------------------------------------------------------------
class NotSavable:
    def state_dict(self):
        return {}


@pytest.mark.parametrize(("obj", "message"), [
    ({"a": [1, object()]}, r"obj\['a'\]\[1\] of type object"),
    ({"layer": NotSavable()}, r"x\.state_dict\(\)"),
    ({(1, 2): 3}, r"key of type tuple"),
    ({"a": {1, 2}}, r"type set"),
    ({"c": np.ones(2, np.complex64)}, r"dtype complex64"),
    ({"o": np.array([object()])}, r"dtype object"),
])
def test_unsupported_values_are_refused_and_the_old_file_is_kept(tmp_path, obj, message):
    path = tmp_path / "ckpt"
    oar.save({"w": oar.ones([2])}, path)
    with pytest.raises(SerializationError, match=message):
        oar.save(obj, path)
    assert_same({"w": oar.ones([2])}, oar.load(path))
    assert os.listdir(tmp_path) == ["ckpt"]


def test_an_object_that_contains_itself_is_refused(tmp_path):
    loop = [1]
    loop.append(loop)
    with pytest.raises(SerializationError, match="contains itself"):
        oar.save(loop, tmp_path / "x")


def test_save_and_load_check_their_arguments(tmp_path):
    with pytest.raises(ArgumentError, match="protocol"):
        oar.save({}, tmp_path / "x", protocol=5)
    with pytest.raises(ArgumentError, match="use_binary_format"):
        oar.save({}, tmp_path / "x", use_binary_format=True)
    with pytest.raises(ArgumentError, match="directory"):
        oar.save({}, tmp_path)
    with pytest.raises(ArgumentError, match="name a file"):
        oar.save({}, str(tmp_path) + os.sep)
    with pytest.raises(ArgumentError, match="path must be"):
        oar.save({}, 3)
    oar.save({}, tmp_path / "x", protocol=2)
    with pytest.raises(ArgumentError, match="keep_name_table"):
        oar.load(tmp_path / "x", keep_name_table=True)
    with pytest.raises(FileNotFoundError, match="no such file"):
        oar.load(tmp_path / "missing")
    with pytest.raises(SerializationError, match="directory"):
        oar.load(tmp_path)


# ------------------------------------------------------------------------------------------
# files oar.load refuses
# ------------------------------------------------------------------------------------------
class CreatesMarker:
    """Unpickling this calls open(marker, 'w'): what a malicious checkpoint could do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.parametrize("protocol", [0, 2, 4, 5])
def test_a_pickle_file_is_rejected_without_being_unpickled(tmp_path, protocol):
    marker = tmp_path / "unpickled"
    path = tmp_path / "evil.pdparams"
    path.write_bytes(pickle.dumps({"w": np.ones(2), "x": CreatesMarker(str(marker))}, protocol=protocol))
    with pytest.raises(SerializationError, match="evil.pdparams") as info:
        oar.load(path)
    if protocol >= 2:
        assert "pickle" in str(info.value)
    assert not marker.exists()


def test_a_zip_archive_is_named(tmp_path):
    path = tmp_path / "arrays.npz"
    np.savez(path, a=np.ones(3))
    with pytest.raises(SerializationError, match="zip archive"):
        oar.load(path)


def saved_bytes(tmp_path) -> bytes:
    path = tmp_path / "good"
    oar.save({"w": oar.rand([16, 16]), "b": oar.zeros([16]), "epoch": 3}, path)
    return path.read_bytes()


@pytest.mark.parametrize("keep", [0, 4, 8, 9, 40, -100, -1])
def test_a_truncated_file_is_a_clear_error(tmp_path, keep):
    data = saved_bytes(tmp_path)
    path = tmp_path / "truncated.pdparams"
    path.write_bytes(data[:keep])
    with pytest.raises(SerializationError, match=r"truncated.pdparams.*(truncated|too short|corrupted)"):
        oar.load(path)


def test_a_flipped_bit_in_tensor_data_is_caught_by_the_checksum(tmp_path):
    data = bytearray(saved_bytes(tmp_path))
    data[-5] ^= 0x10
    path = tmp_path / "flipped"
    path.write_bytes(bytes(data))
    with pytest.raises(SerializationError, match="checksum"):
        oar.load(path)


def test_a_damaged_header_is_a_clear_error(tmp_path):
    data = bytearray(saved_bytes(tmp_path))
    data[data.index(b'"format"') - 1] = ord("]")  # the header is no longer JSON
    path = tmp_path / "damaged"
    path.write_bytes(bytes(data))
    with pytest.raises(SerializationError, match="damaged.*(corrupted|invalid)"):
        oar.load(path)


def test_random_bytes_are_not_an_oar_file(tmp_path):
    path = tmp_path / "noise.bin"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(SerializationError, match="noise.bin"):
        oar.load(path)


def test_a_safetensors_file_from_another_tool_is_foreign(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file({"weight": np.ones((2, 2), np.float32)}, path, metadata={"format": "pt"})
    with pytest.raises(SerializationError, match="not written by oar.save"):
        oar.load(path)
    save_file({"weight": np.ones((2, 2), np.float32)}, path)  # no metadata at all
    with pytest.raises(SerializationError, match="not written by oar.save"):
        oar.load(path)


def oar_metadata(**changes) -> dict:
    metadata = {"format": "oar.save", "version": "1", "structure": json.dumps({"dict": [["w", {"tensor": "w"}]]}),
                "crc32": json.dumps({"w": __import__("zlib").crc32(np.ones(2, np.float32))})}
    metadata.update(changes)
    return metadata


def test_a_file_from_a_newer_format_version_says_to_upgrade(tmp_path):
    path = tmp_path / "future.pdparams"
    save_file({"w": np.ones(2, np.float32)}, path, metadata=oar_metadata(version="3", writer="oar 9.0"))
    with pytest.raises(SerializationError, match=r"newer oar \(oar 9.0\).*version 3.*upgrade oar"):
        oar.load(path)
    save_file({"w": np.ones(2, np.float32)}, path, metadata=oar_metadata())  # the same file at version 1 loads
    np.testing.assert_array_equal(oar.load(path)["w"].numpy(), np.ones(2, np.float32))


@pytest.mark.parametrize("structure", [
    {"dict": [["w", {"tensor": "missing"}]]},
    {"set": [1, 2]},
    [1, 2],
    {"dict": [["w"]]},
    {"float": "tiny"},
])
def test_a_damaged_structure_is_a_clear_error(tmp_path, structure):
    path = tmp_path / "bad.pdparams"
    save_file({"w": np.ones(2, np.float32)}, path, metadata=oar_metadata(structure=json.dumps(structure)))
    with pytest.raises(SerializationError, match="structure is damaged"):
        oar.load(path)


# ------------------------------------------------------------------------------------------
# atomic writes
# ------------------------------------------------------------------------------------------
def test_a_successful_save_replaces_the_file_and_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "ckpt.pdparams"
    oar.save({"v": 1}, path)
    oar.save({"v": 2}, path)
    assert oar.load(path) == {"v": 2}
    assert os.listdir(tmp_path) == ["ckpt.pdparams"]
    assert oct(path.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # an ordinary file, not a 0600 temp file


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


CHILD_SAVES_200MB = """
import sys
import numpy as np
import oar
state = {f"layer{i}.weight": oar.to_tensor(np.full((1024, 1024), i, np.float32)) for i in range(50)}
oar.save(state, sys.argv[1])
"""


def test_a_process_killed_mid_save_leaves_the_previous_file_intact(tmp_path):
    path = tmp_path / "ckpt.pdparams"
    previous = {"w": oar.rand([8, 8]), "epoch": 4}
    oar.save(previous, path)
    child = subprocess.Popen([sys.executable, "-c", CHILD_SAVES_200MB, str(path)])
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(".ckpt.pdparams.*.tmp")):
            assert child.poll() is None, "the child finished or failed before it began writing"
            assert time.monotonic() < deadline, "the child never began writing"
            time.sleep(0.0005)
        child.send_signal(signal.SIGKILL)  # mid-write: the temporary file exists, the rename has not happened
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == -signal.SIGKILL
    leftovers = list(tmp_path.glob(".ckpt.pdparams.*.tmp"))
    assert leftovers, "the kill came after the rename: the test did not interrupt a write"
    assert_same(previous, oar.load(path))


def test_docstring_examples_run():
    import doctest

    from oar._engine import serialization

    result = doctest.testmod(serialization, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
