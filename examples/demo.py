"""oar's main job: LeNet learns the handwritten digits that ship with oar-nn, through ``oar.Model``.

    python examples/demo.py [--epochs 15] [--output DIR]

Paddle's quick start on offline data: LeNet, Adam with a cosine learning-rate schedule, light
augmentation (rotations of up to 10 degrees, shifts of up to 2 pixels), a progress bar (plain
lines when stdout is not a terminal), an evaluation on the test split after every epoch. The
final test accuracy must reach 97%, or the exit status is 1. Everything goes into one
folder (default ``output/lenet-digits/<date>_<time>/``), listed at the end:

    lenet.pdparams, lenet.pdopt         the checkpoint (Model.save: safetensors, no pickle)
    inference/lenet.json, .pdiparams    the inference model (Model.save(training=False)), with oar.jit
    curves.png                          loss and accuracy per epoch, train and test (with matplotlib)
    tensorboard/events.out.tfevents.*   TensorBoard logs: tensorboard --logdir <folder> (with tensorboardX)
    metrics.json                        the settings, the per-epoch history and the final results
    log.txt                             everything printed
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import oar
import oar.vision.transforms as T
from oar.hapi import FeatureUnavailableError
from oar.vision.datasets import Digits
from oar.vision.models import LeNet

TARGET_ACCURACY = 0.97
BATCH_SIZE = 32
LEARNING_RATE = 0.003


class Tee:
    """stdout for the terminal and for ``log.txt``: the log gets each finished line as it was
    last drawn (a progress bar's final state, not its redraws)."""

    def __init__(self, terminal, log):
        self.terminal, self.log, self.pending = terminal, log, ""

    def write(self, text: str) -> int:
        self.terminal.write(text)
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            self.log.write(line.split("\r")[-1].rstrip() + "\n")
        return len(text)

    def flush(self) -> None:
        self.terminal.flush()
        self.log.flush()

    def isatty(self) -> bool:  # the progress bar asks the terminal, not the log
        return self.terminal.isatty()


@contextlib.contextmanager
def logged_to(path: Path):
    with open(path, "w", encoding="utf-8") as log:
        tee = Tee(sys.stdout, log)
        previous, sys.stdout = sys.stdout, tee
        try:
            yield
        finally:
            sys.stdout = previous
            if tee.pending.strip():
                log.write(tee.pending.split("\r")[-1].rstrip() + "\n")


class History(oar.callbacks.Callback):
    """Loss and accuracy of every epoch, on the training data and on the test data."""

    def on_train_begin(self, logs=None):
        self.epochs = []

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append({"epoch": epoch + 1, "train_loss": logs["loss"][0], "train_acc": logs["acc"]})

    def on_eval_end(self, logs=None):
        self.epochs[-1].update(test_loss=logs["loss"][0], test_acc=logs["acc"])


def installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--output", type=Path, default=Path("output", "lenet-digits", time.strftime("%Y-%m-%d_%H-%M-%S")))
    args = parser.parse_args(argv)
    out = args.output
    out.mkdir(parents=True, exist_ok=True)
    with logged_to(out / "log.txt"):
        return run(args.epochs, out)


def run(epochs: int, out: Path) -> int:
    start = time.perf_counter()
    print(f"oar {oar.__version__}: LeNet on the bundled UCI digits, {epochs} epochs; output in {out}/")
    oar.seed(0)
    normalize = T.Normalize(mean=[127.5], std=[127.5])
    augment = T.Compose([T.RandomRotation(10), T.Pad(2), T.RandomCrop(28), normalize])  # drawn from oar.seed
    train = Digits(mode="train", transform=augment)
    test = Digits(mode="test", transform=normalize)
    print(f"data: {len(train)} training and {len(test)} test images, 28x28")

    model = oar.Model(LeNet(num_classes=10))
    model.summary((1, 1, 28, 28))
    steps = -(-len(train) // BATCH_SIZE)
    schedule = oar.optimizer.lr.CosineAnnealingDecay(LEARNING_RATE, T_max=epochs * steps)  # stepped every batch
    model.prepare(oar.optimizer.Adam(learning_rate=schedule, parameters=model.parameters()),
                  oar.nn.CrossEntropyLoss(), oar.metric.Accuracy())
    history = History()
    callbacks = [history]
    if installed("tensorboardX"):
        callbacks.append(oar.callbacks.VisualDL(out / "tensorboard"))
    if installed("matplotlib"):
        callbacks.append(oar.callbacks.TrainingCurves(out / "curves.png"))
    else:
        print("(matplotlib is not installed: no curves.png; pip install 'oar-nn[vis]')")

    model.fit(train, test, epochs=epochs, batch_size=BATCH_SIZE, verbose=1, callbacks=callbacks)
    result = model.evaluate(test, batch_size=128, verbose=0)
    accuracy = result["acc"]

    model.save(out / "lenet")
    restored = oar.Model(LeNet(num_classes=10))
    restored.load(out / "lenet")
    (expected,) = model.predict(test, batch_size=128, stack_outputs=True, verbose=0)
    (again,) = restored.predict(test, batch_size=128, stack_outputs=True, verbose=0)
    if not np.array_equal(expected, again):
        print("error: the checkpoint does not reproduce the model's predictions")
        return 1
    try:
        model.save(out / "inference" / "lenet", training=False)
    except FeatureUnavailableError as exc:
        print(f"no inference model: {exc}")
    else:
        served = oar.jit.load(str(out / "inference" / "lenet"))
        with oar.no_grad():
            batch = np.stack([test[i][0] for i in range(len(test))])
            inferred = served(oar.to_tensor(batch)).numpy()
        if not np.allclose(inferred, expected, rtol=1e-4, atol=1e-5):
            print("error: the inference model does not reproduce the model's predictions")
            return 1

    seconds = time.perf_counter() - start
    with open(out / "metrics.json", "w", encoding="utf-8") as f:
        json.dump({"model": "LeNet", "data": "oar.vision.datasets.Digits", "epochs": epochs, "batch_size": BATCH_SIZE,
                   "optimizer": f"Adam, cosine schedule from {LEARNING_RATE}", "seed": 0,
                   "augmentation": "RandomRotation(10), Pad(2) + RandomCrop(28)",
                   "test_accuracy": accuracy, "test_loss": result["loss"][0], "seconds": round(seconds, 1),
                   "history": history.epochs}, f, indent=2)
        f.write("\n")

    print(f"\ntest accuracy: {accuracy:.2%} ({round(accuracy * len(test))}/{len(test)} images; "
          f"the bar is {TARGET_ACCURACY:.0%}) in {seconds:.1f} s")
    print(f"everything is in {out.resolve()}/:")
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        size = "(this log)" if path.name == "log.txt" else f"{path.stat().st_size:>9,} bytes"
        print(f"  {path.relative_to(out).as_posix():<58} {size}")
    print("reload with: model = oar.Model(LeNet()); model.load(" + repr(os.fspath(out / "lenet")) + ")")
    if accuracy < TARGET_ACCURACY:
        print(f"error: test accuracy {accuracy:.2%} is below {TARGET_ACCURACY:.0%}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
