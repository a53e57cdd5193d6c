"""``oar.ops``: what an op or kernel author needs -- in oar-nn, in a plugin, in a third party's package.

An op is one ``Op``: its name, a meta function (shape and dtype inference, raising an
``oar.errors`` exception in the user's terms), a numpy reference kernel, a gradient rule written
with oar ops (``@op.defgrad``), its traits, its AMP category, and the lowerings that say how it is
written in other targets (``@op.lowering(target)``). Register it with ``oar_register_ops``
(``oar.hookspecs``); calling it dispatches it in the active mode (eager, to_static tracing,
autocast).

>>> import numpy as np, oar
>>> from oar.ops import Op, dispatch, same_meta
>>> cube_op = Op("cube", reference=lambda x: x * x * x, meta=same_meta, traits={"elementwise"})
>>> @cube_op.defgrad
... def _cube_grad(ctx, g):
...     (x,) = ctx.inputs
...     return g * 3.0 * x * x
>>> oar.plugins.registries().ops.add(cube_op)  # a plugin does this in oar_register_ops  # doctest: +ELLIPSIS
<oar op cube>
>>> x = oar.to_tensor([2.0], stop_gradient=False)
>>> dispatch(cube_op, (x,), {}).backward()
>>> x.grad.tolist()
[12.0]

The op names and attributes are a stable contract (saved programs, passes and exporters name
them): ``docs/ops.md`` lists every op, its attributes and the Paddle function it serves.
"""

from oar._engine import eager as _eager
from oar._engine.device import Backend as Backend
from oar._engine.device import place_backend as place_backend
from oar._engine.dispatch import Mode as Mode
from oar._engine.dispatch import _mode_stack
from oar._engine.dispatch import current_mode as current_mode
from oar._engine.dispatch import dispatch as dispatch
from oar._engine.dtypes import ALL_DTYPES as ALL_DTYPES
from oar._engine.dtypes import FLOAT_DTYPES as FLOAT_DTYPES
from oar._engine.dtypes import INT_DTYPES as INT_DTYPES
from oar._engine.dtypes import NP_TO_DTYPE as NP_TO_DTYPE
from oar._engine.dtypes import PROMOTE_FLOATS as PROMOTE_FLOATS
from oar._engine.dtypes import PROMOTE_FLOATS_0D as PROMOTE_FLOATS_0D
from oar._engine.dtypes import PROMOTION_TABLE as PROMOTION_TABLE
from oar._engine.dtypes import SAME_DTYPE as SAME_DTYPE
from oar._engine.dtypes import DType as DType
from oar._engine.dtypes import default_float as default_float
from oar._engine.dtypes import get_dtype as get_dtype
from oar._engine.dtypes import promoted_dtype as promoted_dtype
from oar._engine.dtypes import scalar_operand_dtype as scalar_operand_dtype
from oar._engine.eager import explain_failure as explain_failure
from oar._engine.eager import resolve_kernel as resolve_kernel
from oar._engine.inplace import apply_inplace as apply_inplace
from oar._engine.inplace import check_target as check_target
from oar._engine.inplace import inplace_variant as inplace_variant
from oar._engine.op import AMP_FP32 as AMP_FP32
from oar._engine.op import AMP_LOW_PRECISION as AMP_LOW_PRECISION
from oar._engine.op import AMP_PROMOTE as AMP_PROMOTE
from oar._engine.op import KNOWN_TRAITS as KNOWN_TRAITS
from oar._engine.op import NUMPY_OUT as NUMPY_OUT
from oar._engine.op import Op as Op
from oar._engine.op import TensorMeta as TensorMeta
from oar._engine.op import axis_not_batch as axis_not_batch
from oar._engine.op import fmt_shape as fmt_shape
from oar._engine.op import same_samples as same_samples
from oar._engine.registries import BACKENDS as _BACKENDS
from oar._engine.registries import LOWERINGS as _LOWERINGS
from oar._engine.registries import PLUGIN_PRIORITY as PLUGIN_PRIORITY
from oar._engine.registries import REFERENCE_PRIORITY as REFERENCE_PRIORITY
from oar._engine.registries import amp_category as amp_category
from oar._engine.tensor import Tensor as Tensor
from oar._engine.threads import blas_controllers as blas_controllers
from oar._engine.threads import blas_threads_for as blas_threads_for
from oar._engine.threads import one_blas_thread as one_blas_thread
from oar._engine.threads import small_product as small_product
from oar._ops._common import as_tensor as as_tensor
from oar._ops._common import binary_meta as binary_meta
from oar._ops._common import binary_operands as binary_operands
from oar._ops._common import bool_meta as bool_meta
from oar._ops._common import broadcast_shapes as broadcast_shapes
from oar._ops._common import compare_meta as compare_meta
from oar._ops._common import float_meta as float_meta
from oar._ops._common import normalize_axes as normalize_axes
from oar._ops._common import normalize_axis as normalize_axis
from oar._ops._common import same_meta as same_meta
from oar._ops._common import scalar_like as scalar_like
from oar._ops.elementwise import erf_op as erf_op
from oar._ops.elementwise import sigmoid as sigmoid
from oar._ops.fused_elementwise import cached_for as cached_for
from oar._ops.fused_elementwise import check_dtypes as check_dtypes
from oar._ops.fused_elementwise import evaluate_chain as evaluate_chain
from oar._ops.fused_elementwise import fused_elementwise as fused_elementwise
from oar._ops.linalg import PRODUCT_DTYPES as PRODUCT_DTYPES
from oar._ops.linalg import matmul_op as matmul_op
from oar._ops.linalg import matmul_shape as matmul_shape
from oar._ops.random import default_generator as default_generator
from oar._ops.reduction import sum_op as sum_op
from oar._ops.reduction import unbroadcast as unbroadcast
from oar._ops.shape import pad_axes as pad_axes
from oar._ops.shape import reshape_to as reshape_to


def get_backend(name: str) -> Backend:
    """The registered backend ``name`` (``"cpu"``, ``"gpu"`` with oar-triton): its storage calls
    (``from_numpy``, ``to_numpy``, ``zeros``, ``full``) move arrays on and off its device.

    >>> import numpy as np
    >>> from oar.ops import get_backend
    >>> get_backend("cpu").to_numpy(np.ones(2)).tolist()
    [1.0, 1.0]
    """
    return _BACKENDS.get(name)


def eager_no_grad() -> bool:
    """True when nothing records or traces an op now: grad recording is off and no mode (tracing,
    autocast) is above eager execution. A gradient rule running in a plain ``backward()`` may then
    compute on arrays directly instead of dispatching ops."""
    return not _eager.grad_enabled and len(_mode_stack) == 1


def lowering(target: str, op_name: str):
    """How op ``op_name`` is written in ``target`` (``"numpy_out"``, ``"numba"``, ``"onnx"``, ...),
    or None where nothing was registered: the one ``(target, op)`` table that ``@op.lowering`` and
    ``oar_register_op_lowerings`` fill.

    >>> from oar.ops import lowering
    >>> lowering("numpy_out", "add")
    <ufunc 'add'>
    >>> lowering("numpy_out", "no_such_op") is None
    True
    """
    return _LOWERINGS.find(target, op_name)


__all__ = [
    # the op and its traits
    "Op", "TensorMeta", "KNOWN_TRAITS", "AMP_FP32", "AMP_LOW_PRECISION", "AMP_PROMOTE", "amp_category",
    "same_samples", "axis_not_batch", "lowering", "NUMPY_OUT",
    # dispatch and kernels
    "dispatch", "Mode", "current_mode", "eager_no_grad", "resolve_kernel", "explain_failure", "PLUGIN_PRIORITY",
    "REFERENCE_PRIORITY", "Backend", "get_backend", "place_backend",
    "Tensor", "as_tensor", "scalar_like", "binary_operands", "apply_inplace", "check_target", "inplace_variant",
    # meta helpers
    "fmt_shape", "broadcast_shapes", "same_meta", "float_meta", "binary_meta", "compare_meta", "bool_meta",
    "normalize_axis", "normalize_axes", "unbroadcast",
    # dtypes
    "DType", "get_dtype", "default_float", "NP_TO_DTYPE", "PROMOTION_TABLE", "ALL_DTYPES", "FLOAT_DTYPES",
    "INT_DTYPES", "PROMOTE_FLOATS", "PROMOTE_FLOATS_0D", "SAME_DTYPE", "promoted_dtype", "scalar_operand_dtype",
    # core ops and helpers other packages' ops are written with
    "sum_op", "matmul_op", "erf_op", "sigmoid", "matmul_shape", "PRODUCT_DTYPES", "reshape_to", "pad_axes",
    "default_generator", "fused_elementwise", "cached_for", "check_dtypes", "evaluate_chain",
    # CPU threads for kernels
    "one_blas_thread", "small_product", "blas_threads_for", "blas_controllers",
]
