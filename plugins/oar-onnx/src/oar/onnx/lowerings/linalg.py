"""oar.linalg's ops (oar-core's ``linalg_ext``): none has an ONNX lowering yet.

ONNX's standard opset has no matrix decomposition, solver or matrix function (no Cholesky, QR,
SVD, Eig, LU, Solve, Inverse or matrix exponential; Det only). The ops that existing nodes could
write (det as Det; diagonal, diag_embed and cross with Gather, ScatterND and Slice) are listed
here until they are lowered. Exporting a model that uses any of them fails, naming the op
(``oar.onnx.check_exportable`` lists them beforehand).
"""

from __future__ import annotations

from oar.onnx.lowerings import not_lowered

not_lowered("ONNX's standard opset has no op for it (no Cholesky, QR, SVD, Eig, LU, Solve, Inverse or matrix "
            "exponential)", "cholesky", "eig", "eigh", "eigvals", "eigvalsh", "inverse", "lstsq", "lu", "lu_unpack",
            "matrix_exp", "qr", "slogdet", "solve", "svd", "svdvals", "triangular_solve")
not_lowered("not lowered yet: ONNX's Det (opset 11) could write it", "det")
not_lowered("not lowered yet: ONNX could write it with Gather, ScatterND and Slice nodes", "diagonal", "diag_embed",
            "cross")
