"""``oar.linalg``: Paddle's ``paddle.linalg`` -- norms, decompositions, solvers and inverses.

Batched as Paddle: a matrix argument is ``[..., m, n]`` and the leading dims are a batch. The
decompositions and solvers are ops with gradients (``oar._ops.linalg_ext`` says which rule each
uses and where oar differs from Paddle: its linear algebra is real, so ``eig`` is too); the rest is
composed of them.

>>> import oar
>>> a = oar.to_tensor([[4.0, 1.0], [1.0, 3.0]], stop_gradient=False)
>>> x = oar.linalg.solve(a, oar.to_tensor([1.0, 2.0]))
>>> [round(v, 6) for v in x.tolist()]
[0.090909, 0.636364]
>>> oar.linalg.det(a).backward()
>>> a.grad.tolist()
[[3.0, -1.0], [-1.0, 4.0]]
"""

from oar._ops.linalg import matmul as matmul
from oar._ops.linalg_ext import cholesky as cholesky
from oar._ops.linalg_ext import cholesky_inverse as cholesky_inverse
from oar._ops.linalg_ext import cholesky_solve as cholesky_solve
from oar._ops.linalg_ext import cond as cond
from oar._ops.linalg_ext import corrcoef as corrcoef
from oar._ops.linalg_ext import cov as cov
from oar._ops.linalg_ext import cross as cross
from oar._ops.linalg_ext import det as det
from oar._ops.linalg_ext import diagonal as diagonal
from oar._ops.linalg_ext import eig as eig
from oar._ops.linalg_ext import eigh as eigh
from oar._ops.linalg_ext import eigvals as eigvals
from oar._ops.linalg_ext import eigvalsh as eigvalsh
from oar._ops.linalg_ext import householder_product as householder_product
from oar._ops.linalg_ext import inv as inv
from oar._ops.linalg_ext import lstsq as lstsq
from oar._ops.linalg_ext import lu as lu
from oar._ops.linalg_ext import lu_solve as lu_solve
from oar._ops.linalg_ext import lu_unpack as lu_unpack
from oar._ops.linalg_ext import matrix_exp as matrix_exp
from oar._ops.linalg_ext import matrix_norm as matrix_norm
from oar._ops.linalg_ext import matrix_power as matrix_power
from oar._ops.linalg_ext import matrix_rank as matrix_rank
from oar._ops.linalg_ext import matrix_transpose as matrix_transpose
from oar._ops.linalg_ext import multi_dot as multi_dot
from oar._ops.linalg_ext import norm as norm
from oar._ops.linalg_ext import ormqr as ormqr
from oar._ops.linalg_ext import pca_lowrank as pca_lowrank
from oar._ops.linalg_ext import pinv as pinv
from oar._ops.linalg_ext import qr as qr
from oar._ops.linalg_ext import slogdet as slogdet
from oar._ops.linalg_ext import solve as solve
from oar._ops.linalg_ext import svd as svd
from oar._ops.linalg_ext import svd_lowrank as svd_lowrank
from oar._ops.linalg_ext import svdvals as svdvals
from oar._ops.linalg_ext import triangular_solve as triangular_solve
from oar._ops.linalg_ext import vecdot as vecdot
from oar._ops.linalg_ext import vector_norm as vector_norm

# Paddle 3.3's paddle.linalg.__all__ but fp8_fp8_half_gemm_fused, a float8 GPU kernel (oar has no
# float8 dtype).
__all__ = [
    "cholesky", "cholesky_inverse", "norm", "matrix_norm", "vecdot", "vector_norm", "cond", "cov", "corrcoef",
    "cross", "inv", "eig", "eigvals", "multi_dot", "matrix_rank", "matrix_transpose", "matmul", "svd", "svdvals",
    "qr", "householder_product", "pca_lowrank", "svd_lowrank", "lu", "lu_solve", "lu_unpack", "matrix_exp",
    "matrix_power", "det", "slogdet", "eigh", "eigvalsh", "pinv", "solve", "cholesky_solve", "triangular_solve",
    "lstsq", "ormqr", "diagonal",
]
