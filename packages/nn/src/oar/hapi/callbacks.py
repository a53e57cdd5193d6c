"""``oar.callbacks``: hooks into ``oar.Model``'s fit, evaluate and predict loops, as ``paddle.callbacks``.

``Model.fit`` calls, in order: ``on_train_begin``; per epoch ``on_epoch_begin``, per batch
``on_train_batch_begin`` / ``on_train_batch_end``, ``on_epoch_end``; then, every ``eval_freq``
epochs, ``on_eval_begin``, the ``on_eval_batch_*`` pairs and ``on_eval_end``; finally
``on_train_end``. ``evaluate`` and ``predict`` call the ``on_eval_*`` and ``on_predict_*`` hooks.
Every hook gets a ``logs`` dict: ``{'loss': [..], 'acc': .., 'step': i, 'batch_size': n}`` after a
batch, the epoch's values after an epoch or an evaluation.

Unless given, fit adds a ``ProgBarLogger`` (when ``verbose``), a ``ModelCheckpoint`` (it saves only
with a ``save_dir``), an ``LRScheduler`` (it steps the optimizer's scheduler after every batch) and,
with a ``save_dir`` and matplotlib installed, a ``TrainingCurves`` that draws ``save_dir/curves.png``.
"""

from __future__ import annotations

import importlib.util
import numbers
import os
import sys
import time
import warnings

import numpy as np

from oar.errors import ArgumentError
from oar.hapi.progressbar import ProgressBar, stream_is_terminal
from oar.utils import try_import

VIS_EXTRA = "pip install 'oar-nn[vis]'"  # installs tensorboardX and matplotlib


def _local_rank() -> int:
    """The rank of this process in a distributed launch (0 otherwise): only rank 0 prints and writes."""
    try:
        return int(os.environ.get("PADDLE_TRAINER_ID", "0"))
    except ValueError:
        return 0


def _scalar(value):
    """The number a log entry stands for: the loss is a list (one value per loss term), a metric a
    float or a list (one value per top-k); None when it is not a number."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        return float(value)
    return None


class Callback:
    """The base class of callbacks, as ``paddle.callbacks.Callback``: override the hooks you need.

    ``self.model`` is the ``oar.Model`` being run and ``self.params`` a dict with ``epochs``,
    ``steps`` (batches per epoch, None when unknown), ``batch_size``, ``verbose`` and ``metrics``
    (the names of the logged values, ``['loss', 'acc']``).

    >>> import oar
    >>> class CountBatches(oar.callbacks.Callback):
    ...     def on_train_begin(self, logs=None):
    ...         self.batches = 0
    ...     def on_train_batch_end(self, step, logs=None):
    ...         self.batches += 1
    >>> net = oar.nn.Linear(4, 2)
    >>> model = oar.Model(net)
    >>> model.prepare(oar.optimizer.SGD(parameters=net.parameters()), oar.nn.CrossEntropyLoss())
    >>> data = oar.io.TensorDataset([oar.rand([10, 4]), oar.randint(0, 2, [10, 1])])
    >>> counter = CountBatches()
    >>> model.fit(data, batch_size=4, epochs=2, verbose=0, callbacks=[counter])
    >>> counter.batches
    6
    """

    def __init__(self):
        self.model = None
        self.params: dict = {}

    def set_params(self, params: dict) -> None:
        """Receive the run's parameters (``epochs``, ``steps``, ``batch_size``, ``verbose``, ``metrics``)."""
        self.params = params

    def set_model(self, model) -> None:
        """Receive the ``oar.Model`` this callback serves."""
        self.model = model

    def on_train_begin(self, logs=None):
        """Called once, before the first epoch of ``fit``."""

    def on_train_end(self, logs=None):
        """Called once at the end of ``fit``, with the last epoch's logs."""

    def on_eval_begin(self, logs=None):
        """Called before an evaluation; ``logs`` has ``steps`` and ``metrics``."""

    def on_eval_end(self, logs=None):
        """Called after an evaluation, with its results (the loss is the mean over the samples)."""

    def on_predict_begin(self, logs=None):
        """Called before ``predict``; ``logs`` has ``steps``."""

    def on_predict_end(self, logs=None):
        """Called at the end of ``predict``."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of each training epoch (``epoch`` counts from 0)."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of each training epoch, with the epoch's mean loss and its metrics."""

    def on_train_batch_begin(self, step, logs=None):
        """Called before each training batch."""

    def on_train_batch_end(self, step, logs=None):
        """Called after each training batch, with its loss and the metrics so far this epoch."""

    def on_eval_batch_begin(self, step, logs=None):
        """Called before each evaluation batch."""

    def on_eval_batch_end(self, step, logs=None):
        """Called after each evaluation batch."""

    def on_predict_batch_begin(self, step, logs=None):
        """Called before each prediction batch."""

    def on_predict_batch_end(self, step, logs=None):
        """Called after each prediction batch."""


class CallbackList:
    """Several callbacks called as one, in order (``paddle.hapi.callbacks.CallbackList``)."""

    def __init__(self, callbacks=None):
        self.callbacks = list(callbacks or [])
        self.params: dict = {}
        self.model = None

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self) -> int:
        return len(self.callbacks)

    def append(self, callback: Callback) -> None:
        self.callbacks.append(callback)

    def set_params(self, params: dict) -> None:
        self.params = params
        for c in self.callbacks:
            c.set_params(params)

    def set_model(self, model) -> None:
        self.model = model
        for c in self.callbacks:
            c.set_model(model)

    def _call(self, name: str, *args) -> None:
        for c in self.callbacks:
            getattr(c, name)(*args)

    def on_begin(self, mode: str, logs=None) -> None:
        """``on_train_begin``, ``on_eval_begin`` or ``on_predict_begin`` of every callback."""
        self._call(f"on_{mode}_begin", logs)

    def on_end(self, mode: str, logs=None) -> None:
        self._call(f"on_{mode}_end", logs)

    def on_epoch_begin(self, epoch=None, logs=None) -> None:
        self._call("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch=None, logs=None) -> None:
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, mode: str, step=None, logs=None) -> None:
        self._call(f"on_{mode}_batch_begin", step, logs)

    def on_batch_end(self, mode: str, step=None, logs=None) -> None:
        self._call(f"on_{mode}_batch_end", step, logs)


# ----------------------------------------------------------------------------------------------
# progress
# ----------------------------------------------------------------------------------------------
class ProgBarLogger(Callback):
    """Progress and values of training, evaluation and prediction on stdout, as
    ``paddle.callbacks.ProgBarLogger``, in Paddle's format::

        Epoch 1/2
        step 10/23 - loss: 0.5012 - acc: 0.8020 - ETA: 1s - 12ms/step

    The loss shown after a step is that batch's; metrics are averages over the epoch so far; the
    line that ends an epoch or an evaluation shows the averages over the whole epoch (loss too).

    What is printed depends on ``verbose`` and on whether stdout is a terminal:

    - ``0``: nothing.
    - ``1`` (progress bar): on a terminal a bar redrawn in place, with the speed and the time left;
      elsewhere only the line that ends each epoch and each evaluation.
    - ``2`` (``fit``'s default): on a terminal the same live bar; elsewhere a line every
      ``log_freq`` steps and at the end.
    - ``3``: lines every ``log_freq`` steps with the mean data-loading time, batch time and
      samples per second, everywhere.

    Paddle picks the display from ``verbose`` alone and writes carriage returns into log files;
    oar never writes a ``\\r`` where it cannot redraw.
    """

    def __init__(self, log_freq: int = 1, verbose: int = 2):
        super().__init__()
        if isinstance(log_freq, bool) or not isinstance(log_freq, (int, np.integer)) or log_freq < 1:
            raise ArgumentError(f"ProgBarLogger: log_freq must be a positive int, got {log_freq!r}")
        if verbose not in (0, 1, 2, 3):
            raise ArgumentError(f"ProgBarLogger: verbose must be 0, 1, 2 or 3, got {verbose!r}")
        self.log_freq = int(log_freq)
        self.verbose = verbose
        self.epochs = None
        self.steps = None

    def _is_print(self) -> bool:
        return bool(self.verbose) and _local_rank() == 0

    def _live(self) -> bool:
        """A bar redrawn in place: verbose 1 or 2 on a terminal."""
        return self.verbose in (1, 2) and stream_is_terminal(sys.stdout)

    def _new_timer(self) -> dict:
        return {"data_time": 0.0, "batch_time": 0.0, "count": 0, "samples": 0, "batch_start": time.perf_counter(),
                "data_end": time.perf_counter()}

    def _values(self, logs: dict, mode: str) -> list:
        names = getattr(self, f"{mode}_metrics")
        values = [(k, logs[k]) for k in names if k in logs]
        timer = getattr(self, f"_{mode}_timer", None)
        if self.verbose == 3 and timer is not None:
            count = timer["count"] or 1
            total = timer["data_time"] + timer["batch_time"]
            values.append(("avg_reader_cost", f"{timer['data_time'] / count:.5f} sec"))
            values.append(("avg_batch_cost", f"{timer['batch_time'] / count:.5f} sec"))
            values.append(("ips", f"{timer['samples'] / total if total else 0.0:.5f} samples/sec"))
            timer.update(data_time=0.0, batch_time=0.0, count=0, samples=0)
        return values

    def _batch_begin(self, mode: str) -> None:
        timer = getattr(self, f"_{mode}_timer")
        timer["data_end"] = time.perf_counter()
        timer["data_time"] += timer["data_end"] - timer["batch_start"]

    def _batch_end(self, mode: str, logs: dict) -> None:
        step = getattr(self, f"{mode}_step") + 1
        setattr(self, f"{mode}_step", step)
        timer = getattr(self, f"_{mode}_timer")
        timer["batch_time"] += time.perf_counter() - timer["data_end"]
        timer["count"] += 1
        timer["samples"] += int(logs.get("batch_size", 1))
        setattr(self, f"{mode}_samples", getattr(self, f"{mode}_samples") + int(logs.get("batch_size", 1)))
        if self._is_print():
            steps = getattr(self, f"{mode}_steps")
            last = steps is not None and step >= steps
            bar = getattr(self, f"{mode}_progbar")
            if self._live():
                if not last:  # the last step is drawn by the epoch's (or evaluation's) end, with its averages
                    bar.update(step, self._values(logs, mode))
            elif self.verbose >= 2 and step % self.log_freq == 0 and not last:
                bar.update(step, self._values(logs, mode))
        timer["batch_start"] = time.perf_counter()

    def _end(self, mode: str, logs: dict) -> None:
        if self._is_print():
            bar = getattr(self, f"{mode}_progbar")
            bar.update(getattr(self, f"{mode}_step"), self._values(logs, mode), force=True)
            bar.finish_line()

    def _progbar(self, steps) -> ProgressBar:
        return ProgressBar(num=steps, verbose=self.verbose, dynamic=self._live())

    # -- train ---------------------------------------------------------------------------------
    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        self.train_metrics = list(self.params.get("metrics") or [])
        if self._is_print():
            print("The loss value printed in the log is the current step, and the metric is the average value of "
                  "previous steps; the line that ends an epoch or an evaluation shows averages over all of it.",
                  flush=True)

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params.get("steps")
        self.train_steps = self.steps
        self.epoch = epoch
        self.train_step = 0
        self.train_samples = 0
        if self.epochs and self._is_print():
            print(f"Epoch {epoch + 1}/{self.epochs}", flush=True)
        self.train_progbar = self._progbar(self.steps)
        self._train_timer = self._new_timer()

    def on_train_batch_begin(self, step, logs=None):
        self._batch_begin("train")

    def on_train_batch_end(self, step, logs=None):
        self._batch_end("train", logs or {})

    def on_epoch_end(self, epoch, logs=None):
        self._end("train", logs or {})

    # -- eval ----------------------------------------------------------------------------------
    def on_eval_begin(self, logs=None):
        logs = logs or {}
        self.eval_steps = logs.get("steps")
        self.eval_metrics = list(logs.get("metrics") or [])
        self.eval_step = 0
        self.eval_samples = 0
        self.eval_progbar = self._progbar(self.eval_steps)
        self._eval_timer = self._new_timer()
        if self._is_print():
            print("Eval begin...", flush=True)

    def on_eval_batch_begin(self, step, logs=None):
        self._batch_begin("eval")

    def on_eval_batch_end(self, step, logs=None):
        self._batch_end("eval", logs or {})

    def on_eval_end(self, logs=None):
        self._end("eval", logs or {})
        if self._is_print():
            print(f"Eval samples: {self.eval_samples}", flush=True)

    # -- predict -------------------------------------------------------------------------------
    def on_predict_begin(self, logs=None):
        logs = logs or {}
        self.predict_steps = logs.get("steps")
        self.predict_metrics = []
        self.predict_step = 0
        self.predict_samples = 0
        self.predict_progbar = self._progbar(self.predict_steps)
        self._predict_timer = self._new_timer()
        if self._is_print():
            print("Predict begin...", flush=True)

    def on_predict_batch_begin(self, step, logs=None):
        self._batch_begin("predict")

    def on_predict_batch_end(self, step, logs=None):
        self._batch_end("predict", logs or {})

    def on_predict_end(self, logs=None):
        self._end("predict", logs or {})
        if self._is_print():
            print(f"Predict samples: {self.predict_samples}", flush=True)


# ----------------------------------------------------------------------------------------------
# checkpoints and stopping
# ----------------------------------------------------------------------------------------------
class ModelCheckpoint(Callback):
    """Save the model (``Model.save``: ``.pdparams`` and ``.pdopt``) to ``save_dir/<epoch>``
    every ``save_freq`` epochs (epochs 0, save_freq, 2 * save_freq, ...) and to ``save_dir/final``
    at the end of training, as ``paddle.callbacks.ModelCheckpoint``. Without a ``save_dir``
    nothing is saved; ``fit(save_dir=..., save_freq=...)`` configures the default one."""

    def __init__(self, save_freq: int = 1, save_dir: str | None = None):
        super().__init__()
        if isinstance(save_freq, bool) or not isinstance(save_freq, (int, np.integer)) or save_freq < 1:
            raise ArgumentError(f"ModelCheckpoint: save_freq must be a positive int, got {save_freq!r}")
        self.save_freq = int(save_freq)
        self.save_dir = save_dir
        self.epoch = 0

    def _is_save(self) -> bool:
        return self.model is not None and bool(self.save_dir) and _local_rank() == 0

    def on_epoch_begin(self, epoch=None, logs=None):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        if self._is_save() and self.epoch % self.save_freq == 0:
            self._save(os.path.join(self.save_dir, str(epoch)))

    def on_train_end(self, logs=None):
        if self._is_save():
            self._save(os.path.join(self.save_dir, "final"))

    def _save(self, path: str) -> None:
        if self.params.get("verbose", 1):
            print(f"save checkpoint at {os.path.abspath(path)}", flush=True)
        self.model.save(path)


def _monitor_mode(name: str, monitor: str, mode: str) -> str:
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{name}: mode {mode!r} is unknown, using 'auto'", stacklevel=3)
        mode = "auto"
    if mode == "auto":  # Paddle's rule: a name with 'acc' in it is better when larger
        mode = "max" if "acc" in monitor else "min"
    return mode


class EarlyStopping(Callback):
    """Stop training when the evaluated ``monitor`` (``'loss'`` or a metric name) has not improved
    by more than ``min_delta`` for more than ``patience`` evaluations, as
    ``paddle.callbacks.EarlyStopping``. ``mode`` is ``'min'``, ``'max'`` or ``'auto'`` (``'max'``
    for names containing ``acc``); with a ``baseline`` the value must first beat it.

    With ``save_best_model`` the best model is written to ``save_dir/best_model`` when ``fit`` has a
    ``save_dir`` (as in Paddle) and, unlike Paddle, the network gets the best evaluation's weights
    back when training stops early: the model you are left with is the best one, not the one
    ``patience`` evaluations past it. It needs ``eval_data`` in ``fit``.
    """

    def __init__(self, monitor: str = "loss", mode: str = "auto", patience: int = 0, verbose: int = 1,
                 min_delta: float = 0, baseline: float | None = None, save_best_model: bool = True):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.save_best_model = save_best_model
        self.save_dir = None  # set by fit's save_dir
        self.mode = _monitor_mode("EarlyStopping", monitor, mode)
        self.monitor_op = np.greater if self.mode == "max" else np.less
        self.min_delta = abs(min_delta) if self.mode == "max" else -abs(min_delta)
        self.wait_epoch = 0
        self.stopped_epoch = 0
        self.best_value = None
        self.best_weights = None
        self.best_epoch = None

    def on_train_begin(self, logs=None):
        self.wait_epoch = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = None
        if self.baseline is not None:
            self.best_value = self.baseline
        else:
            self.best_value = np.inf if self.mode == "min" else -np.inf

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn(f"EarlyStopping: the evaluation logs have no {self.monitor!r}; monitor must be 'loss' or a "
                          f"metric name ({sorted(k for k in (logs or {}) if k not in ('step', 'batch_size'))})",
                          stacklevel=2)
            return
        current = _scalar(logs[self.monitor])
        if current is None:
            return
        if self.monitor_op(current - self.min_delta, self.best_value):
            self.best_value = current
            self.best_epoch = self.stopped_epoch
            self.wait_epoch = 0
            if self.save_best_model:
                self.best_weights = {k: v.numpy() for k, v in self.model.network.state_dict().items()}
                if self.save_dir is not None:
                    self.model.save(os.path.join(self.save_dir, "best_model"))
        else:
            self.wait_epoch += 1
        if self.wait_epoch > self.patience:
            self.model.stop_training = True
            if self.save_best_model and self.best_weights is not None:
                self.model.network.set_state_dict(self.best_weights)
            if self.verbose > 0 and _local_rank() == 0:
                print(f"Epoch {self.stopped_epoch + 1}: Early stopping.", flush=True)
                if self.save_best_model and self.best_weights is not None:
                    print(f"Restored the weights of evaluation {self.best_epoch + 1} "
                          f"({self.monitor}: {self.best_value:.4f}).", flush=True)
                if self.save_best_model and self.save_dir is not None:
                    print(f"Best checkpoint has been saved at {os.path.abspath(os.path.join(self.save_dir, 'best_model'))}",
                          flush=True)
        self.stopped_epoch += 1


# ----------------------------------------------------------------------------------------------
# learning rate
# ----------------------------------------------------------------------------------------------
class LRScheduler(Callback):
    """Step the optimizer's learning-rate scheduler (``oar.optimizer.lr.LRScheduler``) after every
    batch (``by_step=True``, the default) or after every epoch (``by_epoch=True``), as
    ``paddle.callbacks.LRScheduler``. ``fit`` adds one with the defaults unless you pass your own.

    A ``ReduceOnPlateau`` scheduler needs a metric to step, so this callback leaves it alone (use
    the ``ReduceLROnPlateau`` callback, or step it yourself); Paddle's callback fails on it.
    """

    def __init__(self, by_step: bool = True, by_epoch: bool = False):
        super().__init__()
        if by_step and by_epoch:
            raise ArgumentError("LRScheduler: by_step and by_epoch are mutually exclusive")
        self.by_step = by_step
        self.by_epoch = by_epoch

    def _step(self) -> None:
        from oar.optimizer.lr import LRScheduler as Scheduler
        from oar.optimizer.lr import ReduceOnPlateau

        optimizer = getattr(self.model, "_optimizer", None)
        scheduler = getattr(optimizer, "_learning_rate", None)
        if isinstance(scheduler, Scheduler) and not isinstance(scheduler, ReduceOnPlateau):
            scheduler.step()

    def on_epoch_end(self, epoch, logs=None):
        if self.by_epoch:
            self._step()

    def on_train_batch_end(self, step, logs=None):
        if self.by_step:
            self._step()


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by ``factor`` when the evaluated ``monitor`` has not improved by
    more than ``min_delta`` for ``patience`` evaluations, then wait ``cooldown`` evaluations;
    never below ``min_lr``. As ``paddle.callbacks.ReduceLROnPlateau``: it acts after each
    evaluation (``fit`` needs ``eval_data``) and on an optimizer whose learning rate is a float.
    """

    def __init__(self, monitor: str = "loss", factor: float = 0.1, patience: int = 10, verbose: int = 1,
                 mode: str = "auto", min_delta: float = 1e-4, cooldown: int = 0, min_lr: float = 0):
        super().__init__()
        if factor >= 1.0:
            raise ArgumentError(f"ReduceLROnPlateau: factor must be < 1.0 (new_lr = lr * factor), got {factor}")
        self.monitor = monitor
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.mode = _monitor_mode("ReduceLROnPlateau", monitor, mode)
        self._reset()

    def _reset(self) -> None:
        if self.mode == "min":
            self.monitor_op = lambda a, b: np.less(a, b - self.min_delta)
            self.best = np.inf
        else:
            self.monitor_op = lambda a, b: np.greater(a, b + self.min_delta)
            self.best = -np.inf
        self.cooldown_counter = 0
        self.wait = 0
        self.epoch = 0

    def on_train_begin(self, logs=None):
        self._reset()

    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def on_eval_end(self, logs=None):
        if logs is None or self.monitor not in logs:
            warnings.warn(f"ReduceLROnPlateau: the evaluation logs have no {self.monitor!r}; monitor must be 'loss' "
                          f"or a metric name", stacklevel=2)
            return
        optimizer = getattr(self.model, "_optimizer", None)
        if optimizer is None or not isinstance(getattr(optimizer, "_learning_rate", None), float):
            warnings.warn("ReduceLROnPlateau: the optimizer's learning rate is not a float (an LRScheduler drives it, "
                          "or there is no optimizer); leaving it alone", stacklevel=2)
            return
        current = _scalar(logs[self.monitor])
        if current is None:
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self.monitor_op(current, self.best):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = optimizer.get_lr()
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.set_lr(new_lr)
                    if self.verbose > 0 and _local_rank() == 0:
                        print(f"Epoch {self.epoch + 1}: ReduceLROnPlateau reducing learning rate to {new_lr}.",
                              flush=True)
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
        self.epoch += 1


# ----------------------------------------------------------------------------------------------
# logging to files
# ----------------------------------------------------------------------------------------------
class VisualDL(Callback):
    """Write the training and evaluation values as TensorBoard event files in ``log_dir``, which
    TensorBoard and VisualDL both read (``tensorboard --logdir <log_dir>``). As
    ``paddle.callbacks.VisualDL``, with tags ``train/<name>`` per training step (and
    ``train/lr``, the learning rate) and ``eval/<name>`` per evaluation, stepped by epoch.

    The files are written through tensorboardX (``pip install 'oar-nn[vis]'``); Paddle's writes
    through the visualdl package, whose files only VisualDL reads.
    """

    def __init__(self, log_dir: str):
        super().__init__()
        if importlib.util.find_spec("tensorboardX") is None:
            raise ImportError(f"VisualDL writes TensorBoard event files through tensorboardX, which is not "
                              f"installed: {VIS_EXTRA} (or pip install tensorboardX)")
        self.log_dir = os.fspath(log_dir)
        self.epochs = None
        self.steps = None
        self.epoch = 0
        self.train_step = 0
        self._is_fit = False
        self.writer = None

    def _is_write(self) -> bool:
        return _local_rank() == 0

    def _writer(self):
        if self.writer is None:
            from tensorboardX import SummaryWriter

            self.writer = SummaryWriter(logdir=self.log_dir)
        return self.writer

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        self.train_metrics = list(self.params.get("metrics") or [])
        self._is_fit = True
        self.train_step = 0

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params.get("steps")
        self.epoch = epoch

    def _updates(self, logs: dict, mode: str, step: int) -> None:
        writer = self._writer()
        for name in getattr(self, f"{mode}_metrics"):
            value = _scalar(logs.get(name))
            if value is not None:
                writer.add_scalar(f"{mode}/{name}", value, step)

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        if self._is_write():
            self._updates(logs or {}, "train", self.train_step)
            optimizer = getattr(self.model, "_optimizer", None)
            if optimizer is not None:
                self._writer().add_scalar("train/lr", float(optimizer.get_lr()), self.train_step)

    def on_eval_begin(self, logs=None):
        self.eval_metrics = list((logs or {}).get("metrics") or [])

    def on_eval_end(self, logs=None):
        if self._is_write():
            self._updates(logs or {}, "eval", self.epoch)
            if self._is_fit:
                self._writer().flush()
            else:
                self._close()

    def on_train_end(self, logs=None):
        self._close()
        self._is_fit = False


class WandbCallback(Callback):
    """Log the training and evaluation values to Weights & Biases, as
    ``paddle.callbacks.WandbCallback``: ``train/<name>`` against ``train/step`` after every
    training batch, ``eval/<name>`` against ``epoch`` after every evaluation. The keyword
    arguments go to ``wandb.init`` (a run already started is reused, with a warning). Only rank 0
    logs. Needs ``pip install wandb`` (and ``wandb login``); wandb is not a dependency of oar.
    """

    def __init__(self, project=None, entity=None, name=None, dir=None, mode=None, job_type=None, **kwargs):
        super().__init__()
        self.wandb = try_import("wandb", "WandbCallback logs through wandb, which is not installed yet: install it "
                                         "with `pip install wandb` (then `wandb login`)")
        self.wandb_args = {"project": project, "name": name, "entity": entity, "dir": dir, "mode": mode,
                           "job_type": job_type, **kwargs}
        self._run = None
        self._is_fit = False
        self.train_step = 0
        self.epoch = 0
        self.train_metrics: list = []
        self.eval_metrics: list = []
        _ = self.run  # starts the run now, as Paddle's does

    def _is_write(self) -> bool:
        return _local_rank() == 0

    @property
    def run(self):
        """The wandb run (started on first use; on ranks other than 0, None)."""
        if self._is_write() and self._run is None:
            if self.wandb.run is not None:
                warnings.warn("There is a wandb run already in progress and newly created instances of "
                              "`WandbCallback` will reuse this run. If this is not desired, call `wandb.finish()` "
                              "before instantiating `WandbCallback`.", stacklevel=2)
                self._run = self.wandb.run
            else:
                self._run = self.wandb.init(**self.wandb_args)
        return self._run

    def on_train_begin(self, logs=None):
        self.epochs = self.params.get("epochs")
        self.train_metrics = list(self.params.get("metrics") or [])
        self._is_fit = True
        self.train_step = 0
        if self._is_write():
            self.run.define_metric("train/step")
            self.run.define_metric("train/*", step_metric="train/step")
            self.run.define_metric("epoch")
            self.run.define_metric("eval/*", step_metric="epoch")

    def on_epoch_begin(self, epoch=None, logs=None):
        self.steps = self.params.get("steps")
        self.epoch = epoch

    def _updates(self, logs: dict, mode: str) -> None:
        values = {"train/step": self.train_step} if mode == "train" else {"epoch": self.epoch}
        for name in getattr(self, f"{mode}_metrics"):
            value = _scalar(logs.get(name))
            if value is not None:
                values[f"{mode}/{name}"] = value
        self.run.log(values)

    def on_train_batch_end(self, step, logs=None):
        self.train_step += 1
        if self._is_write():
            self._updates(logs or {}, "train")

    def on_eval_begin(self, logs=None):
        self.eval_metrics = list((logs or {}).get("metrics") or [])

    def on_eval_end(self, logs=None):
        if self._is_write():
            self._updates(logs or {}, "eval")
            if not self._is_fit:  # a lone evaluate() ends its run
                self.run.finish()
                self._run = None

    def on_train_end(self, logs=None):
        if self._is_write():
            self.run.finish()
            self._run = None
        self._is_fit = False


class TrainingCurves(Callback):
    """Record the loss and the metrics of every epoch, for training and evaluation, and draw them
    into a PNG at ``save_path`` at the end of ``fit`` (one panel per value, epochs on the x axis).
    ``history`` holds the numbers::

        {'epoch': [1, 2], 'train': {'loss': [..], 'acc': [..]},
         'eval_epoch': [1, 2], 'eval': {'loss': [..], 'acc': [..]}}

    oar's addition (Paddle has no such callback). ``fit`` adds one that writes
    ``save_dir/curves.png`` when it has a ``save_dir`` and matplotlib is installed
    (``pip install 'oar-nn[vis]'``); drawing uses matplotlib's Agg backend, without a display.
    """

    def __init__(self, save_path: str = "curves.png"):
        super().__init__()
        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError(f"TrainingCurves draws with matplotlib, which is not installed: {VIS_EXTRA} "
                              f"(or pip install matplotlib)")
        self.save_path = os.fspath(save_path)
        self.history: dict = {}
        self._epoch = None
        self._fitting = False

    def on_train_begin(self, logs=None):
        self.history = {"epoch": [], "train": {}, "eval_epoch": [], "eval": {}}
        self._names = list(self.params.get("metrics") or [])
        self._fitting = True

    def on_epoch_begin(self, epoch=None, logs=None):
        self._epoch = epoch

    def _record(self, part: str, logs: dict) -> None:
        for name in self._names:
            value = _scalar((logs or {}).get(name))
            self.history[part].setdefault(name, []).append(np.nan if value is None else value)

    def on_epoch_end(self, epoch, logs=None):
        self.history["epoch"].append(epoch + 1)
        self._record("train", logs)

    def on_eval_end(self, logs=None):
        if self._fitting and self._epoch is not None:
            self.history["eval_epoch"].append(self._epoch + 1)
            self._record("eval", logs)

    def on_train_end(self, logs=None):
        self._fitting = False
        if self.history.get("epoch") and _local_rank() == 0:
            self.draw(self.save_path)

    def draw(self, path: str) -> str:
        """Draw ``history`` into the PNG ``path`` (written atomically); returns the path."""
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
        from matplotlib.ticker import MaxNLocator

        names = [n for n in self._names if n in self.history["train"] or n in self.history["eval"]]
        if not names:
            raise ArgumentError("TrainingCurves.draw: nothing recorded yet")
        figure = Figure(figsize=(4.2 * len(names), 3.4), dpi=100)
        FigureCanvasAgg(figure)
        for i, name in enumerate(names):
            ax = figure.add_subplot(1, len(names), i + 1)
            if name in self.history["train"]:
                ax.plot(self.history["epoch"], self.history["train"][name], "o-", label="train")
            if name in self.history["eval"]:
                ax.plot(self.history["eval_epoch"], self.history["eval"][name], "s--", label="eval")
            ax.set_title(name)
            ax.set_xlabel("epoch")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.grid(True, alpha=0.3)
            ax.legend()
        figure.tight_layout()
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        tmp = os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.tmp")
        try:
            figure.savefig(tmp, format="png")
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path


# ----------------------------------------------------------------------------------------------
# what fit, evaluate and predict use
# ----------------------------------------------------------------------------------------------
def config_callbacks(callbacks=None, model=None, batch_size=None, epochs=None, steps=None, log_freq: int = 2,
                     verbose: int = 2, save_freq: int = 1, save_dir=None, metrics=None, mode: str = "train"):
    """The CallbackList of a run: the user's callbacks plus the defaults (see the module docstring)."""
    cbks = callbacks or []
    cbks = list(cbks) if isinstance(cbks, (list, tuple)) else [cbks]
    for c in cbks:
        if not isinstance(c, Callback):
            raise ArgumentError(f"callbacks must be oar.callbacks.Callback instances, got {type(c).__name__}")
    if verbose and not any(isinstance(c, ProgBarLogger) for c in cbks):
        cbks = [ProgBarLogger(log_freq, verbose=verbose)] + cbks
    if not any(isinstance(c, ModelCheckpoint) for c in cbks):
        cbks = cbks + [ModelCheckpoint(save_freq, save_dir)]
    for c in cbks:
        if isinstance(c, EarlyStopping):
            c.save_dir = save_dir
    if not any(isinstance(c, LRScheduler) for c in cbks):
        cbks = cbks + [LRScheduler()]
    if (mode == "train" and save_dir and not any(isinstance(c, TrainingCurves) for c in cbks)
            and importlib.util.find_spec("matplotlib") is not None):
        cbks = cbks + [TrainingCurves(os.path.join(save_dir, "curves.png"))]
    cbk_list = CallbackList(cbks)
    cbk_list.set_model(model)
    cbk_list.set_params({
        "batch_size": batch_size,
        "epochs": epochs,
        "steps": steps,
        "verbose": verbose,
        "metrics": (metrics or []) if mode != "test" else [],
    })
    return cbk_list


__all__ = [
    "Callback", "CallbackList", "ProgBarLogger", "ModelCheckpoint", "EarlyStopping", "LRScheduler",
    "ReduceLROnPlateau", "VisualDL", "TrainingCurves", "config_callbacks",
]
