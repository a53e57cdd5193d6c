"""Type promotion against Paddle 3's rules, written down here from its documents, not from oar.

Sources (docs/core.md, "Type promotion", says the same in prose):
- the guide "Introduction to Data Type Promotion" (PaddlePaddle/docs,
  docs/guides/advanced/auto_type_promotion_en.md): the Tensor-Tensor table (floats promote among
  themselves, every other mix is "-": TypeError), the Tensor-Scalar table, the list of APIs that
  promote, the Divide and Logic rules;
- paddle/phi/common/type_promotion.h: ``promoteTypes`` (the lookup transcribed below),
  ``NeedTypePromotion`` (the raise) and ``GetPromoteDtype`` (a 0-d tensor operand of
  ``support_promotion_ops`` follows the scalar rule);
- ops outside the list (matmul, concat) do no promotion: their kernels take one dtype, and static
  ``a @ b`` raises TypeError for float32 @ float64 (test/legacy_test/test_tensor_type_promotion.py).

Each test runs one op over every pair of dtypes and lists all disagreements at once.
"""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import DTypeError

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = {"float16", "bfloat16", "float32", "float64"}
INTS = {"uint8", "int8", "int16", "int32", "int64"}

# promoteTypes of paddle/phi/common/type_promotion.h, rows and columns in this order
_ORDER = ["uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "bool", "bfloat16"]
_SHORT = {"u1": "uint8", "i1": "int8", "i2": "int16", "i4": "int32", "i8": "int64", "f2": "float16",
          "f4": "float32", "f8": "float64", "b1": "bool", "bf": "bfloat16"}
_LOOKUP = """
u1 i2 i2 i4 i8 f2 f4 f8 u1 bf
i2 i1 i2 i4 i8 f2 f4 f8 i1 bf
i2 i2 i2 i4 i8 f2 f4 f8 i2 bf
i4 i4 i4 i4 i8 f2 f4 f8 i4 bf
i8 i8 i8 i8 i8 f2 f4 f8 i8 bf
f2 f2 f2 f2 f2 f2 f4 f8 f2 f4
f4 f4 f4 f4 f4 f4 f4 f8 f4 f4
f8 f8 f8 f8 f8 f8 f8 f8 f8 f8
u1 i1 i2 i4 i8 f2 f4 f8 b1 bf
bf bf bf bf bf f4 f4 f8 bf bf
"""
PROMOTE = {
    (a, b): _SHORT[c]
    for a, row in zip(_ORDER, _LOOKUP.split("\n")[1:-1])
    for b, c in zip(_ORDER, row.split())
}

# The guide's Tensor-Scalar table: (tensor dtype, kind of the Python number) -> the dtype both compute in
_TS_FLOAT = {d: ("float32" if d not in FLOATS else d) for d in DTYPES}
TENSOR_SCALAR = {(d, "bool"): d for d in DTYPES}
TENSOR_SCALAR.update({(d, "int"): ("int64" if d == "bool" else d) for d in DTYPES})
TENSOR_SCALAR.update({(d, "float"): _TS_FLOAT[d] for d in DTYPES})

RAISES = "DTypeError"


class Rule:
    """One op as the documents describe it.

    promotes: in the guide's list of APIs that promote ("common"), or not ("none": inputs need
    one dtype); zero_d: in type_promotion.h's support_promotion_ops, where a 0-d tensor operand
    follows the scalar rule; result: "same", "bool" (Logic rule) or "float" (Divide rule: never
    an int or bool result, int / int is float32); domain: the dtypes the computation accepts at
    all (numpy and Paddle refuse bool - bool, bitwise ops on floats).
    """

    def __init__(self, name, fn, *, promotes="common", zero_d=False, result="same", domain=None):
        self.name, self.fn, self.promotes, self.zero_d = name, fn, promotes, zero_d
        self.result, self.domain = result, set(domain or DTYPES)

    def __repr__(self):
        return self.name


def _where(x, y):
    return oar.where(oar.ones(np.broadcast_shapes(_shape(x), _shape(y)), dtype="bool"), x, y)


def _shape(v):
    return tuple(v.shape) if isinstance(v, oar.Tensor) else ()


NUMERIC = [d for d in DTYPES if d != "bool"]
INTEGRAL = ["bool"] + sorted(INTS)
OPS = [
    Rule("add (+)", lambda x, y: x + y, zero_d=True),
    Rule("add", oar.add, zero_d=True),
    Rule("subtract (-)", lambda x, y: x - y, zero_d=True, domain=NUMERIC),
    Rule("multiply (*)", lambda x, y: x * y, zero_d=True),
    Rule("divide (/)", lambda x, y: x / y, zero_d=True, result="float"),
    Rule("floor_divide (//)", lambda x, y: x // y, zero_d=True, domain=NUMERIC),
    Rule("remainder (%)", lambda x, y: x % y, zero_d=True, domain=NUMERIC),
    Rule("pow (**)", lambda x, y: x ** y, zero_d=True, domain=NUMERIC),
    Rule("equal (==)", lambda x, y: x == y, zero_d=True, result="bool"),
    Rule("not_equal", oar.not_equal, zero_d=True, result="bool"),
    Rule("less_than (<)", lambda x, y: x < y, zero_d=True, result="bool"),
    Rule("greater_equal (>=)", lambda x, y: x >= y, zero_d=True, result="bool"),
    Rule("maximum", oar.maximum),
    Rule("minimum", oar.minimum),
    Rule("where", _where),
    Rule("logical_and", oar.logical_and, result="bool"),
    Rule("logical_xor", oar.logical_xor, result="bool"),
    Rule("bitwise_and (&)", lambda x, y: x & y, domain=INTEGRAL),
    Rule("bitwise_or", oar.bitwise_or, domain=INTEGRAL),
    Rule("matmul", oar.matmul, promotes="none", domain=NUMERIC),
    Rule("concat", lambda x, y: oar.concat([x, y]), promotes="none"),
]


def expected_dtype(rule: Rule, a: str, b: str, a_0d: bool = False, b_0d: bool = False) -> str:
    """The documented result of ``rule`` on tensors of dtypes a and b (0-d where said)."""
    if a == b:
        dtype = a
    elif rule.promotes == "none":
        return RAISES
    elif rule.zero_d and (a_0d or b_0d):
        # GetPromoteDtype: a 0-d operand of the other's broad type (ints, floats; bool is
        # neither) takes the n-d operand's dtype; else (or both 0-d) promoteTypes, no raise.
        same_broad = (a in INTS and b in INTS) or (a in FLOATS and b in FLOATS)
        dtype = (b if a_0d else a) if same_broad and not (a_0d and b_0d) else PROMOTE[a, b]
    elif a in FLOATS and b in FLOATS:
        dtype = PROMOTE[a, b]
    else:
        return RAISES  # NeedTypePromotion: "Type promotion only support calculations between floating-point numbers"
    return _result(rule, dtype)


def _result(rule: Rule, dtype: str) -> str:
    if dtype not in rule.domain:
        return RAISES
    if rule.result == "bool":
        return "bool"
    if rule.result == "float" and dtype not in FLOATS:
        return "float32"
    return dtype


def _run(rule: Rule, x, y) -> str:
    try:
        return rule.fn(x, y).dtype.name
    except DTypeError as err:
        return f"{RAISES}: {err}"


def _check(rule: Rule, cases) -> None:
    """cases: (label, x, y, expected); a promotion error must name the op's dtypes and the cast."""
    wrong = []
    for label, x, y, expected in cases:
        got = _run(rule, x, y)
        if got.split(":")[0] != expected:
            wrong.append(f"{label}: expected {expected}, got {got}")
        elif got.startswith(RAISES) and x.dtype != y.dtype and {x.dtype.name, y.dtype.name} <= rule.domain:
            if not (x.dtype.name in got and y.dtype.name in got and ".astype(" in got):
                wrong.append(f"{label}: the error does not name both dtypes and the cast: {got}")
    assert not wrong, f"{rule}: {len(wrong)} of {len(cases)} disagree with Paddle's rules:\n" + "\n".join(wrong)


def _tensor(dtype: str, shape=(2, 2)):
    return oar.ones(list(shape), dtype=dtype)


@pytest.mark.parametrize("rule", OPS, ids=repr)
def test_tensor_with_tensor(rule):
    _check(rule, [(f"{a} with {b}", _tensor(a), _tensor(b), expected_dtype(rule, a, b))
                  for a in DTYPES for b in DTYPES])


@pytest.mark.parametrize("rule", [r for r in OPS if r.name != "concat"], ids=repr)
def test_tensor_with_0d_tensor(rule):
    cases = []
    for a in DTYPES:
        for b in DTYPES:
            cases.append((f"{a}[2, 2] with {b}[]", _tensor(a), _tensor(b, ()), expected_dtype(rule, a, b, b_0d=True)))
            cases.append((f"{a}[] with {b}[2, 2]", _tensor(a, ()), _tensor(b), expected_dtype(rule, a, b, a_0d=True)))
            if rule.name != "matmul":  # a 0-d matmul operand is a shape error
                cases.append((f"{a}[] with {b}[]", _tensor(a, ()), _tensor(b, ()),
                               expected_dtype(rule, a, b, a_0d=True, b_0d=True)))
    if rule.name == "matmul":
        cases = [c for c in cases if "[]" not in c[0] or c[3] == RAISES]  # shapes aside: only the raises
    _check(rule, cases)


SCALARS = {"bool": True, "int": 3, "float": 2.5}


@pytest.mark.parametrize("rule", [r for r in OPS if r.name not in ("matmul", "concat")], ids=repr)
def test_tensor_with_python_number(rule):
    wrong = []
    for a in DTYPES:
        for kind, number in SCALARS.items():
            expected = _result(rule, TENSOR_SCALAR[a, kind])
            for label, x, y in ((f"{a} with {kind}", _tensor(a), number), (f"{kind} with {a}", number, _tensor(a))):
                got = _run(rule, x, y)
                if got.split(":")[0] != expected:
                    wrong.append(f"{label}: expected {expected}, got {got}")
    assert not wrong, f"{rule}: {len(wrong)} disagree with Paddle's Tensor-Scalar table:\n" + "\n".join(wrong)


def test_promotion_table_is_paddles_lookup():
    wrong = [f"{a}, {b}: {oar.promote_types(a, b).name} (Paddle {PROMOTE[a, b]})"
             for a in DTYPES for b in DTYPES if oar.promote_types(a, b).name != PROMOTE[a, b]]
    assert not wrong, "\n".join(wrong)


def test_the_error_says_what_to_do():
    with pytest.raises(DTypeError, match=r"^add: x is int64, y is float32; Paddle 3 promotes tensors .* "
                                         r"only between floating types .* e\.g\. x\.astype\('float32'\)$"):
        oar.to_tensor([1, 2]) + oar.to_tensor([0.5, 1.5])
    with pytest.raises(DTypeError, match=r"^matmul: x is int32, y is float32; matmul does no type promotion"):
        oar.matmul(oar.ones([2, 2], dtype="int32"), oar.ones([2, 2]))
    with pytest.raises(DTypeError, match=r"where: x is float32, y is int64; .* y\.astype\('float32'\)"):
        oar.where(oar.to_tensor([True]), oar.to_tensor([1.0]), oar.to_tensor([1]))


def test_float_numbers_make_int_tensors_float32_whatever_the_default_dtype():
    # Paddle casts to FLOAT32 there (eager_math_op_patch.cc), not to the default dtype
    oar.set_default_dtype("float64")
    try:
        assert (oar.to_tensor([1, 2], dtype="int32") + 0.5).dtype == oar.float32
        assert oar.where(oar.to_tensor([True]), oar.to_tensor([1]), 0.5).dtype == oar.float32
        assert (oar.to_tensor([4]) ** 0.5).dtype == oar.float32
    finally:
        oar.set_default_dtype("float32")


def test_mixed_values_are_computed_in_the_promoted_dtype():
    half = oar.to_tensor([1.0, 2.0], dtype="float16")
    np.testing.assert_array_equal((half + oar.to_tensor([0.25, 0.5], dtype="float64")).numpy(), [1.25, 2.5])
    small = oar.to_tensor([7, 8], dtype="int32") + oar.to_tensor(2)  # a 0-d int64 operand: stays int32
    assert small.dtype == oar.int32 and small.tolist() == [9, 10]
    mixed = oar.to_tensor([1, 2]) + oar.to_tensor(0.5)
    assert mixed.dtype == oar.float32 and mixed.tolist() == [1.5, 2.5]


def test_numpy_operands_of_matmul_take_the_tensor_dtype():
    # Paddle's `@` makes an array operand a tensor of the other operand's dtype
    x = oar.ones([2, 3])
    assert (np.ones((4, 2)) @ x).dtype == oar.float32 and (x @ np.ones((3, 1))).dtype == oar.float32


def test_to_static_raises_as_eager_does():
    @oar.jit.to_static
    def mixed(x, y):
        return x * 2.0 + y

    with pytest.raises(DTypeError, match=r"add: x is float32, y is int64"):
        mixed(oar.ones([2]), oar.to_tensor([1, 2]))
    assert mixed(oar.ones([2]), oar.to_tensor([1.0, 2.0], dtype="float16")).dtype == oar.float32


def test_gradients_flow_through_the_promoting_cast():
    x = oar.to_tensor([1.0, 2.0], dtype="float16", stop_gradient=False)
    y = oar.to_tensor([3.0, 4.0], dtype="float32", stop_gradient=False)
    (x * y).sum().backward()
    assert x.grad.dtype == oar.float16 and y.grad.dtype == oar.float32
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [1.0, 2.0])
