"""LeNet as ``paddle.vision.models.LeNet``: the same layers under the same names, so state dicts
carry Paddle's keys (``features.0.weight``, ``fc.2.bias``)."""

from __future__ import annotations

import oar
from oar import nn


class LeNet(nn.Layer):
    """LeNet from "Gradient-based learning applied to document recognition" (LeCun et al., 1998),
    built as Paddle builds it, for ``[N, 1, 28, 28]`` inputs.

    ``features``: Conv2D(1, 6, 3, padding=1), ReLU, MaxPool2D(2, 2), Conv2D(6, 16, 5), ReLU,
    MaxPool2D(2, 2); ``fc``: Linear(400, 120), Linear(120, 84), Linear(84, num_classes), with no
    activation between them (as in Paddle). ``num_classes <= 0`` leaves ``fc`` out and the model
    returns the ``[N, 16, 5, 5]`` features. 61,610 parameters with 10 classes.

    >>> import oar
    >>> from oar.vision.models import LeNet
    >>> model = LeNet()
    >>> model(oar.rand([2, 1, 28, 28])).shape
    [2, 10]
    >>> sum(p.size for p in model.parameters())
    61610
    """

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.num_classes = num_classes
        self.features = nn.Sequential(
            nn.Conv2D(1, 6, 3, stride=1, padding=1),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
            nn.Conv2D(6, 16, 5, stride=1, padding=0),
            nn.ReLU(),
            nn.MaxPool2D(2, 2),
        )
        if num_classes > 0:
            self.fc = nn.Sequential(nn.Linear(400, 120), nn.Linear(120, 84), nn.Linear(84, num_classes))

    def forward(self, inputs):
        x = self.features(inputs)
        if self.num_classes > 0:
            x = self.fc(oar.flatten(x, 1))
        return x
