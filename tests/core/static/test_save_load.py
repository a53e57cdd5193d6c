"""jit.save / jit.load with oar-core: files, a fresh process, and every way loading can fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, RegistryError, SerializationError
from oar.jit import to_static
from oar.static import InputSpec


def make_function():
    w = oar.to_tensor(np.arange(6, dtype=np.float32).reshape(3, 2) / 10, stop_gradient=False)
    w.name = "w"

    @to_static(input_spec=[InputSpec([None, 3], name="x")])
    def f(x):
        return oar.tanh(oar.matmul(x, w)) + oar.to_tensor([1.0, -1.0])

    return f


@pytest.fixture
def saved(tmp_path):
    f = make_function()
    prefix = str(tmp_path / "model")
    oar.jit.save(f, prefix)
    return f, prefix


def test_files_and_document(saved):
    f, prefix = saved
    assert sorted(os.listdir(os.path.dirname(prefix))) == ["model.json", "model.pdiparams"]
    with open(prefix + ".json") as fh:
        doc = json.load(fh)
    assert doc["format"] == "oar.jit" and doc["version"] == 1 and doc["oar_version"] == oar.__version__
    assert doc["program"]["schema"] == "oar.program"
    assert doc["input_spec"] == [{"name": "x", "shape": [-1, 3], "dtype": "float32", "stop_gradient": False}]
    assert doc["output_spec"] == [{"name": "output_0", "shape": [-1, 2], "dtype": "float32"}]
    assert doc["requires"]["ops"] == {"add": "oar.core", "matmul": "oar.core", "tanh": "oar.core"}
    assert doc["requires"]["plugins"]["oar.core"] == {"package": "oar-core", "version": oar.__version__}
    state = oar.load(prefix + ".pdiparams", return_numpy=True)
    assert list(state["params"]) == ["w"] and list(state["constants"]) == ["const_0"]


def test_load_runs_and_fine_tunes(saved):
    f, prefix = saved
    loaded = oar.jit.load(prefix)
    x = oar.rand([4, 3])
    with oar.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), f(x).numpy())
    [w] = loaded.parameters()
    assert not w.stop_gradient and [n for n, _ in loaded.named_parameters()] == ["w"]
    loss = loaded(x).sum()
    loss.backward()
    assert w.grad is not None and w.grad.shape == [3, 2]
    assert loaded.input_spec == [InputSpec([None, 3], "float32", "x")]
    assert "tanh" in str(loaded.program())


def test_load_in_a_fresh_process(saved):
    f, prefix = saved
    x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    with oar.no_grad():
        expected = f(oar.to_tensor(x)).numpy()
    script = textwrap.dedent(f"""
        import numpy as np, oar
        loaded = oar.jit.load({prefix!r})
        x = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
        with oar.no_grad():
            np.save({prefix + ".out.npy"!r}, loaded(oar.to_tensor(x)).numpy())
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    np.testing.assert_array_equal(np.load(prefix + ".out.npy"), expected)


def test_save_needs_inputs(tmp_path):
    with pytest.raises(ArgumentError, match="input_spec"):
        oar.jit.save(to_static(lambda x: x + 1.0), str(tmp_path / "m"))
    f = to_static(lambda x: x + 1.0)
    f(oar.ones([2]))  # called once: its inputs are known
    oar.jit.save(f, str(tmp_path / "m"))
    assert oar.jit.load(str(tmp_path / "m"))(oar.ones([2])).tolist() == [2.0, 2.0]
    oar.jit.save(lambda x: x * 3.0, str(tmp_path / "n"), input_spec=[InputSpec([2])])
    assert oar.jit.load(str(tmp_path / "n"))(oar.ones([2])).tolist() == [3.0, 3.0]


def test_wrong_inputs_are_named(saved):
    _, prefix = saved
    loaded = oar.jit.load(prefix)
    with pytest.raises(ArgumentError, match=r"input 'x' must be float32\[None, 3\]"):
        loaded(oar.ones([2, 4]))
    with pytest.raises(ArgumentError, match="takes 1 input"):
        loaded(oar.ones([2, 3]), oar.ones([2, 3]))


def _edit(prefix, change):
    with open(prefix + ".json") as fh:
        doc = json.load(fh)
    change(doc)
    with open(prefix + ".json", "w") as fh:
        json.dump(doc, fh)


def test_a_missing_plugin_op_names_the_plugin(saved):
    _, prefix = saved

    def rename(doc):
        for node in doc["program"]["nodes"]:
            if node["op"] == "tanh":
                node["op"] = "fancy_tanh"
        doc["requires"]["ops"]["fancy_tanh"] = "fancy"
        doc["requires"]["plugins"]["fancy"] = {"package": "oar-fancy", "version": "2.0"}

    _edit(prefix, rename)
    with pytest.raises(RegistryError, match=r"needs op 'fancy_tanh' \(from oar-fancy: pip install oar-fancy\)"):
        oar.jit.load(prefix)


def test_a_newer_file_says_so(saved):
    _, prefix = saved
    _edit(prefix, lambda doc: doc.update(version=2, oar_version="9.0"))
    with pytest.raises(SerializationError, match=r"newer oar \(9.0\).*upgrade oar"):
        oar.jit.load(prefix)


def test_a_newer_program_schema_says_so(saved):
    _, prefix = saved
    _edit(prefix, lambda doc: doc["program"].update(version=7))
    with pytest.raises(SerializationError, match="schema version 7, newer"):
        oar.jit.load(prefix)


@pytest.mark.parametrize("damage", ["truncate_json", "garbage_json", "not_oar", "truncate_params", "flip_params",
                                    "swap_params"])
def test_corrupted_files_are_serialization_errors(saved, tmp_path, damage):
    _, prefix = saved
    if damage == "truncate_json":
        data = open(prefix + ".json", "rb").read()
        open(prefix + ".json", "wb").write(data[: len(data) // 2])
    elif damage == "garbage_json":
        open(prefix + ".json", "wb").write(b"\x80\x04garbage")
    elif damage == "not_oar":
        open(prefix + ".json", "w").write('{"hello": 1}')
    elif damage == "truncate_params":
        data = open(prefix + ".pdiparams", "rb").read()
        open(prefix + ".pdiparams", "wb").write(data[:-7])
    elif damage == "flip_params":
        data = bytearray(open(prefix + ".pdiparams", "rb").read())
        data[-3] ^= 0xFF
        open(prefix + ".pdiparams", "wb").write(bytes(data))
    else:  # the parameters of another model
        other = str(tmp_path / "other")
        oar.jit.save(lambda x: x * oar.to_tensor([1.0, 2.0]), other, input_spec=[InputSpec([2])])
        os.replace(other + ".pdiparams", prefix + ".pdiparams")
    with pytest.raises(SerializationError):
        oar.jit.load(prefix)


def test_missing_files(tmp_path, saved):
    with pytest.raises(FileNotFoundError, match="no such file"):
        oar.jit.load(str(tmp_path / "nothing"))
    _, prefix = saved
    os.remove(prefix + ".pdiparams")
    with pytest.raises(FileNotFoundError, match="pdiparams"):
        oar.jit.load(prefix)


def test_save_writes_nothing_when_capture_fails(tmp_path):
    def f(x):
        return x * float(x.sum())

    with pytest.warns(UserWarning, match="runs eagerly"), pytest.raises(oar.jit.GraphBreakError):
        oar.jit.save(f, str(tmp_path / "m"), input_spec=[InputSpec([2])])
    assert not os.listdir(tmp_path)


def test_core_translated_layer_works_without_nn(saved):
    from oar.jit._save_load import _read_document
    from oar.jit.translated_layer import CoreTranslatedLayer

    f, prefix = saved
    doc = _read_document(prefix)
    state = oar.load(prefix + ".pdiparams", return_numpy=True)
    from oar._graph.program import Program

    program = Program.from_json(doc["program"], constants=state["constants"])
    layer = CoreTranslatedLayer._from_saved(program, state["params"], doc["input_spec"], doc["output_spec"])
    x = oar.rand([2, 3])
    with oar.no_grad():
        np.testing.assert_array_equal(layer(x).numpy(), f(x).numpy())
    assert [n for n, _ in layer.named_parameters()] == ["w"] and list(layer.state_dict()) == ["w"]
    layer.set_state_dict({"w": np.zeros([3, 2], np.float32)})
    with oar.no_grad():
        assert layer(x).tolist() == [[1.0, -1.0], [1.0, -1.0]]
    with pytest.raises(ArgumentError):
        layer.set_state_dict({"v": np.zeros([3, 2])})
    assert layer.eval().training is False and layer.train().training is True


def test_attention_reshapes_keep_a_dynamic_batch(tmp_path):
    """reshape(x, [0, 0, heads, head_dim]) -- how attention splits heads -- is captured once for any
    batch (its first copied dim is inferred when the program runs), so a saved encoder layer
    serves every batch size (it was saved for the traced batch of 2, with a warning)."""
    nn = pytest.importorskip("oar.nn", reason="oar-nn is not installed in this session")
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
    layer.eval()
    prefix = str(tmp_path / "encoder")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "depends on the size of a dim" warning
        oar.jit.save(layer, prefix, input_spec=[InputSpec([None, 5, 16], "float32", "x")])
    loaded = oar.jit.load(prefix)
    assert loaded.input_spec[0].shape == (-1, 5, 16)
    for batch in (1, 3):
        x = oar.rand([batch, 5, 16])
        with oar.no_grad():
            np.testing.assert_allclose(loaded(x).numpy(), layer(x).numpy(), rtol=1e-5, atol=1e-6)
