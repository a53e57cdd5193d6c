"""The optimizer ``fleet.distributed_optimizer`` returns: the user's optimizer with the strategy's
gradient merge applied (and, under ``sharding``, the sharded optimizer inside).

Gradient merge (``k_steps``): the user's ordinary loop ``loss.backward(); opt.step();
opt.clear_grad()`` accumulates gradients in ``.grad`` over ``k_steps`` calls; only the k-th
``step()`` updates (after dividing by ``k_steps`` when ``avg``), and ``clear_grad()`` clears
only after such an update. With a mean-reduced loss and ``avg=True`` that trains like one step on
a ``k_steps`` times larger batch.

Communication inside the merge window: when the wrapper knows the model (``distributed_model``
was called first, or ``model=`` is given) and that model has ``no_sync()``, the backward passes
of the first ``k_steps - 1`` micro-steps run without all-reduce -- the wrapper holds the model's
``no_sync()`` open from an update until the step before the next one -- and the k-th backward
averages the accumulated sum once: 1/k of the communication. Without a model it all-reduces at
every backward, which is also correct: averaging over the ranks is linear, so the mean of the
sums equals the sum of the means.
"""

from __future__ import annotations

from typing import Any

import oar
from oar.distributed.fleet._sharding import ShardingOptimizer
from oar.distributed.fleet._strategy import DistributedStrategy
from oar.errors import ArgumentError


class DistributedOptimizer:
    """An optimizer that applies a ``DistributedStrategy``; made by ``fleet.distributed_optimizer``.

    It has the wrapped optimizer's API (``step``, ``clear_grad``, ``get_lr``, ``set_lr``,
    ``state_dict``, ...); ``inner_opt`` is the wrapped optimizer. With ``gradient_merge`` on,
    ``step()`` updates every ``k_steps`` calls -- which Paddle 3.3.1's dygraph ignores (it updates
    at every step); oar implements it.

    >>> import oar
    >>> from oar.distributed import fleet
    >>> strategy = fleet.DistributedStrategy()
    >>> strategy.gradient_merge = True
    >>> strategy.gradient_merge_configs = {"k_steps": 2, "avg": True}
    >>> layer = oar.nn.Linear(2, 1)
    >>> opt = fleet.DistributedOptimizer(oar.optimizer.SGD(0.1, parameters=layer.parameters()), strategy)
    >>> before = layer.weight.numpy()
    >>> layer(oar.ones([1, 2])).sum().backward(); opt.step(); opt.clear_grad()
    >>> bool((layer.weight.numpy() == before).all())  # first of two micro-steps: no update yet
    True
    """

    def __init__(self, optimizer, strategy=None, model=None):
        if strategy is None:
            strategy = DistributedStrategy()
        if not isinstance(strategy, DistributedStrategy):
            raise ArgumentError(f"distributed_optimizer: strategy must be a fleet.DistributedStrategy, got "
                                f"{type(strategy).__name__}")
        for name in ("step", "clear_grad"):
            if not callable(getattr(optimizer, name, None)):
                raise ArgumentError(f"distributed_optimizer: expected an oar.optimizer optimizer, got "
                                    f"{type(optimizer).__name__} (it has no {name}())")
        self.user_defined_strategy = strategy
        self.inner_opt = optimizer
        self._user_optimizer = optimizer  # the parameters are read from it, whatever wraps it
        if strategy.sharding:
            self.inner_opt = ShardingOptimizer(optimizer, strategy.sharding_configs["stage"])
        merge = strategy.gradient_merge_configs
        self._k_steps = merge["k_steps"] if strategy.gradient_merge else 1
        self._avg = merge["avg"]
        self._micro_step = 0  # backward passes accumulated since the last update
        self._model = None
        self._no_sync = None  # the model's no_sync() context while it is held open
        if model is not None:
            self._attach_model(model)

    # -- the model's gradient communication ---------------------------------------------------------
    def _attach_model(self, model) -> None:
        """Skip the all-reduce of the merge window's first ``k_steps - 1`` backward passes."""
        if self._k_steps > 1 and callable(getattr(model, "no_sync", None)):
            self._model = model
            self._hold_no_sync(self._k_steps > 1)

    def _hold_no_sync(self, hold: bool) -> None:
        # no_sync() is a context manager meant for a with-block; the window spans the user's loop
        # iterations, so the wrapper enters it at an update and leaves it before the last backward.
        if hold and self._no_sync is None:
            self._no_sync = self._model.no_sync()
            self._no_sync.__enter__()
        elif not hold and self._no_sync is not None:
            context, self._no_sync = self._no_sync, None
            context.__exit__(None, None, None)

    # -- the step ------------------------------------------------------------------------------------
    def step(self) -> None:
        """Update the parameters -- with gradient merge, only at every ``k_steps``-th call."""
        self._micro_step += 1
        if self._micro_step < self._k_steps:
            if self._model is not None and self._micro_step == self._k_steps - 1:
                self._hold_no_sync(False)  # the next backward closes the window: it all-reduces
            return
        if self._k_steps > 1 and self._avg:
            with oar.no_grad():
                for p in self._parameters():
                    if p.grad is not None:
                        p.grad = p.grad * (1.0 / self._k_steps)
        self.inner_opt.step()
        self._micro_step = 0
        if self._model is not None:
            self._hold_no_sync(True)

    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Clear the gradients -- with gradient merge, only right after an update, so that they
        accumulate over the merge window."""
        if self._micro_step == 0:
            self.inner_opt.clear_grad(set_to_zero)

    clear_gradients = clear_grad

    def minimize(self, loss, startup_program=None, parameters=None, no_grad_set=None):
        """``loss.backward()`` then ``step()`` (Paddle's dygraph ``minimize``, with the strategy)."""
        if self._k_steps == 1:
            return self.inner_opt.minimize(loss, startup_program, parameters, no_grad_set)
        loss.backward()
        self.step()
        return [], [(p, p.grad) for p in self._parameters() if p.grad is not None]

    def _parameters(self) -> list:
        # Paddle's optimizers keep their parameters as ``_parameter_list`` (a list, or param groups).
        found = getattr(self._user_optimizer, "_parameter_list", None) or []
        params = []
        for item in found:
            params.extend(item["params"] if isinstance(item, dict) else [item])
        return [p for p in params if not p.stop_gradient]

    def __getattr__(self, name: str) -> Any:
        # Everything else is the wrapped optimizer's (get_lr, set_lr, state_dict, _learning_rate, ...).
        if name.startswith("__") or name in ("inner_opt", "_user_optimizer"):
            raise AttributeError(name)
        return getattr(self.inner_opt, name)

    def __repr__(self) -> str:
        return f"DistributedOptimizer({self.inner_opt!r}, k_steps={self._k_steps})"
