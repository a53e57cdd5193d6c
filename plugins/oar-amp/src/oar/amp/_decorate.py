"""``decorate``: O2's low-precision parameters, float32 master weights and ``save_dtype``."""

from __future__ import annotations

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.optimizer import Optimizer

SAVE_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _batch_norms() -> tuple[type, ...]:
    names = ("BatchNorm", "BatchNorm1D", "BatchNorm2D", "BatchNorm3D", "SyncBatchNorm")
    return tuple(getattr(nn, name) for name in names if hasattr(nn, name))


def _float16_norms() -> tuple[type, ...]:
    # Paddle's need_keep_fp32: for float16 the layer and instance norms keep float32 too; bfloat16's
    # range lets them be cast.
    names = ("LayerNorm", "InstanceNorm1D", "InstanceNorm2D", "InstanceNorm3D")
    return tuple(getattr(nn, name) for name in names if hasattr(nn, name))


def _excluded_items(excluded_layers) -> list:
    message = "decorate: excluded_layers must be an oar.nn.Layer instance or type, or a list of them"
    if excluded_layers is None:
        return []
    if isinstance(excluded_layers, nn.Layer) or isinstance(excluded_layers, type):
        excluded_layers = [excluded_layers]
    if not isinstance(excluded_layers, (list, tuple)):
        raise ArgumentError(f"{message}, got {type(excluded_layers).__name__}")
    for item in excluded_layers:
        if not (isinstance(item, nn.Layer) or (isinstance(item, type) and issubclass(item, nn.Layer))):
            raise ArgumentError(f"{message}, got {item!r}")
    return list(excluded_layers)


class StateDictHook:
    """Casts every floating tensor of a state dict to ``save_dtype`` (the parameters keep theirs)."""

    def __init__(self, save_dtype: str):
        self._save_dtype = save_dtype

    def __call__(self, state_dict):
        for key, value in state_dict.items():
            if isinstance(value, oar.Tensor) and value.dtype.is_floating and value.dtype.name != self._save_dtype:
                cast = value.astype(self._save_dtype)
                cast.name = value.name
                state_dict[key] = cast


def _as_list(value, what: str, kind) -> tuple[list, bool]:
    if isinstance(value, kind):
        return [value], False
    if isinstance(value, list) and all(isinstance(v, kind) for v in value):
        return value, True
    raise ArgumentError(f"decorate: {what} must be either a single {kind.__name__} or a list of them, "
                        f"got {type(value).__name__}")


def decorate(models, optimizers=None, level: str = "O1", dtype: str = "float16", master_weight=None,
             save_dtype=None, master_grad: bool = False, excluded_layers=None):
    """Prepare models (and optimizers) for ``auto_cast``: at ``level='O2'`` cast the parameters to
    ``dtype``, keep the optimizers' float32 master weights, and save in ``save_dtype``.

    At O2 every layer's floating parameters and buffers become ``dtype`` except the batch norms'
    (and, for float16, the layer and instance norms'), and except ``excluded_layers`` (layer
    instances, with their sublayers, or layer types). Each optimizer then updates float32 master
    copies of the low-precision parameters and writes them back cast (``master_weight=False``
    turns that off); they are in ``optimizer.state_dict()['master_weights']``. ``save_dtype``
    (float16, bfloat16, float32 or float64) is the dtype ``state_dict()`` -- and so ``oar.save`` --
    gives the floating tensors, whatever the parameters' own. At O1 nothing changes.
    ``master_grad`` is accepted for Paddle's signature; oar's optimizers always compute the
    update of a low-precision parameter in float32.

    Returns what was passed, in the same shape: the model(s), or ``(models, optimizers)``.

    >>> import oar
    >>> model = oar.nn.Sequential(oar.nn.Linear(4, 4), oar.nn.LayerNorm(4))
    >>> opt = oar.optimizer.SGD(learning_rate=0.1, parameters=model.parameters())
    >>> model, opt = oar.amp.decorate(model, opt, level="O2", dtype="bfloat16", save_dtype="float32")
    >>> model[0].weight.dtype, model[1].weight.dtype, model.state_dict()["0.weight"].dtype
    (oar.bfloat16, oar.bfloat16, oar.float32)
    """
    if level not in ("O1", "O2"):
        raise ArgumentError("decorate: level should be O1 or O2, O1 represent AMP train mode, O2 represent "
                            f"Pure fp16 train mode; got {level!r}")
    dtype = getattr(dtype, "name", dtype)
    if dtype not in ("float16", "bfloat16"):
        raise ArgumentError(f"decorate: dtype only support float16 or bfloat16, got {dtype!r}")
    if level == "O1":
        return models if optimizers is None else (models, optimizers)
    model_list, models_is_list = _as_list(models, "models", nn.Layer)
    for model in model_list:
        if type(model).__name__ == "DataParallel":
            raise ArgumentError("decorate: for distributed AMP training, decorate the model first, then wrap it "
                                "in oar.DataParallel")
    excluded = _batch_norms() + (_float16_norms() if dtype == "float16" else ())
    excluded_list = list(excluded) + _excluded_items(excluded_layers)
    for model in model_list:
        if dtype == "float16":
            model.float16(excluded_layers=excluded_list)
        else:
            model.bfloat16(excluded_layers=excluded_list)
    optimizer_list, optimizers_is_list = [], False
    if optimizers is not None:
        optimizer_list, optimizers_is_list = _as_list(optimizers, "optimizers", Optimizer)
        for optimizer in optimizer_list:
            # Paddle's _set_multi_precision: the optimizer keeps float32 master weights between steps.
            optimizer._multi_precision = master_weight is not False
    if save_dtype is not None:
        save_dtype = getattr(save_dtype, "name", save_dtype)
        if save_dtype not in SAVE_DTYPES:
            raise ArgumentError(f"decorate: save_dtype can only be float16, bfloat16, float32 or float64, "
                                f"got {save_dtype!r}")
        hook = StateDictHook(save_dtype)
        for model in model_list:
            for layer in model.sublayers(include_self=True):  # so a sublayer's own state_dict casts too
                layer.register_state_dict_hook(hook)
    models_out = model_list if models_is_list else model_list[0]
    if optimizers is None:
        return models_out
    return models_out, (optimizer_list if optimizers_is_list else optimizer_list[0])


amp_decorate = decorate  # Paddle's other name
