"""``GradScaler``: dynamic loss scaling, Paddle 3's rule.

The loss is multiplied by the scale before ``backward`` so that small float16 gradients do not
flush to zero; before the step the gradients are divided by it again (``unscale_``) and checked.
A step whose gradients hold an inf or a nan is skipped -- parameters and optimizer state stay
as they were. The scale then moves by Paddle's rule (``AmpScaler._update``):

- a bad step: ``incr_count = 0``, ``decr_count += 1``; when ``decr_count`` reaches
  ``decr_every_n_nan_or_inf`` the scale is multiplied by ``decr_ratio`` and ``decr_count = 0``;
- a good step: ``decr_count = 0``, ``incr_count += 1``; when ``incr_count`` reaches
  ``incr_every_n_steps`` the scale is multiplied by ``incr_ratio`` and ``incr_count = 0``.
"""

from __future__ import annotations

import warnings
from enum import Enum

import numpy as np

import oar
from oar.amp import _auto_cast
from oar.errors import ArgumentError


class OptimizerState(Enum):
    INIT = 0
    UNSCALED = 1
    STEPPED = 2


class AmpScaler:
    """Paddle's ``AmpScaler``: ``scale``, ``minimize`` and the getters and setters; ``GradScaler``
    adds ``step``, ``update`` and ``unscale_``. See ``GradScaler``."""

    def __init__(self, enable: bool = True, init_loss_scaling: float = 2.0**15, incr_ratio: float = 2.0,
                 decr_ratio: float = 0.5, incr_every_n_steps: int = 1000, decr_every_n_nan_or_inf: int = 1,
                 use_dynamic_loss_scaling: bool = True):
        self._enable = bool(enable)
        if self._enable:
            if not incr_ratio > 1.0:
                raise ArgumentError(f"GradScaler: incr_ratio must be > 1.0, got {incr_ratio!r}")
            if not decr_ratio < 1.0:
                raise ArgumentError(f"GradScaler: decr_ratio must be < 1.0, got {decr_ratio!r}")
        self._init_loss_scaling = float(init_loss_scaling)
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        self._incr_every_n_steps = int(incr_every_n_steps)
        self._decr_every_n_nan_or_inf = int(decr_every_n_nan_or_inf)
        self._incr_count = 0
        self._decr_count = 0
        self._use_dynamic_loss_scaling = bool(use_dynamic_loss_scaling)
        self._scale = self._scale_tensor(self._init_loss_scaling)
        self._found_inf = False
        self._cache_found_inf = False
        self._optimizer_states: dict[int, OptimizerState] = {}

    @staticmethod
    def _scale_tensor(value: float) -> oar.Tensor:
        return oar.to_tensor(np.array([value], np.float32))  # [1]-shaped float32, as Paddle's

    def _state_of(self, optimizer) -> OptimizerState:
        return self._optimizer_states.get(id(optimizer), OptimizerState.INIT)

    # -- the loss -----------------------------------------------------------------------------
    def scale(self, var: oar.Tensor) -> oar.Tensor:
        """``var`` times the loss scale (``var`` itself when the scaler is off).

        Dynamic loss scaling is for float16: when the last ``auto_cast`` block entered used
        bfloat16, the scaler turns itself off here with a warning, as Paddle's does. (Paddle also
        turns it off when no block was ever entered, reading its float32 default; oar keeps it on.)
        """
        if not isinstance(var, oar.Tensor):
            raise ArgumentError(f"GradScaler.scale: expected a Tensor (the loss), got {type(var).__name__}")
        last = _auto_cast.LAST_DTYPE[0]
        if self._enable and last is not None and last != "float16" and self._use_dynamic_loss_scaling:
            self._enable = False
            self._use_dynamic_loss_scaling = False
            warnings.warn(f"It is not recommended to use dynamic loss scaling for {last}, so GradScaler is "
                          f"disable by default.", UserWarning, stacklevel=2)
        if not self._enable:
            return var
        return var * self._scale

    # -- the gradients ------------------------------------------------------------------------
    def _unscale(self, optimizer) -> None:
        if not self._enable:
            return
        state = self._state_of(optimizer)
        if state is OptimizerState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state is OptimizerState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inverse = float(np.float32(1.0) / self._scale.numpy()[0])
        found = False
        with oar.no_grad():
            for param in _parameters(optimizer):
                grad = param.grad
                if grad is None:
                    continue
                # Paddle's check_finite_and_unscale: float32 arithmetic, the result in the grad's dtype.
                wide = grad if grad.dtype == oar.float32 else grad.astype("float32")
                if not found and not bool(oar.isfinite(wide).all()):
                    found = True
                unscaled = wide * inverse
                param.grad = unscaled if grad.dtype == oar.float32 else unscaled.astype(grad.dtype)
        self._found_inf = found
        self._optimizer_states[id(optimizer)] = OptimizerState.UNSCALED

    def minimize(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless ``unscale_`` did), run ``optimizer.minimize(*args, **kwargs)``
        unless one is inf or nan, then update the scale. Returns what ``minimize`` returned (or
        ``(None, None)`` for a skipped step)."""
        if not self._enable:
            return optimizer.minimize(*args, **kwargs)
        if self._state_of(optimizer) is OptimizerState.INIT:
            self._unscale(optimizer)
        result = (None, None)
        if self._found_inf:
            self._cache_found_inf = True
        else:
            result = optimizer.minimize(*args, **kwargs)
            self._cache_found_inf = False
        if self._use_dynamic_loss_scaling:
            self._update()
        self._optimizer_states = {}
        return result

    def _update(self) -> None:
        """Paddle's rule (the module docstring)."""
        if not self._enable:
            return
        if self._cache_found_inf:
            self._incr_count = 0
            self._decr_count += 1
            if self._decr_count == self._decr_every_n_nan_or_inf:
                print(f"Found inf or nan, current scale is: {float(self._scale.numpy()[0])}, decrease to: "
                      f"{float(self._scale.numpy()[0])}*{self._decr_ratio}")
                self._scale = self._scale_tensor(float(self._scale.numpy()[0]) * self._decr_ratio)
                self._decr_count = 0
        else:
            self._decr_count = 0
            self._incr_count += 1
            if self._incr_count == self._incr_every_n_steps:
                self._scale = self._scale_tensor(float(self._scale.numpy()[0]) * self._incr_ratio)
                self._incr_count = 0

    # -- getters and setters ------------------------------------------------------------------
    def is_enable(self) -> bool:
        """Whether loss scaling is on."""
        return self._enable

    def is_use_dynamic_loss_scaling(self) -> bool:
        """Whether the scale moves (True) or stays at its initial value (False)."""
        return self._use_dynamic_loss_scaling

    def get_init_loss_scaling(self) -> float:
        return self._init_loss_scaling

    def set_init_loss_scaling(self, new_init_loss_scaling: float) -> None:
        """Set the initial scale; the current scale starts again from it."""
        self._init_loss_scaling = float(new_init_loss_scaling)
        self._scale = self._scale_tensor(self._init_loss_scaling)

    def get_loss_scaling(self) -> oar.Tensor:
        """The current scale, a [1]-shaped float32 tensor."""
        return self._scale

    def get_incr_ratio(self) -> float:
        return self._incr_ratio

    def set_incr_ratio(self, new_incr_ratio: float) -> None:
        if not new_incr_ratio > 1.0:
            raise ArgumentError(f"set_incr_ratio: the new_incr_ratio must be > 1.0, got {new_incr_ratio!r}")
        self._incr_ratio = float(new_incr_ratio)

    def get_decr_ratio(self) -> float:
        return self._decr_ratio

    def set_decr_ratio(self, new_decr_ratio: float) -> None:
        if not new_decr_ratio < 1.0:
            raise ArgumentError(f"set_decr_ratio: the new_decr_ratio must be < 1.0, got {new_decr_ratio!r}")
        self._decr_ratio = float(new_decr_ratio)

    def get_incr_every_n_steps(self) -> int:
        return self._incr_every_n_steps

    def set_incr_every_n_steps(self, new_incr_every_n_steps: int) -> None:
        self._incr_every_n_steps = int(new_incr_every_n_steps)

    def get_decr_every_n_nan_or_inf(self) -> int:
        return self._decr_every_n_nan_or_inf

    def set_decr_every_n_nan_or_inf(self, new_decr_every_n_nan_or_inf: int) -> None:
        self._decr_every_n_nan_or_inf = int(new_decr_every_n_nan_or_inf)

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The scaler's state (empty when it is off, as Paddle's): ``scale`` (a [1] float32 array),
        ``incr_ratio``, ``decr_ratio``, ``incr_every_n_steps``, ``decr_every_n_nan_or_inf``,
        ``incr_count``, ``decr_count``, ``use_dynamic_loss_scaling``; ``oar.save`` writes it."""
        if not self._enable:
            return {}
        return {
            "scale": self._scale.numpy(),
            "incr_ratio": self._incr_ratio,
            "decr_ratio": self._decr_ratio,
            "incr_every_n_steps": self._incr_every_n_steps,
            "decr_every_n_nan_or_inf": self._decr_every_n_nan_or_inf,
            "incr_count": self._incr_count,
            "decr_count": self._decr_count,
            "use_dynamic_loss_scaling": self._use_dynamic_loss_scaling,
        }

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what ``state_dict()`` returned."""
        if not self._enable:
            return
        if not state_dict:
            raise RuntimeError("The input state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        missing = sorted(set(self.state_dict()) - set(state_dict))
        if missing:
            raise ArgumentError(f"GradScaler.load_state_dict: the state dict lacks {missing}")
        scale = state_dict["scale"]
        scale = scale.numpy() if isinstance(scale, oar.Tensor) else np.asarray(scale)
        self._init_loss_scaling = float(scale.reshape(-1)[0])
        self._scale = self._scale_tensor(self._init_loss_scaling)
        self._incr_ratio = float(state_dict["incr_ratio"])
        self._decr_ratio = float(state_dict["decr_ratio"])
        self._incr_every_n_steps = int(state_dict["incr_every_n_steps"])
        self._decr_every_n_nan_or_inf = int(state_dict["decr_every_n_nan_or_inf"])
        self._incr_count = int(state_dict["incr_count"])
        self._decr_count = int(state_dict["decr_count"])
        self._use_dynamic_loss_scaling = bool(state_dict["use_dynamic_loss_scaling"])


def _parameters(optimizer) -> list:
    # The optimizer's parameters as Paddle's scaler reads them (its _param_groups, else _parameter_list).
    groups = getattr(optimizer, "_param_groups", None)
    if groups:
        return [p for group in groups for p in group["params"]]
    return list(getattr(optimizer, "_parameter_list", ()))


class GradScaler(AmpScaler):
    """Dynamic loss scaling for float16 training (Paddle's ``paddle.amp.GradScaler``).

    ``scale(loss)`` multiplies the loss by the scale; ``minimize(optimizer, scaled)`` (or
    ``step(optimizer)`` then ``update()``) unscales the gradients, skips the step when one is inf
    or nan -- parameters and optimizer state untouched -- and moves the scale: times
    ``decr_ratio`` after ``decr_every_n_nan_or_inf`` bad steps, times ``incr_ratio`` after
    ``incr_every_n_steps`` good ones in a row. ``unscale_(optimizer)`` unscales early (to clip the
    true gradients). Paddle's CPU build turns the scaler off; oar's works on every device.

    >>> import oar
    >>> model = oar.nn.Linear(4, 1)
    >>> optimizer = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    >>> scaler = oar.amp.GradScaler(init_loss_scaling=1024)
    >>> with oar.amp.auto_cast():
    ...     loss = model(oar.ones([2, 4])).mean()
    >>> scaled = scaler.scale(loss)
    >>> scaled.backward()
    >>> _ = scaler.minimize(optimizer, scaled)
    >>> optimizer.clear_grad()
    >>> float(scaler.get_loss_scaling())
    1024.0
    """

    def __init__(self, enable: bool = True, init_loss_scaling: float = 65536.0, incr_ratio: float = 2.0,
                 decr_ratio: float = 0.5, incr_every_n_steps: int = 2000, decr_every_n_nan_or_inf: int = 1,
                 use_dynamic_loss_scaling: bool = True):
        super().__init__(enable, init_loss_scaling, incr_ratio, decr_ratio, incr_every_n_steps,
                         decr_every_n_nan_or_inf, use_dynamic_loss_scaling)

    def step(self, optimizer) -> None:
        """``optimizer.step()`` on the unscaled gradients, skipped when one is inf or nan; the scale
        moves on ``update()``."""
        if not self._enable:
            return optimizer.step()
        state = self._state_of(optimizer)
        if state is OptimizerState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state is OptimizerState.INIT:
            self._unscale(optimizer)
        if self._found_inf:
            self._cache_found_inf = True
        else:
            optimizer.step()
            self._cache_found_inf = False
        self._optimizer_states[id(optimizer)] = OptimizerState.STEPPED
        if not self._use_dynamic_loss_scaling:
            self._optimizer_states = {}

    def update(self) -> None:
        """Move the scale by the last step's outcome (Paddle's rule, see the module docstring)."""
        if not self._enable:
            return
        if self._use_dynamic_loss_scaling:
            self._update()
            self._optimizer_states = {}

    def unscale_(self, optimizer) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale now (once per step)."""
        return self._unscale(optimizer)
