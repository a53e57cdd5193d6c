"""``TranslatedLayer``: a model loaded by ``oar.jit.load``, run from its program alone.

It is an ``oar.nn.Layer`` when oar-nn is installed (so optimizers, ``state_dict`` and
``set_state_dict`` work as on any layer, and the state dict keys are the original model's:
``conv1.weight``), and a small layer-like class otherwise, so that oar-core alone can load and
run a saved model. Core imports nothing of nn at import time: the class is built on first use.
"""

from __future__ import annotations

import collections

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.tensor import Tensor, to_tensor
from oar._graph.program import Program
from oar.errors import ArgumentError
from oar.jit.api import Capture
from oar.static.input import BuildStrategy, InputSpec


class _SavedProgram:
    """One saved program of the model (its forward, or another ``@to_static`` method) and how to
    call it: the inputs are checked against the saved input spec."""

    def __init__(self, name: str, program: Program, specs: list, output_specs: list):
        self.name = name
        self.program = program
        self.specs = list(specs)
        self.output_specs = list(output_specs)
        self.capture = Capture(program, BuildStrategy(), program.meta.get("device", "cpu"))

    def __call__(self, *inputs):
        if len(inputs) != len(self.program.feeds):
            names = [s.get("name") for s in self.specs]
            raise ArgumentError(f"TranslatedLayer.{self.name}: the saved program takes {len(self.program.feeds)} "
                                f"input(s) {names}, got {len(inputs)}")
        feeds = [_to_feed(x, self.specs[i] if i < len(self.specs) else {}, i) for i, x in enumerate(inputs)]
        return self.capture.run(feeds)


class _TranslatedMixin:
    """What both TranslatedLayer variants do: hold the programs and run them."""

    def _setup(self, program: Program, specs: list, output_specs: list, methods: dict) -> None:
        saved = {"forward": _SavedProgram("forward", program, specs, output_specs)}
        for name, (other, other_specs, other_outputs) in methods.items():
            saved[name] = _SavedProgram(name, other, other_specs, other_outputs)
            object.__setattr__(self, name, saved[name])  # the saved @to_static method: layer.encode(x)
        object.__setattr__(self, "_saved", saved)
        object.__setattr__(self, "_program", program)
        object.__setattr__(self, "_capture", saved["forward"].capture)

    def forward(self, *inputs):
        return self._saved["forward"](*inputs)

    def program(self, method_name: str = "forward") -> Program:
        """The program of a saved method (Paddle's ``TranslatedLayer.program``)."""
        if method_name not in self._saved:
            raise ArgumentError(f"TranslatedLayer.program: no saved method {method_name!r}; saved: "
                                f"{sorted(self._saved)}")
        return self._saved[method_name].program

    @property
    def input_spec(self) -> list:
        """The saved inputs: ``InputSpec``s with their names, dtypes and shapes (-1: any size)."""
        return [InputSpec(s["shape"], s["dtype"], s.get("name"), s.get("stop_gradient", False))
                for s in self._saved["forward"].specs]

    @property
    def output_spec(self) -> list:
        """The saved outputs, flattened in order: ``InputSpec``s named ``output_0``, ``output_1``, ..."""
        return [InputSpec(s["shape"], s["dtype"], s.get("name") or f"output_{i}")
                for i, s in enumerate(self._saved["forward"].output_specs)]


def _param_kinds(program: Program, methods: dict) -> dict:
    """The parameters and buffers of every saved program, by name: they share one set of tensors."""
    kinds = dict(program.param_kinds)
    for other, _, _ in methods.values():
        kinds.update(other.param_kinds)
    return kinds


def _share(tensors: dict, program: Program, methods: dict) -> None:
    for p in [program] + [other for other, _, _ in methods.values()]:
        p.param_tensors.update({name: tensors[name] for name in p.param_kinds})


def _make_parameter(name: str, array: np.ndarray, kind: str, parameter_class):
    if kind == "parameter":
        if parameter_class is not None:
            return parameter_class(array.copy(), name=name)
        t = Tensor._wrap(array.copy(), "cpu", False, None, 0, None)
    else:
        t = Tensor._wrap(array.copy(), "cpu", True, None, 0, None)
    t.persistable = True
    t.name = name
    return t


def _nn_class():
    import oar.nn as nn  # optional dependency: oar-nn, when installed (see the module docstring)
    from oar.nn.parameter import Parameter  # optional dependency, as above

    class TranslatedLayer(_TranslatedMixin, nn.Layer):
        """A model loaded by ``oar.jit.load``: an ``oar.nn.Layer`` that runs the saved program.

        Its parameters keep the saved model's structured names, so ``state_dict()`` has the
        original keys; they require gradients, so it can be fine-tuned with any optimizer.
        """

        @classmethod
        def _from_saved(cls, program: Program, params: dict, specs: list, output_specs: list,
                        methods: dict | None = None):
            layer = cls()
            methods = methods or {}
            kinds = _param_kinds(program, methods)
            tensors = {}
            for name, kind in kinds.items():
                t = _make_parameter(name, params[name], kind, Parameter if kind == "parameter" else None)
                tensors[name] = t
            if not _attach_tree(layer, tensors, kinds, nn.Layer):
                layer = cls()  # names that do not form a tree: flat, with '.' as '_'
                for name, t in tensors.items():
                    flat = name.replace(".", "_") or "param"
                    if kinds[name] == "parameter":
                        layer.add_parameter(flat, t)
                    else:
                        layer.register_buffer(flat, t)
            _share(tensors, program, methods)
            layer._setup(program, specs, output_specs, methods)
            if not program.meta.get("training", True):
                layer.eval()
            return layer

    TranslatedLayer.__module__ = "oar.jit"
    TranslatedLayer.__qualname__ = "TranslatedLayer"
    return TranslatedLayer


def _attach_tree(root, tensors: dict, kinds: dict, layer_class) -> bool:
    """Put each tensor at its dotted path under ``root``, making plain layers for the prefixes;
    False when the names do not form a tree (one name is a prefix of another's layer path)."""
    try:
        for name, t in tensors.items():
            parts = name.split(".")
            if not all(parts):
                return False
            node = root
            for part in parts[:-1]:
                child = node._sub_layers.get(part)
                if child is None:
                    if part in node._parameters or part in node._buffers:
                        return False
                    child = layer_class()
                    node.add_sublayer(part, child)
                node = child
            leaf = parts[-1]
            if leaf in node._sub_layers or leaf in node._parameters or leaf in node._buffers:
                return False
            if kinds[name] == "parameter":
                node.add_parameter(leaf, t)
            else:
                node.register_buffer(leaf, t)
    except Exception:  # noqa: BLE001 - a name the Layer refuses: use flat names
        return False
    return True


class CoreTranslatedLayer(_TranslatedMixin):
    """The TranslatedLayer of an oar-core install without oar-nn: runs the program, exposes
    ``parameters()``, ``named_parameters()``, ``state_dict()``, ``set_state_dict()``,
    ``train()`` and ``eval()``."""

    def __init__(self):
        self.training = True
        self._state: dict[str, Tensor] = collections.OrderedDict()
        self._kinds: dict[str, str] = {}

    @classmethod
    def _from_saved(cls, program: Program, params: dict, specs: list, output_specs: list,
                    methods: dict | None = None):
        layer = cls()
        methods = methods or {}
        for name, kind in _param_kinds(program, methods).items():
            layer._state[name] = _make_parameter(name, params[name], kind, None)
            layer._kinds[name] = kind
        _share(layer._state, program, methods)
        layer._setup(program, specs, output_specs, methods)
        if not program.meta.get("training", True):
            layer.eval()
        return layer

    def __call__(self, *inputs):
        return self.forward(*inputs)

    def named_parameters(self):
        return [(n, t) for n, t in self._state.items() if self._kinds[n] == "parameter"]

    def parameters(self):
        return [t for _, t in self.named_parameters()]

    def named_buffers(self):
        return [(n, t) for n, t in self._state.items() if self._kinds[n] == "buffer"]

    def state_dict(self):
        return collections.OrderedDict(self._state)

    def set_state_dict(self, state_dict: dict):
        missing = [n for n in self._state if n not in state_dict]
        unexpected = [n for n in state_dict if n not in self._state]
        if missing or unexpected:
            raise ArgumentError(f"set_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, value in state_dict.items():
            target = self._state[name]
            array = np.asarray(value.numpy(copy=False) if isinstance(value, Tensor) else value, dtype=target._data.dtype)
            if list(array.shape) != target.shape:
                raise ArgumentError(f"set_state_dict: {name}: got shape {list(array.shape)}, expected {target.shape}")
            target._set_buffer(array.copy())
            target._bump_version()

    def train(self):
        self.training = True
        return self

    def eval(self):
        self.training = False
        return self


_CLASS: list = []


def translated_layer_class():
    """``oar.nn.Layer``-based when oar-nn is installed, else the core variant (built once)."""
    if not _CLASS:
        try:
            _CLASS.append(_nn_class())
        except ImportError:
            _CLASS.append(CoreTranslatedLayer)
    return _CLASS[0]


def _to_feed(x, spec: dict, i: int) -> Tensor:
    t = x if isinstance(x, Tensor) else to_tensor(x)
    shape, dtype = spec.get("shape", []), _dt.get_dtype(spec.get("dtype", t.dtype.name))
    name = spec.get("name") or f"input {i}"
    if t.dtype is not dtype or len(t.shape) != len(shape) or any(d not in (-1, s) for d, s in zip(shape, t.shape)):
        shown = [None if d == -1 else d for d in shape]
        raise ArgumentError(f"TranslatedLayer: input {name!r} must be {dtype.name}{shown} (None: any size), got "
                            f"{t.dtype.name}{t.shape}")
    return t
