"""``oar.Model``: training, evaluation, prediction and checkpoints of a network in a few calls, as
``paddle.Model`` (Paddle's high-level API, dynamic-graph mode).

A loop over data runs ``train_batch`` / ``eval_batch`` / ``predict_batch`` per batch and calls the
callbacks (``oar.callbacks``) around every batch, epoch and run. Each batch from the data is
flattened to a list; its first entries are the network's inputs (as many as ``inputs`` specs, or
as ``forward`` has required arguments) and the rest are the labels, which go to the loss and the
metrics after the network's outputs: ``loss(*outputs, *labels)``.

Where oar differs from Paddle, on purpose:

- the loss that ``evaluate`` returns, and the one an epoch ends with, is the mean over all the
  samples; Paddle reports the last batch's;
- ``stop_training`` is reset at the start of each ``fit`` (Paddle's stays set after an early stop or
  ``num_iters``, so the next ``fit`` would stop after one epoch);
- ``load`` moves optimizer state onto parameters by their place in the network, so a checkpoint
  loads into a fresh instance of the network (its parameters have new names) with its optimizer
  state; Paddle silently drops that state;
- ``save(path, training=False)`` needs ``oar.jit.save`` and says so while it is not available.

Mixed precision (``prepare(amp_configs=...)``) comes with the oar-amp plugin (``oar.amp``), which
is imported only when AMP is asked for: oar-nn installs and runs without it, and says what to
install. It follows Paddle's dynamic-graph Model -- the network runs in ``oar.amp.auto_cast`` at
the chosen level, O2 ``decorate``s the network and the optimizer at ``prepare``, float16 trains
through a ``GradScaler`` whose state ``save``/``load`` keep in ``path.pdscaler`` -- except that

- ``dtype`` (``'float16'``, Paddle's, or ``'bfloat16'``) is a key of ``amp_configs``; bfloat16
  trains without loss scaling (Paddle makes a scaler that turns itself off);
- the loss is computed in the block too (at O1 the losses are on the black list, so they run in
  float32 from low-precision outputs, as paddle.amp's own training step writes it); Paddle's Model
  computes it after the block;
- ``eval_batch``, ``predict_batch`` and ``save(path, training=False)`` run the network in the same
  block (Paddle's run it outside, where an O2 network's low-precision weights meet float32 inputs).

Across ranks (a job that ``python -m oar.distributed.launch`` started, ``PADDLE_TRAINERS_NUM`` > 1),
as Paddle's dynamic-graph Model: ``prepare`` wraps the network in ``oar.DataParallel`` (unless it is
one already), so every backward averages the gradients over the ranks; a Dataset is batched by a
``DistributedBatchSampler``, which gives each rank its own share and reshuffles every pass with the
same seed on every rank. In a pass of ``fit`` or ``evaluate`` over data such a sampler shards, each
batch's outputs and labels are gathered from every rank before the metrics see them, less the
samples the sampler repeated to pad its last round, so the metrics are those of the whole data and
the same on every rank (so are the decisions of ``EarlyStopping`` and ``ReduceLROnPlateau``); the
loss of a training batch is the mean over the ranks, and ``evaluate``'s loss is computed on the
gathered outputs, so that ``evaluate`` returns what one process would on the same data. Only rank
0 prints and saves (``save`` on the others does nothing; call ``oar.distributed.barrier()`` before
other ranks ``load`` what rank 0 saved). The ranks need oar-distributed, imported only then:
oar-nn installs and runs without it. ``train_batch``, ``eval_batch`` and ``predict_batch`` called
directly work on this rank's batch alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import math
import os
import warnings

import numpy as np

import oar
from oar.errors import ArgumentError, OarError
from oar.hapi.callbacks import EarlyStopping, ReduceLROnPlateau, _local_rank, config_callbacks
from oar.hapi.summary import summary as _summary
from oar.io import DataLoader, Dataset, DistributedBatchSampler, IterableDataset
from oar.nn.layer.layers import Layer
from oar.ops import Tensor


class FeatureUnavailableError(OarError, NotImplementedError):
    """A feature that needs a part of oar that is not installed or not written yet."""


def _to_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _flatten(data) -> list:
    """A batch as a flat list: nested lists and tuples in order, dicts by sorted key (as Paddle)."""
    if isinstance(data, (list, tuple)):
        return [leaf for item in data for leaf in _flatten(item)]
    if isinstance(data, dict):
        return [leaf for key in sorted(data) for leaf in _flatten(data[key])]
    return [data]


def _as_tensor(value) -> Tensor:
    return value if isinstance(value, Tensor) else oar.to_tensor(np.asarray(value))


def _batch_size(value) -> int:
    shape = value.shape if isinstance(value, Tensor) else np.shape(value)
    return int(shape[0]) if len(shape) else 1


def _positive_int(value, what: str, allow_none: bool = False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ArgumentError(f"{what} must be a positive int{' or None' if allow_none else ''}, got {value!r}")
    return int(value)


def _count_forward_inputs(network: Layer) -> int:
    """How many leading entries of a batch are inputs when no ``inputs`` specs are given: the
    required positional arguments of ``forward`` (``*args`` counts as one), at least one."""
    try:
        parameters = inspect.signature(network.forward).parameters.values()
    except (TypeError, ValueError):
        return 1
    count = 0
    for p in parameters:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            count += 1
        elif p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD) \
                and p.default is inspect.Parameter.empty:
            count += 1
    return max(count, 1)


def _verify_spec(specs, what: str):
    """None, or the list of specs (``oar.static.InputSpec`` or anything with a ``shape``)."""
    if specs is None:
        return None
    if isinstance(specs, dict):
        specs = list(specs.values())
    specs = _to_list(specs)
    for spec in specs:
        if not hasattr(spec, "shape") or isinstance(spec, (Tensor, np.ndarray)):
            raise ArgumentError(
                f"Model: {what} must be an InputSpec, or a list, tuple or dict of InputSpecs (objects with a shape, "
                f"dtype and name), got {type(spec).__name__}"
            )
    return specs


def _input_spec(tensor: Tensor, name: str):
    """The InputSpec of an input seen in a batch, its batch dimension left open."""
    shape = [None, *tensor.shape[1:]] if tensor.ndim else []
    try:
        from oar.static import InputSpec
    except ImportError:  # an oar-core without the static graph: a plain record serves summary
        from types import SimpleNamespace

        return SimpleNamespace(shape=shape, dtype=tensor.dtype, name=name)
    return InputSpec(shape, tensor.dtype, name)


# Paddle's amp_configs keys (python/paddle/hapi/model.py, Model._prepare_amp), plus oar's ``dtype``.
AMP_LEVELS = ("O0", "O1", "O2")
AMP_DTYPES = ("float16", "bfloat16")
AMP_LIST_KEYS = ("custom_white_list", "custom_black_list")
AMP_SCALER_KEYS = ("init_loss_scaling", "incr_ratio", "decr_ratio", "incr_every_n_steps", "decr_every_n_nan_or_inf",
                   "use_dynamic_loss_scaling")
# Keys Paddle accepts for its static-graph Model only, or refuses with a reason.
_AMP_REFUSED_KEYS = {
    "use_fp16_guard": "is supported in Paddle's static-graph mode only; oar's Model runs in dynamic-graph mode",
    "custom_black_varnames": "names variables of Paddle's static-graph programs; oar's Model runs in dynamic-graph "
                             "mode (use custom_black_list to keep ops in float32)",
    "use_pure_fp16": "is an invalid parameter: the level of mixed precision training depends only on 'O1' or 'O2'",
}


@dataclasses.dataclass(frozen=True)
class AmpSettings:
    """What ``prepare(amp_configs=...)`` asked for: the ``auto_cast`` level, dtype and custom
    lists, and the ``GradScaler`` arguments given (float16 only)."""

    level: str
    dtype: str
    lists: dict
    scaler: dict


def _config_value(value):
    # An enum member (oar-run's typed configs) stands for its value.
    return getattr(value, "value", value)


def parse_amp_configs(amp_configs) -> AmpSettings | None:
    """``Model.prepare``'s ``amp_configs`` checked as Paddle checks them; None for float32 training.

    A level (``'O0'``, ``'O1'``, ``'O2'``), or a dict whose ``level`` defaults to ``'O1'``, as in
    Paddle, with any of the ``auto_cast`` lists (``custom_white_list``, ``custom_black_list``), the
    ``GradScaler`` arguments (``init_loss_scaling``, ``incr_ratio``, ``decr_ratio``,
    ``incr_every_n_steps``, ``decr_every_n_nan_or_inf``, ``use_dynamic_loss_scaling``) and, in
    oar, ``dtype`` (``'float16'``, the default as in Paddle, or ``'bfloat16'``).

    >>> from oar.hapi.model import parse_amp_configs
    >>> parse_amp_configs("O0") is None
    True
    >>> parse_amp_configs({"dtype": "bfloat16", "custom_black_list": ["conv2d"]})
    AmpSettings(level='O1', dtype='bfloat16', lists={'custom_black_list': ['conv2d']}, scaler={})
    """
    if not amp_configs:
        return None
    if isinstance(amp_configs, str) or isinstance(_config_value(amp_configs), str):
        amp_configs = {"level": amp_configs}
    elif not isinstance(amp_configs, dict):
        raise ArgumentError(f"Model.prepare: amp_configs must be None, a level ('O0', 'O1', 'O2') or a dict, "
                            f"got {type(amp_configs).__name__}")
    level = _config_value(amp_configs.get("level", "O1"))
    if level not in AMP_LEVELS:
        raise ArgumentError(f"Model.prepare: the level of amp_configs should be 'O0', 'O1' or 'O2', got {level!r}")
    if level == "O0":  # float32 training: Paddle ignores the other keys then
        return None
    for key, reason in _AMP_REFUSED_KEYS.items():
        if key in amp_configs:
            raise ArgumentError(f"Model.prepare: amp_configs[{key!r}] {reason}")
    accepted = ("level", "dtype", *AMP_LIST_KEYS, *AMP_SCALER_KEYS)
    unknown = [key for key in amp_configs if key not in accepted]
    if unknown:
        raise ArgumentError(f"Model.prepare: amp_configs has keys {unknown} that no mixed precision API accepts; "
                            f"the keys are {list(accepted)}")
    dtype = _config_value(amp_configs.get("dtype", "float16"))
    dtype = getattr(dtype, "name", dtype)  # oar.bfloat16 as well as 'bfloat16'
    if dtype not in AMP_DTYPES:
        raise ArgumentError(f"Model.prepare: amp_configs['dtype'] should be 'float16' or 'bfloat16', got {dtype!r}")
    lists = {key: amp_configs[key] for key in AMP_LIST_KEYS if amp_configs.get(key) is not None}
    scaler = {key: amp_configs[key] for key in AMP_SCALER_KEYS if key in amp_configs}
    if scaler and dtype != "float16":
        warnings.warn(f"Model.prepare: amp_configs sets {sorted(scaler)}, but loss scaling is for float16; "
                      f"{dtype} trains without a GradScaler and these keys have no effect", UserWarning, stacklevel=3)
        scaler = {}
    return AmpSettings(level, dtype, lists, scaler)


def _amp_module():
    """``oar.amp``. Imported on first use, not with oar.hapi: oar-nn installs and runs without oar-amp."""
    try:
        return importlib.import_module("oar.amp")
    except ModuleNotFoundError as exc:
        if exc.name != "oar.amp":
            raise
        raise FeatureUnavailableError(
            "Model.prepare: amp_configs asks for automatic mixed precision, which comes with the oar-amp package "
            "(oar.amp); it is not installed. From a clone of oar's repository: pip install ./plugins/oar-amp. "
            "Or pass amp_configs=None (or 'O0') to train in float32"
        ) from None


def _trainers_num() -> int:
    """How many ranks the job has, as the launcher's environment says (1 without one)."""
    try:
        return max(int(os.environ.get("PADDLE_TRAINERS_NUM", "1")), 1)
    except ValueError:
        return 1


def _distributed_module():
    """``oar.distributed``. Imported only in a job of several ranks, not with oar.hapi: oar-distributed
    depends on oar-nn, and oar-nn installs and runs without it."""
    try:
        return importlib.import_module("oar.distributed")
    except ModuleNotFoundError as exc:
        if exc.name not in ("oar.distributed", "oar"):
            raise
        raise FeatureUnavailableError(
            f"Model: this process is one of {_trainers_num()} ranks (PADDLE_TRAINERS_NUM), and training across "
            "ranks needs the oar-distributed package (oar.distributed: DataParallel and the collectives), which is "
            "not installed. From a clone of oar's repository: pip install ./packages/distributed"
        ) from None


class _ShardedPass:
    """One pass of ``fit`` or ``evaluate`` over data that a ``DistributedBatchSampler`` shards over
    the ranks. ``gather`` concatenates a batch's tensors of every rank in rank order -- the order
    of the sampler's padded list of indices, whose last entries repeat the first to pad its last
    round -- and drops those repeats once the pass has seen ``total`` samples, so the metrics
    count every sample once."""

    def __init__(self, dist, total: int):
        self.dist = dist
        self.remaining = total
        self.batch_size = 0  # the samples of the last gathered batch, over all ranks

    def gather(self, tensors: list) -> list:
        gathered = []
        for tensor in tensors:
            parts: list = []
            self.dist.all_gather(parts, tensor.detach())
            gathered.append(oar.concat(parts, axis=0))
        total = int(gathered[0].shape[0]) if gathered and gathered[0].ndim else 0
        keep = min(total, self.remaining)
        self.remaining -= keep
        self.batch_size = keep
        return gathered if keep == total else [t[:keep] for t in gathered]

    def mean(self, values: list) -> list:
        """The mean over the ranks of each (scalar) value."""
        stacked = oar.to_tensor(np.array([float(np.mean(v)) for v in values], np.float64))
        self.dist.all_reduce(stacked, op=self.dist.ReduceOp.AVG)
        return [np.asarray(v, np.float32) for v in stacked.numpy()]


class Model:
    """A network with training, evaluation, prediction and checkpoints, as ``paddle.Model``.

    ``inputs`` and ``labels`` are optional InputSpecs (shape, dtype, name) of the network's inputs
    and the labels; in oar, as in Paddle's dynamic-graph mode, they only say how many entries of
    each batch are inputs (default: the required arguments of ``forward``) and give ``summary`` a
    shape.

    >>> import oar
    >>> net = oar.nn.Sequential(oar.nn.Linear(4, 16), oar.nn.ReLU(), oar.nn.Linear(16, 2))
    >>> model = oar.Model(net)
    >>> model.prepare(oar.optimizer.Adam(learning_rate=0.01, parameters=model.parameters()),
    ...               oar.nn.CrossEntropyLoss(), oar.metric.Accuracy())
    >>> x = oar.rand([64, 4])
    >>> y = (x.sum(axis=1, keepdim=True) > 2).astype("int64")
    >>> data = oar.io.TensorDataset([x, y])
    >>> model.fit(data, epochs=20, batch_size=16, verbose=0)
    >>> result = model.evaluate(data, batch_size=64, verbose=0)
    >>> sorted(result), result["acc"] > 0.8
    (['acc', 'loss'], True)
    """

    def __init__(self, network: Layer, inputs=None, labels=None):
        if not isinstance(network, Layer):
            raise ArgumentError(f"Model: network must be an oar.nn.Layer, got {type(network).__name__}")
        self.mode = "train"
        self.network = network
        self._inputs = _verify_spec(inputs, "inputs")
        self._labels = _verify_spec(labels, "labels")
        self._num_inputs = len(self._inputs) if self._inputs else _count_forward_inputs(network)
        self._loss = None
        self._metrics: list = []
        self._optimizer = None
        self._input_info = None  # the inputs of the first batch seen, when no inputs were given
        self._test_dataloader = None
        self._accumulate = 1
        self._pass_steps = 0
        self._auto_cast = None  # oar.amp.auto_cast, with oar-amp and AMP asked for
        self._scaler = None  # the GradScaler of float16 training
        self._parallel = None  # the oar.DataParallel that trains the network in a job of several ranks
        self._pass: _ShardedPass | None = None  # while fit or evaluate runs over data sharded over the ranks
        self.stop_training = False

    # -- configuration -------------------------------------------------------------------------
    def prepare(self, optimizer=None, loss=None, metrics=None, amp_configs=None) -> None:
        """Set the optimizer (needed by ``fit`` and ``train_batch``), the loss (a Layer or any
        callable ``loss(*outputs, *labels)``; needed for training), the metrics
        (``oar.metric.Metric`` instances) and mixed precision, as ``paddle.Model.prepare``.

        ``amp_configs``: None or ``'O0'`` trains in float32; ``'O1'``, ``'O2'`` or a dict such as
        ``{'level': 'O2', 'dtype': 'bfloat16', 'custom_black_list': ['conv2d']}`` trains, evaluates
        and predicts in ``oar.amp.auto_cast`` at that level (the keys: ``parse_amp_configs``).
        O2 casts the network's parameters with ``oar.amp.decorate`` (the optimizer keeps float32
        master weights); float16 scales the loss with an ``oar.amp.GradScaler`` built from the
        scaler keys (``init_loss_scaling``, ...); bfloat16 needs no scaler. AMP needs the oar-amp
        plugin; docs/amp.md has the levels and the lists.
        """
        from oar.metric import Metric
        from oar.optimizer import Optimizer

        if optimizer is not None and not isinstance(optimizer, Optimizer):
            raise ArgumentError(f"Model.prepare: optimizer must be an oar.optimizer.Optimizer, got {type(optimizer).__name__}")
        if loss is not None and not isinstance(loss, Layer) and not callable(loss):
            raise ArgumentError(f"Model.prepare: loss must be an oar.nn.Layer or a callable, got {type(loss).__name__}")
        metrics = _to_list(metrics)
        for metric in metrics:
            if not isinstance(metric, Metric):
                raise ArgumentError(f"Model.prepare: metrics must be oar.metric.Metric instances, got {type(metric).__name__}")
        settings = parse_amp_configs(amp_configs)
        auto_cast, scaler = None, None
        if settings is not None:
            amp = _amp_module()
            if settings.level == "O2":  # low-precision parameters; the optimizer keeps float32 master weights
                if optimizer is None:
                    self.network = amp.decorate(self.network, level="O2", dtype=settings.dtype)
                else:
                    self.network, optimizer = amp.decorate(self.network, optimizer, level="O2", dtype=settings.dtype)
            auto_cast = functools.partial(amp.auto_cast, level=settings.level, dtype=settings.dtype, **settings.lists)
            if settings.dtype == "float16":
                scaler = amp.GradScaler(**settings.scaler)
        self._optimizer = optimizer
        self._loss = loss
        self._metrics = metrics
        self._auto_cast, self._scaler = auto_cast, scaler
        if _trainers_num() > 1:
            self._wrap_data_parallel()

    def _wrap_data_parallel(self) -> None:
        """Train through ``oar.DataParallel`` across the ranks. After AMP's ``decorate``: it groups
        gradients in buckets by the parameters' dtype when it wraps."""
        dist = _distributed_module()
        dist.init_parallel_env()
        if isinstance(self.network, dist.DataParallel):
            self._parallel = self.network  # wrapped by the caller, with its own options
        elif self._parallel is None or self._parallel._layers is not self.network:
            self._parallel = dist.DataParallel(self.network)

    def auto_cast(self):
        """The ``oar.amp.auto_cast`` block that ``prepare``'s ``amp_configs`` set, in which the
        batch steps run the network: an oar addition, to run the network as the model does. In
        float32 training it changes nothing (below); with ``amp_configs={'level': 'O1', 'dtype':
        'bfloat16'}`` the Linear's output would be bfloat16.

        >>> import oar
        >>> model = oar.Model(oar.nn.Linear(4, 2))
        >>> model.prepare(amp_configs="O0")
        >>> with model.auto_cast():
        ...     model.network(oar.rand([3, 4])).dtype
        oar.float32
        """
        return contextlib.nullcontext() if self._auto_cast is None else self._auto_cast()

    def _step(self) -> None:
        """The optimizer step on the accumulated gradients (through the GradScaler in float16
        training: unscaled, skipped when one is inf or nan), then zeroed gradients."""
        if self._scaler is None:
            self._optimizer.step()
        else:
            self._scaler.step(self._optimizer)
            self._scaler.update()
        self.network.clear_gradients()

    def parameters(self, *args, **kwargs) -> list:
        """The network's parameters (``network.parameters()``)."""
        return self.network.parameters(*args, **kwargs)

    def _metrics_name(self) -> list[str]:
        names = ["loss"] if self._loss else []
        for metric in self._metrics:
            names.extend(_to_list(metric.name()))
        return names

    def _reset_metrics(self) -> None:
        for metric in self._metrics:
            metric.reset()

    # -- one batch -----------------------------------------------------------------------------
    def _record_inputs(self, inputs: list) -> None:
        if self._inputs is None and self._input_info is None:
            self._input_info = [_input_spec(t, f"input_{i}") for i, t in enumerate(inputs)]

    def _update_metrics(self, outputs: list, labels: list) -> list:
        results = []
        with oar.no_grad():
            for metric in self._metrics:
                states = _to_list(metric.compute(*outputs, *labels))
                states = [s.numpy(copy=False) if isinstance(s, Tensor) else s for s in states]
                results.append(metric.update(*states))
        return results

    def _losses(self, outputs: list, labels: list, where: str) -> list:
        losses = _to_list(self._loss(*outputs, *labels))
        if not losses or not all(isinstance(v, Tensor) for v in losses):
            raise ArgumentError(f"Model.{where}: the loss must return a Tensor or a list of Tensors, got {losses!r}")
        return losses

    def train_batch(self, inputs, labels=None, update: bool = True):
        """One training step on a batch: forward, loss, backward and, with ``update``, an optimizer
        step and zeroed gradients (``update=False`` accumulates gradients). Returns the losses as a
        list of numpy values, and with metrics ``(losses, metric values of this batch)``.

        >>> import oar
        >>> net = oar.nn.Linear(3, 2)
        >>> model = oar.Model(net)
        >>> model.prepare(oar.optimizer.SGD(parameters=net.parameters()), oar.nn.CrossEntropyLoss())
        >>> loss = model.train_batch([oar.rand([4, 3])], [oar.to_tensor([[0], [1], [1], [0]])])
        >>> len(loss), loss[0].shape
        (1, ())
        """
        if self._optimizer is None or self._loss is None:
            missing = "optimizer" if self._optimizer is None else "loss"
            raise ArgumentError(f"Model.train_batch: the model has no {missing}; call model.prepare(optimizer, loss) "
                                f"before training")
        self.network.train()
        self.mode = "train"
        inputs = [_as_tensor(x) for x in _to_list(inputs)]
        labels = [_as_tensor(y) for y in _to_list(labels)]
        self._record_inputs(inputs)
        network = self.network if self._parallel is None else self._parallel
        with self.auto_cast():
            outputs = _to_list(network(*inputs))
            losses = self._losses(outputs, labels, "train_batch")
        final_loss = losses[0]
        for extra in losses[1:]:
            final_loss = final_loss + extra
        (final_loss if self._scaler is None else self._scaler.scale(final_loss)).backward()
        if update:
            self._step()
        values = [loss.detach().numpy() for loss in losses]
        if self._pass is not None:
            outputs, labels = self._gather(outputs, labels)
            values = self._pass.mean(values)
        metrics = self._update_metrics(outputs, labels)
        return (values, metrics) if metrics else values

    def _gather(self, outputs: list, labels: list) -> tuple[list, list]:
        """Every rank's ``outputs`` and ``labels`` of this batch (``_ShardedPass.gather``)."""
        gathered = self._pass.gather([*outputs, *labels])
        return gathered[:len(outputs)], gathered[len(outputs):]

    def eval_batch(self, inputs, labels=None):
        """One evaluation step on a batch, without gradients: returns the losses (a list of numpy
        values) and the metric values of this batch, as Paddle: ``(losses, metrics)`` with both,
        ``losses`` with a loss only, ``metrics`` without a loss."""
        with oar.no_grad():
            self.network.eval()
            self.mode = "eval"
            inputs = [_as_tensor(x) for x in _to_list(inputs)]
            labels = [_as_tensor(y) for y in _to_list(labels)]
            self._record_inputs(inputs)
            with self.auto_cast():
                outputs = _to_list(self.network(*inputs))
                if self._pass is not None:  # the loss of the gathered batch: of each sample once, as one process
                    outputs, labels = self._gather(outputs, labels)
                losses = self._losses(outputs, labels, "eval_batch") if self._loss else []
            metrics = self._update_metrics(outputs, labels)
        values = [loss.numpy() for loss in losses]
        if self._loss and metrics:
            return values, metrics
        return values if self._loss else metrics

    def predict_batch(self, inputs) -> list:
        """The network's outputs on a batch, without gradients, as a list of numpy arrays."""
        with oar.no_grad():
            self.network.eval()
            self.mode = "test"
            inputs = [_as_tensor(x) for x in _to_list(inputs)]
            self._record_inputs(inputs)
            with self.auto_cast():
                outputs = self.network(*inputs)
        return [o.numpy() for o in _to_list(outputs)]

    # -- loops ---------------------------------------------------------------------------------
    def _loader(self, data, batch_size: int, shuffle: bool = False, drop_last: bool = False, num_workers: int = 0):
        """A Dataset becomes a DataLoader (over a DistributedBatchSampler, as Paddle); a DataLoader or
        any other iterable of batches is used as it is."""
        if isinstance(data, IterableDataset):
            return DataLoader(data, batch_size=batch_size, drop_last=drop_last, num_workers=num_workers)
        if isinstance(data, Dataset):
            sampler = DistributedBatchSampler(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last)
            return DataLoader(data, batch_sampler=sampler, num_workers=num_workers, return_list=True)
        if not hasattr(data, "__iter__"):
            raise ArgumentError(f"Model: data must be an oar.io.Dataset, a DataLoader or an iterable of batches, "
                                f"got {type(data).__name__}")
        return data

    @staticmethod
    def _len_data_loader(loader):
        try:
            return len(loader)
        except (TypeError, NotImplementedError):
            return None

    def _run_one_epoch(self, loader, callbacks, mode: str, max_steps: int | None = None,
                       max_samples: int | None = None):
        """One pass over ``loader``; returns the logs of the pass (and the outputs in predict mode).

        The logs after each batch hold its loss and the metrics accumulated so far; the returned
        logs hold the mean loss over the pass's samples."""
        logs: dict = {}
        outputs: list = []
        self._pass = None if mode == "predict" else self._sharded_pass(loader)
        try:
            step, samples, loss_sums, pending_update = self._run_batches(
                loader, callbacks, mode, max_steps, max_samples, logs, outputs)
        finally:
            self._pass = None
        if pending_update:  # the last accumulated gradients of a pass that stopped between updates
            self._step()
        if loss_sums and samples:
            logs["loss"] = [s / samples for s in loss_sums]
        self._pass_steps = step + 1  # how many batches this pass ran
        self._reset_metrics()
        if mode == "predict":
            return logs, outputs
        return logs

    def _sharded_pass(self, loader) -> _ShardedPass | None:
        """A ``_ShardedPass`` when ``loader``'s batches are this rank's share of data sharded over
        every rank of the job; None otherwise (each rank's metrics are then of its own data)."""
        sampler = getattr(loader, "batch_sampler", None)
        nranks = _trainers_num()
        if nranks <= 1 or not isinstance(sampler, DistributedBatchSampler) or sampler.nranks != nranks:
            return None
        return _ShardedPass(_distributed_module(), len(sampler.dataset))

    def _run_batches(self, loader, callbacks, mode: str, max_steps, max_samples, logs: dict, outputs: list):
        """The batches of one pass: returns (last step, samples, loss sums, whether an update is pending)."""
        steps = self._len_data_loader(loader)
        loss_sums: list[float] = []
        samples = 0
        pending_update = False
        names = self._metrics_name()
        step = -1
        for step, data in enumerate(loader):
            data = _flatten(data)
            if not data:
                raise ArgumentError(f"Model: batch {step} of the {mode} data is empty")
            batch_size = _batch_size(data[0])
            if max_samples is not None and samples + batch_size > max_samples:
                keep = max_samples - samples
                data = [d[:keep] for d in data]
                batch_size = keep
            callbacks.on_batch_begin(mode, step, logs)
            if mode == "predict":
                outputs.append(self.predict_batch(data[: self._num_inputs]))
            else:
                inputs, labels = data[: self._num_inputs], data[self._num_inputs:]
                if mode == "train":
                    update = (step + 1) % self._accumulate == 0 or (steps is not None and step + 1 == steps)
                    outs = self.train_batch(inputs, labels, update)
                    pending_update = not update
                else:
                    outs = self.eval_batch(inputs, labels)
                if self._pass is not None:
                    batch_size = self._pass.batch_size  # every rank's samples of this batch
                if self._loss:
                    losses = outs[0] if self._metrics else outs
                    values = [[float(np.mean(v)) for v in losses]]
                    if not loss_sums:
                        loss_sums = [0.0] * len(losses)
                    loss_sums = [s + v * batch_size for s, v in zip(loss_sums, values[0])]
                else:
                    values = []
                for metric in self._metrics:
                    values.extend(_to_list(metric.accumulate()))
                if len(values) != len(names):
                    raise ArgumentError(f"Model: the metrics gave {len(values)} values for the {len(names)} names {names}")
                logs.update(zip(names, values))
            samples += batch_size
            logs["step"] = step
            logs["batch_size"] = batch_size
            callbacks.on_batch_end(mode, step, logs)
            if (max_steps is not None and step + 1 >= max_steps) or (max_samples is not None and samples >= max_samples):
                break
        return step, samples, loss_sums, pending_update

    def fit(self, train_data=None, eval_data=None, batch_size=1, epochs: int = 1, eval_freq: int = 1,
            log_freq: int = 10, save_dir: str | None = None, save_freq: int = 1, verbose: int = 2,
            drop_last: bool = False, shuffle: bool = True, num_workers: int = 0, callbacks=None,
            accumulate_grad_batches: int = 1, num_iters: int | None = None) -> None:
        """Train for ``epochs`` epochs over ``train_data`` (a Dataset, batched here with
        ``batch_size``, ``shuffle``, ``drop_last`` and ``num_workers``; or a DataLoader or any
        iterable of batches), evaluating on ``eval_data`` after every ``eval_freq``-th epoch
        (epochs 0, eval_freq, ...), as ``paddle.Model.fit``.

        ``batch_size`` may be a pair (train, eval). ``save_dir`` saves checkpoints every
        ``save_freq`` epochs and at the end (and ``curves.png`` when matplotlib is installed);
        ``log_freq`` and ``verbose`` control the progress output (see ``ProgBarLogger``).
        ``accumulate_grad_batches=k`` steps the optimizer every k batches (and at the end of an
        epoch) on the sum of their gradients, as Paddle (a mean loss over k batches of n gives k
        times the gradient of one batch of k*n). ``num_iters`` stops after that many batches in
        all.
        """
        if train_data is None:
            raise ArgumentError("Model.fit: train_data is required")
        if self._optimizer is None or self._loss is None:
            raise ArgumentError("Model.fit: call model.prepare(optimizer, loss, metrics) before fit")
        if isinstance(batch_size, (list, tuple)):
            if len(batch_size) != 2:
                raise ArgumentError(f"Model.fit: batch_size must be an int or a pair (train, eval), got {batch_size!r}")
            train_batch_size, eval_batch_size = (_positive_int(b, "Model.fit: batch_size") for b in batch_size)
        else:
            train_batch_size = eval_batch_size = _positive_int(batch_size, "Model.fit: batch_size")
        epochs = _positive_int(epochs, "Model.fit: epochs")
        eval_freq = _positive_int(eval_freq, "Model.fit: eval_freq")
        self._accumulate = _positive_int(accumulate_grad_batches, "Model.fit: accumulate_grad_batches")
        num_iters = _positive_int(num_iters, "Model.fit: num_iters", allow_none=True)

        train_loader = self._loader(train_data, train_batch_size, shuffle, drop_last, num_workers)
        eval_loader = None if eval_data is None else self._loader(eval_data, eval_batch_size, num_workers=num_workers)
        self._test_dataloader = eval_loader
        steps = self._len_data_loader(train_loader)
        if num_iters is not None and steps:
            epochs = math.ceil(num_iters / steps)
            steps = min(num_iters, steps)
        cbks = config_callbacks(callbacks, model=self, batch_size=train_batch_size, epochs=epochs, steps=steps,
                                log_freq=log_freq, save_freq=save_freq, save_dir=save_dir, verbose=verbose,
                                metrics=self._metrics_name())
        if eval_loader is None:
            for c in cbks:
                if isinstance(c, (EarlyStopping, ReduceLROnPlateau)):
                    warnings.warn(f"{type(c).__name__} acts on evaluation results, but fit has no eval_data",
                                  stacklevel=2)
        self.stop_training = False
        remaining = num_iters
        logs: dict = {}
        cbks.on_begin("train")
        for epoch in range(epochs):
            cbks.on_epoch_begin(epoch)
            logs = self._run_one_epoch(train_loader, cbks, "train", max_steps=remaining)
            cbks.on_epoch_end(epoch, logs)
            if remaining is not None:
                remaining -= self._pass_steps
                if remaining <= 0:
                    self.stop_training = True
            if eval_loader is not None and epoch % eval_freq == 0:
                eval_steps = self._len_data_loader(eval_loader)
                cbks.on_begin("eval", {"steps": eval_steps, "metrics": self._metrics_name()})
                eval_logs = self._run_one_epoch(eval_loader, cbks, "eval")
                cbks.on_end("eval", eval_logs)
            if self.stop_training:
                break
        cbks.on_end("train", logs)
        self._test_dataloader = None

    def evaluate(self, eval_data, batch_size: int = 1, log_freq: int = 10, verbose: int = 2, num_workers: int = 0,
                 callbacks=None, num_iters: int | None = None, num_samples: int | None = None) -> dict:
        """The loss (mean over the samples, as a one-element list) and the metrics on
        ``eval_data``, as ``paddle.Model.evaluate``: ``{'loss': [0.12], 'acc': 0.97}``.
        ``num_iters`` evaluates that many batches, ``num_samples`` that many samples."""
        batch_size = _positive_int(batch_size, "Model.evaluate: batch_size")
        num_iters = _positive_int(num_iters, "Model.evaluate: num_iters", allow_none=True)
        num_samples = _positive_int(num_samples, "Model.evaluate: num_samples", allow_none=True)
        loader = self._loader(eval_data, batch_size, num_workers=num_workers)
        self._test_dataloader = loader
        cbks = config_callbacks(callbacks, model=self, log_freq=log_freq, verbose=verbose,
                                metrics=self._metrics_name(), mode="eval")
        steps = self._len_data_loader(loader)
        if num_iters is not None and steps is not None:
            steps = min(num_iters, steps)
        if num_samples is not None and steps is not None and loader is not eval_data:  # batched here
            steps = min(steps, math.ceil(num_samples / batch_size))
        cbks.on_begin("eval", {"steps": steps, "metrics": self._metrics_name()})
        logs = self._run_one_epoch(loader, cbks, "eval", max_steps=num_iters, max_samples=num_samples)
        cbks.on_end("eval", logs)
        self._test_dataloader = None
        return {name: logs[name] for name in self._metrics_name() if name in logs}

    def predict(self, test_data, batch_size: int = 1, num_workers: int = 0, stack_outputs: bool = False,
                verbose: int = 1, callbacks=None) -> list:
        """The network's outputs on ``test_data``, as ``paddle.Model.predict``: a list with one entry
        per output of the network, each a list of per-batch numpy arrays, or with
        ``stack_outputs=True`` one array stacked over the batches. A batch's leading entries are the
        inputs; the rest (labels) are ignored."""
        batch_size = _positive_int(batch_size, "Model.predict: batch_size")
        loader = self._loader(test_data, batch_size, num_workers=num_workers)
        self._test_dataloader = loader
        cbks = config_callbacks(callbacks, model=self, verbose=verbose, mode="test")
        cbks.on_begin("predict", {"steps": self._len_data_loader(loader)})
        logs, outputs = self._run_one_epoch(loader, cbks, "predict")
        outputs = [list(per_output) for per_output in zip(*outputs)]
        if stack_outputs:
            outputs = [np.vstack(per_output) for per_output in outputs]
        self._test_dataloader = None
        cbks.on_end("predict", logs)
        return outputs

    # -- checkpoints ---------------------------------------------------------------------------
    def save(self, path, training: bool = True) -> None:
        """``training=True``: the parameters to ``path.pdparams``, the optimizer state to
        ``path.pdopt`` and, in float16 training, the GradScaler's to ``path.pdscaler`` (each when
        it has state; a stale file is removed), through ``oar.save``: safetensors files, never
        pickle. ``training=False``: an inference model through ``oar.jit.save`` (captured in the
        model's ``auto_cast`` block, so that it computes as ``evaluate`` does).

        >>> import oar, os, tempfile
        >>> model = oar.Model(oar.nn.Linear(2, 2))
        >>> prefix = os.path.join(tempfile.mkdtemp(), "checkpoint", "linear")
        >>> model.save(prefix)
        >>> sorted(os.listdir(os.path.dirname(prefix)))
        ['linear.pdparams']
        """
        path = self._check_path(path, "save")
        if not training:
            self._save_inference_model(path)
            return
        if _local_rank() != 0:
            return
        oar.save(self.network.state_dict(), path + ".pdparams")
        for suffix, holder in ((".pdopt", self._optimizer), (".pdscaler", self._scaler)):
            state = holder.state_dict() if holder is not None else {}
            if state:
                oar.save(state, path + suffix)
            elif os.path.exists(path + suffix):
                os.unlink(path + suffix)

    @staticmethod
    def _check_path(path, where: str) -> str:
        if not isinstance(path, (str, os.PathLike)):
            raise ArgumentError(f"Model.{where}: path must be a str or os.PathLike, got {type(path).__name__}")
        path = os.fspath(path)
        if not os.path.basename(path):
            raise ArgumentError(f"Model.{where}: path must be 'dirname/file_prefix' or 'file_prefix', got {path!r}")
        return path

    def _save_inference_model(self, path: str) -> None:
        save = _jit_save()
        if save is None:
            raise FeatureUnavailableError(
                "Model.save(path, training=False): exporting an inference model needs oar.jit.save, which arrives "
                "with the static-graph oar.jit (not yet available in this oar). Save for training with "
                "Model.save(path), which writes path.pdparams and path.pdopt"
            )
        specs = self._inputs or self._input_info
        if specs is None:
            raise ArgumentError("Model.save(path, training=False): the input shapes are unknown; give inputs "
                                "(InputSpecs) to Model(...) or run a batch through the model first")
        if _local_rank() != 0:
            return
        was_training = self.network.training
        self.network.eval()  # jit.save captures the current mode: an inference model is captured in eval mode
        try:
            with self.auto_cast():  # the program records the casts: the inference model computes as evaluate does
                save(self.network, path, input_spec=list(specs))
        finally:
            if was_training:
                self.network.train()

    def load(self, path, skip_mismatch: bool = False, reset_optimizer: bool = False) -> None:
        """Load ``path.pdparams`` into the network and, unless ``reset_optimizer`` (or there is no
        optimizer or no ``path.pdopt``), ``path.pdopt`` into the optimizer, as ``paddle.Model.load``;
        in float16 training also ``path.pdscaler`` into the GradScaler, when it exists.
        ``path`` may end in ``.pdparams``, ``.pdopt`` or ``.pdscaler``.

        Parameters are matched by their structured names (``fc.0.weight``). A parameter missing from
        the file or of another shape is an error listing every mismatch, and nothing is loaded;
        with ``skip_mismatch`` it is left as it is (with a warning) and the optimizer state is not
        loaded. Entries of the file that the network does not have are ignored, as in Paddle.
        """
        path = self._check_path(path, "load")
        stem, ext = os.path.splitext(path)
        if ext in (".pdparams", ".pdopt", ".pdscaler", ".pdmodel"):
            path = stem
        params_path = path + ".pdparams"
        if not os.path.exists(params_path):
            raise FileNotFoundError(f"Model.load: {params_path!r} does not exist")
        saved = oar.load(params_path)
        if not isinstance(saved, dict):
            raise ArgumentError(f"Model.load: {params_path!r} holds a {type(saved).__name__}, not a state dict")
        current = self.network.state_dict()
        matched, problems = {}, []
        for key, param in current.items():
            value = saved.get(key)
            if value is None:
                problems.append(f"{key} is not in the file")
            elif list(value.shape) != list(param.shape):
                problems.append(f"{key} has shape {list(value.shape)} in the file, {list(param.shape)} in the network")
            else:
                matched[key] = value
        if problems:
            if not skip_mismatch:
                raise ArgumentError(f"Model.load: {params_path!r} does not match the network (nothing was loaded):\n  "
                                    + "\n  ".join(problems) + "\n  pass skip_mismatch=True to load what matches")
            for problem in problems:
                warnings.warn(f"Model.load: skipped {problem}", stacklevel=2)
            reset_optimizer = True
        opt_path = path + ".pdopt"
        if self._optimizer is not None and not reset_optimizer and os.path.exists(opt_path):
            renames = {saved[k].name: current[k].name for k in matched if saved[k].name != current[k].name}
            # Validated in full before anything changes; then the parameters cannot fail.
            self._optimizer.set_state_dict(_rename_optimizer_state(oar.load(opt_path), renames))
        if self._scaler is not None and os.path.exists(path + ".pdscaler"):
            self._scaler.load_state_dict(oar.load(path + ".pdscaler"))
        self.network.set_state_dict(matched, strict=False)

    # -- description ---------------------------------------------------------------------------
    def summary(self, input_size=None, dtype=None) -> dict:
        """``oar.summary`` of the network: ``input_size`` if given, else the shapes of ``inputs``, else
        those of the inputs seen in the first batch. Returns ``{'total_params', 'trainable_params'}``."""
        if input_size is None:
            specs = self._inputs or self._input_info
            if specs is None:
                raise ArgumentError("Model.summary: give input_size, or InputSpecs as Model(network, inputs), or run "
                                    "a batch through the model first")
            input_size = [tuple(spec.shape) for spec in specs]
            if dtype is None:
                dtype = [_dtype_name(getattr(spec, "dtype", None)) for spec in specs]
            input_size = input_size[0] if len(input_size) == 1 else input_size
            if isinstance(dtype, list) and len(dtype) == 1:
                dtype = dtype[0]
        return _summary(self.network, input_size, dtypes=dtype)


def _jit_save():
    """``oar.jit.save``, or None where this oar has no ``oar.jit`` yet."""
    try:
        jit = importlib.import_module("oar.jit")
    except ModuleNotFoundError as exc:
        if exc.name != "oar.jit":
            raise
        return None
    return getattr(jit, "save", None)


def _dtype_name(dtype) -> str:
    if dtype is None:
        return "float32"
    return getattr(dtype, "name", None) or str(dtype)


def _rename_optimizer_state(state: dict, renames: dict) -> dict:
    """Optimizer state saved for parameters named ``renames``' keys, keyed for the parameters now
    named by its values (accumulators are ``<param name>_<accumulator>_0``)."""
    if not renames or not isinstance(state, dict):
        return state
    old_names = sorted(renames, key=len, reverse=True)  # 'linear_11.w_0' before 'linear_1.w_0'
    out = {}
    for key, value in state.items():
        if key == "master_weights" and isinstance(value, dict):
            out[key] = {renames.get(name, name): v for name, v in value.items()}
            continue
        new_key = key
        if isinstance(key, str):
            for old in old_names:
                if key.startswith(old + "_"):
                    new_key = renames[old] + key[len(old):]
                    break
        out[new_key] = value
    return out


__all__ = ["Model", "FeatureUnavailableError"]
