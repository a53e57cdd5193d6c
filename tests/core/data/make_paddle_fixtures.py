"""Writes tests/core/data/paddle_*.pdparams with real Paddle (see README.md here); run with Paddle's python:
``/tmp/paddle-venv/bin/python tests/core/data/make_paddle_fixtures.py tests/core/data``."""

import sys

import numpy as np
import paddle


def fill(layer):
    # parameter i (in state_dict order) holds linspace(-1, 1) + i: the test rebuilds the same values
    for i, value in enumerate(layer.state_dict().values()):
        value.set_value(np.linspace(-1, 1, int(np.prod(value.shape))).reshape(value.shape).astype("float32") + i)
    return layer

def small_cnn():
    return paddle.nn.Sequential(paddle.nn.Conv2D(1, 2, 3), paddle.nn.BatchNorm2D(2), paddle.nn.ReLU(),
                                paddle.nn.Flatten(), paddle.nn.Linear(8, 3))

out = sys.argv[1]
paddle.save(fill(paddle.nn.Linear(3, 2)).state_dict(), f"{out}/paddle_linear.pdparams")  # protocol 4
paddle.save(fill(small_cnn()).state_dict(), f"{out}/paddle_cnn_protocol2.pdparams", protocol=2)
linear = fill(paddle.nn.Linear(3, 2))
paddle.save({"params": [linear.weight, linear.bias], "epoch": 3}, f"{out}/paddle_tensors.pdparams")  # _pickle_save
