"""Trainable parameters: tensors with ``stop_gradient=False`` and optimizer attributes."""

from __future__ import annotations

import numpy as np

from oar.ops import Tensor, get_backend


class Parameter(Tensor):
    """A trainable tensor of a Layer (Paddle's ``EagerParamBase``).

    Parameters have ``stop_gradient=False`` unless ``trainable=False``, are ``persistable``, and
    carry what the optimizer reads: ``optimize_attr`` (``{"learning_rate": scale}``),
    ``regularizer`` and ``need_clip``.

    >>> import numpy as np
    >>> from oar.nn.parameter import Parameter
    >>> w = Parameter(np.zeros([2, 3], np.float32), name="w")
    >>> w.stop_gradient, w.trainable, w.shape
    (False, True, [2, 3])
    """

    __slots__ = ("trainable", "optimize_attr", "regularizer", "need_clip", "is_distributed")

    def __init__(self, data, name: str | None = None, trainable: bool = True, learning_rate: float = 1.0,
                 regularizer=None, need_clip: bool = True):
        array = data._data if isinstance(data, Tensor) else np.asarray(data)  # a Tensor's buffer is taken over, not copied
        backend = data._backend if isinstance(data, Tensor) else "cpu"
        self._init_from(array if isinstance(data, Tensor) else array.copy(), backend, not trainable)
        self.persistable = True
        self.trainable = trainable
        self.optimize_attr = {"learning_rate": float(learning_rate)}
        self.regularizer = regularizer
        self.need_clip = need_clip
        self.is_distributed = False
        if name is not None:
            self.name = name

    def __setattr__(self, key, value):
        # Paddle keeps ``trainable`` and ``stop_gradient`` in step.
        object.__setattr__(self, key, value)
        if key == "trainable":
            object.__setattr__(self, "stop_gradient", not value)

    def _move_to(self, device: str) -> None:
        """Hold this parameter's values on ``device`` instead (the same object: a layer built on the
        cpu by its initializers ends with its parameters on the current device)."""
        self._data, self._backend = get_backend(device).from_numpy(self.numpy()), device

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        p = Parameter(self.numpy(), name=self._name, trainable=self.trainable,
                      learning_rate=self.optimize_attr["learning_rate"], regularizer=self.regularizer,
                      need_clip=self.need_clip)
        p.stop_gradient = self.stop_gradient
        memo[id(self)] = p
        return p
