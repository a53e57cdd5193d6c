"""``oar.inference.get_num_bytes_of_data_type`` and ``convert_to_mixed_precision``."""

from __future__ import annotations

import numpy as np
import pytest

import oar
import oar.inference as paddle_infer
from oar.errors import ArgumentError
from oar.static import InputSpec
from oar.testing import TOLERANCES


def test_bytes_of_every_data_type():
    DataType = paddle_infer.DataType
    # Paddle 3.3.1 answers FLOAT32 4, INT64 8, INT32 4, UINT8 1 (and -1 for the rest).
    sizes = {DataType.FLOAT32: 4, DataType.INT64: 8, DataType.INT32: 4, DataType.UINT8: 1, DataType.FLOAT64: 8,
             DataType.FLOAT16: 2, DataType.BFLOAT16: 2, DataType.INT16: 2, DataType.INT8: 1, DataType.BOOL: 1}
    assert {dtype: paddle_infer.get_num_bytes_of_data_type(dtype) for dtype in DataType} == sizes
    assert "get_num_bytes_of_data_type" in paddle_infer.__all__


def test_a_name_is_not_a_data_type():
    with pytest.raises(ArgumentError, match="DataType"):
        paddle_infer.get_num_bytes_of_data_type("float32")


class _Net(oar.nn.Layer):
    """An embedding (Paddle's extra black list), a linear (low precision) and a layer norm."""

    def __init__(self):
        super().__init__()
        self.emb, self.fc, self.ln = oar.nn.Embedding(10, 4), oar.nn.Linear(4, 3), oar.nn.LayerNorm(3)

    def forward(self, ids, x):
        return oar.nn.functional.softmax(self.ln(self.fc(self.emb(ids).sum(1) + x)))


@pytest.fixture
def saved_model(tmp_path):
    pytest.importorskip("oar.amp", reason="convert_to_mixed_precision needs oar-amp, not installed in this session")
    oar.seed(0)
    net = _Net()
    net.eval()
    oar.jit.save(net, str(tmp_path / "model"),
                 input_spec=[InputSpec([None, 2], "int64", "ids"), InputSpec([None, 4], "float32", "x")])
    inputs = (oar.to_tensor([[1, 2], [3, 4], [5, 9]]), oar.rand([3, 4]))
    return tmp_path, net, inputs


def _convert(folder, precision, **kwargs):
    paddle_infer.convert_to_mixed_precision(str(folder / "model.json"), str(folder / "model.pdiparams"),
                                            str(folder / "mixed.json"), str(folder / "mixed.pdiparams"),
                                            precision, paddle_infer.PlaceType.CPU, **kwargs)
    return oar.jit.load(str(folder / "mixed"))


def test_mixed_precision_model_keeps_black_listed_ops_in_float32(saved_model):
    folder, net, inputs = saved_model
    mixed = _convert(folder, paddle_infer.PrecisionType.Half, black_list={"layer_norm"})
    dtypes = {name.split(".", 1)[1]: p.dtype.name for name, p in mixed.named_parameters()}
    assert dtypes == {"emb.weight": "float32", "fc.weight": "float16", "fc.bias": "float16", "ln.weight": "float32",
                      "ln.bias": "float32"}
    computed = {node.op: [mixed.program().values[v].dtype.name for v in node.inputs]
                for node in mixed.program().nodes}
    assert computed["linear"] == ["float16"] * 3 and computed["layer_norm"] == ["float32"] * 3
    got, expected = mixed(*inputs), net(*inputs)
    assert got.dtype == oar.float32
    rtol, atol = TOLERANCES["float16"]
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=rtol, atol=atol)
    # The predictor runs it as any saved model.
    predictor = paddle_infer.create_predictor(paddle_infer.Config(str(folder / "mixed.json"),
                                                                  str(folder / "mixed.pdiparams")))
    (out,) = predictor.run([t.numpy() for t in inputs])
    np.testing.assert_allclose(np.asarray(out), got.numpy(), rtol=rtol, atol=atol)


def test_bfloat16_without_keeping_io_types(saved_model):
    folder, net, inputs = saved_model
    mixed = _convert(folder, paddle_infer.PrecisionType.Bfloat16, keep_io_types=False)
    assert [s.dtype.name for s in mixed.input_spec] == ["int64", "bfloat16"]
    assert mixed.named_parameters() and {p.dtype.name for n, p in mixed.named_parameters() if "fc" in n} == {"bfloat16"}
    got = mixed(inputs[0], inputs[1].astype("bfloat16"))
    assert got.dtype == oar.bfloat16
    rtol, atol = TOLERANCES["bfloat16"]
    np.testing.assert_allclose(got.astype("float32").numpy(), net(*inputs).numpy(), rtol=rtol, atol=atol)


def test_mixed_precision_arguments_are_checked(saved_model):
    folder, _, _ = saved_model
    with pytest.raises(ArgumentError, match="mixed_precision"):
        _convert(folder, paddle_infer.PrecisionType.Float32)
    with pytest.raises(ArgumentError, match="mixed_params_file"):
        paddle_infer.convert_to_mixed_precision(str(folder / "model.json"), str(folder / "model.pdiparams"),
                                                str(folder / "mixed.json"), str(folder / "other.pdiparams"),
                                                paddle_infer.PrecisionType.Half, paddle_infer.PlaceType.CPU)
    with pytest.raises(ArgumentError, match="unsupported"):
        _convert(folder, paddle_infer.PrecisionType.Half, grey_list={"add"})
