"""The ``oar.callbacks`` that ``oar-run`` adds to ``Model.fit``: the epoch history, checkpoints
that a later run resumes from, the shift that makes a resumed fit look like the rest of the
original run to the other callbacks, and the profiler of ``trainer.profile=true``."""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path

import oar
from oar.callbacks import Callback, TrainingCurves, VisualDL
from oar.profiler import Profiler, export_chrome_tracing
from oar.utils import atomic_file

CHECKPOINTS = "checkpoints"
LATEST = "latest.json"
PROFILE = "profile"


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


class RunProfiler(Callback):
    """Profile training steps ``start`` to ``end - 1`` of the first epoch with ``oar.profiler``
    (every op with its input shapes, each layer's forward, backward, the optimizer, DataLoader
    waits, and tensor memory) and write the record into ``<run_dir>/profile/``: the Chrome trace
    (``export_chrome_tracing``: ``oar-run_time_<stamp>.paddle_trace.json``, for chrome://tracing
    or Perfetto) and ``summary.txt`` (``Profiler.summary``'s tables). ``oar-run trainer.profile=true``
    adds it; without it nothing is profiled.

    The window ends with the first epoch at the latest, so that its evaluation stays out; skipping
    the first steps keeps the first calls' costs (kernel compilation, caches) out too.

    >>> from oar_hydra.callbacks import RunProfiler
    >>> profiler = RunProfiler("output/oar-run/my-run", steps=(2, 7))
    >>> profiler.dir.as_posix()
    'output/oar-run/my-run/profile'
    """

    def __init__(self, run_dir: Path | str, steps: tuple[int, int] = (2, 7)):
        super().__init__()
        self.dir = Path(run_dir) / PROFILE
        self.steps = (int(steps[0]), int(steps[1]))
        self.profiler: Profiler | None = None
        self.written: list[Path] = []
        self._batches = 0  # of the first epoch

    def on_train_begin(self, logs=None):
        self.profiler = Profiler(scheduler=self.steps, on_trace_ready=self._write, record_shapes=True,
                                 profile_memory=True)
        self.profiler.start()

    def on_train_batch_end(self, step, logs=None):
        if self.profiler is None:
            return
        self._batches += 1
        if step + 1 == self.params.get("steps"):  # the epoch's last batch: stop() closes its step, and no
            self._finish()                        # empty step after it (the end-of-data wait) is recorded
        else:
            self.profiler.step(num_samples=(logs or {}).get("batch_size"))

    def on_epoch_end(self, epoch, logs=None):
        self._finish()

    def on_train_end(self, logs=None):
        self._finish()

    def _finish(self) -> None:
        if self.profiler is None:
            return
        profiler, self.profiler = self.profiler, None
        profiler.stop()  # an open window (an epoch shorter than the range) is written here
        if not self.written:
            logging.getLogger("oar_hydra").warning(
                "trainer.profile: nothing recorded: the first epoch ended before step %d "
                "(set trainer.profile_steps=[start,end] within the epoch's %d steps)",
                self.steps[0], self._batches)

    def _write(self, profiler: Profiler) -> None:
        before = set(self.dir.glob("*.paddle_trace.json"))
        export_chrome_tracing(str(self.dir), worker_name="oar-run")(profiler)
        trace = sorted(set(self.dir.glob("*.paddle_trace.json")) - before)
        summary = self.dir / "summary.txt"
        recorded = sorted(int(e.name.partition("#")[2]) for e in profiler.events() if e.kind == "ProfileStep")
        steps = f"{recorded[0]}-{recorded[-1]}" if recorded else "none"
        write_atomic(summary, f"oar-run trainer.profile: training steps {steps} of the first epoch\n\n"
                              f"{profiler.summary_text(time_unit='ms')}\n")
        self.written = [*trace, summary]
        logging.getLogger("oar_hydra").info(
            "profile: training steps %s recorded; Chrome trace %s (open it in chrome://tracing or "
            "https://ui.perfetto.dev), summary tables %s", steps, trace[-1] if trace else "-", summary)
