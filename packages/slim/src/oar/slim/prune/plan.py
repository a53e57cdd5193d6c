"""A pruning plan: keep-masks per parameter axis, applied by replacing parameters with smaller ones.

``PruningPlan.apply(model)`` removes the masked channels for real: each parameter (or buffer) is
replaced by a new, smaller tensor with the same name and optimizer attributes, and the layers'
size attributes follow (a conv's ``_out_channels``/``_in_channels``/``_groups``, a batch norm's
``_num_features``, a linear's ``in_features``/``out_features``), so that the model runs, exports
smaller weights and counts fewer FLOPs. The plan keeps what it replaced: ``restore(model)`` puts
the original tensors and attributes back.

Parameters are new objects after ``apply``: build the optimizer after pruning (PaddleSlim's
pruners rewrite the optimizer's accumulators in place instead).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import oar
from oar.nn import (
    BatchNorm,
    BatchNorm1D,
    BatchNorm2D,
    BatchNorm3D,
    Conv1D,
    Conv1DTranspose,
    Conv2D,
    Conv2DTranspose,
    Conv3D,
    Conv3DTranspose,
    Layer,
    Linear,
)
from oar.nn.parameter import Parameter
from oar.slim.prune.dependency import PruningError

_CONVS = (Conv1D, Conv2D, Conv3D)
_TRANSPOSED = (Conv1DTranspose, Conv2DTranspose, Conv3DTranspose)
_BATCH_NORMS = (BatchNorm1D, BatchNorm2D, BatchNorm3D)


@dataclass
class PruningMask:
    """The channels of one parameter axis to keep: ``dims`` (the axis), ``mask`` (bool per
    channel, True = kept) and the ``ratio`` the group was pruned by."""

    dims: int
    mask: np.ndarray
    ratio: float

    def __str__(self) -> str:
        return f"{self.dims}: {int((~self.mask).sum())}/{len(self.mask)} pruned"


def _owners(model: Layer) -> dict[str, tuple[Layer, str, bool]]:
    """Full parameter or buffer name -> (owning layer, attribute name, is a parameter)."""
    owners = {}
    for prefix, layer in model.named_sublayers(include_self=True):
        head = f"{prefix}." if prefix else ""
        for attr, _ in layer.named_parameters(include_sublayers=False):
            owners[head + attr] = (layer, attr, True)
        for attr, _ in layer.named_buffers(include_sublayers=False):
            owners[head + attr] = (layer, attr, False)
    return owners


def _new_tensor(old, array: np.ndarray, is_param: bool):
    data = oar.to_tensor(array, place=old.place)
    if not is_param:
        data.stop_gradient = old.stop_gradient
        return data
    p = Parameter(data, name=old.name, trainable=old.trainable, learning_rate=old.optimize_attr["learning_rate"],
                  regularizer=old.regularizer, need_clip=old.need_clip)
    p.stop_gradient = old.stop_gradient
    return p


def _size_attrs(layer: Layer) -> dict:
    """The size attributes of ``layer`` that follow its parameters' shapes (saved for restore)."""
    if isinstance(layer, _CONVS):
        return {k: getattr(layer, k) for k in ("_in_channels", "_out_channels", "_groups")}
    if isinstance(layer, _BATCH_NORMS):
        return {"_num_features": layer._num_features}
    if isinstance(layer, BatchNorm):
        return {"_num_channels": layer._num_channels}
    if isinstance(layer, Linear):
        return {"in_features": layer.in_features, "out_features": layer.out_features}
    return {}


def _resize(layer: Layer, old: dict) -> None:
    """Set ``layer``'s size attributes from its (pruned) parameters' shapes."""
    if isinstance(layer, _TRANSPOSED):
        raise PruningError(f"{type(layer).__name__} is not pruned (its weight is [in, out, ...])")
    if isinstance(layer, _CONVS):
        out = layer.weight.shape[0]
        groups = old["_groups"]
        if groups > 1:  # depthwise: one group per input channel, old_out // groups filters each
            groups = out // (old["_out_channels"] // old["_groups"])
        layer._out_channels, layer._groups = out, groups
        layer._in_channels = layer.weight.shape[1] * groups
    elif isinstance(layer, _BATCH_NORMS):
        layer._num_features = layer._mean.shape[0]
    elif isinstance(layer, BatchNorm):
        layer._num_channels = layer._mean.shape[0]
    elif isinstance(layer, Linear):
        layer.in_features, layer.out_features = layer.weight.shape


class PruningPlan:
    """Keep-masks by parameter name (``masks``: name -> [PruningMask]), as PaddleSlim's
    ``PruningPlan``; ``apply`` prunes a model in place, ``restore`` undoes it.

    >>> import numpy as np, oar
    >>> fc = oar.nn.Linear(4, 3)
    >>> plan = PruningPlan()
    >>> plan.add("weight", PruningMask(1, np.array([True, False, True]), 0.33))
    >>> plan.add("bias", PruningMask(0, np.array([True, False, True]), 0.33))
    >>> plan.apply(fc)
    >>> fc.weight.shape, fc.out_features
    ([4, 2], 2)
    >>> plan.restore(fc)
    >>> fc.weight.shape
    [4, 3]
    """

    def __init__(self, model_name: str | None = None):
        self._model_name = model_name
        self._masks: dict[str, list[PruningMask]] = {}
        self._backup: dict[str, tuple] = {}  # name -> (layer, attr, original tensor)
        self._layer_backup: list[tuple[Layer, dict]] = []
        self.ratios: dict[str, float] = {}  # the ratio each named parameter's group was pruned by
        self.pruned_flops: float | None = None  # the fraction of FLOPs removed, where measured (sensitive_prune)

    @property
    def masks(self) -> dict[str, list[PruningMask]]:
        return self._masks

    def add(self, var_name: str, pruning_mask: PruningMask) -> None:
        """Add a mask; masks on the same axis of one parameter combine (a channel pruned by either
        is pruned)."""
        pruning_mask.mask = np.asarray(pruning_mask.mask, dtype=bool)
        for m in self._masks.setdefault(var_name, []):
            if m.dims == pruning_mask.dims:
                m.mask = m.mask & pruning_mask.mask
                return
        self._masks[var_name].append(pruning_mask)

    def extend(self, plan: PruningPlan) -> None:
        for name, masks in plan.masks.items():
            for m in masks:
                self.add(name, PruningMask(m.dims, m.mask.copy(), m.ratio))

    def contains(self, var_name: str, dims: int | None = None) -> bool:
        return var_name in self._masks and (dims is None or any(m.dims == dims for m in self._masks[var_name]))

    def apply(self, model: Layer) -> None:
        """Replace the masked parameters of ``model`` by their kept channels, and resize the layers."""
        owners = _owners(model)
        missing = [name for name in self._masks if name not in owners]
        if missing:
            raise PruningError(f"the plan names {missing}, which are not parameters or buffers of the model")
        touched: dict[int, Layer] = {}
        for name, masks in self._masks.items():
            layer, attr, is_param = owners[name]
            old = getattr(layer, attr)
            array = old.numpy(copy=False)
            for m in masks:
                if len(m.mask) != array.shape[m.dims]:
                    raise PruningError(f"{name} has {array.shape[m.dims]} channels on axis {m.dims}, the mask "
                                       f"{len(m.mask)}: was the model pruned since this plan was made?")
                array = np.take(array, np.flatnonzero(m.mask), axis=m.dims)
            if id(layer) not in touched:
                touched[id(layer)] = layer
                self._layer_backup.append((layer, _size_attrs(layer)))
            self._backup.setdefault(name, (layer, attr, old))
            setattr(layer, attr, _new_tensor(old, array, is_param))
        for layer, old in self._layer_backup:
            _resize(layer, old)

    def restore(self, model: Layer | None = None) -> None:
        """Put back the tensors and layer attributes ``apply`` replaced."""
        for layer, attr, old in self._backup.values():
            setattr(layer, attr, old)
        for layer, old in self._layer_backup:
            for k, v in old.items():
                setattr(layer, k, v)
        self._backup.clear()
        self._layer_backup.clear()

    def __str__(self) -> str:
        rows = [f"{name}\t" + ", ".join(str(m) for m in masks) for name, masks in self._masks.items()]
        return "variable name\tpruned dims\n" + "\n".join(rows) + f"\npruned FLOPs: {self.pruned_flops}"
