"""``python -m oar_numba warm``: compile the kernels common models use into numba's disk cache.

numba compiles a kernel the first time a process calls it with a new signature and caches the
machine code on disk (``oar_numba/__pycache__/``, or ``NUMBA_CACHE_DIR``), so only the first run
of a fresh installation waits for it: about ten seconds for a small CNN's first training step
(docs/numba.md, "Compilation and the disk cache"). This command pays that wait ahead, at set-up
(``python3 dev.py demo`` runs it): it runs a training step and an inference of a few small models
through oar's public API, in float32, the dtype models train in, at one thread (the serial
compilations) and, where numba has more threads, at all of them with tensors large enough for the
parallel ones.

>>> from oar_numba.warm import WORKLOADS
>>> [name for name, _ in WORKLOADS][:2]
['LeNet', 'convolutional block']
"""

from __future__ import annotations

import sys
import time

import numba

import oar
import oar.nn as nn
import oar.nn.functional as F
from oar_numba import _jit


def _train_and_infer(model, inputs, labels, optimizer_class) -> None:
    optimizer = optimizer_class(parameters=model.parameters(), learning_rate=1e-3)
    model.train()
    loss = F.cross_entropy(model(inputs), labels)
    loss.backward()
    optimizer.step()
    optimizer.clear_grad()
    model.eval()
    with oar.no_grad():
        model(inputs[:1])
        model(inputs)


class _ConvBlock(nn.Layer):
    """What CNNs beyond LeNet add: 3x3 and 1x1 convolutions with batch norm, a depthwise
    convolution, average and adaptive pooling, a transposed convolution, GELU and group norm."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2D(3, 16, 3, padding=1), nn.BatchNorm2D(16), nn.ReLU())
        self.depthwise = nn.Sequential(nn.Conv2D(16, 16, 3, padding=1, groups=16), nn.BatchNorm2D(16), nn.ReLU(),
                                       nn.Conv2D(16, 32, 1), nn.GroupNorm(4, 32), nn.GELU())
        self.up = nn.Conv2DTranspose(32, 16, 2, stride=2)
        self.pool = nn.Sequential(nn.MaxPool2D(2, 2), nn.AvgPool2D(2, 2), nn.AdaptiveAvgPool2D(1))
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        return self.fc(self.pool(self.up(self.depthwise(self.stem(x)))).flatten(1))


class _SequenceModel(nn.Layer):
    """An embedding, an LSTM and a transformer encoder layer (layer norm, attention, softmax)."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(100, 32)
        self.lstm = nn.LSTM(32, 32)
        self.encoder = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1)
        self.fc = nn.Linear(32, 10)

    def forward(self, ids):
        hidden, _ = self.lstm(self.embedding(ids))
        return self.fc(self.encoder(hidden).mean(1))


def _lenet(batch: int) -> None:
    _train_and_infer(oar.vision.models.LeNet(), oar.randn([batch, 1, 28, 28]), oar.randint(0, 10, [batch]),
                     oar.optimizer.Adam)


def _conv_block(batch: int) -> None:
    _train_and_infer(_ConvBlock(), oar.randn([batch, 3, 32, 32]), oar.randint(0, 10, [batch]),
                     oar.optimizer.Momentum)


def _sequence(batch: int) -> None:
    _train_and_infer(_SequenceModel(), oar.randint(0, 100, [batch, 16]), oar.randint(0, 10, [batch]),
                     oar.optimizer.AdamW)


# (name, run(batch)); the batches below make the first layers' tensors exceed the size at which
# the kernels go parallel (oar_numba._jit.SERIAL_BELOW).
WORKLOADS = [("LeNet", _lenet), ("convolutional block", _conv_block), ("sequence model", _sequence)]
SMALL_BATCH = 8
LARGE_BATCH = {"LeNet": 256, "convolutional block": 128, "sequence model": 2048}


def warm(out=sys.stderr) -> float:
    """Run every workload once at one thread and, where numba has more, once at all its threads
    with a large batch; returns the seconds it took. Progress goes to ``out``, a line a workload."""
    started, previous = time.perf_counter(), numba.get_num_threads()
    _jit.COMPILE_NOTICE.said = True  # the lines below say what compiles
    settings = [(1, None)]
    if numba.config.NUMBA_NUM_THREADS > 1:
        settings.append((numba.config.NUMBA_NUM_THREADS, LARGE_BATCH))
    try:
        for threads, batches in settings:
            oar.set_num_threads(threads)
            for name, run in WORKLOADS:
                start = time.perf_counter()
                run(SMALL_BATCH if batches is None else batches[name])
                print(f"oar-numba warm: {name} at {threads} thread(s): {time.perf_counter() - start:.1f} s",
                      file=out, flush=True)
    finally:
        oar.set_num_threads(previous)
    return time.perf_counter() - started
