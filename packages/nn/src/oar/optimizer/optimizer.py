"""``Optimizer``: the base of every optimizer, with Paddle's API.

One ``step()`` does, per parameter group, what Paddle does: take the parameters that have a
gradient (``stop_gradient=False``), clip the gradients (``grad_clip``, per group), add weight
decay (the parameter's own ``ParamAttr`` regularizer, else the group's or the optimizer's
``weight_decay``), scale the learning rate (``param.optimize_attr['learning_rate']`` times the
group's ``learning_rate``) and run the optimizer's update rule.

An update rule is one small function per optimizer and backend, ``rule(param, grad, lr, state,
**hyperparameters)``, that updates the arrays ``param`` and ``state`` (the accumulators) in place;
the numpy ones live next to their optimizer and a device plugin registers its own with
``register_update_rule``. Everything runs under ``oar.no_grad()``.

Accumulators are created on a parameter's first update and named as Paddle names them,
``<param name>_<accumulator>_0`` (``linear_0.w_0_moment1_0``), which is what ``state_dict()``
returns: tensors and plain values that ``oar.save`` stores without pickle.

Where oar differs from Paddle, on purpose:

- a parameter group's ``learning_rate`` multiplies the parameter's own ``ParamAttr``
  learning rate instead of overwriting it, and a parameter's own ``ParamAttr`` regularizer wins
  over the group's ``weight_decay`` (Paddle overwrites ``param.optimize_attr`` and
  ``param.regularizer`` when it builds the groups);
- ``state_dict()`` returns a snapshot (copies), so later steps do not change a saved state, and
  ``set_state_dict`` checks every key and shape before it changes anything;
- ``minimize(loss)`` runs ``loss.backward()`` when that has not been done yet.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import oar
from oar.errors import ArgumentError, DeviceError
from oar.nn.clip import ClipGradBase
from oar.ops import Tensor, get_backend
from oar.optimizer.lr import LRScheduler
from oar.profiler import RECORDERS, RecordEvent, TracerEventType
from oar.regularizer import WeightDecayRegularizer, as_regularizer

# (optimizer type, backend) -> rule(param, grad, lr, state, **hyperparameters), in place.
UPDATE_RULES: dict[tuple[str, str], Callable] = {}


def register_update_rule(optimizer_type: str, backend: str, rule: Callable) -> None:
    """Make ``rule`` the update of ``optimizer_type`` (``"adam"``, ...) for parameters on ``backend``.

    The rule receives the parameter's array, the gradient's array (same dtype), the learning
    rate (a float), a dict of accumulator arrays and the optimizer's hyperparameters, and
    updates the parameter and the accumulators in place. A rule with the attribute
    ``updates_low_precision = True`` receives float16/bfloat16 parameters and gradients as they
    are, and their float32 master weights as ``master=`` (see ``Optimizer._update_low_precision``).
    """
    UPDATE_RULES[(optimizer_type, backend)] = rule


def update_rule(optimizer_type: str, backend: str) -> Callable:
    try:
        return UPDATE_RULES[(optimizer_type, backend)]
    except KeyError:
        have = sorted(b for t, b in UPDATE_RULES if t == optimizer_type)
        raise DeviceError(
            f"optimizer {optimizer_type!r} has no update rule for parameters on the {backend!r} backend "
            f"(it has rules for {have}); the plugin that provides the backend registers them with "
            f"oar.optimizer.register_update_rule"
        ) from None


_LOW_PRECISION = ("float16", "bfloat16")
_GROUP_KEYS = ("params", "learning_rate", "weight_decay", "grad_clip")


def _float(value, what: str) -> float:
    if isinstance(value, Tensor):
        value = value.item()
    if not isinstance(value, (int, float, np.floating, np.integer)) or isinstance(value, bool):
        raise ArgumentError(f"{what} must be a number, got {type(value).__name__}")
    return float(value)


def _new_array(data: np.ndarray, backend: str):
    return data if backend == "cpu" else get_backend(backend).from_numpy(data)


def _as_numpy(value, key: str) -> np.ndarray:
    if isinstance(value, Tensor):
        return value.numpy()
    if isinstance(value, (np.ndarray, np.generic, int, float, list)):
        return np.array(value)
    raise ArgumentError(f"set_state_dict: the value of {key!r} is a {type(value).__name__}, expected a Tensor")


def _snapshot(t: Tensor) -> Tensor:
    return oar.to_tensor(t.numpy(copy=False), place=t.place)  # to_tensor copies


def _accumulator_shape(shape, param) -> tuple:
    """An accumulator's shape: None is the parameter's, a callable makes it from the parameter's
    (ASGD keeps ``batch_num`` gradients per parameter), anything else is the shape itself."""
    if shape is None:
        return tuple(param._data.shape)
    return tuple(shape(tuple(param._data.shape))) if callable(shape) else shape


def _same_shape(found: tuple, expected: tuple) -> bool:
    # A one-element accumulator may come back as shape [] or [1].
    return tuple(found) == tuple(expected) or (len(found) <= 1 and len(expected) <= 1 and
                                               int(np.prod(found)) == int(np.prod(expected)) == 1)


class Optimizer:
    """The base class of oar's optimizers (Paddle's ``paddle.optimizer.Optimizer``).

    ``parameters`` is a list of parameters, or a list of parameter groups: dicts with
    ``'params'`` and optionally ``'learning_rate'`` (a scale of the base learning rate),
    ``'weight_decay'``, ``'grad_clip'`` and the optimizer's own hyperparameters (``'beta1'``,
    ``'momentum'``, ...).

    >>> import oar
    >>> fc1, fc2 = oar.nn.Linear(4, 4), oar.nn.Linear(4, 1)
    >>> opt = oar.optimizer.SGD(learning_rate=0.1, weight_decay=0.01, parameters=[
    ...     {"params": fc1.parameters()},
    ...     {"params": fc2.parameters(), "learning_rate": 0.5, "weight_decay": 0.0}])
    >>> loss = fc2(fc1(oar.ones([2, 4]))).mean()
    >>> loss.backward()
    >>> opt.step()
    >>> opt.clear_grad()
    """

    type = ""  # the name of the update rule
    _decay_is_regularizer = True  # False where weight_decay is a hyperparameter (AdamW's decoupled decay)

    def __init__(self, learning_rate, parameters=None, weight_decay=None, grad_clip=None, name=None,
                 multi_precision: bool = False):
        where = type(self).__name__
        self._learning_rate = self._check_learning_rate(learning_rate)
        if parameters is None:
            raise ArgumentError(f"{where}: parameters is required: pass the parameters to optimize, e.g. model.parameters()")
        if isinstance(parameters, Tensor):
            raise ArgumentError(f"{where}: parameters must be a list of tensors (or of parameter-group dicts), got one Tensor")
        if isinstance(parameters, dict):
            raise ArgumentError(f"{where}: parameters must be a list; for parameter groups pass a list of dicts")
        if isinstance(parameters, set):
            raise ArgumentError(f"{where}: parameters must be an ordered collection (a list), not a set")
        self._parameter_list = list(parameters)
        if not self._parameter_list:
            raise ArgumentError(f"{where}: got an empty parameter list")
        if grad_clip is not None and not isinstance(grad_clip, ClipGradBase):
            raise ArgumentError(
                f"{where}: grad_clip must be an oar.nn.ClipGradByValue, ClipGradByNorm or ClipGradByGlobalNorm, "
                f"got {type(grad_clip).__name__}"
            )
        self.regularization = as_regularizer(weight_decay, where) if self._decay_is_regularizer else None
        self._grad_clip = grad_clip
        self._name = name
        self._multi_precision = bool(multi_precision)
        if not hasattr(self, "_defaults"):  # a subclass sets its hyperparameters before calling here
            self._defaults = {}
        self._state: dict[int, dict[str, Tensor]] = {}  # id(param) -> accumulator name -> tensor
        self._master_weights: dict[int, Tensor] = {}
        self._params: dict[int, Tensor] = {}
        self._accumulators_holder: dict[str, np.ndarray] = {}  # loaded, not yet used
        self._param_groups: list[dict] = []
        if isinstance(self._parameter_list[0], dict):
            for group in self._parameter_list:
                self._add_param_group(dict(group))
        else:
            self._add_param_group({"params": self._parameter_list})

    # -- construction -------------------------------------------------------------------------
    def _check_learning_rate(self, learning_rate):
        if isinstance(learning_rate, LRScheduler):
            return learning_rate
        return _float(learning_rate, f"{type(self).__name__}: learning_rate (a float or an oar.optimizer.lr.LRScheduler)")

    def _add_param_group(self, group: dict) -> None:
        where = type(self).__name__
        if not isinstance(group, dict) or "params" not in group:
            raise ArgumentError(f"{where}: each parameter group must be a dict with a 'params' list")
        unknown = sorted(set(group) - set(_GROUP_KEYS) - set(self._defaults))
        if unknown:
            raise ArgumentError(
                f"{where}: unknown parameter-group keys {unknown}; a group may set "
                f"{sorted(set(_GROUP_KEYS) | set(self._defaults))}"
            )
        params = group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise ArgumentError(f"{where}: a group's 'params' must be an ordered collection (a list), not a set")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise ArgumentError(f"{where}: parameters must be tensors, got {type(p).__name__}")
            if id(p) in self._params:
                raise ArgumentError(f"{where}: parameter {p.name!r} appears in more than one parameter group")
            self._params[id(p)] = p
        group["params"] = params
        group["learning_rate"] = _float(group.get("learning_rate", 1.0), f"{where}: a group's learning_rate")
        if "weight_decay" in group and self._decay_is_regularizer:
            group["weight_decay"] = as_regularizer(group["weight_decay"], f"{where} (parameter group)")
        clip = group.get("grad_clip")
        if clip is not None and not isinstance(clip, ClipGradBase):
            raise ArgumentError(f"{where}: a group's grad_clip must be an oar.nn.ClipGrad* object, got {type(clip).__name__}")
        for key, value in self._defaults.items():
            group.setdefault(key, value)
        self._param_groups.append(group)

    # -- learning rate ------------------------------------------------------------------------
    def get_lr(self) -> float:
        """The current base learning rate (the scheduler's value when one is used).

        >>> import oar
        >>> oar.optimizer.SGD(0.5, parameters=oar.nn.Linear(1, 1).parameters()).get_lr()
        0.5
        """
        if isinstance(self._learning_rate, LRScheduler):
            return float(self._learning_rate())
        return self._learning_rate

    def set_lr(self, value: float) -> None:
        """Set the learning rate by hand; an error when an LRScheduler drives it."""
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ArgumentError(f"set_lr: value must be a float, got {type(value).__name__}")
        if isinstance(self._learning_rate, LRScheduler):
            raise ArgumentError(
                "set_lr: this optimizer's learning rate is an LRScheduler; step the scheduler, or use "
                "set_lr_scheduler to replace it"
            )
        self._learning_rate = float(value)

    def set_lr_scheduler(self, scheduler: LRScheduler) -> None:
        """Drive the learning rate by ``scheduler`` from now on."""
        if not isinstance(scheduler, LRScheduler):
            raise ArgumentError(f"set_lr_scheduler: expected an oar.optimizer.lr.LRScheduler, got {type(scheduler).__name__}")
        self._learning_rate = scheduler

    # -- the step ------------------------------------------------------------------------------
    def step(self) -> None:
        """Update every parameter that has a gradient, once."""
        if RECORDERS:  # a profiler records: the step is a span (no span object otherwise)
            with RecordEvent(f"{type(self).__name__}.step", TracerEventType.Optimization):
                return self._step_groups()
        return self._step_groups()

    def _step_groups(self) -> None:
        with oar.no_grad():
            for group in self._param_groups:
                pairs = [(p, p.grad) for p in group["params"] if not p.stop_gradient and p.grad is not None]
                if pairs:
                    self._apply_group(group, pairs)

    def _apply_group(self, group: dict, params_grads: list) -> None:
        clip = group["grad_clip"] if "grad_clip" in group else self._grad_clip
        if clip is not None:
            params_grads = clip(params_grads)
        base_lr = self.get_lr()
        hyper = {key: group[key] for key in self._defaults}
        for param, grad in params_grads:
            if grad is None:
                continue
            regularizer = self._regularizer_for(param, group)
            if regularizer is not None and not self._fuses(regularizer):
                grad = grad + regularizer(param, grad)
            lr = base_lr * group["learning_rate"] * self._param_lr_scale(param)
            self._update(param, grad, lr, hyper, regularizer)

    def _regularizer_for(self, param, group) -> WeightDecayRegularizer | None:
        own = getattr(param, "regularizer", None)
        if own is not None:
            return own
        if not self._decay_is_regularizer:
            return None
        if group.get("weight_decay") is not None:
            return group["weight_decay"]
        return self.regularization

    def _fuses(self, regularizer) -> bool:
        """True where the update rule applies this regularizer itself (Momentum's L2 decay)."""
        return False

    @staticmethod
    def _param_lr_scale(param) -> float:
        attr = getattr(param, "optimize_attr", None)
        return 1.0 if attr is None else float(attr.get("learning_rate", 1.0))

    def _update(self, param: Tensor, grad: Tensor, lr: float, hyper: dict, regularizer) -> None:
        rule = update_rule(self.type, param._backend)
        low_precision = param.dtype.name in _LOW_PRECISION
        if low_precision and getattr(rule, "updates_low_precision", False):
            return self._update_low_precision(rule, param, grad, lr, hyper, regularizer)
        if low_precision:  # computed in float32, kept there between steps with multi_precision
            master = self._master_weights.get(id(param))
            if master is None:
                master = Tensor._wrap(param._data.astype(np.float32), param._backend, True, None, 0, None)
                if self._multi_precision:
                    self._master_weights[id(param)] = master
            target = master._data
        else:
            target = self._writable(param)
        state = self._state_of(param, target.dtype, hyper)
        g = grad._data if grad._data.dtype == target.dtype else grad._data.astype(target.dtype)
        rule(target, g, lr, {k: t._data for k, t in state.items()}, **self._rule_args(param, hyper, regularizer))
        if low_precision and type(param._data) is np.ndarray:
            np.copyto(self._writable(param), target, casting="unsafe")
        elif low_precision:
            param._set_buffer(target.astype(param._data.dtype))
        param._bump_version()

    def _update_low_precision(self, rule, param: Tensor, grad: Tensor, lr: float, hyper: dict, regularizer) -> None:
        """A rule marked ``updates_low_precision`` (a device's fused kernel) takes the float16/bfloat16
        parameter and gradient as they are, and the float32 master weights as ``master=`` (None when
        none are kept): it computes in float32 and writes the parameter (and the master weights) in
        place, where the path above casts the gradient and the result in separate passes."""
        master = self._master_weights.get(id(param))
        if master is None and self._multi_precision:
            master = Tensor._wrap(param._data.astype(np.float32), param._backend, True, None, 0, None)
            self._master_weights[id(param)] = master
        state = self._state_of(param, np.dtype(np.float32), hyper)
        rule(self._writable(param), grad._data, lr, {k: t._data for k, t in state.items()},
             master=None if master is None else master._data, **self._rule_args(param, hyper, regularizer))
        param._bump_version()

    @staticmethod
    def _writable(param: Tensor):
        data = param._data
        if type(data) is np.ndarray and not (data.flags.writeable and data.base is None):
            param._set_buffer(data.copy())  # a read-only or borrowed buffer: the parameter gets its own
            data = param._data
        return data

    # -- what each optimizer defines -----------------------------------------------------------
    def _accumulators(self, hyper: dict) -> dict[str, tuple]:
        """The accumulators of one parameter by Paddle's names: ``name -> (shape, initial value)``,
        where shape None means the parameter's shape (a callable: made from the parameter's)."""
        return {}

    def _rule_args(self, param, hyper: dict, regularizer) -> dict:
        """The keyword arguments of the update rule for this parameter."""
        return hyper

    # -- accumulators ---------------------------------------------------------------------------
    def _accumulator_key(self, param, name: str) -> str:
        prefix = f"{self._name}_" if self._name else ""
        return f"{param.name}_{prefix}{name}_0"

    def _state_of(self, param, dtype, hyper) -> dict[str, Tensor]:
        state = self._state.get(id(param))
        if state is None:
            state = {}
            for name, (shape, fill) in self._accumulators(hyper).items():
                shape = _accumulator_shape(shape, param)
                key = self._accumulator_key(param, name)
                loaded = self._accumulators_holder.pop(key, None)
                value = np.full(shape, fill, dtype) if loaded is None else loaded.astype(dtype).reshape(shape)
                state[name] = Tensor._wrap(_new_array(value, param._backend), param._backend, True, None, 0, None)
            self._state[id(param)] = state
        return state

    def _expected_keys(self) -> dict[str, tuple]:
        """Every accumulator key this optimizer has or will create, with its shape."""
        keys = {}
        for group in self._param_groups:
            hyper = {key: group[key] for key in self._defaults}
            for p in group["params"]:
                for name, (shape, _) in self._accumulators(hyper).items():
                    keys[self._accumulator_key(p, name)] = _accumulator_shape(shape, p)
        return keys

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """The accumulators (``<param name>_<accumulator>_0``: Tensor), ``master_weights`` when
        kept, and ``LR_Scheduler`` (the scheduler's state) when one is used: a snapshot that
        ``oar.save`` can write and ``set_state_dict`` restores.

        >>> import oar
        >>> w = oar.nn.Linear(2, 1, weight_attr=oar.nn.ParamAttr(name="w"), bias_attr=False).weight
        >>> opt = oar.optimizer.Adam(parameters=[w])
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state_dict())
        ['w_beta1_pow_acc_0', 'w_beta2_pow_acc_0', 'w_moment1_0', 'w_moment2_0']
        """
        out: dict = {}
        for pid, state in self._state.items():
            param = self._params[pid]
            for name, tensor in state.items():
                key = self._accumulator_key(param, name)
                if key in out:
                    raise ArgumentError(
                        f"state_dict: two parameters are named {param.name!r}, so their accumulators would share "
                        f"the key {key!r}; give parameters distinct names (ParamAttr(name=...))"
                    )
                out[key] = _snapshot(tensor)
        for key, value in self._accumulators_holder.items():  # loaded but not used yet: keep them
            out.setdefault(key, oar.to_tensor(value))
        if self._master_weights:
            out["master_weights"] = {self._params[pid].name: _snapshot(t) for pid, t in self._master_weights.items()}
        if isinstance(self._learning_rate, LRScheduler):
            out["LR_Scheduler"] = self._learning_rate.state_dict()
        return out

    def set_state_dict(self, state_dict: dict) -> None:
        """Restore the state saved by ``state_dict()`` (after ``oar.load``): the optimizer then
        continues the same trajectory. Every key and shape is checked first; on a mismatch
        nothing is changed and the error lists what is wrong.
        """
        if not isinstance(state_dict, dict):
            raise ArgumentError(f"set_state_dict: expected a dict, got {type(state_dict).__name__}")
        state_dict = dict(state_dict)
        scheduler_state = state_dict.pop("LR_Scheduler", None)
        if isinstance(self._learning_rate, LRScheduler) and scheduler_state is None:
            raise ArgumentError(
                "set_state_dict: this optimizer uses an LRScheduler but the state dict has no 'LR_Scheduler' entry"
            )
        masters = state_dict.pop("master_weights", None) or {}
        if not isinstance(masters, dict):
            raise ArgumentError(f"set_state_dict: 'master_weights' must be a dict, got {type(masters).__name__}")
        arrays = {key: _as_numpy(value, key) for key, value in state_dict.items()}
        master_arrays = {name: _as_numpy(value, f"master_weights/{name}") for name, value in masters.items()}
        expected = self._expected_keys()
        unexpected = sorted(set(arrays) - set(expected))
        missing, mismatched = [], []
        by_name = {p.name: pid for pid, p in self._params.items()}
        for name, array in master_arrays.items():
            if name not in by_name:
                unexpected.append(f"master_weights/{name}")
            elif tuple(array.shape) != tuple(self._params[by_name[name]].shape):
                mismatched.append(f"master_weights/{name}: checkpoint {list(array.shape)}, "
                                  f"parameter {self._params[by_name[name]].shape}")
        for pid, state in self._state.items():
            for name in state:
                key = self._accumulator_key(self._params[pid], name)
                if key not in arrays:
                    missing.append(key)
        for key, array in arrays.items():
            if key in expected and not _same_shape(array.shape, expected[key]):
                mismatched.append(f"{key}: checkpoint {list(array.shape)}, optimizer {list(expected[key])}")
        if unexpected or missing or mismatched:
            lines = [f"set_state_dict: the state dict does not match this {type(self).__name__} (nothing was loaded)"]
            if missing:
                lines.append(f"  missing keys ({len(missing)}): {', '.join(missing)}")
            if unexpected:
                lines.append(f"  unexpected keys ({len(unexpected)}): {', '.join(unexpected)}")
            if mismatched:
                lines.append(f"  shape mismatches ({len(mismatched)}): {'; '.join(mismatched)}")
            lines.append("  accumulator keys are '<parameter name>_<accumulator>_0': the parameters must carry the "
                         "names they had when the state was saved")
            raise ArgumentError("\n".join(lines))
        if scheduler_state is not None and isinstance(self._learning_rate, LRScheduler):
            self._learning_rate.set_state_dict(scheduler_state)
        for pid, state in self._state.items():
            for name, tensor in state.items():
                array = arrays.pop(self._accumulator_key(self._params[pid], name))
                self._write(tensor, array)
        self._accumulators_holder = arrays  # used when those accumulators are created
        for name, array in master_arrays.items():
            param = self._params[by_name[name]]
            self._master_weights[id(param)] = Tensor._wrap(
                _new_array(array.astype(np.float32), param._backend), param._backend, True, None, 0, None)

    set_dict = set_state_dict

    @staticmethod
    def _write(tensor: Tensor, array: np.ndarray) -> None:
        array = array.astype(tensor.dtype.np).reshape(tensor.shape)
        if tensor._backend == "cpu":
            tensor._data[...] = array
        else:
            tensor._set_buffer(_new_array(array, tensor._backend))

    # -- gradients -----------------------------------------------------------------------------
    def clear_grad(self, set_to_zero: bool = True) -> None:
        """Zero the gradients of the optimized parameters (drop them with ``set_to_zero=False``)."""
        for group in self._param_groups:
            for p in group["params"]:
                if not p.stop_gradient:
                    p.clear_gradient(set_to_zero)

    clear_gradients = clear_grad

    def minimize(self, loss: Tensor, startup_program=None, parameters=None, no_grad_set=None):
        """``loss.backward()`` (unless it already ran) and ``step()``, as Paddle's dygraph ``minimize``.

        Returns ``(optimize_ops, params_grads)``: an empty list (eager mode has no ops) and the
        ``(param, grad)`` pairs that were used.
        """
        node = getattr(loss, "_node", None)
        if node is not None and not node.released:
            loss.backward()
        chosen = None if parameters is None else {id(p) for p in parameters}
        skipped = set()
        for item in no_grad_set or ():
            skipped.add(item if isinstance(item, str) else id(item))
        params_grads = []
        with oar.no_grad():
            for group in self._param_groups:
                pairs = [
                    (p, p.grad) for p in group["params"]
                    if not p.stop_gradient and p.grad is not None
                    and (chosen is None or id(p) in chosen) and id(p) not in skipped and p.name not in skipped
                ]
                if pairs:
                    params_grads.extend(pairs)
                    self._apply_group(group, pairs)
        return [], params_grads

    # -- description ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        lr = self._learning_rate
        lr_text = type(lr).__name__ if isinstance(lr, LRScheduler) else f"{lr}"
        hyper = ", ".join(f"{k}={v!r}" for k, v in self._defaults.items() if not callable(v))
        count = sum(len(g["params"]) for g in self._param_groups)
        return f"{type(self).__name__}(learning_rate={lr_text}, {count} parameters{', ' + hyper if hyper else ''})"


__all__ = ["Optimizer", "register_update_rule"]
