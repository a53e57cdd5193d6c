"""Containers: Sequential, LayerList, LayerDict, ParameterList, ParameterDict, and Paddle 3.3's
torch-style aliases Module (Layer), ModuleList (LayerList) and ModuleDict (LayerDict)."""

from __future__ import annotations

import collections
from collections.abc import Iterable

from oar.errors import ArgumentError
from oar.nn.layer.layers import Layer
from oar.nn.parameter import Parameter


class Sequential(Layer):
    """Layers called in order: ``Sequential(Linear(4, 8), ReLU(), Linear(8, 2))``; also takes
    ``(name, layer)`` pairs or an OrderedDict.

    >>> import oar
    >>> net = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU())
    >>> net(oar.rand([2, 4])).shape
    [2, 8]
    """

    def __init__(self, *layers):
        super().__init__()
        if len(layers) == 1 and isinstance(layers[0], (dict, collections.OrderedDict)):
            layers = tuple(layers[0].items())
        if layers and isinstance(layers[0], (list, tuple)):
            for name, layer in layers:
                self.add_sublayer(name, layer)
        else:
            for i, layer in enumerate(layers):
                self.add_sublayer(str(i), layer)

    def __getitem__(self, index):
        values = list(self._sub_layers.values())
        if isinstance(index, slice):
            return Sequential(*values[index])
        if isinstance(index, str):
            return self._sub_layers[index]
        return values[index]

    def __setitem__(self, index, layer) -> None:
        key = list(self._sub_layers)[index] if isinstance(index, int) else index
        self.add_sublayer(key, layer)

    def __delitem__(self, index) -> None:
        key = list(self._sub_layers)[index]
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def forward(self, x):
        for layer in self._sub_layers.values():
            x = layer(x)
        return x


class LayerList(Layer):
    """A list of sublayers, registered so their parameters are found."""

    def __init__(self, sublayers: Iterable[Layer] | None = None):
        super().__init__()
        for layer in sublayers or ():
            self.append(layer)

    def _key(self, index: int) -> str:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"LayerList index {index} out of range for {n} layers")
        return str(index % n)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return LayerList(list(self._sub_layers.values())[index])
        return self._sub_layers[self._key(index)]

    def __setitem__(self, index: int, layer: Layer) -> None:
        self.add_sublayer(self._key(index), layer)

    def __delitem__(self, index) -> None:
        layers = list(self._sub_layers.values())
        del layers[index]
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self._sub_layers[str(i)] = layer

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers.values())

    def append(self, sublayer: Layer) -> LayerList:
        self.add_sublayer(str(len(self)), sublayer)
        return self

    def insert(self, index: int, sublayer: Layer) -> None:
        layers = list(self._sub_layers.values())
        layers.insert(index, sublayer)
        self._sub_layers.clear()
        for i, layer in enumerate(layers):
            self.add_sublayer(str(i), layer)

    def extend(self, sublayers: Iterable[Layer]) -> LayerList:
        for layer in sublayers:
            self.append(layer)
        return self


class LayerDict(Layer):
    """An ordered dict of sublayers."""

    def __init__(self, sublayers=None):
        super().__init__()
        if sublayers is not None:
            self.update(sublayers)

    def __getitem__(self, key: str) -> Layer:
        return self._sub_layers[key]

    def __setitem__(self, key: str, layer: Layer) -> None:
        self.add_sublayer(key, layer)

    def __delitem__(self, key: str) -> None:
        del self._sub_layers[key]

    def __len__(self) -> int:
        return len(self._sub_layers)

    def __iter__(self):
        return iter(self._sub_layers)

    def __contains__(self, key: str) -> bool:
        return key in self._sub_layers

    def clear(self) -> None:
        self._sub_layers.clear()

    def pop(self, key: str) -> Layer:
        return self._sub_layers.pop(key)

    def keys(self):
        return self._sub_layers.keys()

    def items(self):
        return self._sub_layers.items()

    def values(self):
        return self._sub_layers.values()

    def update(self, sublayers) -> None:
        items = sublayers.items() if hasattr(sublayers, "items") else sublayers
        for key, layer in items:
            self.add_sublayer(key, layer)


class ParameterList(Layer):
    """A list of parameters, registered so optimizers and ``state_dict`` find them."""

    def __init__(self, parameters: Iterable[Parameter] | None = None):
        super().__init__()
        for p in parameters or ():
            self.append(p)

    def __getitem__(self, index: int) -> Parameter:
        return list(self._parameters.values())[index]

    def __setitem__(self, index: int, param: Parameter) -> None:
        self.add_parameter_at(index, param)

    def add_parameter_at(self, index: int, param: Parameter) -> None:
        key = list(self._parameters)[index]
        self._parameters[key] = param

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, parameter: Parameter) -> ParameterList:
        self.add_parameter(str(len(self)), parameter)
        return self


class ParameterDict(Layer):
    """An ordered dict of parameters, registered so optimizers and ``state_dict`` find them; built
    from a mapping or ``(name, parameter)`` pairs.

    >>> import numpy as np, oar
    >>> params = oar.nn.ParameterDict({"scale": oar.nn.Parameter(np.ones([2], np.float32))})
    >>> list(params), params["scale"].shape, len(params.parameters())
    (['scale'], [2], 1)
    """

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Parameter:
        return self._parameters[key]

    def __setitem__(self, key: str, param: Parameter) -> None:
        if not isinstance(param, Parameter):
            raise ArgumentError(f"ParameterDict: {key!r} must be set to a Parameter, got {type(param).__name__}")
        self.add_parameter(key, param)

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key: str) -> bool:
        return key in self._parameters

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters) -> None:
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for i, pair in enumerate(items):
            if len(pair) != 2:
                raise ArgumentError(f"ParameterDict.update: element {i} must be a (name, parameter) pair, got "
                                    f"{len(pair)} values")
            self[pair[0]] = pair[1]


# Paddle 3.3's torch-style aliases (the same classes)
Module, ModuleList, ModuleDict = Layer, LayerList, LayerDict

__all__ = ["Sequential", "LayerList", "LayerDict", "ParameterList", "ParameterDict", "Module", "ModuleList",
           "ModuleDict"]
