"""AdamW: Adam with decoupled weight decay."""

from __future__ import annotations

from oar.errors import ArgumentError
from oar.optimizer.adam import Adam, adam_update, hyperparameter
from oar.optimizer.optimizer import register_update_rule

register_update_rule("adamw", "cpu", adam_update)  # adam_update's ``coeff`` is the decoupled decay


class AdamW(Adam):
    """AdamW (Loshchilov & Hutter): the weight decay shrinks the parameter directly instead of
    entering the gradient::

        param = param - learning_rate * weight_decay * param
        ... then the Adam update of ``Adam`` ...

    ``apply_decay_param_fun(param.name) -> bool`` picks the parameters that decay (all by
    default); ``lr_ratio(param) -> float`` scales the learning rate per parameter. A
    parameter's own ``ParamAttr`` regularizer still adds to its gradient. A parameter group's
    ``weight_decay`` is its decay coefficient.

    >>> import oar
    >>> fc = oar.nn.Linear(4, 1)
    >>> opt = oar.optimizer.AdamW(learning_rate=1e-3, parameters=fc.parameters(), weight_decay=0.01,
    ...                           apply_decay_param_fun=lambda name: "bias" not in name)
    """

    type = "adamw"
    _decay_is_regularizer = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, parameters=None,
                 weight_decay=0.01, use_lowprecision_moment: bool = False, lr_ratio=None, apply_decay_param_fun=None,
                 grad_clip=None, lazy_mode: bool = False, multi_precision: bool = False, amsgrad: bool = False,
                 name=None):
        coeff = self._coeff(weight_decay)
        if lr_ratio is not None and not callable(lr_ratio):
            raise ArgumentError(f"AdamW: lr_ratio must be a function of the parameter, got {type(lr_ratio).__name__}")
        if apply_decay_param_fun is not None and not callable(apply_decay_param_fun):
            raise ArgumentError(
                f"AdamW: apply_decay_param_fun must be a function of the parameter name, got "
                f"{type(apply_decay_param_fun).__name__}"
            )
        self._lr_ratio = lr_ratio
        self._apply_decay_param_fun = apply_decay_param_fun
        super().__init__(learning_rate, beta1, beta2, epsilon, parameters, None, grad_clip, lazy_mode,
                         multi_precision, False, amsgrad, name)
        self._defaults["weight_decay"] = coeff
        for group in self._param_groups:
            group["weight_decay"] = self._coeff(group.get("weight_decay", coeff))

    @staticmethod
    def _coeff(weight_decay) -> float:
        if weight_decay is None:
            return 0.0
        if not isinstance(weight_decay, (int, float)) and not hasattr(weight_decay, "item"):
            raise ArgumentError(
                f"AdamW: weight_decay is the decoupled decay coefficient, a float; got {type(weight_decay).__name__}"
            )
        return hyperparameter(weight_decay, "weight_decay", "AdamW")

    def _update(self, param, grad, lr, hyper, regularizer) -> None:
        if self._lr_ratio is not None:
            lr = lr * float(self._lr_ratio(param))
        super()._update(param, grad, lr, hyper, regularizer)

    def _rule_args(self, param, hyper, regularizer) -> dict:
        args = super()._rule_args(param, hyper, regularizer)
        decays = self._apply_decay_param_fun is None or self._apply_decay_param_fun(param.name)
        args["coeff"] = self._coeff(hyper.get("weight_decay", self._defaults["weight_decay"])) if decays else 0.0
        return args


__all__ = ["AdamW"]
