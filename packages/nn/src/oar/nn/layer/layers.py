"""``oar.nn.Layer``: the base class of every model and layer, with Paddle's API."""

from __future__ import annotations

import collections
import itertools
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from oar.device import get_device
from oar.errors import ArgumentError, ShapeError
from oar.nn.initializer import global_initializer, set_global_initializer  # noqa: F401 - also importable here
from oar.nn.param_attr import ParamAttr
from oar.nn.parameter import Parameter
from oar.ops import Tensor, default_float, get_backend, get_dtype
from oar.profiler import RECORDERS, RecordEvent, TracerEventType

# Paddle's unique names: ``linear_0`` for layers, ``linear_0.w_0`` / ``linear_0.b_0`` for parameters.
_name_counters: dict[str, itertools.count] = collections.defaultdict(itertools.count)


def _unique_name(key: str) -> str:
    return f"{key}_{next(_name_counters[key])}"


def _snake(name: str) -> str:
    """Paddle's layer name scope from a class name: ``Conv2D`` -> ``conv2_d``, ``LSTM`` -> ``lstm``."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def size_arg(layer: str, name: str, value, minimum: int = 1) -> int:
    """``value`` as an int ``>= minimum``: a layer constructor's size argument. A bool is not a
    size (``True`` would silently be 1); an ArgumentError names the layer, the argument and the value.

    >>> from oar.nn.layer.layers import size_arg
    >>> size_arg("Linear", "in_features", 4)
    4
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < minimum:
        what = "a positive int" if minimum == 1 else f"an int >= {minimum}"
        raise ArgumentError(f"{layer}: {name} must be {what}, got {value!r}")
    return int(value)


class HookRemoveHelper:
    """Returned by ``register_forward_*_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks: dict, hook_id: int):
        self._hooks = hooks
        self._hook_id = hook_id

    def remove(self) -> None:
        self._hooks.pop(self._hook_id, None)


_hook_ids = itertools.count()


class Layer:
    """Base class of layers and models (``paddle.nn.Layer``).

    Assigning a ``Parameter``, a ``Layer`` or (with ``register_buffer``) a tensor as an attribute
    registers it, so ``parameters()``, ``state_dict()`` and ``to()`` find it.

    >>> import oar
    >>> class MLP(oar.nn.Layer):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1 = oar.nn.Linear(4, 8)
    ...         self.fc2 = oar.nn.Linear(8, 2)
    ...     def forward(self, x):
    ...         return self.fc2(oar.nn.functional.relu(self.fc1(x)))
    >>> net = MLP()
    >>> net(oar.rand([3, 4])).shape
    [3, 2]
    >>> sorted(net.state_dict())
    ['fc1.bias', 'fc1.weight', 'fc2.bias', 'fc2.weight']
    """

    training: bool

    def __init__(self, name_scope: str | None = None, dtype=None):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", collections.OrderedDict())
        object.__setattr__(self, "_sub_layers", collections.OrderedDict())
        object.__setattr__(self, "_buffers", collections.OrderedDict())
        object.__setattr__(self, "_non_persistable_buffer_names_set", set())
        object.__setattr__(self, "_forward_pre_hooks", collections.OrderedDict())
        object.__setattr__(self, "_forward_post_hooks", collections.OrderedDict())
        object.__setattr__(self, "_state_dict_hooks", collections.OrderedDict())
        scope = name_scope or _snake(type(self).__name__)
        object.__setattr__(self, "_full_name", _unique_name(scope))
        # Without a dtype, the default one now (``oar.set_default_dtype``): what Paddle's
        # create_parameter takes, so a float64 default gives float64 weights.
        object.__setattr__(self, "_dtype", get_dtype(dtype).name if dtype is not None else default_float().name)

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement forward()")

    def __call__(self, *inputs, **kwargs):
        span = None
        if RECORDERS:  # a profiler records: this forward is a span named after the layer
            span = RecordEvent(self.full_name(), TracerEventType.Forward)
            span.begin()
        if self._forward_pre_hooks:  # (the common call has no hooks: no list copies for it)
            for hook in list(self._forward_pre_hooks.values()):
                result = hook(self, inputs)
                if result is not None:
                    inputs = result if isinstance(result, tuple) else (result,)
        outputs = self.forward(*inputs, **kwargs)
        if self._forward_post_hooks:
            for hook in list(self._forward_post_hooks.values()):
                result = hook(self, inputs, outputs)
                if result is not None:
                    outputs = result
        if span is not None:
            span.end()
        return outputs

    def register_forward_pre_hook(self, hook: Callable) -> HookRemoveHelper:
        """``hook(layer, inputs)`` runs before forward; a non-None return replaces the inputs."""
        hook_id = next(_hook_ids)
        self._forward_pre_hooks[hook_id] = hook
        return HookRemoveHelper(self._forward_pre_hooks, hook_id)

    def register_forward_post_hook(self, hook: Callable) -> HookRemoveHelper:
        """``hook(layer, inputs, outputs)`` runs after forward; a non-None return replaces the outputs."""
        hook_id = next(_hook_ids)
        self._forward_post_hooks[hook_id] = hook
        return HookRemoveHelper(self._forward_post_hooks, hook_id)

    def register_state_dict_hook(self, hook: Callable) -> HookRemoveHelper:
        """``hook(state_dict)`` runs at the end of ``state_dict()`` of this layer or of one that
        holds it (``use_hook=True``); a non-None return replaces the dict. oar.amp's ``decorate``
        casts what is saved this way (``save_dtype``)."""
        hook_id = next(_hook_ids)
        self._state_dict_hooks[hook_id] = hook
        return HookRemoveHelper(self._state_dict_hooks, hook_id)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("call super().__init__() before assigning parameters")
            self._remove_from(name, except_dict=params)
            params[name] = value
        elif isinstance(value, Layer):
            subs = self.__dict__.get("_sub_layers")
            if subs is None:
                raise AttributeError("call super().__init__() before assigning sublayers")
            self._remove_from(name, except_dict=subs)
            subs[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter {name!r} (expected a Parameter or None)")
            params[name] = None
        elif self.__dict__.get("_buffers") is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign {type(value).__name__} to buffer {name!r} (expected a Tensor or None)")
            self._buffers[name] = value
        elif self.__dict__.get("_sub_layers") is not None and name in self._sub_layers:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to sublayer {name!r} (expected a Layer or None)")
            self._sub_layers[name] = None
        elif isinstance(value, Tensor):
            # As in Paddle: a tensor attribute is a buffer (moved and cast by ``to``), left out of
            # ``state_dict`` unless ``register_buffer`` made it persistable.
            buffers = self.__dict__.get("_buffers")
            if buffers is None:
                raise AttributeError("call super().__init__() before assigning tensors")
            self._remove_from(name, except_dict=buffers)
            buffers[name] = value
            self._non_persistable_buffer_names_set.add(name)
        else:
            object.__setattr__(self, name, value)

    def _remove_from(self, name: str, except_dict: dict) -> None:
        for d in (self.__dict__, self._parameters, self._sub_layers, self._buffers):
            if d is not except_dict and name in d:
                del d[name]
        if except_dict is not self._buffers:
            self._non_persistable_buffer_names_set.discard(name)

    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_sub_layers", "_buffers"):
            table = d.get(store)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for store in (self._parameters, self._sub_layers, self._buffers):
            if name in store:
                del store[name]
                self._non_persistable_buffer_names_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._sub_layers) | set(self._buffers))

    def add_parameter(self, name: str, parameter: Parameter | None) -> Parameter | None:
        """Register ``parameter`` under ``name`` (``None`` reserves the name)."""
        if not isinstance(name, str) or "." in name or not name:
            raise ArgumentError(f"add_parameter: name must be a non-empty string without '.', got {name!r}")
        if parameter is not None and not isinstance(parameter, Parameter):
            raise TypeError(f"add_parameter: expected a Parameter for {name!r}, got {type(parameter).__name__}")
        if name in self.__dict__:
            raise ArgumentError(f"add_parameter: {type(self).__name__} already has an attribute {name!r}")
        self._parameters[name] = parameter
        return parameter

    def add_sublayer(self, name: str, sublayer: Layer) -> Layer:
        """Register ``sublayer`` under ``name``."""
        if sublayer is not None and not isinstance(sublayer, Layer):
            raise TypeError(f"add_sublayer: expected a Layer for {name!r}, got {type(sublayer).__name__}")
        self._sub_layers[str(name)] = sublayer
        return sublayer

    def register_buffer(self, name: str, tensor: Tensor | None, persistable: bool = True) -> None:
        """A tensor that is part of the layer's state but not trained (BatchNorm's running mean).

        Non-persistable buffers are left out of ``state_dict``.
        """
        if not isinstance(name, str) or "." in name or not name:
            raise ArgumentError(f"register_buffer: name must be a non-empty string without '.', got {name!r}")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: expected a Tensor for {name!r}, got {type(tensor).__name__}")
        if name in self._parameters or name in self._sub_layers:
            raise ArgumentError(f"register_buffer: {name!r} is already a parameter or sublayer")
        self.__dict__.pop(name, None)
        self._buffers[name] = tensor
        if tensor is not None:
            tensor.persistable = persistable
        if persistable:
            self._non_persistable_buffer_names_set.discard(name)
        else:
            self._non_persistable_buffer_names_set.add(name)

    def create_parameter(self, shape, attr=None, dtype=None, is_bias: bool = False,
                         default_initializer=None) -> Parameter | None:
        """A new Parameter, initialised as Paddle does: by ``attr.initializer``, else the global
        initializer (``set_global_initializer``), else ``default_initializer``, else XavierUniform
        for weights and zeros for biases. ``attr=False`` gives None. Unnamed parameters are named
        ``<full_name>.w_<n>`` (``.b_<n>`` for biases), as in Paddle. Without ``dtype``, the
        layer's: the ``dtype`` it was made with, else the default dtype when it was made.

        >>> import oar
        >>> oar.set_default_dtype("float64")
        >>> oar.nn.Linear(2, 2).weight.dtype
        oar.float64
        >>> oar.set_default_dtype("float32")
        """
        from oar.nn.initializer import Constant, XavierUniform

        attr = ParamAttr._to_attr(attr)
        if attr is False:
            return None
        shape = [int(d) for d in shape]
        if any(d < 0 for d in shape):
            raise ShapeError(f"create_parameter: shape must be non-negative, got {shape}")
        dtype = get_dtype(dtype or self._dtype)
        name = attr.name or _unique_name(f"{self._full_name}.{'b' if is_bias else 'w'}")
        param = Parameter(np.zeros(shape, dtype.np), name=name, trainable=attr.trainable,
                          learning_rate=attr.learning_rate, regularizer=attr.regularizer, need_clip=attr.need_clip)
        initializer = attr.initializer or global_initializer(is_bias) or default_initializer
        if initializer is None:
            initializer = Constant(0.0) if is_bias else XavierUniform()
        initializer(param)
        device = get_device()
        if device != "cpu":  # as Paddle's, a layer made under oar.set_device("gpu") has its parameters there
            param._move_to(device)
        return param

    # -- traversal ----------------------------------------------------------------------------
    def named_sublayers(self, prefix: str = "", include_self: bool = False, layers_set=None) -> Iterator[tuple[str, Layer]]:
        """(qualified name, layer) for every sublayer, depth first, each layer once."""
        if layers_set is None:
            layers_set = set()
        if include_self and id(self) not in layers_set:
            layers_set.add(id(self))
            yield prefix, self
        for key, layer in self._sub_layers.items():
            if layer is None or id(layer) in layers_set:
                continue
            name = f"{prefix}.{key}" if prefix else key
            layers_set.add(id(layer))
            yield name, layer
            yield from layer.named_sublayers(prefix=name, include_self=False, layers_set=layers_set)

    def sublayers(self, include_self: bool = False) -> list[Layer]:
        return [layer for _, layer in self.named_sublayers(include_self=include_self)]

    def named_children(self) -> Iterator[tuple[str, Layer]]:
        seen = set()
        for name, layer in self._sub_layers.items():
            if layer is not None and id(layer) not in seen:
                seen.add(id(layer))
                yield name, layer

    def children(self) -> Iterator[Layer]:
        for _, layer in self.named_children():
            yield layer

    def named_parameters(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(qualified name, parameter) pairs; a parameter shared by two layers appears once."""
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, param in layer._parameters.items():
                if param is None or id(param) in seen:
                    continue
                seen.add(id(param))
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), param

    def parameters(self, include_sublayers: bool = True) -> list[Parameter]:
        return [p for _, p in self.named_parameters(include_sublayers=include_sublayers)]

    def named_buffers(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple[str, Tensor]]:
        seen = set()
        layers = self.named_sublayers(prefix=prefix, include_self=True) if include_sublayers else [(prefix, self)]
        for layer_prefix, layer in layers:
            for key, buf in layer._buffers.items():
                if buf is None or id(buf) in seen:
                    continue
                seen.add(id(buf))
                yield (f"{layer_prefix}.{key}" if layer_prefix else key), buf

    def buffers(self, include_sublayers: bool = True) -> list[Tensor]:
        return [b for _, b in self.named_buffers(include_sublayers=include_sublayers)]

    def apply(self, fn: Callable[[Layer], None]) -> Layer:
        """Call ``fn`` on every sublayer and then on this layer (to initialise weights, ...)."""
        for layer in self.children():
            layer.apply(fn)
        fn(self)
        return self

    def full_name(self) -> str:
        return self._full_name

    # -- modes --------------------------------------------------------------------------------
    def train(self, mode: bool = True) -> Layer:
        """Put this layer and its sublayers in training mode (``mode=False``: as ``eval()``)."""
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", bool(mode))
        return self

    def eval(self) -> Layer:
        for layer in self.sublayers(include_self=True):
            object.__setattr__(layer, "training", False)
        return self

    def clear_gradients(self, set_to_zero: bool = True) -> None:
        for p in self.parameters():
            if p.trainable:
                p.clear_grad(set_to_zero)

    # -- state --------------------------------------------------------------------------------
    def _named_state(self, prefix: str = "", include_sublayers: bool = True) -> Iterator[tuple[str, Tensor]]:
        """Every (qualified name, tensor) of the state in Paddle's order -- each layer's parameters,
        then its persistable buffers, then its sublayers' -- including every alias of a shared one."""
        for key, p in self._parameters.items():
            if p is not None:
                yield prefix + key, p
        for key, buf in self._buffers.items():
            if buf is not None and key not in self._non_persistable_buffer_names_set:
                yield prefix + key, buf
        if include_sublayers:
            for key, layer in self._sub_layers.items():
                if layer is not None:
                    yield from layer._named_state(f"{prefix}{key}.")

    def state_dict(self, destination=None, include_sublayers: bool = True, structured_name_prefix: str = "",
                   use_hook: bool = True, keep_vars: bool = True) -> collections.OrderedDict:
        """Parameters and persistable buffers by qualified name (the tensors themselves), in
        Paddle's order: each layer's parameters, then its buffers, then its sublayers'.

        A tensor reachable under two names (a shared parameter or sublayer) is listed once, under
        the first; Paddle lists it under every name. ``set_state_dict`` accepts any of the names,
        so Paddle's state dicts load too.
        """
        out = collections.OrderedDict() if destination is None else destination
        seen = set()
        for name, t in self._named_state(structured_name_prefix, include_sublayers):
            if id(t) not in seen:
                seen.add(id(t))
                out[name] = t
        if use_hook:  # the sublayers' hooks, then this layer's, as Paddle runs them
            for layer in reversed(self.sublayers(include_self=True) if include_sublayers else [self]):
                for hook in list(layer.__dict__.get("_state_dict_hooks", {}).values()):
                    result = hook(out)
                    if result is not None:
                        out = result
        return out

    def set_state_dict(self, state_dict: dict, use_structured_name: bool = True, strict: bool = True):
        """Copy values from ``state_dict`` into this layer's parameters and buffers.

        Strict by default: missing keys, unexpected keys and shape mismatches are reported
        together in one error and nothing is changed. ``strict=False`` loads what matches and
        returns ``(missing_keys, unexpected_keys)``. A shared tensor may be given under any of its
        names (Paddle's state dicts list it under all of them). ``use_structured_name=False``
        matches the tensors' own names (``linear_0.w_0``) instead of their attribute paths.
        """
        if use_structured_name:
            entries = list(self._named_state())
        else:
            entries = [(t.name, t) for t in self.state_dict().values()]
        aliases: dict[int, list[str]] = collections.OrderedDict()
        targets: dict[int, Tensor] = {}
        for name, t in entries:
            aliases.setdefault(id(t), []).append(name)
            targets[id(t)] = t
        known = {name for names in aliases.values() for name in names}
        missing = [names[0] for names in aliases.values() if not any(n in state_dict for n in names)]
        unexpected = [k for k in state_dict if k not in known]
        mismatched, plan = [], []
        for key_id, names in aliases.items():
            target = targets[key_id]
            for name in names:
                if name not in state_dict:
                    continue
                value = state_dict[name]
                shape = list(value.shape) if hasattr(value, "shape") else list(np.shape(value))
                if shape != target.shape:
                    mismatched.append(f"{name}: checkpoint {shape}, model {target.shape}")
                elif not any(t is target for t, _ in plan):
                    plan.append((target, value))
        if strict and (missing or unexpected or mismatched):
            lines = [f"set_state_dict: the state dict does not match {type(self).__name__} (nothing was loaded)"]
            if missing:
                lines.append(f"  missing keys ({len(missing)}): {', '.join(missing)}")
            if unexpected:
                lines.append(f"  unexpected keys ({len(unexpected)}): {', '.join(map(str, unexpected))}")
            if mismatched:
                lines.append(f"  shape mismatches ({len(mismatched)}): {'; '.join(mismatched)}")
            lines.append("  pass strict=False to load the keys that match")
            raise ArgumentError("\n".join(lines))
        for target, value in plan:
            array = value.numpy(copy=False) if isinstance(value, Tensor) else np.asarray(value)
            array = array.astype(target._data.dtype, copy=False)
            if target._backend != "cpu":
                target._set_buffer(get_backend(target._backend).from_numpy(array.copy()))
            else:
                if not target._data.flags.writeable:
                    target._set_buffer(target._data.copy())
                target._data[...] = array
            target._bump_version()
        return missing, unexpected

    load_dict = set_state_dict
    set_dict = set_state_dict

    def to(self, device=None, dtype=None, blocking=None) -> Layer:
        """Move parameters and buffers to ``device`` and/or cast floating ones to ``dtype``."""
        for layer in self.sublayers(include_self=True):
            layer._convert_own_state(device, dtype)
        return self

    def _convert_own_state(self, device, dtype) -> None:
        """``to`` for this layer's own parameters and buffers, not its sublayers'."""
        for store in (self._parameters, self._buffers):
            for t in store.values():
                if t is None:
                    continue
                converted = t
                if dtype is not None and t.dtype.is_floating:
                    converted = converted.astype(dtype)
                if device is not None:
                    converted = converted.to(device)
                if converted is not t:
                    t._set_buffer(converted._data)
                    t._backend = converted._backend
                    t._grad = None
        if dtype is not None:
            object.__setattr__(self, "_dtype", get_dtype(dtype).name)

    def float16(self, excluded_layers=None) -> Layer:
        """Cast the floating parameters and buffers to float16, in place, except those of
        ``excluded_layers``: layer types (every layer of the type keeps its own), layer instances
        (with their sublayers) or a list of them; None keeps the batch norms' (Paddle's default).

        >>> import oar
        >>> net = oar.nn.Sequential(oar.nn.Conv2D(1, 2, 3), oar.nn.BatchNorm2D(2))
        >>> net.float16()[0].weight.dtype, net[1].weight.dtype
        (oar.float16, oar.float32)
        """
        return self._to_low_precision("float16", excluded_layers, "float16")

    def bfloat16(self, excluded_layers=None) -> Layer:
        """``float16`` for bfloat16."""
        return self._to_low_precision("bfloat16", excluded_layers, "bfloat16")

    def _to_low_precision(self, dtype: str, excluded_layers, where: str) -> Layer:
        if excluded_layers is None:
            from oar.nn.layer.norm import BatchNorm, _BatchNormBase  # a cycle: norm's layers subclass Layer

            excluded_layers = [BatchNorm, _BatchNormBase]
        elif isinstance(excluded_layers, Layer) or isinstance(excluded_layers, type):
            excluded_layers = [excluded_layers]
        types, kept = [], set()
        for item in excluded_layers:
            if isinstance(item, Layer):
                kept.update(id(layer) for layer in item.sublayers(include_self=True))
            elif isinstance(item, type) and issubclass(item, Layer):
                types.append(item)
            else:
                raise ArgumentError(f"{where}: excluded_layers must hold oar.nn.Layer types or instances, got "
                                    f"{type(item).__name__}")
        for layer in self.sublayers(include_self=True):
            if id(layer) not in kept and not isinstance(layer, tuple(types)):
                layer._convert_own_state(None, dtype)
        return self

    def astype(self, dtype) -> Layer:
        return self.to(dtype=dtype)

    def float(self) -> Layer:
        return self.to(dtype="float32")

    def double(self) -> Layer:
        return self.to(dtype="float64")

    # -- printing -----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """Override to describe the layer's configuration on its ``repr`` line."""
        return ""

    def __repr__(self) -> str:
        """Paddle's format: ``Name(extra)`` and one indented ``(key): repr`` line per sublayer."""
        extra = self.extra_repr()
        head = f"{type(self).__name__}("
        if "\n" in extra:
            head += "\n  " + extra.replace("\n", "\n  ") + "\n"
        else:
            head += extra
        lines = [f"({name}): " + repr(layer).replace("\n", "\n  ") for name, layer in self._sub_layers.items()]
        if lines:
            head += "\n  " + "\n  ".join(lines) + "\n"
        return head + ")"


