"""The ``oar.callbacks`` that ``oar-run`` adds to ``Model.fit``: the epoch history, checkpoints
that a later run resumes from, and the shift that makes a resumed fit look like the rest of the
original run to the other callbacks."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import oar
from oar.callbacks import Callback, TrainingCurves, VisualDL
from oar.utils import atomic_file

CHECKPOINTS = "checkpoints"
LATEST = "latest.json"


def _number(value) -> float | None:
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return None if value is None else float(value)


class History(Callback):
    """The loss and metrics of every epoch, on the training data and the evaluation data:
    ``records`` is ``[{'epoch': 1, 'train_loss': .., 'train_acc': .., 'test_loss': .., 'test_acc': ..}]``."""

    def __init__(self, records: list[dict] | None = None):
        super().__init__()
        self.records = list(records or [])
        self._epoch: int | None = None

    def on_epoch_begin(self, epoch=None, logs=None):
        self._epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        record = {"epoch": epoch + 1}
        record.update({f"train_{k}": _number(v) for k, v in (logs or {}).items() if k not in ("step", "batch_size")})
        self.records.append(record)

    def on_eval_end(self, logs=None):
        if self.records and self._epoch is not None and self.records[-1]["epoch"] == self._epoch + 1:
            self.records[-1].update({f"test_{k}": _number(v) for k, v in (logs or {}).items()
                                     if k not in ("step", "batch_size")})


class RunCheckpoint(Callback):
    """Save everything a resumed run needs after every ``save_freq``-th epoch and after the last:
    ``checkpoints/epoch_<n>/`` holds the model and optimizer (``Model.save``: safetensors, with the
    LR scheduler's state) and ``trainer.pdstate`` (``oar.save``: the epoch, the random generator,
    the sampler's epoch, the history). ``checkpoints/latest.json`` names the newest complete one;
    it is replaced atomically after the files are written, so an interrupted save leaves the
    previous checkpoint in charge. Older checkpoints are removed.

    The save happens after the epoch's evaluation (nothing random happens there), so the
    history saved with it is complete.
    """

    def __init__(self, run_dir: Path, save_freq: int, total_epochs: int, sampler, history: History):
        super().__init__()
        self.dir = Path(run_dir) / CHECKPOINTS
        self.save_freq, self.total_epochs = save_freq, total_epochs
        self.sampler, self.history = sampler, history
        self.train_steps = 0
        self._pending: int | None = None  # the epoch whose checkpoint waits for its evaluation

    def on_train_batch_end(self, step, logs=None):
        self.train_steps += 1

    def on_epoch_end(self, epoch, logs=None):
        steps = self.params.get("steps")
        complete = steps is None or (logs or {}).get("step", steps - 1) + 1 >= steps
        done = epoch + 1
        if complete and (done % self.save_freq == 0 or done == self.total_epochs):
            self._pending = done

    def on_eval_end(self, logs=None):
        self._flush()

    def on_epoch_begin(self, epoch=None, logs=None):
        self._flush()

    def on_train_end(self, logs=None):
        self._flush()

    def _flush(self) -> None:
        if self._pending is None:
            return
        done, self._pending = self._pending, None
        if os.environ.get("PADDLE_TRAINER_ID", "0") != "0":
            return  # in a job of several ranks, rank 0 writes the checkpoint; the ranks' states are alike
        target = self.dir / f"epoch_{done}"
        self.model.save(target / "model")
        oar.save({"epochs_done": done, "train_steps": self.train_steps, "rng": oar.get_rng_state()[0],
                  "sampler_epoch": self.sampler.epoch, "history": self.history.records},
                 str(target / "trainer.pdstate"))
        write_atomic(self.dir / LATEST, json.dumps({"epochs_done": done, "dir": target.name}) + "\n")
        for old in self.dir.glob("epoch_*"):
            if old.is_dir() and old.name != target.name:
                shutil.rmtree(old, ignore_errors=True)
        logging.getLogger("oar_hydra").info("checkpoint: epoch %d saved in %s", done, target)


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (oar's own writer: fsync and rename): readers see the
    old file or the new one, never half of one."""
    with atomic_file(path, "w", encoding="utf-8") as f:
        f.write(text)


class ContinuedRun(Callback):
    """Presents a fit over epochs ``start .. total-1`` to ``callbacks`` as the rest of one run of
    ``total`` epochs: epoch numbers are shifted by ``start``, ``params['epochs']`` is ``total``,
    and at the start the history of the first ``start`` epochs is replayed into the callbacks that
    draw or log it (``TrainingCurves``, ``VisualDL``, ``History``), so the curves and the
    TensorBoard evaluation scalars cover the whole run.

    ``Model.fit`` has no ``initial_epoch``; this is that, from the outside.
    """

    def __init__(self, callbacks: list[Callback], start: int = 0, total: int | None = None,
                 replay: list[dict] | None = None, train_steps: int = 0):
        super().__init__()
        self.callbacks, self.start, self.total = callbacks, start, total
        self.replay, self.train_steps = list(replay or []), train_steps

    def _each(self, name: str, *args) -> None:
        for callback in self.callbacks:
            getattr(callback, name)(*args)

    def set_params(self, params):
        super().set_params(params)
        self._each("set_params", {**params, "epochs": self.total or params.get("epochs")})

    def set_model(self, model):
        super().set_model(model)
        self._each("set_model", model)

    def on_train_begin(self, logs=None):
        self._each("on_train_begin", logs)
        names = list(self.params.get("metrics") or [])
        for callback in self.callbacks:
            if isinstance(callback, History):
                continue  # it was built with the replayed records
            if not isinstance(callback, (TrainingCurves, VisualDL)):
                continue
            for record in self.replay:
                epoch = record["epoch"] - 1
                callback.on_epoch_begin(epoch)
                callback.on_epoch_end(epoch, {n: record.get(f"train_{n}") for n in names})
                if any(f"test_{n}" in record for n in names):
                    callback.on_eval_begin({"metrics": names})
                    callback.on_eval_end({n: record.get(f"test_{n}") for n in names if f"test_{n}" in record})
            if isinstance(callback, VisualDL):
                callback.train_step = self.train_steps  # its per-batch scalars continue the original's

    def on_train_end(self, logs=None):
        self._each("on_train_end", logs)

    def on_epoch_begin(self, epoch=None, logs=None):
        self._each("on_epoch_begin", epoch + self.start, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._each("on_epoch_end", epoch + self.start, logs)

    def on_eval_begin(self, logs=None):
        self._each("on_eval_begin", logs)

    def on_eval_end(self, logs=None):
        self._each("on_eval_end", logs)

    def on_train_batch_begin(self, step, logs=None):
        self._each("on_train_batch_begin", step, logs)

    def on_train_batch_end(self, step, logs=None):
        self._each("on_train_batch_end", step, logs)

    def on_eval_batch_begin(self, step, logs=None):
        self._each("on_eval_batch_begin", step, logs)

    def on_eval_batch_end(self, step, logs=None):
        self._each("on_eval_batch_end", step, logs)
