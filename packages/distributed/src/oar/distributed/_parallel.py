"""``oar.DataParallel``: data-parallel training of one Layer over the ranks of a job.

Every rank holds the whole model and runs it on its own share of each batch. At wrap time rank 0's
parameters and buffers are copied to every rank, so all start alike. During ``backward`` each
trainable parameter's gradient is written into a *bucket* (a flat buffer of about
``comm_buffer_size`` MB) as soon as it is complete -- core calls the parameter's post-accumulate
hook then -- and a full bucket starts its all-reduce at once, while the rest of the backward runs.
Buckets start in one fixed order on every rank (a bucket waits for those before it), so the ranks'
collectives always match. After the first step each parameter's ``.grad`` *is* its segment of
the bucket (a tensor over that memory, ``oar.from_numpy``): backward accumulates into the bucket
and the mean is computed where it was reduced, so a step copies no gradient in or out. When the
backward ends (``oar.autograd.queue_callback``) every bucket has been reduced, and each gradient
is the mean over the ranks: a step then moves every rank's parameters alike, as one process would
on the global batch with a mean-reduced loss.

A parameter that got no gradient (a layer the forward skipped) is where Paddle's users see hangs.
Here the remaining buckets still go out, filled with zeros, so no rank waits forever, and then

- with ``find_unused_parameters=False`` (the default) the backward raises, naming every such
  parameter and saying what to do;
- with ``find_unused_parameters=True`` it counts as a zero gradient in the mean; a parameter no
  rank used keeps ``grad`` None, so the optimizer leaves it alone.

Inside ``no_sync()`` no reduction happens: gradients accumulate locally, and the first backward
after it reduces the sum.
"""

from __future__ import annotations

import contextlib

import numpy as np

import oar
import oar.nn as nn
from oar.autograd import queue_callback
from oar.distributed import _collective as collective
from oar.errors import ArgumentError, GradientError

_MB = 1 << 20


class _Bucket:
    """A flat buffer holding the gradients of some parameters of one dtype, reduced in one call."""

    def __init__(self, index: int, params: list, with_flags: bool):
        self.index = index
        self.params = params
        self.offsets = []
        offset = 0
        for p in params:
            self.offsets.append(offset)
            offset += int(np.prod(p.shape, dtype=np.int64))
        self.numel = offset
        dtype = params[0].numpy(copy=False).dtype
        # With find_unused_parameters, one more number per parameter: 1 where this rank used it,
        # so after the sum a parameter no rank used is recognised (and keeps grad None).
        self.buffer = np.zeros(offset + (len(params) if with_flags else 0), dtype)
        self.with_flags = with_flags
        # Each parameter's gradient as a tensor over its segment: once a parameter's .grad is
        # this tensor, backward accumulates straight into the bucket and the mean lands in .grad
        # where it was reduced -- no copy in, no copy out.
        self.views = [oar.from_numpy(self.segment(i).reshape(p.shape)) for i, p in enumerate(params)]
        self.pending = len(params)
        self.filled: set[int] = set()
        self.task = None

    def reset(self) -> None:
        self.pending = len(self.params)
        self.filled.clear()
        self.task = None

    def segment(self, i: int) -> np.ndarray:
        start = self.offsets[i]
        return self.buffer[start:start + int(np.prod(self.params[i].shape, dtype=np.int64))]


class GradientSyncLayer(nn.Layer):
    """What every wrapper that reduces a layer's gradients over the ranks shares (``DataParallel``,
    sharding stage 2's model): the wrapped layer's forward and state dict, rank 0's state at
    wrap time, and ``no_sync``. Subclasses set ``_layers``, ``_group`` and ``_sync = True``."""

    def forward(self, *inputs, **kwargs):
        return self._layers(*inputs, **kwargs)

    def state_dict(self, *args, **kwargs):
        """The wrapped layer's state dict (no ``_layers.`` prefix), as Paddle's."""
        return self._layers.state_dict(*args, **kwargs)

    def set_state_dict(self, *args, **kwargs):
        return self._layers.set_state_dict(*args, **kwargs)

    set_dict = set_state_dict
    load_dict = set_state_dict

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside accumulate gradients locally without communicating; the first
        backward after the block reduces the sum (gradient accumulation over several batches).

        >>> import oar
        >>> model = oar.DataParallel(oar.nn.Linear(2, 1))
        >>> with model.no_sync():
        ...     model(oar.ones([1, 2])).sum().backward()
        """
        previous, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = previous

    def _broadcast_state(self) -> None:
        """Every rank of the group takes the group's first rank's parameters and buffers."""
        root = self._group.ranks[0]
        with oar.no_grad():
            for tensor in [*self._layers.parameters(), *self._layers.buffers()]:
                collective.broadcast(tensor, src=root, group=self._group)

    # The buckets: each has ``params``, ``filled`` (indices whose gradient it holds in this
    # backward) and ``task``; ``_buckets[:_next_bucket]`` have started their collective.
    def _watch(self, bucket) -> None:
        """Add ``bucket``: each of its parameters' finished gradients calls ``_gradient_ready``."""
        self._buckets.append(bucket)
        for i, p in enumerate(bucket.params):
            self._place[id(p)] = (bucket, i)
            self._hooks.append(p.register_post_accumulate_grad_hook(self._gradient_ready))

    def _claim(self, param):
        """The ``(bucket, index)`` of ``param``, whose gradient this backward has just finished,
        or None when it needs nothing (inside ``no_sync``, or already taken in this backward).
        The first claim of a backward asks for ``_finish_backward`` at its end."""
        if not self._sync:
            return None
        if not self._active:
            self._active = True
            queue_callback(self._finish_backward)
        bucket, i = self._place[id(param)]
        return None if i in bucket.filled else (bucket, i)

    def _progress_started(self) -> None:
        for bucket in self._buckets[:self._next_bucket]:
            bucket.task.is_completed()  # MPI progresses only inside its calls: let the started ones move


class DataParallel(GradientSyncLayer):
    """Run ``layers`` data-parallel over the ranks of the job, as ``paddle.DataParallel``.

    Wrapping broadcasts rank 0's parameters and buffers; each backward then averages the
    gradients over the ranks in buckets of ``comm_buffer_size`` MB (the first, holding the last
    layers' gradients, of ``last_comm_buffer_size`` MB, so that it starts early), overlapped
    with the rest of the backward. ``find_unused_parameters=True`` allows a forward that leaves
    parameters unused; without it such a parameter is an error naming it, never a hang.
    ``group`` (from ``oar.distributed.new_group``) restricts the averaging to its ranks.

    In a job of one process it changes nothing.

    >>> import oar
    >>> model = oar.DataParallel(oar.nn.Linear(4, 2))
    >>> loss = model(oar.ones([3, 4])).mean()
    >>> loss.backward()
    >>> model.parameters()[0].grad.shape
    [4, 2]
    """

    def __init__(self, layers: nn.Layer, strategy=None, comm_buffer_size: float = 25,
                 last_comm_buffer_size: float = 1, find_unused_parameters: bool = False, group=None):
        super().__init__()
        if not isinstance(layers, nn.Layer):
            raise ArgumentError(f"DataParallel: layers must be an oar.nn.Layer, got {type(layers).__name__}")
        for name, value in (("comm_buffer_size", comm_buffer_size), ("last_comm_buffer_size", last_comm_buffer_size)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ArgumentError(f"DataParallel: {name} must be a positive number of MB, got {value!r}")
        self._layers = layers
        self.find_unused_parameters = bool(find_unused_parameters)
        self._group = collective.init_parallel_env() if group is None else group
        self._sync = True
        self._names = {id(p): name for name, p in layers.named_parameters()}
        self._buckets: list[_Bucket] = []
        self._place: dict[int, tuple[_Bucket, int]] = {}
        self._next_bucket = 0
        self._active = False
        self._hooks = []
        if self._group.nranks > 1:
            self._broadcast_state()
            self._build_buckets(comm_buffer_size * _MB, last_comm_buffer_size * _MB)

    # -- Paddle 2.0's explicit calls, kept for old scripts -------------------------------------------
    def scale_loss(self, loss):
        """Paddle 2.0's explicit scaling, kept for old scripts: gradients are averaged already."""
        return loss

    def apply_collective_grads(self) -> None:
        """Paddle 2.0's explicit reduction, kept for old scripts: backward has reduced them."""

    # -- set-up ------------------------------------------------------------------------------------
    def _build_buckets(self, size: float, first_size: float) -> None:
        # Gradients come in roughly the reverse of the order layers were created: so do buckets.
        params = [p for p in reversed(self._layers.parameters()) if not p.stop_gradient]
        if len({id(p) for p in params}) != len(params):
            params = list({id(p): p for p in params}.values())
        groups: list[list] = []
        current: list = []
        current_bytes = 0
        for p in params:
            nbytes = int(np.prod(p.shape, dtype=np.int64)) * p.numpy(copy=False).itemsize
            limit = first_size if not groups else size
            if current and (current_bytes + nbytes > limit or p.dtype != current[0].dtype):
                groups.append(current)
                current, current_bytes = [], 0
            current.append(p)
            current_bytes += nbytes
        if current:
            groups.append(current)
        for index, members in enumerate(groups):
            self._watch(_Bucket(index, members, self.find_unused_parameters))

    # -- during backward ---------------------------------------------------------------------------
    def _gradient_ready(self, param) -> None:
        claimed = self._claim(param)
        if claimed is None:
            return
        bucket, i = claimed
        if param.grad is not bucket.views[i]:  # a .grad of its own (the first step, or set by the user)
            bucket.segment(i)[...] = param.grad.numpy(copy=False).reshape(-1)
        bucket.filled.add(i)
        bucket.pending -= 1
        self._start_ready_buckets()
        self._progress_started()

    def _start_ready_buckets(self) -> None:
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._start(self._buckets[self._next_bucket])
            self._next_bucket += 1

    def _start(self, bucket: _Bucket) -> None:
        if bucket.with_flags:  # 1 where this rank has a gradient for the parameter
            flags = bucket.buffer[bucket.numel:]
            for i, p in enumerate(bucket.params):
                flags[i] = 1 if i in bucket.filled or p.grad is not None else 0
        details = {"bucket": bucket.index, "numel": int(bucket.buffer.size), "dtype": str(bucket.buffer.dtype)}
        group = self._group
        buffer = bucket.buffer
        bucket.task = collective._start(
            "DataParallel gradient all_reduce", group, details,
            lambda: collective._state().backend.all_reduce(group.comm, buffer, "SUM"), sync_op=False)

    def _finish_backward(self) -> None:
        self._active = False
        missing = []
        for bucket in self._buckets[self._next_bucket:]:
            for i, p in enumerate(bucket.params):
                if i not in bucket.filled:
                    # No gradient in this backward: send what .grad holds (an earlier step's, when
                    # gradients accumulate) or zeros -- either way no other rank waits forever.
                    missing.append(p)
                    if p.grad is None:
                        bucket.segment(i)[...] = 0
                    elif p.grad is not bucket.views[i]:
                        bucket.segment(i)[...] = p.grad.numpy(copy=False).reshape(-1)
            bucket.pending = 0
        self._start_ready_buckets()
        for bucket in self._buckets:
            bucket.task.wait()
            sums = bucket.buffer[:bucket.numel]
            np.multiply(sums, 1.0 / self._group.nranks, out=sums, casting="unsafe")  # the mean, in place
            for i, p in enumerate(bucket.params):
                if bucket.with_flags and bucket.buffer[bucket.numel + i] == 0:
                    continue  # no rank has a gradient for it: .grad stays None
                if p.grad is not bucket.views[i]:
                    p.grad = bucket.views[i]
            bucket.reset()
        self._next_bucket = 0
        if missing and not self.find_unused_parameters:
            names = [self._names.get(id(p), p.name) for p in missing]
            raise GradientError(
                f"DataParallel: {len(names)} parameter(s) got no gradient in this backward on rank "
                f"{collective.get_rank()}: {names}. With find_unused_parameters=False every trainable parameter "
                "must take part in computing the loss; pass find_unused_parameters=True to DataParallel when a "
                "forward may skip some (their gradient then counts as zero), or set stop_gradient=True on "
                "parameters that are frozen.")
