"""Complex tensors: the dtypes, promotion, printing, the parts and views, and gradients, against
Paddle 3.3.1's behaviour (numbers recorded from it where said) and numpy.

Op-level forward, gradient and to_static checks are the op table's (tests/core/op_cases/complex.py).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, DTypeError, SerializationError, ShapeError
from oar.testing import TOLERANCES

F32 = dict(zip(("rtol", "atol"), TOLERANCES["float32"]))


def test_dtypes_and_their_names():
    assert oar.complex64.name == "complex64" and oar.complex128.itemsize == 16
    assert oar.cfloat is oar.complex64 and oar.cdouble is oar.complex128
    assert oar.ops.get_dtype("paddle.complex64") is oar.complex64
    assert oar.complex64.is_complex and not oar.complex64.is_floating
    assert oar.to_tensor([1.0]).astype("cdouble").dtype == oar.complex128


def test_python_complex_numbers_become_complex64_and_arrays_keep_their_dtype():
    assert oar.to_tensor([1 + 2j, 3]).dtype == oar.complex64  # Paddle 3.3.1: complex64
    assert oar.to_tensor(1j).dtype == oar.complex64
    assert oar.to_tensor(np.array([1j], np.complex128)).dtype == oar.complex128
    oar.set_default_dtype("float64")
    try:
        assert oar.to_tensor([1j]).dtype == oar.complex128
    finally:
        oar.set_default_dtype("float32")
    z = oar.to_tensor([1 + 2j, 3 - 1j])
    assert z.tolist() == [(1 + 2j), (3 - 1j)] and z[0].item() == 1 + 2j


# Paddle 3.3.1: the dtype of complex64 (complex128) with each dtype, tensors of shape [1], by +, *, /.
PADDLE_COMPLEX_PROMOTION = {
    "complex64": {"bool": "complex64", "uint8": "complex64", "int8": "complex64", "int32": "complex64",
                  "int64": "complex64", "float16": "complex64", "bfloat16": "complex64", "float32": "complex64",
                  "float64": "complex128", "complex64": "complex64", "complex128": "complex128"},
    "complex128": dict.fromkeys(["bool", "uint8", "int8", "int32", "int64", "float16", "bfloat16", "float32",
                                 "float64", "complex64", "complex128"], "complex128"),
}


@pytest.mark.parametrize("complex_dtype", sorted(PADDLE_COMPLEX_PROMOTION))
def test_every_dtype_promotes_with_complex_as_paddle(complex_dtype):
    wrong = []
    for other, expected in PADDLE_COMPLEX_PROMOTION[complex_dtype].items():
        z = oar.to_tensor([1 + 2j], dtype=complex_dtype)
        t = oar.to_tensor([1], dtype=other)  # (oar.ones makes no complex tensor yet)
        for label, got in (("+", z + t), ("*", t * z), ("/", z / t)):
            if got.dtype.name != expected:
                wrong.append(f"{complex_dtype} {label} {other}: {got.dtype.name}, Paddle {expected}")
        assert (z == t).dtype == oar.bool
    assert not wrong, wrong


def test_zero_d_and_scalar_operands_with_complex():
    # Paddle 3.3.1: no 0-d exception for complex; a Python complex number gives complex64
    assert (oar.to_tensor(1 + 2j) + oar.ones([2], dtype="float64")).dtype == oar.complex128
    assert (oar.to_tensor([1, 2], dtype="complex64") + oar.ones([], dtype="float64")).dtype == oar.complex128
    assert (oar.ones([2], dtype="float32") + oar.to_tensor(1, dtype="complex128")).dtype == oar.complex128
    assert (oar.to_tensor([1.0, 2.0]) * 1j).tolist() == [1j, 2j]
    assert (oar.to_tensor([1.0]) * 1j).dtype == oar.complex64
    z = oar.to_tensor([1 + 2j, 3 - 1j])
    assert (z * 2.5).dtype == oar.complex64 and (z * 2.5).tolist() == [(2.5 + 5j), (7.5 - 2.5j)]
    assert (z + 1j).tolist() == [(1 + 3j), (3 + 0j)] and (z * 2).dtype == oar.complex64
    assert oar.promote_types("float64", "complex64") is oar.complex128


def test_printing_matches_paddle():
    z = oar.to_tensor([[1.5 - 2j, 0.25j], [-3 + 0j, 2 + 1e-3j]])
    assert repr(z) == (  # Paddle 3.3.1's repr of the same tensor
        "Tensor(shape=[2, 2], dtype=complex64, place=Place(cpu), stop_gradient=True,\n"
        "       [[ (1.50000000-2.00000000j),  (0.00000000+0.25000000j)],\n"
        "        [(-3.00000000+0.00000000j),  (2.00000000+0.00100000j)]])"
    )
    assert repr(oar.to_tensor(1 + 2j)).endswith("\n       (1.00000000+2.00000000j))")


def test_casting_to_a_real_dtype_keeps_the_real_part_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert oar.to_tensor([1.0 + 2j]).astype("float64").tolist() == [1.0]  # Paddle 3.3.1: [1.]
        assert oar.to_tensor([1.7 + 2j]).astype("int32").tolist() == [1]


def test_parts_of_complex_tensors():
    z = oar.to_tensor([1 + 2j, -3j, 0j])
    assert oar.real(z).dtype == oar.float32 and oar.real(z).tolist() == [1.0, -0.0, 0.0]
    assert oar.imag(z).tolist() == [2.0, -3.0, 0.0]
    assert oar.conj(z).tolist() == [(1 - 2j), 3j, 0j]
    np.testing.assert_allclose(oar.angle(z).numpy(), [1.1071488, -1.5707964, 0.0], **F32)  # Paddle 3.3.1
    np.testing.assert_allclose(oar.abs(z).numpy(), [2.236068, 3.0, 0.0], **F32)
    assert oar.abs(z).dtype == oar.float32 and oar.abs(z.astype("complex128")).dtype == oar.float64
    assert oar.isreal(z).tolist() == [False, False, True]
    assert oar.is_complex(z) and not oar.is_complex(oar.real(z))
    assert z.real().tolist() == oar.real(z).tolist() and z.conj().tolist() == oar.conj(z).tolist()
    assert z.complex128().dtype == oar.complex128 and oar.ones([1]).cfloat().dtype == oar.complex64


def test_parts_of_real_tensors_as_paddle():
    x = oar.to_tensor([1.0, -2.0, 0.0])
    assert oar.conj(x).tolist() == [1.0, -2.0, 0.0] and oar.conj(x).dtype == oar.float32
    np.testing.assert_allclose(oar.angle(x).numpy(), [0.0, np.pi, 0.0], **F32)
    assert oar.isreal(x).tolist() == [True] * 3 and oar.isreal(oar.to_tensor([1, 2])).tolist() == [True, True]
    with pytest.raises(DTypeError, match=r"real: x must be a complex tensor .* got float32"):
        oar.real(x)
    with pytest.raises(DTypeError, match=r"imag: x must be a complex tensor"):
        oar.imag(x)
    with pytest.raises(DTypeError, match=r"as_real: x must be a complex tensor"):
        oar.as_real(x)


def test_complex_and_polar():
    z = oar.complex(oar.to_tensor([1.0, 2.0]), oar.to_tensor([[3.0], [-1.0]]))
    assert z.dtype == oar.complex64 and z.tolist() == [[(1 + 3j), (2 + 3j)], [(1 - 1j), (2 - 1j)]]
    assert oar.complex(oar.ones([1], "float64"), oar.ones([1], "float32")).dtype == oar.complex128
    with pytest.raises(DTypeError, match=r"complex: real must be a float32 or float64 tensor, got int64"):
        oar.complex(oar.to_tensor([1]), oar.to_tensor([2]))
    p = oar.polar(oar.to_tensor([1.0, 2.0]), oar.to_tensor([0.5, 1.0]))
    expected = [0.87758261 + 0.47942555j, 1.08060455 + 1.68294191j]  # Paddle 3.3.1
    np.testing.assert_allclose(p.numpy(), expected, **F32)


def test_as_complex_and_as_real_round_trip():
    pairs = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]])
    z = oar.as_complex(pairs)
    assert z.tolist() == [(1 + 2j), (3 + 4j)] and oar.as_real(z).tolist() == pairs.tolist()
    assert oar.view_as_real(z).dtype == oar.float32 and oar.view_as_complex(pairs).shape == [2]
    with pytest.raises(ShapeError, match=r"as_complex: the last dimension of x must have size 2"):
        oar.as_complex(oar.to_tensor([1.0, 2.0, 3.0]))


def test_complex_gradients_match_paddle():
    # Paddle 3.3.1: gradients through complex(x, y), multiply, abs, angle (float32)
    x = oar.to_tensor([3.0, -1.0], stop_gradient=False)
    y = oar.to_tensor([1.0, 2.0], stop_gradient=False)
    c = oar.complex(x, y)
    (oar.abs(c * c) + oar.angle(c)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [5.9, -2.4], **F32)
    np.testing.assert_allclose(y.grad.numpy(), [2.3, 3.8], **F32)
    # a complex leaf: the gradient is dL/dRe + i dL/dIm
    z = oar.to_tensor([1 + 2j, -0.5 + 1j], stop_gradient=False)
    (oar.real(z * z) + oar.imag(oar.exp(z))).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), [4.471726417541504 - 5.131204605102539j,
                                                -0.4896220564842224 - 1.6722900867462158j], **F32)


def test_math_without_a_complex_kernel_raises_instead_of_dropping_the_imaginary_part():
    with pytest.raises(DTypeError, match=r"sin.*complex64"):
        oar.sin(oar.to_tensor([1j]))


@pytest.mark.parametrize("fn", [oar.prod, oar.cumprod, oar.max, oar.sort, lambda z: oar.outer(z, z),
                                lambda z: oar.less_than(z, z), lambda z: oar.maximum(z, z)],
                         ids=["prod", "cumprod", "max", "sort", "outer", "less_than", "maximum"])
def test_ops_whose_gradient_or_order_does_not_hold_for_complex_refuse_it(fn):
    # prod's and outer's rules would miss a conjugate; complex numbers have no order
    with pytest.raises(DTypeError, match="complex64"):
        fn(oar.to_tensor([1 + 2j, 3 - 1j]))


def test_saving_a_complex_tensor_raises_a_clear_error(tmp_path):
    with pytest.raises(SerializationError, match=r"complex64, which oar.save cannot store"):
        oar.save({"z": oar.to_tensor([1j])}, str(tmp_path / "z.pdparams"))


def test_is_complex_needs_a_tensor():
    with pytest.raises(ArgumentError, match="is_complex: x must be a Tensor"):
        oar.is_complex(1j)
