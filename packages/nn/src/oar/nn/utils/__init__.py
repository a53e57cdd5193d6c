"""``oar.nn.utils``: Paddle's ``paddle.nn.utils``: weight and spectral normalisation hooks,
gradient clipping in place, parameters to and from one vector.

>>> import oar
>>> fc = oar.nn.utils.weight_norm(oar.nn.Linear(4, 2))
>>> fc(oar.rand([3, 4])).shape
[3, 2]
"""

from __future__ import annotations

from oar.nn.utils._clip_grad import clip_grad_norm_ as clip_grad_norm_
from oar.nn.utils._clip_grad import clip_grad_value_ as clip_grad_value_
from oar.nn.utils._parameters_vector import parameters_to_vector as parameters_to_vector
from oar.nn.utils._parameters_vector import vector_to_parameters as vector_to_parameters
from oar.nn.utils._spectral_norm import spectral_norm as spectral_norm
from oar.nn.utils._weight_norm import remove_weight_norm as remove_weight_norm
from oar.nn.utils._weight_norm import weight_norm as weight_norm

__all__ = [
    "weight_norm", "remove_weight_norm", "spectral_norm", "clip_grad_norm_", "clip_grad_value_",
    "parameters_to_vector", "vector_to_parameters",
]
