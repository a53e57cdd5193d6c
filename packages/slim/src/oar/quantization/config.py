"""``QuantConfig``: which quanter or observer each layer of a model gets (Paddle's).

A config maps every sublayer to a ``SingleLayerConfig(activation, weight)``; for each child, in
increasing precedence (Paddle's ``_specify``):

1. the global config (``QuantConfig(activation=..., weight=...)``);
2. its parent's config (so a config given to a container reaches its children);
3. ``add_type_config`` for its type;
4. ``add_name_config`` for its name: the full name (``layer.full_name()``, Paddle's) or its
   path in the model (``"fc.0"``);
5. ``add_layer_config`` for the layer itself.

The layers that are quantized are those whose type has a quantized counterpart in
``qat_layer_mappings`` (``nn.Linear`` -> ``QuantedLinear``, ``nn.Conv2D`` -> ``QuantedConv2D``),
narrowed by ``quantizable_layer_type``. A layer with ``skip_quant = True`` (Paddle's attribute) is
left as it is, with its sublayers. Where Paddle ignores a mistake, ``quantize`` raises
``QuantConfigError`` naming the layer: a name or layer that is not in the model, an explicit
config on a layer type that cannot be quantized, a channel-wise quanter on an activation.
"""

from __future__ import annotations

from collections.abc import Iterable

from oar import nn
from oar.errors import ArgumentError
from oar.nn import Layer

from .factory import QuanterFactory
from .quanted import QuantedConv2D, QuantedLinear

DEFAULT_QAT_LAYER_MAPPINGS: dict[type, type] = {nn.Linear: QuantedLinear, nn.Conv2D: QuantedConv2D}


class QuantConfigError(ArgumentError):
    """A QuantConfig that does not fit the model it quantizes."""


class SingleLayerConfig:
    """The activation and weight factories of one layer."""

    def __init__(self, activation: QuanterFactory | None, weight: QuanterFactory | None):
        self._activation = activation
        self._weight = weight

    @property
    def activation(self) -> QuanterFactory | None:
        return self._activation

    @property
    def weight(self) -> QuanterFactory | None:
        return self._weight

    def __str__(self) -> str:
        return f"activation: {self._activation}\nweight: {self._weight}"


def _check_factory(where: str, role: str, factory) -> None:
    if factory is None or isinstance(factory, QuanterFactory):
        return
    hint = ""
    if isinstance(factory, type) and issubclass(factory, QuanterFactory):
        hint = f" (pass an instance, {factory.__name__}(), not the class)"
    raise QuantConfigError(f"{where}: {role} must be a quanter or observer factory such as AbsmaxObserver() or "
                           f"FakeQuanterWithAbsMaxObserver(), or None, got {factory!r}{hint}")


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


class QuantConfig:
    """How to quantize a model (Paddle's ``paddle.quantization.QuantConfig``).

    ``activation`` and ``weight`` are the global factories (None: not quantized unless a more
    specific config says so). ``quantizable_layer_type`` (oar's; Paddle's older
    ``ImperativeQuantAware`` had it) narrows the layer types that are quantized: types or their
    names, default every type of ``qat_layer_mappings`` (``Linear``, ``Conv2D``).

    >>> import oar
    >>> from oar.quantization import QuantConfig
    >>> from oar.quantization.quanters import FakeQuanterWithAbsMaxObserver
    >>> quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
    >>> config = QuantConfig(activation=quanter, weight=quanter)
    >>> config.add_type_config(oar.nn.Conv2D, activation=None, weight=None)  # Linear layers only
    >>> print(config.global_config)
    activation: FakeQuanterWithAbsMaxObserver(name=None, moving_rate=0.9, bit_length=8, dtype='float32')
    weight: FakeQuanterWithAbsMaxObserver(name=None, moving_rate=0.9, bit_length=8, dtype='float32')
    """

    def __init__(self, activation: QuanterFactory | None, weight: QuanterFactory | None,
                 quantizable_layer_type: Iterable | None = None):
        _check_factory("QuantConfig", "activation", activation)
        _check_factory("QuantConfig", "weight", weight)
        self._global_config = None if activation is None and weight is None else SingleLayerConfig(activation, weight)
        self._layer2config: dict[int, SingleLayerConfig] = {}  # id(layer) -> config, filled by _specify
        self._layers: list[tuple[str, str, SingleLayerConfig]] = []  # (path, type name, config), for details()
        self._layer_name2config: dict[str, SingleLayerConfig] = {}  # add_layer_config, by full name
        self._prefix2config: dict[str, SingleLayerConfig] = {}
        self._type2config: dict[type, SingleLayerConfig] = {}
        self._qat_layer_mapping: dict[type, type] = dict(DEFAULT_QAT_LAYER_MAPPINGS)
        self._customized_leaves: list[type] = []
        self._quantizable = None if quantizable_layer_type is None else list(quantizable_layer_type)
        self._model = None

    # -- the settings (Paddle's) --------------------------------------------------------------
    def add_layer_config(self, layer: Layer | list, activation: QuanterFactory | None = None,
                         weight: QuanterFactory | None = None) -> None:
        """Configure one layer (or a list); the highest precedence. Found again by its full
        name, so it holds on the copy ``quantize(inplace=False)`` makes."""
        for one in _as_list(layer):
            if not isinstance(one, Layer):
                raise QuantConfigError(f"QuantConfig.add_layer_config: expected a Layer, got {type(one).__name__}")
            _check_factory(f"QuantConfig.add_layer_config({one.full_name()!r})", "activation", activation)
            _check_factory(f"QuantConfig.add_layer_config({one.full_name()!r})", "weight", weight)
            self._layer_name2config[one.full_name()] = SingleLayerConfig(activation, weight)

    def add_name_config(self, layer_name: str | list, activation: QuanterFactory | None = None,
                        weight: QuanterFactory | None = None) -> None:
        """Configure layers by full name (``layer.full_name()``) or by path in the model (``"fc.0"``)."""
        for name in _as_list(layer_name):
            if not isinstance(name, str):
                raise QuantConfigError(f"QuantConfig.add_name_config: expected a layer name, got {name!r}")
            _check_factory(f"QuantConfig.add_name_config({name!r})", "activation", activation)
            _check_factory(f"QuantConfig.add_name_config({name!r})", "weight", weight)
            self._prefix2config[name] = SingleLayerConfig(activation, weight)

    def add_type_config(self, layer_type: type | list, activation: QuanterFactory | None = None,
                        weight: QuanterFactory | None = None) -> None:
        """Configure every layer of a type (or a list of types): below names and layers."""
        for t in _as_list(layer_type):
            if not (isinstance(t, type) and issubclass(t, Layer)):
                raise QuantConfigError(f"QuantConfig.add_type_config: expected a subclass of oar.nn.Layer, got {t!r}")
            _check_factory(f"QuantConfig.add_type_config({t.__name__})", "activation", activation)
            _check_factory(f"QuantConfig.add_type_config({t.__name__})", "weight", weight)
            self._type2config[t] = SingleLayerConfig(activation, weight)

    def add_qat_layer_mapping(self, source: type, target: type) -> None:
        """Quantize layers of type ``source`` as ``target(layer, single_layer_config)``."""
        if not (isinstance(source, type) and issubclass(source, Layer)):
            raise QuantConfigError(f"QuantConfig.add_qat_layer_mapping: source must be a Layer type, got {source!r}")
        if not (isinstance(target, type) and issubclass(target, Layer)):
            raise QuantConfigError(f"QuantConfig.add_qat_layer_mapping: target must be a Layer type, got {target!r}")
        self._qat_layer_mapping[source] = target

    def add_customized_leaf(self, layer_type: type) -> None:
        """Treat ``layer_type`` as one layer: its sublayers are not quantized."""
        self._customized_leaves.append(layer_type)

    @property
    def customized_leaves(self) -> list[type]:
        return self._customized_leaves

    @property
    def qat_layer_mappings(self) -> dict[type, type]:
        return self._qat_layer_mapping

    @property
    def default_qat_layer_mapping(self) -> dict[type, type]:
        return DEFAULT_QAT_LAYER_MAPPINGS

    @property
    def global_config(self) -> SingleLayerConfig | None:
        return self._global_config

    # -- applying it to a model -----------------------------------------------------------------
    def _mapped_type(self, layer: Layer) -> type | None:
        """The quantized layer class for ``layer``, or None where its type is not quantized."""
        target = self._qat_layer_mapping.get(type(layer))
        if target is None:
            return None
        if self._quantizable is not None:
            names = {t if isinstance(t, str) else t.__name__ for t in self._quantizable}
            if type(layer).__name__ not in names:
                return None
        return target

    def _check_quantizable_types(self) -> None:
        for t in self._quantizable or ():
            name = t if isinstance(t, str) else getattr(t, "__name__", repr(t))
            if name not in {s.__name__ for s in self._qat_layer_mapping}:
                raise QuantConfigError(f"QuantConfig: quantizable_layer_type {name!r} has no quantized layer; oar "
                                       f"quantizes {sorted(s.__name__ for s in self._qat_layer_mapping)} (add one "
                                       "with add_qat_layer_mapping)")

    def _specify(self, model: Layer) -> None:
        """Give every sublayer of ``model`` its config, by the precedence above, and check the
        config against the model."""
        self._check_quantizable_types()
        self._model = model
        self._layer2config.clear()
        self._layers = []
        paths = {}
        for path, layer in model.named_sublayers():
            paths.setdefault(path, layer)
        full_names = {layer.full_name() for layer in paths.values()}
        for name in self._prefix2config:
            if name not in paths and name not in full_names:
                raise QuantConfigError(f"QuantConfig.add_name_config: no layer of {type(model).__name__} is named "
                                       f"{name!r} (paths: {', '.join(list(paths)[:12])}{', ...' if len(paths) > 12 else ''})")
        for name in self._layer_name2config:
            if name not in full_names:
                raise QuantConfigError(f"QuantConfig.add_layer_config: layer {name!r} is not part of "
                                       f"{type(model).__name__} (configure a layer of the model you quantize)")
        self._specify_helper(model, "", None)

    def _explicit(self, child: Layer, path: str) -> SingleLayerConfig | None:
        """The child's own config (type, name, layer), or None."""
        config = self._type2config.get(type(child))
        config = self._prefix2config.get(child.full_name(), config)
        config = self._prefix2config.get(path, config)
        return self._layer_name2config.get(child.full_name(), config)

    def _specify_helper(self, model: Layer, prefix: str, parent_config) -> None:
        for name, child in model.named_children():
            path = f"{prefix}.{name}" if prefix else name
            inherited = parent_config if parent_config is not None else self._global_config
            explicit = self._explicit(child, path)
            config = explicit if explicit is not None else inherited
            if explicit is not None and explicit is not inherited and not any(child.children()) \
                    and (explicit.activation or explicit.weight) and self._mapped_type(child) is None:
                raise QuantConfigError(f"QuantConfig: layer {path!r} ({type(child).__name__}) was configured for "
                                       f"quantization but oar quantizes only "
                                       f"{sorted(t.__name__ for t in self._qat_layer_mapping)} layers "
                                       f"(add_qat_layer_mapping adds a type)")
            if config is not None:
                self._layer2config[id(child)] = config
                self._layers.append((path, type(child).__name__, config))
            self._specify_helper(child, path, self._layer2config.get(id(child)) if config is not None else None)

    def _get_config_by_layer(self, layer: Layer) -> SingleLayerConfig | None:
        return self._layer2config.get(id(layer))

    def _is_quantifiable(self, layer: Layer) -> bool:
        config = self._get_config_by_layer(layer)
        return config is not None and (config.activation is not None or config.weight is not None)

    def _is_leaf(self, layer: Layer) -> bool:
        return type(layer) in self._customized_leaves or not any(layer.children())

    def _get_qat_layer(self, layer: Layer, path: str) -> Layer:
        config = self._get_config_by_layer(layer)
        target = self._mapped_type(layer)
        try:
            quanted = target(layer, config)
        except ArgumentError as exc:
            raise QuantConfigError(f"QuantConfig: cannot quantize layer {path!r} ({type(layer).__name__}): "
                                   f"{exc}") from None
        activation = getattr(quanted, "activation_quanter", None)
        if activation is not None and activation.quant_axis() not in (None, -1):
            raise QuantConfigError(f"QuantConfig: layer {path!r} ({type(layer).__name__}) got the channel-wise "
                                   f"{type(activation).__name__} for its activation; channel-wise quantizers are "
                                   "for weights (use AbsmaxObserver or FakeQuanterWithAbsMaxObserver)")
        return quanted

    def details(self) -> str:
        """The model's layers with the config each got (after ``quantize``)."""
        if self._model is None:
            return str(self)
        lines = [type(self._model).__name__]
        for path, type_name, config in self._layers:
            lines.append(f"  ({path}) {type_name}: " + str(config).replace("\n", ", "))
        return "\n".join(lines)

    def __str__(self) -> str:
        out = f"Global config:\n{self._global_config}\n"
        if self._type2config:
            out += "Layer type config:\n" + "".join(f"  {t.__name__}: {c}\n".replace("\nweight", ", weight")
                                                     for t, c in self._type2config.items())
        if self._prefix2config or self._layer_name2config:
            names = {**self._prefix2config, **self._layer_name2config}
            out += "Layer name config:\n" + "".join(f"  {n}: {c}\n".replace("\nweight", ", weight")
                                                     for n, c in names.items())
        return out
