"""``oar.utils.convert_paddle``: checkpoints written by real Paddle (``tests/core/data``, see its README)
convert to oar.save files that load into oar layers with the same values and names; hostile pickles
(code through ``__reduce__`` or ``builtins.eval``, a huge allocation, an exponential or cyclic
structure, a truncated file) run nothing and raise ``SerializationError`` naming the problem."""

from __future__ import annotations

import collections
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import oar
from oar.errors import SerializationError
from oar.utils import convert_paddle

DATA = Path(__file__).parent / "data"
RECONSTRUCT = np.ndarray((0,)).__reduce__()[0]


def paddle_fill_values(state_dict) -> dict[str, np.ndarray]:
    """The values ``data/make_paddle_fixtures.py`` gave: parameter i is linspace(-1, 1) + i."""
    return {key: np.linspace(-1, 1, int(np.prod(value.shape))).reshape(value.shape).astype("float32") + i
            for i, (key, value) in enumerate(state_dict.items())}


def converted(tmp_path, name: str, **limits):
    dst = tmp_path / (name + ".oar")
    count = convert_paddle(DATA / name, dst, **limits)
    return count, oar.load(dst)


# ------------------------------------------------------------------------------------------
# files written by real Paddle
# ------------------------------------------------------------------------------------------
def test_a_linear_state_dict_loads_into_an_oar_linear(tmp_path):
    nn = pytest.importorskip("oar.nn", reason="oar-nn is not installed in this session")
    count, state = converted(tmp_path, "paddle_linear.pdparams")
    assert count == 2
    assert list(state) == ["weight", "bias"]
    assert (state["weight"].name, state["bias"].name) == ("linear_0.w_0", "linear_0.b_0")  # paddle.load's names
    linear = nn.Linear(3, 2)
    expected = paddle_fill_values(linear.state_dict())
    missing, unexpected = linear.set_state_dict(state)
    assert not missing and not unexpected
    for key, value in linear.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), expected[key])
    x = np.arange(3, dtype=np.float32).reshape(1, 3)
    np.testing.assert_allclose(linear(oar.to_tensor(x)).numpy(), x @ expected["weight"] + expected["bias"], rtol=1e-6)


def test_a_protocol_2_cnn_state_dict_loads_into_an_oar_cnn(tmp_path):
    nn = pytest.importorskip("oar.nn", reason="oar-nn is not installed in this session")
    count, state = converted(tmp_path, "paddle_cnn_protocol2.pdparams")  # arrays' bytes via _codecs.encode
    cnn = nn.Sequential(nn.Conv2D(1, 2, 3), nn.BatchNorm2D(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 3))
    assert count == 8 and list(state) == list(cnn.state_dict())
    assert state["1._mean"].name == "batch_norm2d_0.w_1"
    expected = paddle_fill_values(cnn.state_dict())
    cnn.set_state_dict(state)
    for key, value in cnn.state_dict().items():
        assert value.dtype == oar.float32
        np.testing.assert_array_equal(value.numpy(), expected[key])


def test_tensors_saved_outside_a_state_dict_come_back_as_named_tensors(tmp_path):
    # paddle.save of a non-state-dict reduces each tensor to builtins.tuple((name, ndarray))
    count, obj = converted(tmp_path, "paddle_tensors.pdparams")
    assert count == 2 and obj["epoch"] == 3
    weight, bias = obj["params"]
    assert isinstance(weight, oar.Tensor) and (weight.name, bias.name) == ("linear_2.w_0", "linear_2.b_0")  # the third Linear made
    np.testing.assert_array_equal(weight.numpy(), np.linspace(-1, 1, 6).reshape(3, 2).astype("float32"))
    np.testing.assert_array_equal(bias.numpy(), np.linspace(-1, 1, 2).astype("float32") + 1)


def test_parameters_split_by_paddle_are_joined(tmp_path):
    # what _unpack_saved_dict writes (protocol 2 and 3) for a parameter over 1 GiB, on a small array
    flat = np.arange(6, dtype=np.float32)
    state = {"w@@.0": flat[:4], "w@@.1": flat[4:], "b": np.ones(2, np.float32),
             "StructuredToParameterName@@": {"w": "linear_0.w_0", "b": "linear_0.b_0"},
             "UnpackBigParamInfor@@": {"w": {"OriginShape": (2, 3), "slices": ["w@@.0", "w@@.1"]}}}  # typos: disable-line
    src, dst = tmp_path / "split.pdparams", tmp_path / "split.oar"
    src.write_bytes(pickle.dumps(state, protocol=2))
    assert convert_paddle(src, dst) == 2
    loaded = oar.load(dst)
    assert sorted(loaded) == ["b", "w"] and loaded["w"].name == "linear_0.w_0"
    np.testing.assert_array_equal(loaded["w"].numpy(), flat.reshape(2, 3))


def test_a_split_table_that_does_not_add_up_is_refused(tmp_path):
    state = {"w@@.0": np.arange(4, dtype=np.float32),
             "UnpackBigParamInfor@@": {"w": {"OriginShape": (2, 3), "slices": ["w@@.0"]}}}  # typos: disable-line
    src = tmp_path / "split.pdparams"
    src.write_bytes(pickle.dumps(state, protocol=2))
    with pytest.raises(SerializationError, match=r"slices of the split parameter 'w' do not make one array of shape \(2, 3\)"):
        convert_paddle(src, tmp_path / "out")


def test_an_ordered_dict_stays_ordered(tmp_path):
    src, dst = tmp_path / "o.pdparams", tmp_path / "o.oar"
    src.write_bytes(pickle.dumps(collections.OrderedDict(b=np.zeros(1, np.int64), a=np.ones(1, np.float64)), protocol=4))
    convert_paddle(src, dst)
    loaded = oar.load(dst)
    assert isinstance(loaded, collections.OrderedDict) and list(loaded) == ["b", "a"]
    assert loaded["a"].dtype == oar.float64


def test_oar_load_of_a_paddle_file_names_the_converter():
    with pytest.raises(SerializationError, match=r"it is a pickle file.*python -m oar.utils.convert_paddle SRC DST"):
        oar.load(DATA / "paddle_linear.pdparams")


def test_the_command_line_converts_and_reports_refusals(tmp_path):
    dst = tmp_path / "linear.oar"
    done = subprocess.run([sys.executable, "-m", "oar.utils.convert_paddle", str(DATA / "paddle_linear.pdparams"),
                           str(dst)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "2 tensors" in done.stdout and done.stderr == ""
    assert sorted(oar.load(dst)) == ["bias", "weight"]
    evil = tmp_path / "evil.pdparams"
    evil.write_bytes(pickle.dumps({"w": Reduce(os.system, ("true",))}, protocol=2))
    refused = subprocess.run([sys.executable, "-m", "oar.utils.convert_paddle", str(evil), str(tmp_path / "x")],
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "posix.system" in refused.stderr
    assert not (tmp_path / "x").exists()


# ------------------------------------------------------------------------------------------
# hostile files
# ------------------------------------------------------------------------------------------
class Reduce:
    """Pickles as ``function(*args)``: what a hostile file's ``__reduce__`` makes the unpickler call."""

    def __init__(self, function, args):
        self.function, self.args = function, args

    def __reduce__(self):
        return self.function, self.args


def convert_bytes(tmp_path, data: bytes, **limits):
    src, dst = tmp_path / "hostile.pdparams", tmp_path / "converted.pdparams"
    src.write_bytes(data)
    dst.write_bytes(b"the previous file")
    try:
        return convert_paddle(src, dst, **limits)
    finally:
        assert dst.read_bytes() == b"the previous file"  # a refused file leaves dst as it was


@pytest.mark.parametrize("protocol", [2, 4])
def test_os_system_through_reduce_does_not_run(tmp_path, protocol):
    marker = tmp_path / "marker"
    data = pickle.dumps({"weight": np.ones(2), "b": Reduce(os.system, (f"touch {marker}",))}, protocol=protocol)
    with pytest.raises(SerializationError, match=r"hostile\.pdparams'.*references posix\.system, which the converter refuses"):
        convert_bytes(tmp_path, data)
    assert not marker.exists()


def test_a_builtins_eval_global_does_not_run(tmp_path):
    # also how Paddle's _pickle_save stores a DenseTensor (eval('data', {'data': array})): refused too
    marker = tmp_path / "marker"
    data = pickle.dumps([Reduce(eval, (f"open({str(marker)!r}, 'w')",))], protocol=4)
    with pytest.raises(SerializationError, match=r"references builtins\.eval, which the converter refuses"):
        convert_bytes(tmp_path, data)
    assert not marker.exists()


@pytest.mark.parametrize("global_", [(getattr, "builtins.getattr"), (__import__, "builtins.__import__"),
                                     (subprocess.Popen, "subprocess.Popen"), (np.load, "numpy.load")])
def test_other_globals_are_refused_by_name(tmp_path, global_):
    function, name = global_
    with pytest.raises(SerializationError, match=rf"references {name}, which the converter refuses"):
        convert_bytes(tmp_path, pickle.dumps({"w": Reduce(function, ("x",))}, protocol=3))


def test_a_codec_other_than_latin1_is_refused(tmp_path):
    import _codecs

    data = pickle.dumps({"w": Reduce(_codecs.encode, (b"x" * 100, "zlib_codec"))}, protocol=2)
    with pytest.raises(SerializationError, match=r"only _codecs.encode\(str, 'latin1'\) is admitted"):
        convert_bytes(tmp_path, data)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS is enforced on Linux only")
def test_a_nested_huge_allocation_stops_at_the_memory_limit(tmp_path):
    # numpy's own _reconstruct, admitted, asked for a 64 GiB array deep inside the state dict
    huge = Reduce(RECONSTRUCT, (np.ndarray, (1 << 36,), b"b"))
    data = pickle.dumps({"layers": [{"fc": {"weight": huge}}]}, protocol=4)
    with pytest.raises(SerializationError, match=r"converting it needed more than the memory limit of 512 MiB"):
        convert_bytes(tmp_path, data, memory_limit=512 << 20)


def exponential_lists(depth: int) -> bytes:
    """A protocol 2 pickle of ``depth`` lists, each holding the previous one twice: a few bytes per
    level, 2**depth leaves to walk."""
    out = bytearray(b"\x80\x02]q\x00")  # PROTO 2, EMPTY_LIST, BINPUT 0
    for level in range(1, depth + 1):
        out += b"(h" + bytes([level - 1]) + b"h" + bytes([level - 1]) + b"lq" + bytes([level])  # MARK GET GET LIST PUT
    return bytes(out + b".")


def test_an_exponential_structure_is_refused_at_once(tmp_path):
    data = exponential_lists(100)
    assert len(data) < 1000
    with pytest.raises(SerializationError, match=r"obj\[0\]\[0\].*more.*\[0\]\[1\] is a container that appears twice"):
        convert_bytes(tmp_path, data, timeout=60)


def test_a_cycle_is_refused(tmp_path):
    data = b"\x80\x02]q\x00h\x00a."  # EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: a list that holds itself
    with pytest.raises(SerializationError, match=r"obj\[0\] is a container that appears twice"):
        convert_bytes(tmp_path, data)


def test_a_conversion_past_the_time_limit_is_killed(tmp_path):
    with pytest.raises(SerializationError, match=r"took longer than the time limit of 0.001 s"):
        convert_bytes(tmp_path, (DATA / "paddle_linear.pdparams").read_bytes(), timeout=0.001)


@pytest.mark.parametrize("cut", [1, 20, 100])
def test_a_truncated_file_is_refused(tmp_path, cut):
    data = (DATA / "paddle_cnn_protocol2.pdparams").read_bytes()
    with pytest.raises(SerializationError, match=r"truncated or corrupted|pickle is invalid"):
        convert_bytes(tmp_path, data[:-cut])


def test_files_that_are_not_pickles_are_refused(tmp_path):
    oar.save({"w": oar.ones([2])}, tmp_path / "oar.pdparams")
    with pytest.raises(SerializationError, match=r"not a pickle file written by paddle.save"):
        convert_bytes(tmp_path, (tmp_path / "oar.pdparams").read_bytes())
    with pytest.raises(SerializationError, match=r"bytes after the end of its pickle"):
        convert_bytes(tmp_path, pickle.dumps({"w": np.ones(1)}) + b"junk")
    with pytest.raises(SerializationError, match=r"numpy array of dtype object"):
        convert_bytes(tmp_path, pickle.dumps({"w": np.array([1, "a"], dtype=object)}, protocol=4))


def test_arguments_are_checked(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        convert_paddle(tmp_path / "missing.pdparams", tmp_path / "out")
    with pytest.raises(oar.errors.ArgumentError, match="memory_limit must be a positive int"):
        convert_paddle(DATA / "paddle_linear.pdparams", tmp_path / "out", memory_limit=-1)
    with pytest.raises(oar.errors.ArgumentError, match="is a directory"):
        convert_paddle(DATA / "paddle_linear.pdparams", tmp_path)
