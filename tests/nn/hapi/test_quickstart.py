"""Paddle's quick start, unchanged but for the bundled data: LeNet learns the digits through
Model.prepare/fit/evaluate/predict/save/load with Adam, to >= 95% test accuracy in five epochs."""

from __future__ import annotations

import time

import numpy as np

import oar as paddle  # the quick start's own spelling
import oar.vision.transforms as T
from oar.vision.datasets import Digits
from oar.vision.models import LeNet

EPOCHS = 5
CPU_SECONDS = 40  # the bound on this thread's CPU time (wall time depends on what else the machine runs)


def test_quickstart_lenet_on_digits_reaches_95_percent(tmp_path, capsys):
    cpu_start, wall_start = time.thread_time(), time.perf_counter()
    paddle.seed(0)
    transform = T.Normalize(mean=[127.5], std=[127.5])
    train_dataset = Digits(mode="train", transform=transform)
    test_dataset = Digits(mode="test", transform=transform)

    model = paddle.Model(LeNet(num_classes=10))
    model.prepare(paddle.optimizer.Adam(learning_rate=0.001, parameters=model.parameters()),
                  paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())
    model.fit(train_dataset, epochs=EPOCHS, batch_size=64, verbose=1)
    result = model.evaluate(test_dataset, batch_size=64, verbose=0)
    assert set(result) == {"loss", "acc"}
    assert result["acc"] >= 0.95, result

    (logits,) = model.predict(test_dataset, batch_size=64, stack_outputs=True)
    labels = test_dataset.labels
    assert logits.shape == (364, 10)
    assert float((logits.argmax(axis=1) == labels).mean()) == result["acc"]

    model.save(str(tmp_path / "mnist"))
    restored = paddle.Model(LeNet(num_classes=10))
    restored.prepare(paddle.optimizer.Adam(learning_rate=0.001, parameters=restored.parameters()),
                     paddle.nn.CrossEntropyLoss(), paddle.metric.Accuracy())
    restored.load(str(tmp_path / "mnist"))
    np.testing.assert_array_equal(restored.predict(test_dataset, batch_size=64, stack_outputs=True)[0], logits)
    assert restored.evaluate(test_dataset, batch_size=64, verbose=0) == result

    cpu = time.thread_time() - cpu_start
    out = capsys.readouterr().out
    assert out.count("Epoch ") == EPOCHS and "step 23/23" in out
    print(f"quick start: test accuracy {result['acc']:.4f}, {cpu:.1f} s CPU, {time.perf_counter() - wall_start:.1f} s wall")
    assert cpu < CPU_SECONDS
