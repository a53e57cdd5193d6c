"""``ParamAttr``: how a layer creates one parameter (name, initializer, learning rate, ...)."""

from __future__ import annotations

from oar.errors import ArgumentError


class ParamAttr:
    """Paddle's ``ParamAttr``.

    ``weight_attr=False`` / ``bias_attr=False`` on a layer means "no such parameter".

    >>> import oar
    >>> from oar.nn import ParamAttr
    >>> attr = ParamAttr(initializer=oar.nn.initializer.Constant(0.1), learning_rate=0.5)
    """

    def __init__(self, name: str | None = None, initializer=None, learning_rate: float = 1.0,
                 regularizer=None, trainable: bool = True, do_model_average: bool = False,
                 need_clip: bool = True):
        if learning_rate < 0:
            raise ArgumentError(f"ParamAttr: learning_rate must be >= 0, got {learning_rate}")
        self.name = name
        self.initializer = initializer
        self.learning_rate = learning_rate
        self.regularizer = regularizer
        self.trainable = trainable
        self.do_model_average = do_model_average
        self.need_clip = need_clip

    @staticmethod
    def _to_attr(arg) -> ParamAttr | bool:
        """Normalise a layer's ``weight_attr``/``bias_attr`` argument (None, False, str, ParamAttr, initializer)."""
        from oar.nn.initializer import Initializer

        if arg is None:
            return ParamAttr()
        if arg is False:
            return False
        if isinstance(arg, ParamAttr):
            return arg
        if isinstance(arg, str):
            return ParamAttr(name=arg)
        if isinstance(arg, Initializer):
            return ParamAttr(initializer=arg)
        if arg is True:
            return ParamAttr()
        raise ArgumentError(f"ParamAttr: expected None, False, a name, an Initializer or a ParamAttr, got {type(arg).__name__}")

    def __repr__(self) -> str:
        return f"ParamAttr(name={self.name!r}, initializer={self.initializer!r}, learning_rate={self.learning_rate})"
