"""Sharding stage 1 and 2 (ZeRO-1/2): each rank keeps the optimizer state -- and in stage 2 the
gradients -- of only its share of the parameters, so memory per rank falls with the world size.

Every trainable parameter has one *owner* rank, chosen greedily by size (largest first, to the
least-loaded rank; ties to the lower rank and the earlier parameter), the same on every rank.

- **Stage 1** (``sharding_model(model, 1)`` is ``oar.DataParallel(model)``): backward averages
  every gradient over the ranks as usual; ``ShardingOptimizer.step()`` updates only the
  parameters this rank owns, so Adam's moments exist only for those, then each owner broadcasts
  its parameters, bucketed by (owner, dtype) into few collectives.
- **Stage 2** (``sharding_model(model, 2)``): no all-reduce. As each gradient is complete
  (``register_post_accumulate_grad_hook``) it is copied into its bucket -- gradients of one owner
  and dtype -- and a complete bucket is *reduced to its owner* (mean). Buckets start in one fixed
  order on every rank (a bucket waits for those before it), so the ranks' collectives always match;
  ``oar.autograd.queue_callback`` waits for them when the backward ends. Then the owner holds the
  mean gradient and every other rank has dropped it (``grad`` None): gradient memory per rank
  falls too. The step is stage 1's.

A parameter no rank used keeps ``grad`` None; one that some ranks used counts as zero on the others.
Gradient accumulation over several backwards goes inside ``model.no_sync()`` (local sums, reduced
by the first backward after it); outside it, clear the gradients (``optimizer.clear_grad()``)
between reduced backwards, since an owner's reduced gradient plus a new local one is not a mean.

``ClipGradByGlobalNorm`` sees every rank's share: the squared norms of the owned gradients are
all-reduced, the gradients scaled, and the wrapped optimizer's own clip (on the owned part) then
changes nothing. Clipping by value or by each tensor's norm is local and needs nothing more.

What is refused: stage 3 (parameters sharded too), and parameters of an optimizer that do not
exist alike on every rank (the owners would differ).

>>> import oar
>>> from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model
>>> model = sharding_model(oar.nn.Linear(4, 2), stage=2)
>>> opt = ShardingOptimizer(oar.optimizer.Adam(parameters=model.parameters()), stage=2)
>>> model(oar.ones([3, 4])).mean().backward()
>>> opt.step()
>>> opt.clear_grad()
"""

from __future__ import annotations

import weakref

import numpy as np

import oar
import oar.nn as nn
from oar.distributed import _collective as collective
from oar.distributed._parallel import DataParallel, GradientSyncLayer
from oar.errors import ArgumentError

_MB = 1 << 20
_LOW_PRECISION = ("float16", "bfloat16")  # the wrapped optimizer keeps their state in float32

# Stage 2: id(param) -> (weak reference, owner's global rank), set by the model wrapper so that the
# optimizer reduces and updates with the same owners even when its parameter list differs.
_STAGE2_OWNERS: dict[int, tuple[weakref.ref, int]] = {}


def _forget(key: int) -> None:
    entry = _STAGE2_OWNERS.get(key)
    if entry is not None and entry[0]() is None:  # not a newer parameter at the dead one's address
        del _STAGE2_OWNERS[key]


def _numel(p) -> int:
    return int(np.prod(p.shape, dtype=np.int64))


def _nbytes(p) -> int:
    return _numel(p) * p.numpy(copy=False).itemsize


def assign_owners(params: list, nranks: int) -> list[int]:
    """The owner (an index in ``0..nranks-1``) of each of ``params``: largest first, each to the
    least-loaded rank by bytes, ties to the lower rank -- the same on every rank.

    >>> import oar
    >>> from oar.distributed.fleet._sharding import assign_owners
    >>> assign_owners([oar.zeros([10]), oar.zeros([4]), oar.zeros([4]), oar.zeros([1])], 2)
    [0, 1, 1, 1]
    """
    loads = [0] * nranks
    owners = [0] * len(params)
    for i in sorted(range(len(params)), key=lambda i: (-_nbytes(params[i]), i)):
        rank = min(range(nranks), key=lambda r: (loads[r], r))
        owners[i] = rank
        loads[rank] += _nbytes(params[i])
    return owners


def _buckets(params: list, key, limit: float) -> list[list]:
    """``params`` split into buckets of one ``key(p)`` (owner and dtype) of about ``limit`` bytes.
    A bucket is closed when full; the open ones close at the end, in the order their keys first
    appeared: a fixed order, the same on every rank."""
    closed, open_ = [], {}
    for p in params:
        k = key(p)
        bucket = open_.setdefault(k, [[], 0])
        if bucket[0] and bucket[1] + _nbytes(p) > limit:
            closed.append(bucket[0])
            bucket = open_[k] = [[], 0]
        bucket[0].append(p)
        bucket[1] += _nbytes(p)
    return closed + [b[0] for b in open_.values() if b[0]]


def _check_buffer_size(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ArgumentError(f"{where}: comm_buffer_size must be a positive number of MB, got {value!r}")
    return float(value) * _MB


def _check_stage(where: str, stage) -> int:
    if stage not in (1, 2) or isinstance(stage, bool):
        raise ArgumentError(f"{where}: stage must be 1 (optimizer state sharded) or 2 (gradients too), got "
                            f"{stage!r}; stage 3 (parameters sharded) is not implemented")
    return int(stage)


class _ReduceBucket:
    """Gradients of one owner and dtype, reduced to the owner in one collective each backward."""

    def __init__(self, index: int, params: list, owner: int):
        self.index, self.params, self.owner = index, params, owner
        self.offsets = np.cumsum([0] + [_numel(p) for p in params]).tolist()
        self.numel = self.offsets[-1]
        self.dtype = params[0].numpy(copy=False).dtype
        self.flat: np.ndarray | None = None  # allocated per backward, freed once reduced
        self.filled: set[int] = set()
        self.tensor = None
        self.task = None

    def segment(self, i: int) -> np.ndarray:
        return self.flat[self.offsets[i]:self.offsets[i + 1]]

    def allocate(self) -> None:
        if self.flat is None:
            # One flag per parameter after the gradients: 1 where this rank used it, so after the
            # mean a parameter that no rank used is recognised and keeps grad None.
            self.flat = np.zeros(self.numel + len(self.params), self.dtype)


class ShardedGradientModel(GradientSyncLayer):
    """Stage 2's model side: wrap ``layers`` so that each backward reduces every gradient to its
    owner rank (mean) and the other ranks drop it. Made by ``sharding_model(model, stage=2)``.

    Wrapping broadcasts the group's first rank's parameters and buffers, so every rank starts alike.
    In a job of one process it changes nothing.

    >>> import oar
    >>> from oar.distributed.fleet._sharding import ShardedGradientModel
    >>> model = ShardedGradientModel(oar.nn.Linear(4, 2))
    >>> model(oar.ones([3, 4])).sum().backward()
    >>> model.parameters()[0].grad.shape
    [4, 2]
    """

    def __init__(self, layers: nn.Layer, group=None, comm_buffer_size: float = 32):
        super().__init__()
        if not isinstance(layers, nn.Layer):
            raise ArgumentError(f"sharding_model: layers must be an oar.nn.Layer, got {type(layers).__name__}")
        limit = _check_buffer_size("sharding_model", comm_buffer_size)
        self._layers = layers
        self._group = collective.init_parallel_env() if group is None else group
        self._sync = True
        self._active = False
        self._buckets: list[_ReduceBucket] = []
        self._place: dict[int, tuple[_ReduceBucket, int]] = {}
        self._next_bucket = 0
        self._hooks = []
        params = list({id(p): p for p in layers.parameters() if not p.stop_gradient}.values())
        owners = assign_owners(params, self._group.nranks)
        self.owners = {id(p): self._group.ranks[o] for p, o in zip(params, owners)}  # global ranks
        for p in params:
            _STAGE2_OWNERS[id(p)] = (weakref.ref(p, lambda _, key=id(p): _forget(key)), self.owners[id(p)])
        if self._group.nranks > 1:
            self._broadcast_state()
            # Gradients come in roughly the reverse order of the layers' creation: so do buckets.
            order = [p for p in reversed(params)]
            key = lambda p: (self.owners[id(p)], p.numpy(copy=False).dtype.str)  # noqa: E731
            for index, members in enumerate(_buckets(order, key, limit)):
                self._watch(_ReduceBucket(index, members, self.owners[id(members[0])]))

    # -- during backward ---------------------------------------------------------------------------
    def _gradient_ready(self, param) -> None:
        claimed = self._claim(param)
        if claimed is None:
            return
        bucket, i = claimed
        bucket.allocate()
        bucket.segment(i)[...] = param.grad.numpy(copy=False).reshape(-1)
        bucket.flat[bucket.numel + i] = 1
        bucket.filled.add(i)
        if bucket.owner != collective.get_rank():
            param.grad = None  # copied into the bucket: a non-owner holds no gradient from here on
        self._start_ready()
        self._progress_started()

    def _start_ready(self) -> None:
        while self._next_bucket < len(self._buckets) and len(self._buckets[self._next_bucket].filled) == \
                len(self._buckets[self._next_bucket].params):
            bucket = self._buckets[self._next_bucket]
            bucket.tensor = oar.to_tensor(bucket.flat)
            bucket.flat = None
            bucket.task = collective.reduce(bucket.tensor, dst=bucket.owner, op=collective.ReduceOp.AVG,
                                            group=self._group, sync_op=False)
            self._next_bucket += 1

    def _finish_backward(self) -> None:
        self._active = False
        for bucket in self._buckets[self._next_bucket:]:
            # A parameter this rank did not use: zeros and a 0 flag, so no other rank waits forever.
            bucket.allocate()
            bucket.filled.update(range(len(bucket.params)))
        self._start_ready()
        me = collective.get_rank()
        for bucket in self._buckets:
            bucket.task.wait()
            if bucket.owner == me:
                flat = bucket.tensor.numpy(copy=False)
                for i, p in enumerate(bucket.params):
                    if flat[bucket.numel + i] > 0:  # some rank used it
                        start, stop = bucket.offsets[i], bucket.offsets[i + 1]
                        p.grad = oar.to_tensor(flat[start:stop].reshape(p.shape))
            else:
                for p in bucket.params:
                    p.grad = None  # also a parameter this rank did not use
            bucket.tensor = bucket.task = None
            bucket.filled.clear()
        self._next_bucket = 0


def sharding_model(model: nn.Layer, stage: int = 1, group=None, **kwargs) -> nn.Layer:
    """The model side of sharding: ``oar.DataParallel(model)`` for stage 1 (gradients averaged on
    every rank), a ``ShardedGradientModel`` for stage 2 (gradients reduced to their owner rank).
    ``kwargs`` go to the wrapper (``comm_buffer_size`` in MB).

    >>> import oar
    >>> from oar.distributed.fleet._sharding import sharding_model
    >>> type(sharding_model(oar.nn.Linear(2, 2), stage=1)).__name__
    'DataParallel'
    """
    stage = _check_stage("sharding_model", stage)
    if stage == 1:
        return DataParallel(model, group=group, **kwargs)
    return ShardedGradientModel(model, group=group, **kwargs)


class ShardingOptimizer:
    """Wrap an oar optimizer so that each rank updates, and keeps state for, only the parameters
    it owns, then broadcasts them (Paddle's ``DygraphShardingOptimizer``, stages 1 and 2).

    Use it with ``sharding_model(model, stage)``. ``state_dict()`` is this rank's shard of the
    optimizer state (save it with ``oar.distributed.save_state_dict``); ``set_state_dict`` loads
    a shard or a whole state dict (keeping the owned part). Other attributes -- the learning rate,
    ``_parameter_list`` for schedulers -- are the wrapped optimizer's, unchanged.

    >>> import oar
    >>> from oar.distributed.fleet._sharding import ShardingOptimizer, sharding_model
    >>> model = sharding_model(oar.nn.Linear(4, 2), stage=1)
    >>> opt = ShardingOptimizer(oar.optimizer.Adam(parameters=model.parameters()), stage=1)
    >>> model(oar.ones([3, 4])).mean().backward()
    >>> opt.step()
    >>> len(opt.state_dict())  # weight and bias, four Adam accumulators each
    8
    """

    def __init__(self, optimizer, stage: int = 1, group=None, comm_buffer_size: float = 32):
        if not isinstance(optimizer, oar.optimizer.Optimizer):
            raise ArgumentError(f"ShardingOptimizer: optimizer must be an oar.optimizer.Optimizer, got "
                                f"{type(optimizer).__name__}")
        self._inner_opt = optimizer
        self._stage = _check_stage("ShardingOptimizer", stage)
        self._group = collective.init_parallel_env() if group is None else group
        self._limit = _check_buffer_size("ShardingOptimizer", comm_buffer_size)
        params = [p for g in self._groups() for p in g["params"] if not p.stop_gradient]
        self._params = list({id(p): p for p in params}.values())
        self.owners = self._assign(self._params)  # id(param) -> owner's global rank
        me = collective.get_rank()
        self._owned = [p for p in self._params if self.owners[id(p)] == me]
        self._owner_by_name = {p.name: self.owners[id(p)] for p in self._params}
        key = lambda p: (self.owners[id(p)], p.numpy(copy=False).dtype.str)  # noqa: E731
        self._broadcast_buckets = _buckets(self._params, key, self._limit) if self._group.nranks > 1 else []

    def _groups(self) -> list[dict]:
        # The wrapped optimizer's parameter groups (each with 'params' and, maybe, 'grad_clip'):
        # nn's Optimizer keeps them there; this class is its friend, as Paddle's sharding is.
        return self._inner_opt._param_groups

    def _assign(self, params: list) -> dict[int, int]:
        owners: dict[int, int] = {}
        free = []
        for p in params:
            entry = _STAGE2_OWNERS.get(id(p))
            if entry is not None and entry[0]() is p and self._stage == 2:
                owners[id(p)] = entry[1]  # the stage-2 model reduces this gradient to that rank
            else:
                free.append(p)
        for p, o in zip(free, assign_owners(free, self._group.nranks)):
            owners[id(p)] = self._group.ranks[o]
        return owners

    def __getattr__(self, name):
        # Only called for what this class lacks: the wrapped optimizer's attributes pass through.
        if name == "_inner_opt":
            raise AttributeError(name)
        return getattr(self._inner_opt, name)

    # -- pass-through ------------------------------------------------------------------------------
    def get_lr(self) -> float:
        """The wrapped optimizer's learning rate."""
        return self._inner_opt.get_lr()

    def set_lr(self, value: float) -> None:
        """Set the wrapped optimizer's learning rate."""
        self._inner_opt.set_lr(value)

    def set_lr_scheduler(self, scheduler) -> None:
        self._inner_opt.set_lr_scheduler(scheduler)

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Clear every parameter's gradient (owned or not), as the wrapped optimizer does."""
        self._inner_opt.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    # -- the step ------------------------------------------------------------------------------------
    def step(self) -> None:
        """Update the parameters this rank owns (the others' gradients are set aside meanwhile),
        then broadcast every parameter from its owner, so all ranks hold the same model again."""
        if self._group.nranks == 1:
            self._inner_opt.step()
            return
        me = collective.get_rank()
        hidden = []
        for p in self._params:
            if self.owners[id(p)] != me and p.grad is not None:
                hidden.append((p, p.grad))
                p.grad = None
        try:
            self._clip_global_norms()
            self._inner_opt.step()
        finally:
            for p, grad in hidden:
                p.grad = grad  # stage 1 keeps every gradient, as DataParallel left it
        self._broadcast_parameters()

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """``loss.backward()`` and ``step()``; returns ``([], [])`` (eager mode has no ops)."""
        loss.backward()
        self.step()
        return [], []

    def _clip_global_norms(self) -> None:
        """``ClipGradByGlobalNorm`` over every rank's owned gradients: all-reduce the squares."""
        default = getattr(self._inner_opt, "_grad_clip", None)
        for group in self._groups():
            clip = group["grad_clip"] if "grad_clip" in group else default
            if not isinstance(clip, nn.ClipGradByGlobalNorm):
                continue
            pairs = [(p, p.grad) for p in group["params"] if not p.stop_gradient and p.grad is not None]
            norm = clip.global_norm(pairs) if pairs else None
            square = np.array([0.0 if norm is None else float(norm.item()) ** 2], np.float64)
            total = oar.to_tensor(square)
            collective.all_reduce(total, group=self._group)
            global_norm = float(np.sqrt(total.item()))
            if global_norm <= clip.clip_norm or not pairs:
                continue
            scale = clip.clip_norm / global_norm
            for p, g in pairs:
                p.grad = g * oar.to_tensor(np.asarray(scale, g.numpy(copy=False).dtype))

    def _broadcast_parameters(self) -> None:
        me = collective.get_rank()
        started = []
        for bucket in self._broadcast_buckets:
            owner = self.owners[id(bucket[0])]
            if owner == me:
                flat = np.concatenate([p.numpy(copy=False).reshape(-1) for p in bucket])
            else:
                flat = np.empty(sum(_numel(p) for p in bucket), bucket[0].numpy(copy=False).dtype)
            tensor = oar.to_tensor(flat)
            task = collective.broadcast(tensor, src=owner, group=self._group, sync_op=False)
            started.append((bucket, owner, tensor, task))
        with oar.no_grad():
            for bucket, owner, tensor, task in started:
                task.wait()
                if owner == me:
                    continue
                flat = tensor.numpy(copy=False)
                offset = 0
                for p in bucket:
                    n = _numel(p)
                    p.set_value(flat[offset:offset + n].reshape(p.shape))
                    offset += n

    # -- state -------------------------------------------------------------------------------------
    def _owned_key(self, key: str) -> bool:
        # Accumulator keys are '<param name>_<accumulator>_0': the longest parameter name that
        # prefixes the key up to an underscore is its parameter.
        names = self._owner_by_name
        cut = key.rfind("_")
        while cut > 0:
            owner = names.get(key[:cut])
            if owner is not None:
                return owner == collective.get_rank()
            cut = key.rfind("_", 0, cut)
        return False

    def _create_state(self) -> None:
        """Create the accumulators of every owned parameter that has none yet (at their initial
        values, as the first step would), so that ``state_dict()`` names every key of the shard
        -- what ``load_state_dict`` reads into."""
        inner = self._inner_opt
        owned = {id(p) for p in self._owned}
        for group in self._groups():
            hyper = {key: group[key] for key in inner._defaults}
            for p in group["params"]:
                if id(p) in owned:
                    dtype = p.numpy(copy=False).dtype
                    inner._state_of(p, np.dtype(np.float32) if p.dtype.name in _LOW_PRECISION else dtype, hyper)

    def state_dict(self) -> dict:
        """This rank's shard of the optimizer state: the accumulators of the parameters it owns
        (created at their initial values if no step ran yet), ``master_weights`` of those, and
        ``LR_Scheduler`` when a scheduler drives the learning rate.

        >>> import oar
        >>> from oar.distributed.fleet._sharding import ShardingOptimizer
        >>> fc = oar.nn.Linear(2, 1)
        >>> opt = ShardingOptimizer(oar.optimizer.Momentum(parameters=fc.parameters()))
        >>> len(opt.state_dict())  # before any step: the initial velocity of weight and bias
        2
        """
        self._create_state()
        state = self._inner_opt.state_dict()
        if self._group.nranks == 1:
            return state
        out = {}
        for key, value in state.items():
            if key == "LR_Scheduler":
                out[key] = value
            elif key == "master_weights":
                names = {p.name for p in self._owned}
                out[key] = {name: t for name, t in value.items() if name in names}
            elif self._owned_key(key):
                out[key] = value
        return out

    def set_state_dict(self, state_dict: dict) -> None:
        """Load this rank's shard: from a shard, or from a whole state dict (one process's, or
        every shard merged), of which the keys of the parameters it owns are kept."""
        if not isinstance(state_dict, dict):
            raise ArgumentError(f"set_state_dict: expected a dict, got {type(state_dict).__name__}")
        if self._group.nranks > 1:
            names = {p.name for p in self._owned}
            kept = {}
            for key, value in state_dict.items():
                if key == "LR_Scheduler":
                    kept[key] = value
                elif key == "master_weights":
                    kept[key] = {name: t for name, t in value.items() if name in names}
                elif self._owned_key(key):
                    kept[key] = value
            state_dict = kept
        self._inner_opt.set_state_dict(state_dict)

    set_dict = set_state_dict

    def __repr__(self) -> str:
        return (f"ShardingOptimizer(stage={self._stage}, rank={collective.get_rank()}, "
                f"owns {len(self._owned)} of {len(self._params)} parameters, {self._inner_opt!r})")
