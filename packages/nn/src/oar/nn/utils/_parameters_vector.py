"""``parameters_to_vector`` / ``vector_to_parameters``: all parameters as one 1-D tensor and back."""

from __future__ import annotations

import math

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.nn.utils._clip_grad import _tensor_list
from oar.ops import Tensor


def parameters_to_vector(parameters, name=None) -> Tensor:
    """The parameters flattened and concatenated, in order, into one 1-D tensor (a copy, without
    gradient) (``paddle.nn.utils.parameters_to_vector``).

    >>> import oar
    >>> oar.nn.utils.parameters_to_vector(oar.nn.Linear(10, 15).parameters()).shape
    [165]
    """
    where = "parameters_to_vector"
    tensors = _tensor_list(where, parameters)
    if not tensors:
        raise ArgumentError(f"{where}: parameters is empty")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise DTypeError(f"{where}: all parameters must have one dtype to be concatenated, got "
                         f"{sorted(str(d) for d in dtypes)}")
    with oar.no_grad():
        return oar.concat([oar.reshape(t, [-1]) for t in tensors], axis=0)


def vector_to_parameters(vec, parameters, name=None) -> None:
    """Copy consecutive slices of the 1-D ``vec`` into ``parameters``, in place, each reshaped to
    its parameter's shape (``paddle.nn.utils.vector_to_parameters``).

    >>> import oar
    >>> source, target = oar.nn.Linear(2, 3), oar.nn.Linear(2, 3)
    >>> oar.nn.utils.vector_to_parameters(oar.nn.utils.parameters_to_vector(source.parameters()),
    ...                                   target.parameters())
    >>> bool((target.weight == source.weight).all())
    True
    """
    where = "vector_to_parameters"
    if not isinstance(vec, Tensor):
        raise ArgumentError(f"{where}: vec must be a Tensor, got {type(vec).__name__}")
    if vec.ndim != 1:
        raise ShapeError(f"{where}: vec must be 1-D, got shape {vec.shape}")
    tensors = _tensor_list(where, parameters)
    sizes = [math.prod(t.shape) for t in tensors]
    if sum(sizes) != vec.shape[0]:
        shapes = ", ".join(str(t.shape) for t in tensors)
        raise ShapeError(f"{where}: vec has {vec.shape[0]} elements but the parameters ({shapes}) hold {sum(sizes)}")
    with oar.no_grad():
        start = 0
        for t, size in zip(tensors, sizes):
            t.set_value(oar.reshape(vec[start:start + size], t.shape).astype(t.dtype))
            start += size
