"""``oar.optimizer.lr``: learning-rate schedulers with Paddle's formulas.

A scheduler is handed to an optimizer as its ``learning_rate``; ``scheduler.step()`` (after
``optimizer.step()``, once per epoch or per iteration) moves it on, and the optimizer reads
``scheduler()`` (the ``last_lr``) at each update. ``state_dict()`` holds plain Python values.

>>> import oar
>>> sched = oar.optimizer.lr.StepDecay(learning_rate=0.5, step_size=2, gamma=0.1)
>>> opt = oar.optimizer.SGD(learning_rate=sched, parameters=oar.nn.Linear(2, 1).parameters())
>>> for epoch in range(4):
...     print(epoch, round(opt.get_lr(), 6))
...     sched.step()
0 0.5
1 0.5
2 0.05
3 0.05
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np

from oar.errors import ArgumentError
from oar.ops import Tensor


def _number(value, what: str) -> float:
    if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
        raise ArgumentError(f"{what} must be a float or int, got {type(value).__name__}")
    return float(value)


def _positive_int(value, what: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value <= 0:
        raise ArgumentError(f"{what} must be a positive int, got {value!r}")
    return int(value)


class LRScheduler:
    """The base of the schedulers: subclasses define ``get_lr()`` from ``self.last_epoch``
    (and ``self.base_lr``, ``self.last_lr``).

    Construction runs ``step()`` once, so ``last_epoch`` starts at ``last_epoch + 1`` (0 by
    default). ``step(epoch)`` jumps to an epoch, using the closed form where a scheduler has one.

    >>> from oar.optimizer.lr import LRScheduler
    >>> class Halving(LRScheduler):
    ...     def get_lr(self):
    ...         return self.base_lr * 0.5 ** self.last_epoch
    >>> s = Halving(1.0)
    >>> s.step(); s.step()
    >>> s(), s.last_epoch
    (0.25, 2)
    """

    def __init__(self, learning_rate: float = 0.1, last_epoch: int = -1, verbose: bool = False):
        learning_rate = _number(learning_rate, f"{type(self).__name__}: learning_rate")
        if learning_rate < 0:
            raise ArgumentError(f"{type(self).__name__}: learning_rate must be >= 0, got {learning_rate}")
        self.base_lr = learning_rate
        self.last_lr = learning_rate
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._var_name = None
        self.step()

    def __call__(self) -> float:
        """The learning rate of the current epoch."""
        return self.last_lr

    def step(self, epoch: int | None = None) -> None:
        """Move to the next epoch (or to ``epoch``) and compute its learning rate."""
        if epoch is None:
            self.last_epoch += 1
            self.last_lr = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", None)
            self.last_lr = closed_form() if closed_form is not None else self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def get_lr(self) -> float:
        """The learning rate at ``self.last_epoch``; every scheduler defines it."""
        raise NotImplementedError(f"{type(self).__name__} must define get_lr()")

    def state_keys(self) -> None:
        """Set ``self.keys``, the attributes ``state_dict`` saves (``last_epoch``, ``last_lr``)."""
        self.keys = ["last_epoch", "last_lr"]

    def state_dict(self) -> dict:
        """The scheduler's state: plain Python values."""
        self.state_keys()
        out = {}
        for key in self.keys:
            if key not in self.__dict__:
                continue
            value = self.__dict__[key]
            if isinstance(value, Tensor):
                if value.size != 1:
                    raise ArgumentError(f"state_dict: {key} is a tensor of {value.size} elements; expected one")
                value = float(value)
            elif isinstance(value, np.generic):
                value = value.item()
            out[key] = value
        return out

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore a state from ``state_dict()``."""
        self.state_keys()
        missing = [key for key in self.keys if key not in state_dict]
        if missing:
            raise ArgumentError(f"{type(self).__name__}.set_state_dict: the state dict lacks {missing}")
        for key in self.keys:
            value = state_dict[key]
            if isinstance(value, Tensor):
                value = value.item()
            self.__dict__[key] = value
        if len(state_dict) > len(self.keys):
            warnings.warn(
                f"{type(self).__name__}.set_state_dict: unused entries {sorted(set(state_dict) - set(self.keys))}; "
                f"was the state saved from a different scheduler?",
                stacklevel=2,
            )

    set_dict = set_state_dict

    def __repr__(self) -> str:
        return f"{type(self).__name__}(last_epoch={self.last_epoch}, last_lr={self.last_lr})"


class NoamDecay(LRScheduler):
    """``lr = learning_rate * d_model**-0.5 * min(epoch**-0.5, epoch * warmup_steps**-1.5)``
    (epoch 0 counts as ``min(1, 0)``), from *Attention Is All You Need*.

    >>> import oar
    >>> s = oar.optimizer.lr.NoamDecay(d_model=64, warmup_steps=10)
    >>> s.step(); round(s(), 6)
    0.003953
    """

    def __init__(self, d_model: float, warmup_steps: int, learning_rate: float = 1.0, last_epoch: int = -1,
                 verbose: bool = False):
        if _number(d_model, "NoamDecay: d_model") <= 0:
            raise ArgumentError(f"NoamDecay: d_model must be > 0, got {d_model}")
        self.d_model = d_model
        self.warmup_steps = _positive_int(warmup_steps, "NoamDecay: warmup_steps")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        a = 1 if self.last_epoch == 0 else self.last_epoch ** -0.5
        b = self.warmup_steps ** -1.5 * self.last_epoch
        return self.base_lr * (self.d_model ** -0.5) * min(a, b)


class PiecewiseDecay(LRScheduler):
    """``values[i]`` while ``epoch < boundaries[i]``, then ``values[-1]``.

    >>> import oar
    >>> s = oar.optimizer.lr.PiecewiseDecay(boundaries=[2], values=[1.0, 0.1])
    >>> [s() for _ in range(3) if s.step() is None]
    [1.0, 0.1, 0.1]
    """

    def __init__(self, boundaries, values, last_epoch: int = -1, verbose: bool = False):
        if len(boundaries) == 0:
            raise ArgumentError("PiecewiseDecay: boundaries must not be empty")
        if len(values) <= len(boundaries):
            raise ArgumentError(
                f"PiecewiseDecay: values needs one more element than boundaries, got {len(values)} values for "
                f"{len(boundaries)} boundaries"
            )
        self.boundaries = list(boundaries)
        self.values = list(values)
        super().__init__(last_epoch=last_epoch, verbose=verbose)

    def get_lr(self) -> float:
        for boundary, value in zip(self.boundaries, self.values):
            if self.last_epoch < boundary:
                return value
        return self.values[-1]


class NaturalExpDecay(LRScheduler):
    """``lr = learning_rate * exp(-gamma * epoch)``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False):
        if _number(gamma, "NaturalExpDecay: gamma") <= 0:
            raise ArgumentError(f"NaturalExpDecay: gamma must be > 0 for the learning rate to decay, got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * math.exp(-1 * self.gamma * self.last_epoch)


class InverseTimeDecay(LRScheduler):
    """``lr = learning_rate / (1 + gamma * epoch)``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False):
        self.gamma = _number(gamma, "InverseTimeDecay: gamma")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr / (1 + self.gamma * self.last_epoch)


class PolynomialDecay(LRScheduler):
    """``lr = (learning_rate - end_lr) * (1 - epoch / decay_steps) ** power + end_lr``, with
    ``epoch`` capped at ``decay_steps``; with ``cycle=True`` ``decay_steps`` grows to the next
    multiple of itself instead, so the rate rises again.
    """

    def __init__(self, learning_rate: float, decay_steps: int, end_lr: float = 0.0001, power: float = 1.0,
                 cycle: bool = False, last_epoch: int = -1, verbose: bool = False):
        self.decay_steps = _positive_int(decay_steps, "PolynomialDecay: decay_steps")
        self.end_lr = _number(end_lr, "PolynomialDecay: end_lr")
        if _number(power, "PolynomialDecay: power") <= 0:
            raise ArgumentError(f"PolynomialDecay: power must be > 0, got {power}")
        self.power = power
        self.cycle = cycle
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        epoch, decay_steps = self.last_epoch, self.decay_steps
        if self.cycle:
            cycles = 1 if self.last_epoch == 0 else math.ceil(float(self.last_epoch) / float(self.decay_steps))
            decay_steps = self.decay_steps * cycles
        else:
            epoch = min(self.last_epoch, self.decay_steps)
        return (self.base_lr - self.end_lr) * ((1 - float(epoch) / float(decay_steps)) ** self.power) + self.end_lr


class LinearWarmup(LRScheduler):
    """Rise linearly from ``start_lr`` to ``end_lr`` over ``warmup_steps``, then follow
    ``learning_rate`` (a float, or a scheduler that starts at epoch 0 when the warm-up ends).

    >>> import oar
    >>> s = oar.optimizer.lr.LinearWarmup(learning_rate=0.5, warmup_steps=2, start_lr=0.0, end_lr=0.5)
    >>> [s() for _ in range(3) if s.step() is None]
    [0.25, 0.5, 0.5]
    """

    def __init__(self, learning_rate, warmup_steps: int, start_lr: float, end_lr: float, last_epoch: int = -1,
                 verbose: bool = False):
        if not isinstance(learning_rate, LRScheduler):
            learning_rate = _number(learning_rate, "LinearWarmup: learning_rate (a float or an LRScheduler)")
        self.learning_rate = learning_rate
        self.warmup_steps = _positive_int(warmup_steps, "LinearWarmup: warmup_steps")
        self.start_lr = _number(start_lr, "LinearWarmup: start_lr")
        self.end_lr = _number(end_lr, "LinearWarmup: end_lr")
        if not self.end_lr > self.start_lr:
            raise ArgumentError(f"LinearWarmup: end_lr ({end_lr}) must be greater than start_lr ({start_lr})")
        super().__init__(start_lr, last_epoch, verbose)

    def state_dict(self) -> dict:
        out = super().state_dict()
        if isinstance(self.learning_rate, LRScheduler):
            out["LinearWarmup_LR"] = self.learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict: dict) -> None:
        own = {k: v for k, v in state_dict.items() if k != "LinearWarmup_LR"}
        super().set_state_dict(own)
        if isinstance(self.learning_rate, LRScheduler):
            if "LinearWarmup_LR" not in state_dict:
                raise ArgumentError("LinearWarmup.set_state_dict: the state dict lacks 'LinearWarmup_LR'")
            self.learning_rate.set_state_dict(state_dict["LinearWarmup_LR"])

    set_dict = set_state_dict

    def get_lr(self) -> float:
        if self.last_epoch < self.warmup_steps:
            return (self.end_lr - self.start_lr) * float(self.last_epoch) / float(self.warmup_steps) + self.start_lr
        if isinstance(self.learning_rate, LRScheduler):
            self.learning_rate.step(self.last_epoch - self.warmup_steps)
            return self.learning_rate()
        return self.learning_rate


class ExponentialDecay(LRScheduler):
    """``lr = learning_rate * gamma ** epoch``, ``0 < gamma < 1``."""

    def __init__(self, learning_rate: float, gamma: float, last_epoch: int = -1, verbose: bool = False):
        if not 0.0 < _number(gamma, "ExponentialDecay: gamma") < 1.0:
            raise ArgumentError(f"ExponentialDecay: gamma must be in (0, 1) for the learning rate to decay, got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * (self.gamma ** self.last_epoch)


class MultiStepDecay(LRScheduler):
    """``lr = learning_rate * gamma ** (number of milestones <= epoch)``."""

    def __init__(self, learning_rate: float, milestones, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False):
        if not isinstance(milestones, (tuple, list)):
            raise ArgumentError(f"MultiStepDecay: milestones must be a list or tuple, got {type(milestones).__name__}")
        if any(a >= b for a, b in zip(milestones, milestones[1:])):
            raise ArgumentError(f"MultiStepDecay: milestones must increase, got {list(milestones)}")
        if _number(gamma, "MultiStepDecay: gamma") >= 1.0:
            raise ArgumentError(f"MultiStepDecay: gamma must be < 1.0, got {gamma}")
        self.milestones = list(milestones)
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        for i, milestone in enumerate(self.milestones):
            if self.last_epoch < milestone:
                return self.base_lr * (self.gamma ** i)
        return self.base_lr * (self.gamma ** len(self.milestones))


class StepDecay(LRScheduler):
    """``lr = learning_rate * gamma ** (epoch // step_size)``."""

    def __init__(self, learning_rate: float, step_size: int, gamma: float = 0.1, last_epoch: int = -1,
                 verbose: bool = False):
        self.step_size = _positive_int(step_size, "StepDecay: step_size")
        if _number(gamma, "StepDecay: gamma") >= 1.0:
            raise ArgumentError(f"StepDecay: gamma must be < 1.0, got {gamma}")
        self.gamma = gamma
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * (self.gamma ** (self.last_epoch // self.step_size))


class LambdaDecay(LRScheduler):
    """``lr = learning_rate * lr_lambda(epoch)``."""

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1,
                 verbose: bool = False):
        if not callable(lr_lambda):
            raise ArgumentError(f"LambdaDecay: lr_lambda must be a function, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        return self.base_lr * self.lr_lambda(self.last_epoch)


class MultiplicativeDecay(LRScheduler):
    """``lr = learning_rate * lr_lambda(1) * lr_lambda(2) * ... * lr_lambda(epoch)``."""

    def __init__(self, learning_rate: float, lr_lambda: Callable[[int], float], last_epoch: int = -1,
                 verbose: bool = False):
        if not callable(lr_lambda):
            raise ArgumentError(f"MultiplicativeDecay: lr_lambda must be a function, got {type(lr_lambda).__name__}")
        self.lr_lambda = lr_lambda
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        lr = self.base_lr
        for epoch in range(1, self.last_epoch + 1):
            lr = lr * self.lr_lambda(epoch)
        return lr


class ReduceOnPlateau(LRScheduler):
    """Multiply the rate by ``factor`` when ``metrics`` (``step(metrics)``) has not improved for
    more than ``patience`` steps, then wait ``cooldown`` steps; never below ``min_lr``.

    ``mode='min'`` watches for a decrease (a loss), ``'max'`` for an increase (an accuracy);
    ``threshold_mode='rel'`` counts an improvement beyond ``best * threshold``, ``'abs'`` beyond
    ``threshold``.

    >>> import oar
    >>> s = oar.optimizer.lr.ReduceOnPlateau(learning_rate=1.0, factor=0.5, patience=1)
    >>> for loss in [1.0, 1.0, 1.0, 1.0]:
    ...     s.step(loss)
    >>> s()
    0.5
    """

    def __init__(self, learning_rate: float, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr: float = 0,
                 epsilon: float = 1e-8, verbose: bool = False):
        mode = str(mode).lower()
        if mode not in ("min", "max"):
            raise ArgumentError(f"ReduceOnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if _number(factor, "ReduceOnPlateau: factor") >= 1.0:
            raise ArgumentError(f"ReduceOnPlateau: factor must be < 1.0 (new_lr = lr * factor), got {factor}")
        threshold_mode = str(threshold_mode).lower()
        if threshold_mode not in ("rel", "abs"):
            raise ArgumentError(f"ReduceOnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        learning_rate = _number(learning_rate, "ReduceOnPlateau: learning_rate")
        self.mode = mode
        self.factor = factor
        self.threshold_mode = threshold_mode
        self.patience = patience
        self.threshold = threshold
        self.cooldown = cooldown
        self.min_lr = min_lr
        self.epsilon = epsilon
        self.cooldown_counter = 0
        self.best = None
        self.num_bad_epochs = 0
        # No first step() here: the first step needs a metric.
        self.base_lr = learning_rate
        self.last_lr = learning_rate
        self.last_epoch = 0
        self.verbose = verbose
        self._var_name = None

    def state_keys(self) -> None:
        self.keys = ["cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"]

    def step(self, metrics, epoch: int | None = None) -> None:
        """Record ``metrics`` (a number, or a tensor or array of one element) for this epoch."""
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        if isinstance(metrics, (Tensor, np.ndarray)):
            if metrics.size != 1:
                raise ArgumentError(
                    f"ReduceOnPlateau.step: metrics must have one element, got {metrics.size}; reduce it "
                    f"first (e.g. with .mean())"
                )
            metrics = float(metrics.item())
        elif isinstance(metrics, (int, float, np.integer, np.floating)) and not isinstance(metrics, bool):
            metrics = float(metrics)
        else:
            raise ArgumentError(
                f"ReduceOnPlateau.step: metrics must be a number, a numpy array or a Tensor, got {type(metrics).__name__}"
            )
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            return
        if self.best is None or self._is_better(metrics, self.best):
            self.best = metrics
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.num_bad_epochs > self.patience:
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
            new_lr = max(self.last_lr * self.factor, self.min_lr)
            if self.last_lr - new_lr > self.epsilon:
                self.last_lr = new_lr
                if self.verbose:
                    print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")

    def _is_better(self, current: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return current < best - best * self.threshold
        if self.mode == "min":
            return current < best - self.threshold
        if self.threshold_mode == "rel":
            return current > best + best * self.threshold
        return current > best + self.threshold


class CosineAnnealingDecay(LRScheduler):
    """Cosine annealing from ``learning_rate`` to ``eta_min`` over ``T_max`` epochs (SGDR without
    restarts), computed recursively from the last rate as Paddle does;
    ``step(epoch)`` uses the closed form
    ``eta_min + (learning_rate - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.
    """

    def __init__(self, learning_rate: float, T_max: int, eta_min: float = 0, last_epoch: int = -1,  # noqa: N803
                 verbose: bool = False):
        self.T_max = _positive_int(T_max, "CosineAnnealingDecay: T_max")
        self.eta_min = _number(eta_min, "CosineAnnealingDecay: eta_min")
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch == 0:
            return self.base_lr
        if (self.last_epoch - 1 - self.T_max) % (2 * self.T_max) == 0:
            return self.last_lr + (self.base_lr - self.eta_min) * (1 - math.cos(math.pi / self.T_max)) / 2
        return (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / (
            1 + math.cos(math.pi * (self.last_epoch - 1) / self.T_max)
        ) * (self.last_lr - self.eta_min) + self.eta_min

    def _get_closed_form_lr(self) -> float:
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2


class OneCycleLR(LRScheduler):
    """The one-cycle policy: from ``max_learning_rate / divide_factor`` up to
    ``max_learning_rate`` over ``phase_pct`` of ``total_steps``, then down to
    ``end_learning_rate`` (``three_phase=True``: back to the initial rate first), by cosine or
    linear annealing. Step it once per iteration.
    """

    def __init__(self, max_learning_rate: float, total_steps: int, divide_factor: float = 25.0,
                 end_learning_rate: float = 0.0001, phase_pct: float = 0.3, anneal_strategy: str = "cos",
                 three_phase: bool = False, last_epoch: int = -1, verbose: bool = False):
        max_learning_rate = _number(max_learning_rate, "OneCycleLR: max_learning_rate")
        if max_learning_rate < 0:
            raise ArgumentError(f"OneCycleLR: max_learning_rate must be >= 0, got {max_learning_rate}")
        end_learning_rate = _number(end_learning_rate, "OneCycleLR: end_learning_rate")
        if end_learning_rate < 0:
            raise ArgumentError(f"OneCycleLR: end_learning_rate must be >= 0, got {end_learning_rate}")
        self.total_steps = _positive_int(total_steps, "OneCycleLR: total_steps")
        if not isinstance(phase_pct, float) or not 0 <= phase_pct <= 1:
            raise ArgumentError(f"OneCycleLR: phase_pct must be a float in [0, 1], got {phase_pct!r}")
        divide_factor = _number(divide_factor, "OneCycleLR: divide_factor")
        initial_lr = max_learning_rate / divide_factor
        total = self.total_steps
        if three_phase:
            if phase_pct >= 0.5:
                raise ArgumentError(f"OneCycleLR: phase_pct must be < 0.5 with three_phase=True, got {phase_pct}")
            self._step_config = [0, phase_pct * total - 1, 2 * phase_pct * total - 2, total - 1, total - 1]
            c = self._step_config
            self._steps_size = [c[1] - c[0], c[2] - c[1], c[3] - c[2], c[3] - c[2]]
            self._lr_config = [initial_lr, max_learning_rate, initial_lr, end_learning_rate]
        else:
            self._step_config = [0, phase_pct * total - 1, total - 1, total - 1]
            c = self._step_config
            self._steps_size = [c[1] - c[0], c[2] - c[1], c[2] - c[1]]
            self._lr_config = [initial_lr, max_learning_rate, end_learning_rate]
        if anneal_strategy == "cos":
            self.anneal_func = self._cos_annealing
        elif anneal_strategy == "linear":
            self.anneal_func = self._linear_annealing
        else:
            raise ArgumentError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        super().__init__(initial_lr, last_epoch, verbose)

    @staticmethod
    def _cos_annealing(start_lr: float, end_lr: float, pct: float) -> float:
        return end_lr + (start_lr - end_lr) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear_annealing(start_lr: float, end_lr: float, pct: float) -> float:
        return (end_lr - start_lr) * pct + start_lr

    def get_lr(self) -> float:
        step = self.last_epoch
        if step > self.total_steps:
            raise ArgumentError(f"OneCycleLR: stepped {step} times, but total_steps is {self.total_steps}")
        last_phase = len(self._lr_config) - 2
        for i, (end_step, size) in enumerate(zip(self._step_config[1:], self._steps_size)):
            if step <= end_step or i == last_phase:
                return self.anneal_func(self._lr_config[i], self._lr_config[i + 1], (step - self._step_config[i]) / size)
        raise AssertionError("unreachable: the last phase catches every step")


class CyclicLR(LRScheduler):
    """Cycle between ``base_learning_rate`` and ``max_learning_rate``: up for ``step_size_up``
    steps, down for ``step_size_down`` (default: the same); the amplitude is scaled per cycle
    (``'triangular'``: 1, ``'triangular2'``: halved each cycle) or per iteration
    (``'exp_range'``: ``exp_gamma ** iteration``), or by ``scale_fn``.
    """

    def __init__(self, base_learning_rate: float, max_learning_rate: float, step_size_up: int,
                 step_size_down: int | None = None, mode: str = "triangular", exp_gamma: float = 1.0,
                 scale_fn: Callable | None = None, scale_mode: str = "cycle", last_epoch: int = -1,
                 verbose: bool = False):
        max_learning_rate = _number(max_learning_rate, "CyclicLR: max_learning_rate")
        if max_learning_rate < 0:
            raise ArgumentError(f"CyclicLR: max_learning_rate must be >= 0, got {max_learning_rate}")
        up = float(_positive_int(step_size_up, "CyclicLR: step_size_up"))
        down = up if step_size_down is None else float(_positive_int(step_size_down, "CyclicLR: step_size_down"))
        if not isinstance(exp_gamma, float):
            raise ArgumentError(f"CyclicLR: exp_gamma must be a float, got {type(exp_gamma).__name__}")
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ArgumentError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or give scale_fn), got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ArgumentError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        self.cycle_size = up + down
        self.step_up_pct = up / self.cycle_size
        self.max_lr = max_learning_rate
        self.amplitude = self.max_lr - base_learning_rate
        self.mode = mode
        self.gamma = exp_gamma
        if scale_fn is not None:
            self.scale_fn, self.scale_mode = scale_fn, scale_mode
        elif mode == "triangular":
            self.scale_fn, self.scale_mode = self._triangular_scale_fn, "cycle"
        elif mode == "triangular2":
            self.scale_fn, self.scale_mode = self._triangular2_scale_fn, "cycle"
        else:
            self.scale_fn, self.scale_mode = self._exp_range_scale_fn, "iterations"
        super().__init__(base_learning_rate, last_epoch, verbose)

    def _triangular_scale_fn(self, x) -> float:
        return 1.0

    def _triangular2_scale_fn(self, x) -> float:
        return 1 / (2.0 ** (x - 1))

    def _exp_range_scale_fn(self, x) -> float:
        return self.gamma ** x

    def get_lr(self) -> float:
        iterations = self.last_epoch
        cycle = 1 + iterations // self.cycle_size
        pct = 1.0 + iterations / self.cycle_size - cycle
        if pct <= self.step_up_pct:
            scale_factor = pct / self.step_up_pct
        else:
            scale_factor = (1 - pct) / (1 - self.step_up_pct)
        x = cycle if self.scale_mode == "cycle" else iterations
        return self.base_lr + self.amplitude * scale_factor * self.scale_fn(x)


class LinearLR(LRScheduler):
    """Scale ``learning_rate`` linearly from ``start_factor`` to ``end_factor`` over ``total_steps``."""

    def __init__(self, learning_rate: float, total_steps: int, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 last_epoch: int = -1, verbose: bool = False):
        if not 0 < _number(start_factor, "LinearLR: start_factor") <= 1.0:
            raise ArgumentError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= _number(end_factor, "LinearLR: end_factor") <= 1.0:
            raise ArgumentError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.total_steps = _positive_int(total_steps, "LinearLR: total_steps")
        self.start_factor = start_factor
        self.end_factor = end_factor
        super().__init__(learning_rate, last_epoch, verbose)

    def get_lr(self) -> float:
        if self.last_epoch == 0:
            return self.base_lr * self.start_factor
        if self.last_epoch > self.total_steps:
            return self.last_lr
        start = self.total_steps * self.start_factor
        change = self.end_factor - self.start_factor
        return self.last_lr * (1.0 + change / (start + (self.last_epoch - 1) * change))


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing with warm restarts (SGDR): ``eta_min + (learning_rate - eta_min) *
    (1 + cos(pi * T_cur / T_i)) / 2``, restarting after ``T_0`` epochs, then ``T_0 * T_mult``, ...
    ``T_cur`` and ``T_i`` are part of the state dict, so a restored scheduler continues exactly.
    """

    def __init__(self, learning_rate: float, T_0: int, T_mult: int = 1, eta_min: float = 0,  # noqa: N803
                 last_epoch: int = -1, verbose: bool = False):
        self.T_0 = _positive_int(T_0, "CosineAnnealingWarmRestarts: T_0")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ArgumentError(f"CosineAnnealingWarmRestarts: T_mult must be an int >= 1, got {T_mult!r}")
        self.T_i = self.T_0
        self.T_mult = T_mult
        self.eta_min = _number(eta_min, "CosineAnnealingWarmRestarts: eta_min")
        self.T_cur = last_epoch
        super().__init__(learning_rate, last_epoch, verbose)

    def state_keys(self) -> None:
        self.keys = ["last_epoch", "last_lr", "T_cur", "T_i"]

    def get_lr(self) -> float:
        return self.eta_min + (self.base_lr - self.eta_min) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2

    def step(self, epoch: int | None = None) -> None:
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur - self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ArgumentError(f"CosineAnnealingWarmRestarts.step: epoch must be >= 0, got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self.last_lr = self.get_lr()
        if self.verbose:
            print(f"Epoch {self.last_epoch}: {type(self).__name__} set learning rate to {self.last_lr}.")


__all__ = [
    "LRScheduler", "NoamDecay", "PiecewiseDecay", "NaturalExpDecay", "InverseTimeDecay", "PolynomialDecay",
    "LinearWarmup", "ExponentialDecay", "MultiStepDecay", "StepDecay", "LambdaDecay", "ReduceOnPlateau",
    "CosineAnnealingDecay", "MultiplicativeDecay", "OneCycleLR", "CyclicLR", "LinearLR",
    "CosineAnnealingWarmRestarts",
]
