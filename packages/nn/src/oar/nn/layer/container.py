"""Containers: Sequential, LayerList, LayerDict, ParameterList."""

from __future__ import annotations

import collections
from collections.abc import Iterable

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


__all__ = ["Sequential", "LayerList", "LayerDict", "ParameterList"]
