"""``oar.Model.prepare(amp_configs=...)``: a LeNet trained on the bundled digits through oar.Model
at O1 and O2, bfloat16 and float16 (with a GradScaler), scores within 1 point of float32 (3
epochs of Adam each, the same seed and batches); the keys Paddle accepts reach auto_cast and the
GradScaler; the scaler's state is saved and loaded beside the checkpoint; an inference model
exported from an O2 model computes what evaluate measured."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar import nn
from oar.io import TensorDataset
from oar.testing import TOLERANCES
from oar.vision.models import LeNet

EPOCHS = 3
BATCH = 64


def dataset(x: np.ndarray, y: np.ndarray) -> TensorDataset:
    return TensorDataset([oar.to_tensor(x), oar.to_tensor(y.reshape(-1, 1).astype(np.int64))])


@pytest.fixture(scope="session")
def splits(digits) -> tuple[TensorDataset, TensorDataset]:
    return dataset(digits["x_train"], digits["y_train"]), dataset(digits["x_test"], digits["y_test"])


def prepared_lenet(amp_configs) -> oar.Model:
    oar.seed(0)
    network = LeNet()
    model = oar.Model(network)
    optimizer = oar.optimizer.Adam(parameters=network.parameters(), learning_rate=2e-3)
    model.prepare(optimizer, nn.CrossEntropyLoss(), oar.metric.Accuracy(), amp_configs=amp_configs)
    return model


def train_and_test(splits, amp_configs) -> tuple[oar.Model, float]:
    train, test = splits
    model = prepared_lenet(amp_configs)
    model.fit(train, epochs=EPOCHS, batch_size=BATCH, drop_last=True, verbose=0)
    return model, model.evaluate(test, batch_size=len(test), verbose=0)["acc"]


@pytest.fixture(scope="session")
def float32_model_accuracy(splits) -> float:
    model, accuracy = train_and_test(splits, None)
    assert model.network.fc[0].weight.dtype == oar.float32 and accuracy > 0.9
    return accuracy


STEPS = EPOCHS * (1433 // BATCH)  # optimizer steps: 22 full batches an epoch


@pytest.mark.slow
@pytest.mark.parametrize("amp_configs", [
    {"level": "O1", "dtype": "bfloat16"},
    {"level": "O2", "dtype": "bfloat16"},
    {"level": "O1", "dtype": "float16", "init_loss_scaling": 1024},  # Paddle's documented starting scale
    {"level": "O2", "dtype": "float16", "init_loss_scaling": 1024},
], ids=["O1-bf16", "O2-bf16", "O1-fp16", "O2-fp16"])
def test_amp_lenet_through_model_is_within_one_point_of_float32(splits, float32_model_accuracy, amp_configs, tmp_path):
    model, accuracy = train_and_test(splits, amp_configs)
    level, dtype = amp_configs["level"], amp_configs["dtype"]
    assert accuracy >= float32_model_accuracy - 0.01, (accuracy, float32_model_accuracy)
    # O2 decorated the network (its Linear and conv weights are low precision); O1 kept them float32.
    assert model.network.fc[0].weight.dtype.name == (dtype if level == "O2" else "float32")
    assert model.network.features[0].weight.dtype.name == (dtype if level == "O2" else "float32")
    # predict runs in the block too: the last Linear (white list) gives low-precision logits.
    (logits,) = model.predict_batch([oar.to_tensor(np.zeros((2, 1, 28, 28), np.float32))])
    assert logits.dtype.name == dtype
    model.save(tmp_path / "lenet")
    saved = sorted(p.name for p in tmp_path.iterdir())
    if dtype == "float16":  # every step went through the scaler, none overflowed at 1024
        state = oar.load(str(tmp_path / "lenet.pdscaler"))
        assert float(state["scale"][0]) == 1024.0 and state["incr_count"] == STEPS and state["decr_count"] == 0
        assert saved == ["lenet.pdopt", "lenet.pdparams", "lenet.pdscaler"]
    else:  # bfloat16 trains without loss scaling
        assert saved == ["lenet.pdopt", "lenet.pdparams"]


def small_network() -> nn.Layer:
    oar.seed(1)
    return nn.Sequential(nn.Conv2D(1, 2, 3), nn.Flatten(), nn.Linear(2 * 6 * 6, 3))


@pytest.mark.parametrize(("amp_configs", "expected"), [
    ("O1", "float16"),  # a level alone: Paddle's float16
    ({"dtype": "bfloat16"}, "bfloat16"),  # a dict without level is O1, as in Paddle
    ({"level": "O1", "dtype": "bfloat16", "custom_black_list": ["linear"]}, "float32"),
    ({"level": "O1", "dtype": "bfloat16", "custom_black_list": {"matmul_v2", "linear"}}, "float32"),  # Paddle's names
    ({"level": "O0", "dtype": "bfloat16"}, "float32"),
    (None, "float32"),
])
def test_amp_configs_reach_auto_cast(amp_configs, expected):
    model = oar.Model(small_network())
    model.prepare(loss=nn.CrossEntropyLoss(), amp_configs=amp_configs)
    x, label = oar.rand([4, 1, 8, 8]), oar.to_tensor(np.zeros((4, 1), np.int64))
    assert model.predict_batch([x])[0].dtype.name == expected
    with model.auto_cast():
        assert model.network(x).dtype.name == expected
    assert model.eval_batch([x], [label])[0].dtype == np.float32  # the loss is on O1's black list


def test_custom_white_list_runs_a_gray_op_low():
    class AddOne(nn.Layer):
        def forward(self, x):
            return x + 1.0

    model = oar.Model(AddOne())
    model.prepare(amp_configs={"level": "O1", "dtype": "bfloat16"})
    assert model.predict_batch([oar.rand([2, 2])])[0].dtype == np.float32  # add follows its float32 input
    model.prepare(amp_configs={"level": "O1", "dtype": "bfloat16", "custom_white_list": ["elementwise_add"]})
    assert model.predict_batch([oar.rand([2, 2])])[0].dtype.name == "bfloat16"


def test_scaler_keys_build_the_grad_scaler_and_its_state_round_trips(tmp_path):
    configs = {"level": "O1", "dtype": "float16", "init_loss_scaling": 8.0, "incr_ratio": 4.0, "decr_ratio": 0.25,
               "incr_every_n_steps": 2, "decr_every_n_nan_or_inf": 1, "use_dynamic_loss_scaling": True}
    network = small_network()
    model = oar.Model(network)
    model.prepare(oar.optimizer.SGD(learning_rate=0.1, parameters=network.parameters()), nn.CrossEntropyLoss(),
                  amp_configs=configs)
    x, label = oar.rand([4, 1, 8, 8]), oar.to_tensor(np.zeros((4, 1), np.int64))
    for _ in range(3):  # two good steps raise the scale by incr_ratio
        model.train_batch([x], [label])
    model.save(tmp_path / "m")
    state = oar.load(str(tmp_path / "m.pdscaler"))
    assert float(state["scale"][0]) == 32.0 and state["incr_count"] == 1 and state["incr_ratio"] == 4.0

    fresh_network = small_network()
    fresh = oar.Model(fresh_network)
    fresh.prepare(oar.optimizer.SGD(learning_rate=0.1, parameters=fresh_network.parameters()), nn.CrossEntropyLoss(),
                  amp_configs={"level": "O1"})
    fresh.load(tmp_path / "m")
    fresh.save(tmp_path / "again")
    again = oar.load(str(tmp_path / "again.pdscaler"))
    assert float(again["scale"][0]) == 32.0 and again["incr_count"] == 1 and again["incr_ratio"] == 4.0


def test_accumulated_gradients_step_through_the_scaler(splits, tmp_path):
    train, _ = splits
    model = prepared_lenet({"level": "O1", "dtype": "float16", "init_loss_scaling": 1024})
    # 5 batches, an update every 2: steps after batches 2 and 4, and the pending one after batch 5.
    model.fit(train, batch_size=BATCH, accumulate_grad_batches=2, num_iters=5, verbose=0)
    model.save(tmp_path / "m")
    assert oar.load(str(tmp_path / "m.pdscaler"))["incr_count"] == 3


def test_bfloat16_ignores_the_scaler_keys_and_says_so(tmp_path):
    network = small_network()
    model = oar.Model(network)
    with pytest.warns(UserWarning, match=r"\['init_loss_scaling'\].*loss scaling is for float16"):
        model.prepare(oar.optimizer.SGD(parameters=network.parameters()), nn.CrossEntropyLoss(),
                      amp_configs={"level": "O1", "dtype": "bfloat16", "init_loss_scaling": 1024})
    model.train_batch([oar.rand([4, 1, 8, 8])], [oar.to_tensor(np.zeros((4, 1), np.int64))])
    model.save(tmp_path / "m")
    assert not (tmp_path / "m.pdscaler").exists()


def test_an_exported_o2_model_computes_what_evaluate_measured(tmp_path):
    network = small_network()
    model = oar.Model(network, inputs=[oar.static.InputSpec([None, 1, 8, 8], "float32", "x")])
    model.prepare(oar.optimizer.Adam(parameters=network.parameters()), nn.CrossEntropyLoss(),
                  amp_configs={"level": "O2", "dtype": "bfloat16"})
    x = oar.rand([5, 1, 8, 8])
    model.train_batch([x], [oar.to_tensor(np.arange(5).reshape(-1, 1) % 3)])
    expected = model.predict_batch([x])[0]
    model.save(tmp_path / "inference", training=False)
    loaded = oar.jit.load(str(tmp_path / "inference"))
    with oar.no_grad():
        served = loaded(x).numpy()  # a float32 input, as the InputSpec says: the program holds the casts
    assert served.dtype == expected.dtype
    # Within bfloat16's tolerance: the executor may fuse a bias into its op and round once, not twice.
    rtol, atol = TOLERANCES["bfloat16"]
    np.testing.assert_allclose(served.astype(np.float32), expected.astype(np.float32), rtol=rtol, atol=atol)
