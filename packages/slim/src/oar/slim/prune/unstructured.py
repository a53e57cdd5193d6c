"""Unstructured (magnitude) pruning with masks, as PaddleSlim's ``UnstructuredPruner`` and
``GMPUnstructuredPruner`` (``paddleslim/dygraph/prune/unstructured_pruner.py``).

The smallest weights are set to zero and a 0/1 mask per parameter, held by the pruner, keeps them
there through fine-tuning: ``step()`` (called after each ``optimizer.step()``) recomputes the
masks from the weights and multiplies them in, a gradient hook on each pruned parameter zeroes the
gradient of its pruned entries (so no optimizer, Adam's moments included, moves them), and a forward
pre-hook on the model masks again any parameter changed since it was last masked (its
``inplace_version``: ``set_value``, ``set_state_dict``), as PaddleSlim's hooks do before every forward.

>>> import oar
>>> from oar.slim.prune import UnstructuredPruner
>>> net = oar.nn.Sequential(oar.nn.Linear(16, 32), oar.nn.ReLU(), oar.nn.Linear(32, 4))
>>> pruner = UnstructuredPruner(net, mode="ratio", ratio=0.75)
>>> pruner.step()
>>> sum(int((p == 0).sum()) for p in (net[0].weight, net[2].weight))  # 75% of 16 * 32 + 32 * 4 weights
480
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.nn import Layer
from oar.nn.parameter import Parameter

# The layer types whose parameters are never pruned by default (PaddleSlim's NORMS_ALL, and RMSNorm).
NORMS_ALL = ("BatchNorm", "GroupNorm", "LayerNorm", "SpectralNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D",
             "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D", "SyncBatchNorm", "LocalResponseNorm", "RMSNorm")


def _is_norm(layer: Layer) -> bool:
    return type(layer).__name__ in NORMS_ALL


def _is_conv1x1(param) -> bool:
    return param.ndim == 4 and param.shape[2] == 1 and param.shape[3] == 1


def _skip_default(model: Layer) -> set[str]:
    """PaddleSlim's default: the norm layers (by full name) and every parameter of fewer than 2
    dimensions (biases, scales), by parameter name."""
    skip = set()
    for layer in model.sublayers(include_self=True):
        if _is_norm(layer):
            skip.add(layer.full_name())
        skip.update(p.name for p in layer.parameters(include_sublayers=False) if p.ndim < 2)
    return skip


def _skip_conv1x1(model: Layer) -> set[str]:
    """``prune_params_type='conv1x1_only'``: the default, and every parameter that is not a 1x1 conv weight."""
    skip = _skip_default(model)
    skip.update(p.name for p in model.parameters() if not _is_conv1x1(p))
    return skip


def _block_scores(value: np.ndarray, block: Sequence[int]) -> np.ndarray:
    """Each weight's score: its magnitude, or with a block other than [1, 1] the mean magnitude of
    its block of ``block[0] x block[1]`` on the first two axes (and all of the others), so that a
    block is pruned or kept whole. Edge blocks average the entries they have."""
    m, n = block
    if (m, n) == (1, 1):
        a = np.abs(value)
        return a if a.dtype.itemsize >= 4 else a.astype(np.float32)  # float16/bfloat16: compare in float32
    a = np.abs(np.asarray(value, dtype=np.float64))
    rows, cols = np.arange(0, a.shape[0], m), np.arange(0, a.shape[1], n)
    sums = np.add.reduceat(np.add.reduceat(a, rows, axis=0), cols, axis=1)
    sums = sums.reshape(len(rows), len(cols), -1).sum(axis=2)
    row_sizes, col_sizes = np.diff(rows, append=a.shape[0]), np.diff(cols, append=a.shape[1])
    means = sums / (np.outer(row_sizes, col_sizes) * (a[0, 0].size))
    full = np.repeat(np.repeat(means, row_sizes, axis=0), col_sizes, axis=1)
    return np.broadcast_to(full.reshape(full.shape + (1,) * (a.ndim - 2)), a.shape)


def _threshold(scores: np.ndarray, ratio: float) -> float:
    """The score below which ``round(ratio * n)`` of ``scores`` lie (ties at it are kept): masks are
    ``score >= threshold``. PaddleSlim takes the element one lower, and so prunes one weight fewer."""
    k = int(round(float(ratio) * scores.size))
    if k <= 0:
        return 0.0
    if k >= scores.size:
        return float("inf")
    return float(np.partition(scores, k)[k])


def _sparsity(params: Iterable) -> float:
    total = nonzero = 0
    for p in params:
        total += p.size
        nonzero += int(np.count_nonzero(p.numpy(copy=False)))
    return 1.0 - nonzero / total if total else 0.0


class UnstructuredPruner:
    """Zero the smallest weights of a model and keep them zero through training
    (``paddleslim.UnstructuredPruner``).

    ``mode='ratio'`` zeroes the ``ratio`` smallest-magnitude weights, over all pruned parameters
    together or, with ``local_sparsity=True``, in each parameter; ``mode='threshold'`` zeroes the
    weights whose magnitude is below ``threshold``. Pruned by default: every parameter of 2 or more
    dimensions outside the norm layers (``NORMS_ALL``): conv and linear weights, embeddings; with
    ``prune_params_type='conv1x1_only'`` only the 1x1 conv weights. ``skip_params_func(model)``
    returns the names to skip instead: parameter names (``param.name``) or layer full names, as in
    PaddleSlim, or the paths in the model (``"fc.0.weight"``, ``"fc.0"``). ``sparse_block=[m, n]``
    prunes blocks of m x n on a parameter's first two axes, scored by their mean magnitude.

    Nothing is pruned before the first ``step()``. Call ``step()`` after each ``optimizer.step()``:
    in ratio mode it recomputes the threshold, then the masks, then zeroes the pruned weights.
    ``masks`` maps each pruned parameter's name to its 0/1 mask; ``set_static_masks()`` rebuilds
    them from the zeros of a pruned model loaded back for more fine-tuning.

    >>> import oar
    >>> from oar.slim.prune import UnstructuredPruner
    >>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 8, 3), oar.nn.BatchNorm2D(8), oar.nn.ReLU(),
    ...                         oar.nn.Flatten(), oar.nn.Linear(8 * 4 * 4, 10))
    >>> pruner = UnstructuredPruner(net, "ratio", ratio=0.5)
    >>> sorted(pruner.masks) == sorted([net[0].weight.name, net[4].weight.name])
    True
    >>> opt = oar.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
    >>> for _ in range(3):
    ...     net(oar.randn([2, 3, 6, 6])).mean().backward()
    ...     opt.step()
    ...     opt.clear_grad()
    ...     pruner.step()
    >>> sum(int((p == 0).sum()) for p in (net[0].weight, net[4].weight))  # half of 216 + 1,280 weights
    748
    """

    def __init__(self, model: Layer, mode: str, threshold: float = 0.01, ratio: float = 0.55,
                 prune_params_type: str | None = None, skip_params_func: Callable[[Layer], Iterable[str]] | None = None,
                 local_sparsity: bool = False, sparse_block: Sequence[int] = (1, 1)):
        name = type(self).__name__
        if mode not in ("ratio", "threshold"):
            raise ArgumentError(f"{name}: mode must be 'ratio' or 'threshold', got {mode!r}")
        if prune_params_type not in (None, "conv1x1_only"):
            raise ArgumentError(f"{name}: prune_params_type must be None (all but norms and biases) or "
                                f"'conv1x1_only', got {prune_params_type!r}")
        if local_sparsity and mode != "ratio":
            raise ArgumentError(f"{name}: local_sparsity=True needs mode='ratio' (a threshold is the same for every "
                                f"parameter already)")
        if not 0.0 <= float(ratio) < 1.0:
            raise ArgumentError(f"{name}: ratio must be in [0, 1), got {ratio}")
        block = list(sparse_block)
        if len(block) != 2 or not all(isinstance(b, int) and not isinstance(b, bool) and b > 0 for b in block):
            raise ArgumentError(f"{name}: sparse_block must be two positive integers [m, n], got {sparse_block!r}")
        self.model = model
        self.mode = mode
        self.threshold = float(threshold)
        self.ratio = float(ratio)
        self.local_sparsity = bool(local_sparsity)
        self.sparse_block = block
        self.thresholds: dict[str, float] = {}
        if skip_params_func is None:
            skip_params_func = _skip_conv1x1 if prune_params_type == "conv1x1_only" else _skip_default
        self.skip_params: set[str] = set(skip_params_func(model))
        self._params = self._prunable(model)  # param.name -> (path in the model, parameter)
        if not self._params:
            raise ArgumentError(f"{name}: {type(model).__name__} has no parameter to prune (all are skipped: norm "
                                f"layers, parameters of fewer than 2 dimensions, or skip_params_func's names)")
        if block != [1, 1]:
            flat = [path for path, p in self._params.values() if p.ndim < 2]
            if flat:
                raise ArgumentError(f"{name}: sparse_block={block} needs parameters of 2 or more dimensions; "
                                    f"{flat} have fewer (skip them with skip_params_func)")
        self.masks: dict[str, oar.Tensor] = {n: oar.ones(p.shape, p.dtype) for n, (_, p) in self._params.items()}
        self._masked_version: dict[str, int] = {}
        self._handles = [model.register_forward_pre_hook(self._forward_pre_hook)]
        for n, (_, p) in self._params.items():
            if not p.stop_gradient:
                self._handles.append(p.register_hook(self._gradient_mask(n)))

    def _prunable(self, model: Layer) -> dict[str, tuple[str, Parameter]]:
        skip = self.skip_params
        found: dict[str, tuple[str, Parameter]] = {}
        seen: set[int] = set()
        for path, layer in model.named_sublayers(include_self=True):
            if layer.full_name() in skip or (path and path in skip):
                continue
            for attr, p in layer.named_parameters(include_sublayers=False):
                qualified = f"{path}.{attr}" if path else attr
                if id(p) in seen or p.name in skip or qualified in skip:
                    continue
                seen.add(id(p))
                found[p.name] = (qualified, p)
        return found

    def _gradient_mask(self, name: str):
        # The mask is read when the gradient arrives: step() may have changed it since.
        return lambda grad: grad * self.masks[name]

    # -- masks ----------------------------------------------------------------------------------
    def mask_parameters(self, param: Parameter, mask: oar.Tensor) -> None:
        """Multiply ``param`` by ``mask`` in place (override for another pruning rule)."""
        value = param.numpy(copy=False)
        param.set_value((value * mask.numpy(copy=False)).astype(value.dtype, copy=False))
        self._masked_version[param.name] = param.inplace_version

    def _scores(self, param: Parameter) -> np.ndarray:
        return _block_scores(param.numpy(copy=False), self.sparse_block)

    def update_threshold(self) -> None:
        """Ratio mode: the threshold (``thresholds`` per parameter with ``local_sparsity``) that
        prunes ``ratio`` of the weights as they are now."""
        if self.local_sparsity:
            self.thresholds = {n: _threshold(self._scores(p).reshape(-1), self.ratio)
                               for n, (_, p) in self._params.items()}
            return
        scores = np.concatenate([self._scores(p).reshape(-1) for _, p in self._params.values()])
        self.threshold = _threshold(scores, self.ratio)

    def _update_masks(self) -> None:
        for n, (_, p) in self._params.items():
            threshold = self.thresholds[n] if self.local_sparsity else self.threshold
            self.masks[n].set_value((self._scores(p) >= threshold).astype(self.masks[n].dtype.np))

    def set_static_masks(self) -> None:
        """Masks from the weights as they are: the zeros stay pruned (a pruned model loaded back)."""
        for n, (_, p) in self._params.items():
            self.masks[n].set_value((p.numpy(copy=False) != 0).astype(self.masks[n].dtype.np))

    def step(self) -> None:
        """After ``optimizer.step()``: recompute the masks (the threshold first, in ratio mode) and
        zero the pruned weights."""
        if self.mode == "ratio":
            self.update_threshold()
        self._update_masks()
        self.update_params()

    def update_params(self) -> None:
        """Multiply every pruned parameter by its mask, without recomputing the masks."""
        for n, (_, p) in self._params.items():
            self.mask_parameters(p, self.masks[n])

    def _forward_pre_hook(self, layer: Layer, inputs) -> None:
        for n, (_, p) in self._params.items():
            if self._masked_version.get(n) != p.inplace_version:
                self.mask_parameters(p, self.masks[n])

    def remove(self) -> None:
        """Take the pruner's hooks off the model and its parameters; the weights stay as they are."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # -- reports --------------------------------------------------------------------------------
    def sparsity(self) -> dict[str, float]:
        """The fraction of zeros of each pruned parameter, by its path in the model."""
        return {path: _sparsity([p]) for path, p in self._params.values()}

    def summarize_weights(self, model: Layer, ratio: float = 0.1) -> float:
        """The magnitude below which ``ratio`` of the weights of ``model``'s non-norm layers lie:
        a threshold for ``mode='threshold'`` that prunes about ``ratio``."""
        data = np.concatenate([np.abs(p.numpy(copy=False)).reshape(-1) for layer in model.sublayers(include_self=True)
                               if not _is_norm(layer) for p in layer.parameters(include_sublayers=False)])
        return float(np.sort(data)[max(0, int(ratio * len(data) - 1))])

    @staticmethod
    def total_sparse(model: Layer) -> float:
        """The fraction of zeros among all of ``model``'s parameters (biases and norms included)."""
        return _sparsity(model.parameters())

    @staticmethod
    def total_sparse_conv1x1(model: Layer) -> float:
        """The fraction of zeros among ``model``'s 1x1 conv weights."""
        return _sparsity(p for layer in model.sublayers(include_self=True) if not _is_norm(layer)
                         for p in layer.parameters(include_sublayers=False) if _is_conv1x1(p))


# PaddleSlim's example configuration (its docs): pruning over 1,000 iterations in 10 steps from 15%,
# then 1,000 iterations of tuning at the target ratio.
GMP_CONFIGS = {"stable_iterations": 0, "pruning_iterations": 1000, "tunning_iterations": 1000, "resume_iteration": 0,
               "pruning_steps": 10, "initial_ratio": 0.15}


def gmp_ratios(target_ratio: float, configs: dict) -> list[float]:
    """GMP's ratio after each increment period (``pruning_iterations // pruning_steps`` iterations):
    0 for the stable phase, ``initial + (target - initial) * (1 - (1 - i / pruning_steps) ** 3)``
    for ``i`` in ``range(pruning_steps)``, then the target for the tuning phase (PaddleSlim's
    schedule, after Zhu and Gupta's gradual pruning)."""
    steps, initial = configs["pruning_steps"], configs["initial_ratio"]
    pruning = [initial + (target_ratio - initial) * (((i / steps) - 1.0) ** 3 + 1) for i in range(steps)]
    stable = int(float(configs["stable_iterations"]) / configs["pruning_iterations"] * steps)
    tuning = int(float(configs["tunning_iterations"]) / configs["pruning_iterations"] * steps)
    return [0.0] * stable + pruning + [float(target_ratio)] * tuning


class GMPUnstructuredPruner(UnstructuredPruner):
    """Gradual magnitude pruning (``paddleslim.GMPUnstructuredPruner``): the ratio rises from 0
    (``stable_iterations``) through ``initial_ratio`` to ``ratio`` along a cubic over
    ``pruning_iterations`` in ``pruning_steps`` increments (``gmp_ratios``), then stays there for
    ``tunning_iterations`` (PaddleSlim's spelling). ``step()`` counts iterations and updates the
    masks when the ratio changes; between increments the masks stay fixed. ``configs`` keys left
    out take ``GMP_CONFIGS``'s values; ``resume_iteration`` restarts the schedule part way.

    >>> import oar
    >>> from oar.slim.prune import GMPUnstructuredPruner
    >>> net = oar.nn.Sequential(oar.nn.Linear(20, 50), oar.nn.ReLU(), oar.nn.Linear(50, 20))
    >>> configs = {"pruning_iterations": 100, "tunning_iterations": 20, "pruning_steps": 4, "initial_ratio": 0.2}
    >>> pruner = GMPUnstructuredPruner(net, ratio=0.8, configs=configs)
    >>> ratios = []
    >>> for _ in range(120):
    ...     pruner.step()  # after each optimizer.step()
    ...     ratios.append(round(pruner.ratio, 3))
    >>> ratios[0], ratios[25], ratios[50], ratios[75], ratios[119]
    (0.2, 0.547, 0.725, 0.791, 0.8)
    >>> sum(int((p == 0).sum()) for p in (net[0].weight, net[2].weight))  # 80% of 2 x 1,000 weights
    1600
    """

    def __init__(self, model: Layer, ratio: float = 0.55, prune_params_type: str | None = None,
                 skip_params_func: Callable[[Layer], Iterable[str]] | None = None, local_sparsity: bool = False,
                 sparse_block: Sequence[int] = (1, 1), configs: dict | None = None):
        unknown = sorted(set(configs or {}) - set(GMP_CONFIGS))
        if unknown:
            raise ArgumentError(f"GMPUnstructuredPruner: unknown configs {unknown}; the keys are {sorted(GMP_CONFIGS)}")
        configs = {**GMP_CONFIGS, **(configs or {})}
        super().__init__(model, "ratio", 0.0, ratio, prune_params_type, skip_params_func, local_sparsity, sparse_block)
        if not configs["pruning_steps"] > 0 or not configs["pruning_iterations"] / configs["pruning_steps"] > 10:
            raise ArgumentError(f"GMPUnstructuredPruner: pruning_iterations ({configs['pruning_iterations']}) must be "
                                f"more than 10 x pruning_steps ({configs['pruning_steps']}), as in PaddleSlim")
        self.configs = configs
        self.stable_iterations = configs["stable_iterations"]
        self.pruning_iterations = configs["pruning_iterations"]
        self.tunning_iterations = configs["tunning_iterations"]
        self.pruning_steps = configs["pruning_steps"]
        self.initial_ratio = configs["initial_ratio"]
        self.target_ratio = float(ratio)
        self.ratio = 0.0
        self.cur_iteration = int(configs["resume_iteration"])
        self.ratio_increment_period = int(self.pruning_iterations / self.pruning_steps)
        self.ratios_stack = gmp_ratios(self.target_ratio, configs)[::-1]
        self._need_prune_once = self.cur_iteration > 0  # a resumed run prunes the loaded weights once
        for i in range(self.cur_iteration):
            if self.ratios_stack and i % self.ratio_increment_period == 0:
                self.ratio = self.ratios_stack.pop()

    def step(self) -> None:
        """After ``optimizer.step()``: advance one iteration, take the next ratio at each increment
        period, update the masks if it changed, and zero the pruned weights."""
        previous = self.ratio
        if self.cur_iteration % self.ratio_increment_period == 0:
            self.ratio = self.ratios_stack.pop() if self.ratios_stack else self.target_ratio
        if self.ratio != previous or self._need_prune_once:
            self.update_threshold()
            self._update_masks()
            self._need_prune_once = False
        self.update_params()
        self.cur_iteration += 1
