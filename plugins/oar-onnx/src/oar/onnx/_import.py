"""``oar.onnx.load``: an ONNX model as an oar model (a ``TranslatedLayer``, what ``oar.jit.load`` returns).

The model becomes an ``oar.nn.Layer`` whose ``forward`` interprets the ONNX graph node by node
with oar's public functions (``oar.*``, ``oar.nn.functional.*``, ``oar.static.nn.cond`` and
``while_loop`` for If and Loop); ``oar.jit.save`` captures that forward into a Program and
``oar.jit.load`` gives it back, so the result runs on oar's executor, saves, serves, fine-tunes
and quantizes like any loaded model. The float initializers that feed weights become parameters
under their ONNX names (``conv1.weight`` stays ``conv1.weight`` in the state dict), the running
statistics of a BatchNormalization and the int8 weights of a QDQ model become buffers, and
small or integer initializers become program constants.

What ONNX computes from shapes is folded when the model is imported: a ``Shape`` of a tensor
whose dims are known, ``Constant`` nodes, and the ``Shape -> Gather -> Unsqueeze -> Concat ->
Reshape`` chains exporters write for flatten and view. Sizes are tracked symbolically: a dim an
input leaves dynamic (``dim_param``, or none) is a ``Dim`` named after it, products and quotients
of such dims stay exact (``batch * 400 / batch`` is 400), so a reshape target of ``[batch, -1]``
becomes oar's ``[-1, 400]`` and the program serves every batch size. oar has no shape op: where
the model reads a dynamic size as data (``zeros(x.size(0), 4)``, ``arange(x.size(0))``, an
expand to the batch), the size is counted along a tensor that has it (a sum of ones), so the
program stays dynamic. oar's ops take their shapes as attributes, so the model is refused, with
the node named, where that cannot be done: a reshape to two dynamic sizes (oar's reshape infers
one), a size no tensor has (``2 * batch`` as a shape), a sampling size of Resize.

The import normalises before it converts: ONNX's shape inference (with data propagation) gives
every tensor's symbolic shape; the static inputs that fold (reshape targets, slice bounds,
expand shapes, ...) are then written back as constants, and inference runs again until nothing
changes, so that the shapes after a ``Reshape`` to ``[0, -1]`` are known for the next ``Shape``.

Refused up front, before anything is converted: op types without a converter (each listed with
its count and node names, as the export's coverage check lists ops), operator sets of other
domains (``com.microsoft``, ``ai.onnx.ml``, ...), and models older than opset 13 that onnx's
version converter cannot bring to 13. Each converter refuses what oar would compute differently
(a MaxPool whose indices are read, a Resize mode oar has no sampling for, ...).
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

import oar
import oar.nn as nn
import oar.nn.functional as F
import onnx
from oar.errors import OarError
from oar.nn.quant import dequantize_linear, matmul_int8, quantize_linear
from oar.ops import dispatch, pad_axes, reshape_to
from oar.plugins import registries
from oar.static import InputSpec
from oar.static.nn import cond, while_loop
from onnx import helper, numpy_helper

# Opsets 13 and newer are read as they are; older models go through onnx's version converter
# first (13 is where Split, Squeeze, Unsqueeze and ReduceSum took their axes as inputs, Softmax
# its one-axis meaning and Clip and Pad their bounds as inputs).
MIN_OPSET = 13
DEFAULT_DOMAINS = ("", "ai.onnx")
INT64_MAX = 2 ** 63 - 1
MAX_ROUNDS = 8  # normalisation rounds (each folds what the shapes of the previous one allow)

ONNX_TO_OAR = {
    onnx.TensorProto.FLOAT: "float32", onnx.TensorProto.DOUBLE: "float64", onnx.TensorProto.FLOAT16: "float16",
    onnx.TensorProto.BFLOAT16: "bfloat16", onnx.TensorProto.INT8: "int8", onnx.TensorProto.INT16: "int16",
    onnx.TensorProto.INT32: "int32", onnx.TensorProto.INT64: "int64", onnx.TensorProto.UINT8: "uint8",
    onnx.TensorProto.BOOL: "bool",
}
FLOAT_NAMES = ("float16", "bfloat16", "float32", "float64")


class ModelImportError(OarError, ValueError):
    """The ONNX model cannot be imported: op types without a converter (listed with counts and
    node names), an operator set of another domain, or a node oar would compute differently."""


# -- symbolic sizes ---------------------------------------------------------------------------------
class NotStatic(Exception):
    """A value needs a dynamic size as a number: it cannot be folded at import."""


class Dim:
    """A dynamic size: ``coef`` times the product of named symbols (an input's ``dim_param``, or
    an opaque expression such as ``(batch+1)``). Products and exact quotients stay symbolic, so
    the ``-1`` of a reshape target resolves to a static size when the dynamic factors cancel."""

    __slots__ = ("coef", "factors")

    def __init__(self, factors, coef: int = 1):
        self.factors = tuple(sorted(factors))
        self.coef = int(coef)

    @staticmethod
    def _of(factors, coef):
        return int(coef) if not factors else Dim(factors, coef)

    def _opaque(self, op: str, other) -> Dim:
        return Dim((f"({self}{op}{other})",))

    def __mul__(self, other):
        if isinstance(other, Dim):
            return Dim._of(self.factors + other.factors, self.coef * other.coef)
        other = _as_int(other)
        return 0 if other == 0 else Dim(self.factors, self.coef * other)

    __rmul__ = __mul__

    def __floordiv__(self, other):
        if isinstance(other, Dim):
            rest = list(self.factors)
            for f in other.factors:
                if f not in rest:
                    return self._opaque("/", other)
                rest.remove(f)
            if self.coef % other.coef:
                return self._opaque("/", other)
            return Dim._of(rest, self.coef // other.coef)
        other = _as_int(other)
        if other == 1:
            return self
        if other == 0 or self.coef % other:
            return self._opaque("/", other)
        return Dim(self.factors, self.coef // other)

    __truediv__ = __floordiv__

    def __rfloordiv__(self, other):
        raise NotStatic(f"{other} / {self}")

    __rtruediv__ = __rfloordiv__

    def __add__(self, other):
        if not isinstance(other, Dim) and _as_int(other) == 0:
            return self
        return self._opaque("+", other)

    __radd__ = __add__

    def __sub__(self, other):
        if not isinstance(other, Dim) and _as_int(other) == 0:
            return self
        return self._opaque("-", other)

    def __rsub__(self, other):
        return Dim((f"({other}-{self})",))

    def __neg__(self):
        return Dim((f"(-{self})",))

    def __eq__(self, other):
        return isinstance(other, Dim) and (self.coef, self.factors) == (other.coef, other.factors)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self.coef, self.factors))

    def _compare(self, other):
        raise NotStatic(f"comparing the dynamic size {self} with {other}")

    __lt__ = __le__ = __gt__ = __ge__ = _compare

    def __int__(self):
        raise NotStatic(f"the dynamic size {self}")

    __index__ = __int__

    def __bool__(self):
        return True  # a size symbol stands for a positive size

    def __repr__(self):
        names = "*".join(self.factors)
        return names if self.coef == 1 else f"{self.coef}*{names}"


def _as_int(v) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise NotStatic(f"a bool {v} in size arithmetic")
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    raise NotStatic(f"{v!r} in size arithmetic")


def _symbolic(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == object


def _sym_array(values) -> np.ndarray:
    """Sizes as an array: int64 when all are static, an object array of ints and Dims otherwise."""
    values = list(values)
    if any(isinstance(v, Dim) for v in values):
        out = np.empty(len(values), dtype=object)
        out[:] = [v if isinstance(v, Dim) else int(v) for v in values]
        return out
    return np.asarray([int(v) for v in values], dtype=np.int64)


def _product(dims):
    out = 1
    for d in dims:
        out = d * out
    return out


# -- the model as plain data ------------------------------------------------------------------------
@dataclass
class Node:
    op: str
    name: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict
    graphs: dict = field(default_factory=dict)  # attribute name -> Graph (If's branches, Loop's body)
    plans: dict = field(default_factory=dict)  # attribute name -> GraphPlan, after the analysis


@dataclass
class Graph:
    name: str
    nodes: list[Node]
    inputs: list[str]  # the graph's inputs that are not initializers
    outputs: list[str]
    initializers: dict[str, np.ndarray]


def _attr_value(attr):
    value = helper.get_attribute_value(attr)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, list) and value and isinstance(value[0], bytes):
        return [v.decode("utf-8") for v in value]
    return value


def parse_graph(graph: onnx.GraphProto) -> Graph:
    if len(graph.sparse_initializer):
        raise ModelImportError(f"onnx import: graph {graph.name!r} has sparse initializers, which oar does not read")
    initializers = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    nodes = []
    for i, n in enumerate(graph.node):
        attrs, graphs = {}, {}
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                graphs[a.name] = parse_graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                raise ModelImportError(f"onnx import: node {n.name!r} ({n.op_type}) has a list of graphs")
            else:
                attrs[a.name] = _attr_value(a)
        nodes.append(Node(n.op_type, n.name or f"{n.op_type}_{i}", list(n.input), list(n.output), attrs, graphs))
    inputs = [v.name for v in graph.input if v.name not in initializers]
    return Graph(graph.name, nodes, inputs, [v.name for v in graph.output], initializers)


def _walk_nodes(graph: onnx.GraphProto):
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for g in a.graphs:
                    yield from _walk_nodes(g)


def _walk_graphs(graph: onnx.GraphProto):
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from _walk_graphs(a.g)


def _captured(graph: Graph) -> set[str]:
    """The names a subgraph reads from the graphs around it."""
    defined = set(graph.inputs) | set(graph.initializers)
    used = set()
    for n in graph.nodes:
        used.update(i for i in n.inputs if i)
        for sub in n.graphs.values():
            used |= _captured(sub)
        defined.update(n.outputs)
    used.update(graph.outputs)
    return used - defined


def _reads(node: Node) -> list[str]:
    names = [i for i in node.inputs if i]
    for sub in node.graphs.values():
        names += sorted(_captured(sub))
    return names


# -- shapes and dtypes from ONNX's inference ---------------------------------------------------------
class Inferred:
    """The symbolic shapes (ints and ``Dim``) and dtypes ONNX's shape inference gave each tensor."""

    def __init__(self, model: onnx.ModelProto):
        self.shapes: dict[str, tuple | None] = {}
        self.types: dict[str, int] = {}
        for g in _walk_graphs(model.graph):
            for vi in itertools.chain(g.input, g.output, g.value_info):
                self._note(vi)

    def _note(self, vi) -> None:
        t = vi.type
        if not t.HasField("tensor_type"):
            return
        tt = t.tensor_type
        if tt.elem_type:
            self.types[vi.name] = tt.elem_type
        if not tt.HasField("shape"):
            return
        dims = []
        for i, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                dims.append(int(d.dim_value))
            elif d.dim_param:
                dims.append(Dim((d.dim_param,)))
            else:
                dims.append(Dim((f"?{vi.name}:{i}",)))
        self.shapes[vi.name] = tuple(dims)

    def dtype(self, name: str) -> str | None:
        t = self.types.get(name)
        return ONNX_TO_OAR.get(t) if t is not None else None


# -- converters -------------------------------------------------------------------------------------
@dataclass
class Converter:
    fn: Callable
    static: tuple = ()  # inputs that must be known at import (shapes, axes, bounds, scales)
    weights: tuple = ()  # inputs whose float initializers are parameters, whatever their size
    buffers: tuple = ()  # inputs whose initializers are buffers (batch norm's running statistics)
    fold: bool = True  # False: never folded at import (the QDQ pair stays a pair of ops)
    constants: tuple = ()  # inputs whose initializers are constants, never state (quantization scales)


CONVERTERS: dict[str, Converter] = {}


def converts(*ops: str, static=(), weights=(), buffers=(), fold=True, constants=()):
    """Decorator: ``fn(a: Args)`` converts the ONNX ``ops``; it returns a tensor, or a list with
    one entry (or None, for an output nobody reads) per output."""

    def register(fn):
        for op in ops:
            CONVERTERS[op] = Converter(fn, tuple(static), tuple(weights), tuple(buffers), fold, tuple(constants))
        return fn

    return register


def importable_ops() -> list[str]:
    """The ONNX op types (default domain) ``oar.onnx.load`` converts.

    >>> import oar.onnx
    >>> {"Conv", "Gemm", "LayerNormalization", "If", "Loop"} <= set(oar.onnx.importable_ops())
    True
    """
    return sorted(CONVERTERS)


class Args:
    """What a converter reads of its node: inputs (as tensors or import-time arrays), attributes,
    symbolic shapes, whether an output is read."""

    def __init__(self, node: Node, values: list, shapes: list, opset: int, used: list[bool], state=None):
        self.node, self.values, self.shapes, self.opset, self.used, self.state = node, values, shapes, opset, used, state

    def __len__(self) -> int:
        return len(self.node.inputs)

    def attr(self, name: str, default=None):
        return self.node.attrs.get(name, default)

    def has(self, i: int) -> bool:
        return i < len(self.node.inputs) and bool(self.node.inputs[i]) and self.values[i] is not None

    def is_static(self, i: int) -> bool:
        return self.has(i) and isinstance(self.values[i], np.ndarray)

    def fail(self, reason: str) -> ModelImportError:
        return ModelImportError(f"onnx import: node {self.node.name!r} ({self.node.op}): {reason}")

    def t(self, i: int):
        """Input ``i`` as a tensor (an import-time array becomes a program constant)."""
        v = self.values[i]
        if isinstance(v, np.ndarray):
            if _symbolic(v):
                return self.sizes(v, f"input {self.node.inputs[i]!r}")
            return oar.to_tensor(v)
        return v

    def sizes(self, v: np.ndarray, what: str):
        """A 0-d or 1-d array of sizes as an int64 tensor computed when the program runs: each
        dynamic size counted along a tensor that has it."""
        if v.ndim > 1:
            raise self.fail(f"{what} is a {v.ndim}-d array of dynamic sizes")
        parts = [oar.reshape(oar.sum(self.ones(d, what)), [1]) if isinstance(d, Dim) else
                 oar.to_tensor(np.array([int(d)], np.int64)) for d in v.ravel()]
        out = parts[0] if len(parts) == 1 else oar.concat(parts)
        return oar.reshape(out, []) if v.ndim == 0 else out

    def ones(self, d: Dim, what: str):
        """An int64 tensor of ``d`` ones, read off a tensor of the running graph that has the
        dynamic size ``d``; refused where none has it (a product of sizes, a size of data)."""
        source = self.state.source_of(d) if self.state is not None else None
        if source is None:
            raise self.fail(f"{what} needs the dynamic size {d} when the model runs, and no input has it as a dim "
                            f"(give the model static shapes for these dims)")
        x, k = source
        others = [ax for ax in range(x.ndim) if ax != k]
        column = oar.slice(x, others, [0] * len(others), [1] * len(others)) if others else x
        return oar.ones_like(oar.reshape(column, [-1]), dtype="int64")

    def dynamic_full(self, shape, value, dtype: str):
        """A tensor of ``shape`` (ints and ``Dim``) filled with ``value``: a static one broadcast
        against a tensor of each dynamic size."""
        out = oar.full([1 if isinstance(d, Dim) else int(d) for d in shape], value, dtype=dtype)
        for k, d in enumerate(shape):
            if isinstance(d, Dim):
                along = [1] * k + [-1] + [1] * (len(shape) - k - 1)
                zeros = oar.reshape(oar.cast(self.ones(d, f"a shape of {list(shape)}") * 0, dtype), along)
                out = oar.logical_or(out, zeros) if dtype == "bool" else out + zeros
        return out

    def s(self, i: int, default=None, symbolic: bool = False) -> np.ndarray | None:
        """Input ``i`` as an import-time array (``default`` when it is absent)."""
        if not self.has(i):
            return default
        v = self.values[i]
        if not isinstance(v, np.ndarray):
            raise self.fail(f"input {self.node.inputs[i]!r} must be known when the model is imported (oar takes it "
                            f"as an attribute), but it is computed from the model's inputs")
        if _symbolic(v) and not symbolic:
            dims = sorted({str(d) for d in v.ravel() if isinstance(d, Dim)})
            raise self.fail(f"input {self.node.inputs[i]!r} = {v.tolist()} depends on the dynamic size(s) {dims}, "
                            f"which oar takes as static attributes here")
        return v

    def ints(self, i: int, default=None) -> list[int] | None:
        v = self.s(i)
        return default if v is None else [int(x) for x in np.asarray(v).ravel()]

    def shape(self, i: int) -> tuple:
        return self.shapes[i]

    def rank(self, i: int) -> int:
        return len(self.shapes[i])

    def dims(self, i: int, axes=None, what: str = "this") -> list[int]:
        """The static sizes of input ``i`` (on ``axes``); a dynamic one is refused."""
        shape = self.shapes[i]
        axes = range(len(shape)) if axes is None else axes
        out = []
        for a in axes:
            d = shape[a]
            if isinstance(d, Dim):
                raise self.fail(f"{what} needs dim {a} of {self.node.inputs[i]!r} (shape {list(shape)}) to be static")
            out.append(int(d))
        return out

    def dtype(self, i: int) -> str:
        v = self.values[i]
        if isinstance(v, np.ndarray):
            return oar.ops.get_dtype(v.dtype).name if v.dtype != object else "int64"
        return v.dtype.name


def _axis(a: Args, axis: int, rank: int) -> int:
    if not -rank <= axis < max(rank, 1):
        raise a.fail(f"axis {axis} is out of range for a {rank}-d input")
    return axis + rank if axis < 0 else axis


# -- elementwise ---------------------------------------------------------------------------------
UNARY = {
    "Abs": oar.abs, "Neg": oar.neg, "Exp": oar.exp, "Log": oar.log, "Sqrt": oar.sqrt, "Reciprocal": oar.reciprocal,
    "Sin": oar.sin, "Cos": oar.cos, "Tan": oar.tan, "Tanh": oar.tanh, "Sigmoid": F.sigmoid, "Erf": oar.erf,
    "Asin": oar.asin, "Acos": oar.acos, "Atan": oar.atan, "Sinh": oar.sinh, "Cosh": oar.cosh, "Asinh": oar.asinh,
    "Acosh": oar.acosh, "Atanh": oar.atanh,
    "Ceil": oar.ceil, "Floor": oar.floor, "Sign": oar.sign, "Relu": F.relu, "IsNaN": oar.isnan,
    "Not": oar.logical_not, "Softsign": F.softsign, "HardSwish": F.hardswish, "Mish": F.mish, "Round": oar.round,
    "Softplus": F.softplus, "BitwiseNot": oar.bitwise_not,
}
BINARY = {
    "Add": oar.add, "Sub": oar.subtract, "Mul": oar.multiply, "Equal": oar.equal, "Less": oar.less_than,
    "Greater": oar.greater_than, "LessOrEqual": oar.less_equal, "GreaterOrEqual": oar.greater_equal,
    "And": oar.logical_and, "Or": oar.logical_or, "Xor": oar.logical_xor, "BitwiseAnd": oar.bitwise_and,
    "BitwiseOr": oar.bitwise_or, "BitwiseXor": oar.bitwise_xor,
}


@converts(*UNARY)
def _unary(a):
    return UNARY[a.node.op](a.t(0))


@converts(*BINARY)
def _binary(a):
    return BINARY[a.node.op](a.t(0), a.t(1))


@converts("Identity", "Dropout", static=(1, 2))
def _identity(a):
    if a.node.op == "Dropout" and a.has(2) and bool(np.asarray(a.s(2)).ravel()[0]):
        raise a.fail("training_mode=True (a random mask); export the model for inference")
    x = a.t(0)
    mask = oar.full_like(x, True, dtype="bool") if len(a.used) > 1 and a.used[1] else None
    return [x, mask] if a.node.op == "Dropout" else x


def _trunc_divide(x, y):
    # ONNX's integer Div truncates toward zero; floor division differs where the quotient is negative.
    q = oar.floor_divide(x, y)
    fix = oar.logical_and(oar.not_equal(q * y, x), oar.logical_xor(x < 0, y < 0))
    return oar.where(fix, q + 1, q)


@converts("Div")
def _div(a):
    x, y = a.t(0), a.t(1)
    if x.dtype.name in FLOAT_NAMES:
        return oar.divide(x, y)
    return _trunc_divide(x, y)


@converts("Mod")
def _mod(a):
    x, y = a.t(0), a.t(1)
    r = oar.remainder(x, y)  # the sign of y (Python's %): ONNX's fmod=0
    if not a.attr("fmod", 0):
        return r
    # fmod=1 (C's fmod): the sign of x; the floor remainder differs by one y where the signs differ.
    wrong = oar.logical_and(oar.not_equal(r, oar.zeros_like(r)), oar.logical_xor(r < 0, x < 0))
    return oar.where(wrong, r - y, r)


@converts("Pow")
def _pow(a):
    x, y = a.t(0), a.t(1)
    if y.dtype != x.dtype:
        y = oar.cast(y, x.dtype.name)
    return oar.pow(x, y)


@converts("Max", "Min", "Sum", "Mean")
def _variadic(a):
    fn = {"Max": oar.maximum, "Min": oar.minimum, "Sum": oar.add, "Mean": oar.add}[a.node.op]
    xs = [a.t(i) for i in range(len(a)) if a.has(i)]
    out = xs[0]
    for x in xs[1:]:
        out = fn(out, x)
    if a.node.op == "Mean" and len(xs) > 1:
        out = out / float(len(xs))
    return out


@converts("Where")
def _where(a):
    return oar.where(a.t(0), a.t(1), a.t(2))


@converts("Clip")
def _clip(a):
    x = a.t(0)
    bounds = [a.values[i] if a.has(i) else None for i in (1, 2)]
    if all(b is None or isinstance(b, np.ndarray) for b in bounds):  # known at import: oar's clip
        lo, hi = (None if b is None else np.asarray(b).reshape(()).item() for b in bounds)
        if lo is not None and hi is not None and lo > hi:  # ONNX: every element becomes max
            return oar.full_like(x, hi)
        return x if lo is None and hi is None else oar.clip(x, min=lo, max=hi)
    for i, bound in ((1, oar.maximum), (2, oar.minimum)):
        if a.has(i):
            x = bound(x, a.t(i))
    return x


@converts("IsInf")
def _isinf(a):
    x = a.t(0)
    pos, neg = a.attr("detect_positive", 1), a.attr("detect_negative", 1)
    inf = oar.isinf(x)
    if pos and neg:
        return inf
    if pos:
        return oar.logical_and(inf, x > 0)
    if neg:
        return oar.logical_and(inf, x < 0)
    return oar.full_like(x, False, dtype="bool")


@converts("LeakyRelu")
def _leaky_relu(a):
    return F.leaky_relu(a.t(0), a.attr("alpha", 0.01))


@converts("Elu")
def _elu(a):
    return F.elu(a.t(0), a.attr("alpha", 1.0))


@converts("Celu")
def _celu(a):
    return F.celu(a.t(0), a.attr("alpha", 1.0))


@converts("Selu")
def _selu(a):
    return F.selu(a.t(0), scale=a.attr("gamma", 1.05070102214813232421875),
                  alpha=a.attr("alpha", 1.67326319217681884765625))


@converts("HardSigmoid")
def _hardsigmoid(a):
    return F.hardsigmoid(a.t(0), slope=a.attr("alpha", 0.2), offset=a.attr("beta", 0.5))


@converts("ThresholdedRelu")
def _thresholded_relu(a):
    return F.thresholded_relu(a.t(0), threshold=a.attr("alpha", 1.0))


@converts("Gelu")
def _gelu(a):
    approximate = a.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise a.fail(f"approximate={approximate!r} (ONNX knows 'none' and 'tanh')")
    return F.gelu(a.t(0), approximate=approximate == "tanh")


@converts("PRelu", weights=(1,))
def _prelu(a):
    x, slope = a.t(0), a.t(1)
    return oar.where(x < 0, x * slope, x)


@converts("Shrink")
def _shrink(a):
    x = a.t(0)
    bias, lambd = a.attr("bias", 0.0), a.attr("lambd", 0.5)
    zero = oar.zeros_like(x)
    return oar.where(x < -lambd, x + bias, oar.where(x > lambd, x - bias, zero))


@converts("Sinh", "Cosh", "Asinh", "Acosh", "Atanh")
def _hyperbolic(a):
    # oar has no hyperbolic ops: their exp / log forms (asinh odd-symmetric, so that large
    # negative x does not cancel).
    x, op = a.t(0), a.node.op
    if op in ("Sinh", "Cosh"):
        e, inv = oar.exp(x), oar.exp(-x)
        return (e - inv) * 0.5 if op == "Sinh" else (e + inv) * 0.5
    if op == "Asinh":
        ax = oar.abs(x)
        return oar.sign(x) * oar.log(ax + oar.sqrt(ax * ax + 1.0))
    if op == "Acosh":
        return oar.log(x + oar.sqrt(x * x - 1.0))
    return oar.log((1.0 + x) / (1.0 - x)) * 0.5


@converts("Swish")
def _swish(a):
    alpha = float(a.attr("alpha", 1.0))
    x = a.t(0)
    return F.silu(x) if alpha == 1.0 else x * F.sigmoid(x * alpha)


@converts("Cast")
def _cast(a):
    to = ONNX_TO_OAR.get(a.attr("to"))
    if to is None:
        raise a.fail(f"cast to the ONNX type {onnx.TensorProto.DataType.Name(a.attr('to'))}, which oar has no dtype for")
    return oar.cast(a.t(0), to)


@converts("CastLike")
def _cast_like(a):
    return oar.cast(a.t(0), a.dtype(1))


@converts("Softmax", "LogSoftmax", "Hardmax")
def _softmax(a):
    x = a.t(0)
    axis = _axis(a, a.attr("axis", -1), a.rank(0))
    if a.node.op == "Softmax":
        return F.softmax(x, axis=axis)
    if a.node.op == "LogSoftmax":
        return F.log_softmax(x, axis=axis)
    n = a.dims(0, [axis], "Hardmax")[0]
    hot = F.one_hot(oar.argmax(x, axis=axis), n)  # the class axis last
    perm = list(range(a.rank(0) - 1))
    perm.insert(axis, a.rank(0) - 1)
    return oar.cast(oar.transpose(hot, perm), x.dtype.name)


# -- matmul, gemm, conv, pooling, normalization -------------------------------------------------------
@converts("MatMul", weights=(1,))
def _matmul(a):
    return oar.matmul(a.t(0), a.t(1))


@converts("MatMulInteger", static=(2, 3))
def _matmul_integer(a):
    x, y = a.t(0), a.t(1)
    zx, zy = a.s(2), a.s(3)
    plain = all(z is None or not np.asarray(z).any() for z in (zx, zy))
    if plain and a.dtype(0) == "int8" and a.dtype(1) == "int8" and a.rank(0) == 2 and a.rank(1) == 2:
        return matmul_int8(x, oar.transpose(y, [1, 0]))  # oar's exact int8 GEMM takes y as [n, k]
    # uint8, zero points or batches: the same exact product in int32
    x, y = oar.cast(x, "int32"), oar.cast(y, "int32")
    if zx is not None:
        x = x - oar.to_tensor(np.asarray(zx).astype(np.int32).reshape(-1, 1) if np.asarray(zx).ndim == 1
                              else np.asarray(zx).astype(np.int32))
    if zy is not None:
        y = y - oar.to_tensor(np.asarray(zy).astype(np.int32))
    return oar.matmul(x, y)


@converts("Gemm", weights=(1, 2))
def _gemm(a):
    x, w = a.t(0), a.t(1)
    ta, tb = bool(a.attr("transA", 0)), bool(a.attr("transB", 0))
    alpha, beta = float(a.attr("alpha", 1.0)), float(a.attr("beta", 1.0))
    if tb and a.state is not None and a.node.inputs[1] in a.state.transposed:
        tb = False  # the parameter is stored as oar's linear weight [in, out]
    c = a.t(2) if a.has(2) else None
    if not ta and not tb and alpha == 1.0 and (c is None or (beta == 1.0 and c.ndim == 1)):
        return F.linear(x, w, c)
    y = oar.matmul(x, w, transpose_x=ta, transpose_y=tb)
    if alpha != 1.0:
        y = y * alpha
    if c is not None:
        y = y + (c * beta if beta != 1.0 else c)
    return y


def _window_pads(a: Args, nd: int, kernel, strides, dilations, spatial_input: int = 0) -> list[int]:
    """ONNX's ``pads`` (begins..., ends...) or ``auto_pad`` as oar's ``[before_0, after_0, ...]``."""
    auto = a.attr("auto_pad", "NOTSET")
    if auto in ("NOTSET", ""):
        pads = list(a.attr("pads", [0] * (2 * nd)))
        return [int(p) for pair in zip(pads[:nd], pads[nd:]) for p in pair]
    if auto == "VALID":
        return [0] * (2 * nd)
    if auto not in ("SAME_UPPER", "SAME_LOWER"):
        raise a.fail(f"auto_pad={auto!r}")
    sizes = a.dims(spatial_input, range(2, 2 + nd), f"auto_pad={auto}")
    out = []
    for size, k, s, d in zip(sizes, kernel, strides, dilations):
        total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        out += [small, big] if auto == "SAME_UPPER" else [big, small]
    return out


@converts("Conv", weights=(1, 2))
def _conv(a):
    x, w = a.t(0), a.t(1)
    b = a.t(2) if a.has(2) else None
    nd = a.rank(1) - 2
    if nd not in (1, 2, 3):
        raise a.fail(f"a {nd}-d convolution (oar has 1-, 2- and 3-d ones)")
    kernel = a.dims(1, range(2, 2 + nd), "Conv")
    strides = list(a.attr("strides", [1] * nd))
    dilations = list(a.attr("dilations", [1] * nd))
    if list(a.attr("kernel_shape", kernel)) != kernel:
        raise a.fail(f"kernel_shape {a.attr('kernel_shape')} differs from the weight's {kernel}")
    pads = _window_pads(a, nd, kernel, strides, dilations)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return fn(x, w, b, stride=strides, padding=pads, dilation=dilations, groups=int(a.attr("group", 1)))


@converts("ConvTranspose", weights=(1, 2))
def _conv_transpose(a):
    x, w = a.t(0), a.t(1)
    b = a.t(2) if a.has(2) else None
    nd = a.rank(1) - 2
    if nd not in (1, 2, 3):
        raise a.fail(f"a {nd}-d transposed convolution (oar has 1-, 2- and 3-d ones)")
    kernel = a.dims(1, range(2, 2 + nd), "ConvTranspose")
    strides = list(a.attr("strides", [1] * nd))
    dilations = list(a.attr("dilations", [1] * nd))
    out_pad = list(a.attr("output_padding", [0] * nd))
    group = int(a.attr("group", 1))
    auto = a.attr("auto_pad", "NOTSET")
    output_shape = a.attr("output_shape")
    if output_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        sizes = a.dims(0, range(2, 2 + nd), "ConvTranspose's output_shape")
        wanted = list(output_shape)[-nd:] if output_shape is not None else [n * s for n, s in zip(sizes, strides)]
        pads = []
        for n, s, k, d, op, o in zip(sizes, strides, kernel, dilations, out_pad, wanted):
            total = s * (n - 1) + op + (k - 1) * d + 1 - o
            if total < 0:
                raise a.fail(f"output_shape {wanted} is larger than the transposed convolution can write")
            small, big = total // 2, total - total // 2
            # ONNX: SAME_UPPER (and an output_shape without auto_pad) puts the extra pad first.
            pads += [small, big] if auto == "SAME_LOWER" else [big, small]
    elif auto == "VALID":
        pads = [0] * (2 * nd)
    else:
        pads = _window_pads(a, nd, kernel, strides, dilations)
    fn = {1: F.conv1d_transpose, 2: F.conv2d_transpose, 3: F.conv3d_transpose}[nd]
    return fn(x, w, b, stride=strides, padding=pads, output_padding=out_pad, dilation=dilations, groups=group)


def _pool_args(a: Args):
    nd = a.rank(0) - 2
    kernel = [int(k) for k in a.attr("kernel_shape")]
    strides = [int(s) for s in a.attr("strides", [1] * nd)]
    dilations = [int(d) for d in a.attr("dilations", [1] * nd)]
    if any(d != 1 for d in dilations):
        raise a.fail(f"dilations {dilations} (oar's pooling has none)")
    return nd, kernel, strides, _window_pads(a, nd, kernel, strides, dilations)


@converts("MaxPool")
def _max_pool(a):
    nd, kernel, strides, pads = _pool_args(a)
    ceil = bool(a.attr("ceil_mode", 0))
    x = a.t(0)
    with_indices = len(a.used) > 1 and a.used[1]
    if with_indices and a.attr("storage_order", 0):
        raise a.fail("column-major Indices (storage_order=1)")
    if nd in (1, 2):
        fn = F.max_pool1d if nd == 1 else F.max_pool2d
        out = fn(x, kernel, strides, pads, return_mask=with_indices, ceil_mode=ceil)
    else:
        out = dispatch(registries().ops.get("max_pool"), (x,), {"kernel_size": kernel, "stride": strides,
                                                                 "padding": pads, "ceil_mode": ceil})
    values, mask = (out[0], out[1]) if isinstance(out, (tuple, list)) else (out, None)
    if not with_indices:
        return [values, None]
    # oar's mask indexes each [N, C] plane; ONNX's Indices the whole tensor: add the plane's offset.
    c = a.dims(0, [1], "MaxPool's Indices")[0]
    plane = int(np.prod(a.dims(0, range(2, 2 + nd), "MaxPool's Indices"), dtype=np.int64))
    first = oar.slice(x, list(range(1, 2 + nd)), [0] * (1 + nd), [1] * (1 + nd))  # [N, 1, 1, ...]
    n = oar.cumsum(oar.ones_like(first, dtype="int64"), axis=0) - 1
    channel = oar.to_tensor(np.arange(c, dtype=np.int64).reshape([1, c] + [1] * nd))
    return [values, oar.cast(mask, "int64") + (n * c + channel) * plane]


@converts("AveragePool")
def _avg_pool(a):
    nd, kernel, strides, pads = _pool_args(a)
    ceil = bool(a.attr("ceil_mode", 0))
    exclusive = not a.attr("count_include_pad", 0)
    x = a.t(0)
    if nd == 1:
        return F.avg_pool1d(x, kernel, strides, pads, exclusive=exclusive, ceil_mode=ceil)
    if nd == 2:
        return F.avg_pool2d(x, kernel, strides, pads, ceil_mode=ceil, exclusive=exclusive)
    return dispatch(registries().ops.get("avg_pool"), (x,), {"kernel_size": kernel, "stride": strides,
                                                              "padding": pads, "ceil_mode": ceil,
                                                              "exclusive": exclusive})


@converts("GlobalAveragePool", "GlobalMaxPool")
def _global_pool(a):
    axes = list(range(2, a.rank(0)))
    fn = oar.mean if a.node.op == "GlobalAveragePool" else oar.amax
    return fn(a.t(0), axis=axes, keepdim=True)


@converts("BatchNormalization", weights=(1, 2), buffers=(3, 4))
def _batch_norm(a):
    if a.attr("training_mode", 0) or any(a.used[1:]):
        raise a.fail("training_mode (batch statistics and running-statistics outputs); export the model for "
                     "inference")
    return F.batch_norm(a.t(0), a.t(3), a.t(4), a.t(1), a.t(2), training=False, epsilon=a.attr("epsilon", 1e-5))


@converts("InstanceNormalization", weights=(1, 2))
def _instance_norm(a):
    return F.instance_norm(a.t(0), weight=a.t(1), bias=a.t(2), eps=a.attr("epsilon", 1e-5))


@converts("LayerNormalization", weights=(1, 2))
def _layer_norm(a):
    if any(a.used[1:]):
        raise a.fail("its Mean or InvStdDev output is read")
    rank = a.rank(0)
    axis = _axis(a, a.attr("axis", -1), rank)
    normalized = a.dims(0, range(axis, rank), "LayerNormalization")
    x, eps = a.t(0), a.attr("epsilon", 1e-5)
    scale = a.t(1)
    bias = a.t(2) if a.has(2) else None
    if list(scale.shape) == normalized and (bias is None or list(bias.shape) == normalized):
        return F.layer_norm(x, normalized, scale, bias, eps)
    y = F.layer_norm(x, normalized, None, None, eps) * scale  # a scale that broadcasts
    return y + bias if bias is not None else y


@converts("GroupNormalization", weights=(1, 2))
def _group_norm(a):
    groups = int(a.attr("num_groups"))
    channels = a.dims(0, [1], "GroupNormalization")[0]
    x, eps = a.t(0), a.attr("epsilon", 1e-5)
    scale, bias = a.t(1), a.t(2)
    if list(scale.shape) == [channels]:  # opset 21: one scale per channel
        return F.group_norm(x, groups, eps, scale, bias)
    # opset 18: one scale per group, shared by its channels
    y = F.group_norm(x, groups, eps)
    per = channels // groups
    tail = [1] * (a.rank(0) - 2)

    def per_channel(t):
        return oar.reshape(oar.broadcast_to(oar.reshape(t, [groups, 1]), [groups, per]), [channels] + tail)

    return y * per_channel(scale) + per_channel(bias)


@converts("RMSNormalization", weights=(1,))
def _rms_norm(a):
    rank = a.rank(0)
    axis = _axis(a, a.attr("axis", -1), rank)
    normalized = a.dims(0, range(axis, rank), "RMSNormalization")
    scale = a.t(1)
    eps = a.attr("epsilon", 1e-5)
    if list(scale.shape) == normalized:
        return F.rms_norm(a.t(0), normalized, scale, eps)
    return F.rms_norm(a.t(0), normalized, None, eps) * scale


@converts("MeanVarianceNormalization")
def _mean_variance_norm(a):
    # ONNX's definition: (x - mean) / (sqrt(mean(x^2) - mean(x)^2) + 1e-9)
    x = a.t(0)
    axes = sorted(_axis(a, int(ax), a.rank(0)) for ax in a.attr("axes", [0, 2, 3]))
    mean = oar.mean(x, axis=axes, keepdim=True)
    std = oar.sqrt(oar.mean(x * x, axis=axes, keepdim=True) - mean * mean)
    return (x - mean) / (std + 1e-9)


@converts("LRN")
def _lrn(a):
    # y = x / (bias + alpha / size * (sum of x^2 over the `size` channels around each)) ^ beta:
    # the channel sum is an average pool over [N, 1, C, rest] with the padding counted.
    size = int(a.attr("size"))
    alpha, beta, bias = float(a.attr("alpha", 1e-4)), float(a.attr("beta", 0.75)), float(a.attr("bias", 1.0))
    x, shape, rank = a.t(0), a.shape(0), a.rank(0)
    sq = oar.unsqueeze(x * x, 1)
    sq = oar.flatten(sq, 3, -1) if rank > 3 else (oar.unsqueeze(sq, -1) if rank == 2 else sq)
    mean = F.avg_pool2d(sq, [size, 1], stride=1, padding=[(size - 1) // 2, size // 2, 0, 0], exclusive=False)
    mean = oar.reshape(mean, oar_shape(a, shape))  # the average is the sum / size: alpha / size * sum
    return x / oar.pow(mean * alpha + bias, beta)


@converts("LpNormalization")
def _lp_norm(a):
    x = a.t(0)
    axis = _axis(a, a.attr("axis", -1), a.rank(0))
    p = a.attr("p", 2)
    if p == 1:
        norm = oar.sum(oar.abs(x), axis=axis, keepdim=True)
    elif p == 2:
        norm = oar.sqrt(oar.sum(x * x, axis=axis, keepdim=True))
    else:
        raise a.fail(f"p={p} (ONNX allows 1 and 2)")
    return x / norm


# -- reductions -------------------------------------------------------------------------------------
REDUCE = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")


@converts(*REDUCE, static=(1,))
def _reduce(a):
    op, x, rank = a.node.op, a.t(0), a.rank(0)
    axes = a.ints(1) if a.has(1) else a.attr("axes")
    keep = bool(a.attr("keepdims", 1))
    if not axes:
        if a.attr("noop_with_empty_axes", 0):
            return x
        axes = list(range(rank))
    axes = sorted(_axis(a, int(ax), rank) for ax in axes)
    shape = a.shape(0)
    if any(shape[ax] == 0 for ax in axes):  # ONNX: a reduction of nothing is its identity
        return _empty_reduction(a, op, shape, axes, keep)
    if op == "ReduceSum":
        return oar.sum(x, axis=axes, keepdim=keep)
    if op == "ReduceMean":
        return oar.mean(x, axis=axes, keepdim=keep)
    if op == "ReduceMax":
        return oar.max(x, axis=axes, keepdim=keep)
    if op == "ReduceMin":
        return oar.min(x, axis=axes, keepdim=keep)
    if op == "ReduceProd":
        return oar.prod(x, axis=axes, keepdim=keep)
    if op == "ReduceL1":
        return oar.sum(oar.abs(x), axis=axes, keepdim=keep)
    if op == "ReduceL2":
        return oar.sqrt(oar.sum(x * x, axis=axes, keepdim=keep))
    if op == "ReduceSumSquare":
        return oar.sum(x * x, axis=axes, keepdim=keep)
    if op == "ReduceLogSum":
        return oar.log(oar.sum(x, axis=axes, keepdim=keep))
    return oar.logsumexp(x, axis=axes, keepdim=keep)


def _empty_reduction(a: Args, op: str, shape, axes, keep: bool):
    dtype = oar.ops.get_dtype(a.dtype(0)).np
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max if dtype.kind in "iu" else True
    identity = {"ReduceMax": -big if dtype.kind != "b" else False, "ReduceMin": big, "ReduceProd": 1,
                "ReduceMean": np.nan, "ReduceLogSum": -np.inf, "ReduceLogSumExp": -np.inf}.get(op, 0)
    out = [1 if ax in axes else d for ax, d in enumerate(shape)] if keep else \
        [d for ax, d in enumerate(shape) if ax not in axes]
    if any(isinstance(d, Dim) for d in out):
        raise a.fail(f"an empty reduction to the dynamic shape {out}")
    return oar.to_tensor(np.full([int(d) for d in out], identity, dtype=dtype))


@converts("ArgMax", "ArgMin")
def _arg_extreme(a):
    x, rank = a.t(0), a.rank(0)
    axis = _axis(a, a.attr("axis", 0), rank)
    keep = bool(a.attr("keepdims", 1))
    fn = oar.argmax if a.node.op == "ArgMax" else oar.argmin
    if not a.attr("select_last_index", 0):
        return fn(x, axis=axis, keepdim=keep)
    n = a.dims(0, [axis], "select_last_index")[0]
    return (n - 1) - fn(oar.flip(x, [axis]), axis=axis, keepdim=keep)


def _scan(a, scan, identity_like):
    """CumSum and CumProd: ``scan`` along the axis, with ONNX's ``reverse`` and ``exclusive``."""
    x = a.t(0)
    axis = _axis(a, a.ints(1)[0], a.rank(0))
    if a.attr("reverse", 0):
        x = oar.flip(x, [axis])
    out = scan(x, axis)
    if a.attr("exclusive", 0):  # shift by one along the axis: the identity first, the last result dropped
        first = identity_like(oar.slice(out, [axis], [0], [1]))
        out = oar.concat([first, oar.slice(out, [axis], [0], [-1])], axis=axis)
    if a.attr("reverse", 0):
        out = oar.flip(out, [axis])
    return out


@converts("CumProd", static=(1,))
def _cumprod(a):
    return _scan(a, lambda x, axis: oar.cumprod(x, dim=axis), oar.ones_like)


@converts("CumSum", static=(1,))
def _cumsum(a):
    return _scan(a, lambda x, axis: oar.cumsum(x, axis=axis), oar.zeros_like)


@converts("TopK", static=(1,))
def _topk(a):
    k = a.ints(1)[0]
    axis = _axis(a, a.attr("axis", -1), a.rank(0))
    if k == 0:  # empty results (oar's topk wants k >= 1)
        none = oar.slice(a.t(0), [axis], [0], [0])
        return [none, oar.cast(none, "int64")]
    values, indices = oar.topk(a.t(0), k, axis=axis, largest=bool(a.attr("largest", 1)), sorted=True)
    return [values, indices]


@converts("Einsum")
def _einsum(a):
    return oar.einsum(a.attr("equation").replace(" ", ""), *[a.t(i) for i in range(len(a))])


# -- shapes -----------------------------------------------------------------------------------------
def reshape_target(in_shape, target, allowzero: bool = False) -> list:
    """ONNX's reshape ``target`` (ints, 0 = copy, -1 = infer, or ``Dim``) of a tensor of symbolic
    ``in_shape`` -> the symbolic output shape."""
    out, infer = [], None
    for i, t in enumerate(target):
        if isinstance(t, Dim):
            out.append(t)
        elif int(t) == 0 and not allowzero:
            if i >= len(in_shape):
                raise NotStatic(f"a 0 (copy) at position {i} past the input's {len(in_shape)} dims")
            out.append(in_shape[i])
        elif int(t) == -1:
            if infer is not None:
                raise NotStatic("two -1 in a reshape target")
            infer = i
            out.append(None)
        else:
            out.append(int(t))
    if infer is not None:
        known = _product(d for d in out if d is not None)
        if known == 0:
            raise NotStatic("a -1 next to a zero-size dim")
        out[infer] = _product(in_shape) // known
    return out


def oar_shape(a: Args, shape, in_shape=None) -> list[int]:
    """A symbolic shape as the shape list of oar's reshape: static sizes as ints, the one dynamic
    size as -1; two dynamic sizes are refused (oar's reshape infers one dim when it runs)."""
    dynamic = [i for i, d in enumerate(shape) if isinstance(d, Dim)]
    if len(dynamic) > 1:
        source = f"of {list(in_shape)} " if in_shape is not None else ""
        raise a.fail(f"reshape {source}to {list(shape)}: oar's reshape leaves one dim dynamic, not {len(dynamic)} "
                     f"(give the model static sizes for all but one of them)")
    return [-1 if isinstance(d, Dim) else int(d) for d in shape]


def _reshape_to(a: Args, x, in_shape, out_shape):
    if list(in_shape) == list(out_shape):
        return x
    if any(not isinstance(d, Dim) and int(d) == 0 for d in out_shape):
        # A zero-size dim: oar's reshape reads 0 as "copy"; reshape_to takes it literally.
        return reshape_to(x, [int(d) for d in oar_shape(a, out_shape, in_shape)])
    return oar.reshape(x, oar_shape(a, out_shape, in_shape))


@converts("Reshape", static=(1,))
def _reshape(a):
    target = a.s(1, symbolic=True).ravel().tolist()
    try:
        out = reshape_target(a.shape(0), target, bool(a.attr("allowzero", 0)))
    except NotStatic as exc:
        raise a.fail(f"reshape of {list(a.shape(0))} to {target}: {exc}") from None
    return _reshape_to(a, a.t(0), a.shape(0), out)


@converts("Flatten")
def _flatten(a):
    shape, rank = a.shape(0), a.rank(0)
    axis = _axis(a, a.attr("axis", 1), rank + 1)
    if axis == 1 and rank > 1:
        return oar.flatten(a.t(0), 1, -1)  # keeps the first dim whatever its size
    out = [_product(shape[:axis]), _product(shape[axis:])]
    return _reshape_to(a, a.t(0), shape, out)


@converts("Transpose")
def _transpose(a):
    perm = a.attr("perm")
    perm = list(reversed(range(a.rank(0)))) if perm is None else [int(p) for p in perm]
    return oar.transpose(a.t(0), perm)


def _axes_of(a: Args, i: int, attr: str = "axes"):
    return a.ints(i) if a.has(i) else a.attr(attr)


@converts("Squeeze", static=(1,))
def _squeeze(a):
    shape, rank = a.shape(0), a.rank(0)
    axes = _axes_of(a, 1)
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    axes = sorted(_axis(a, int(ax), rank) for ax in axes)
    for ax in axes:
        if shape[ax] != 1:
            raise a.fail(f"squeezes axis {ax} of {list(shape)}, which is not of size 1")
    return oar.squeeze(a.t(0), axis=axes) if axes else a.t(0)


@converts("Unsqueeze", static=(1,))
def _unsqueeze(a):
    axes = _axes_of(a, 1)
    out_rank = a.rank(0) + len(axes)
    return oar.unsqueeze(a.t(0), axis=sorted(_axis(a, int(ax), out_rank) for ax in axes))


@converts("Concat")
def _concat(a):
    xs = [a.t(i) for i in range(len(a)) if a.has(i)]
    return oar.concat(xs, axis=_axis(a, a.attr("axis"), a.rank(0)))


@converts("Split", static=(1,))
def _split(a):
    rank = a.rank(0)
    axis = _axis(a, a.attr("axis", 0), rank)
    n = len(a.node.outputs)
    sizes = _axes_of(a, 1, "split")
    if sizes is None:
        size = a.dims(0, [axis], "Split into equal parts")[0]
        chunk = -(-size // n)  # ONNX (opset 18's num_outputs): the last part may be smaller
        sizes = [chunk] * (n - 1) + [size - chunk * (n - 1)]
    return list(oar.split(a.t(0), [int(s) for s in sizes], axis=axis))


@converts("Slice", static=(1, 2, 3, 4))
def _slice(a):
    shape, rank = a.shape(0), a.rank(0)
    starts = a.s(1, symbolic=True).ravel().tolist()
    ends = a.s(2, symbolic=True).ravel().tolist()
    axes = a.ints(3) if a.has(3) else list(range(len(starts)))
    steps = a.ints(4) if a.has(4) else [1] * len(starts)
    axes = [_axis(a, ax, rank) for ax in axes]
    out_s, out_e = [], []
    for ax, s, e, st in zip(axes, starts, ends, steps):
        d = shape[ax]
        if st == 0:
            raise a.fail("a slice step of 0")
        s, e = _bound(a, s, d), _bound(a, e, d)
        if isinstance(d, int):  # static: the exact Python slice bounds
            s, e, _ = slice(s, e, st).indices(d)
            if st < 0 and e < 0:
                e = -d - 1  # "before the first element", which Python spells below -d
        out_s.append(int(s))
        out_e.append(int(e))
    return oar.strided_slice(a.t(0), axes, out_s, out_e, steps)


def _bound(a: Args, v, dim) -> int:
    """A slice bound; a symbolic one must be the axis's own size (the end of the axis)."""
    if isinstance(v, Dim):
        if v == dim:  # the axis's size: past the end either way (Python clamps it as ONNX does)
            return INT64_MAX
        raise a.fail(f"a slice bound {v} that depends on a dynamic size")
    v = int(v)
    return max(min(v, INT64_MAX), -INT64_MAX)


def _normalized_indices(a: Args, idx, size):
    """Negative ONNX indices count from the end (oar's gather does too; take_along_axis needs them
    made positive)."""
    if isinstance(size, Dim):
        raise a.fail("negative indices along a dynamic dim")
    return oar.where(idx < 0, idx + size, idx)


@converts("Gather", weights=(0,))
def _gather(a):
    data_shape, idx_shape = a.shape(0), a.shape(1)
    axis = _axis(a, a.attr("axis", 0), len(data_shape))
    x, idx = a.t(0), a.t(1)
    if len(idx_shape) <= 1:
        return oar.gather(x, idx, axis=axis)
    # N-d indices: gather the flattened indices, then give them their shape back.
    flat = oar.gather(x, oar.reshape(idx, [-1]), axis=axis)
    out = list(data_shape[:axis]) + list(idx_shape) + list(data_shape[axis + 1:])
    return oar.reshape(flat, oar_shape(a, out))


@converts("GatherElements")
def _gather_elements(a):
    axis = _axis(a, a.attr("axis", 0), a.rank(0))
    idx = _normalized_indices(a, a.t(1), a.shape(0)[axis]) if not a.is_static(1) or (a.s(1) < 0).any() else a.t(1)
    return oar.take_along_axis(a.t(0), idx, axis, broadcast=False)


@converts("GatherND")
def _gather_nd(a):
    if a.attr("batch_dims", 0):
        raise a.fail(f"batch_dims={a.attr('batch_dims')}")
    return oar.gather_nd(a.t(0), a.t(1))


@converts("ScatterND")
def _scatter_nd(a):
    reduction = a.attr("reduction", "none")
    x, idx, updates = a.t(0), a.t(1), a.t(2)
    if reduction == "add":
        return oar.scatter_nd_add(x, idx, updates)
    if reduction != "none":
        raise a.fail(f"reduction={reduction!r}")
    # Overwrite: the indexed prefix of x flattened to rows, the index to row numbers, and oar's
    # scatter (a repeated index: the last update wins, as in ONNX Runtime).
    shape, idx_shape = a.shape(0), a.shape(1)
    m = idx_shape[-1]
    if isinstance(m, Dim):
        raise a.fail("an index whose last dim is dynamic")
    lead = a.dims(0, range(m), "ScatterND")
    strides = [int(np.prod(lead[j + 1:], dtype=np.int64)) for j in range(m)]
    idx = oar.cast(idx, "int64")
    idx = oar.where(idx < 0, idx + oar.to_tensor(np.asarray(lead, np.int64)), idx)
    rows = oar.sum(idx * oar.to_tensor(np.asarray(strides, np.int64)), axis=-1)
    rest = list(shape[m:])
    flat_x = _reshape_to(a, x, shape, [int(np.prod(lead, dtype=np.int64))] + rest)
    flat_u = oar.reshape(updates, oar_shape(a, [_product(idx_shape[:-1])] + rest))
    out = oar.scatter(flat_x, oar.reshape(rows, [-1]), flat_u, overwrite=True)
    return _reshape_to(a, out, [int(np.prod(lead, dtype=np.int64))] + rest, shape)


@converts("ScatterElements")
def _scatter_elements(a):
    reduction = {"none": "assign", "add": "add", "mul": "mul", "max": "amax", "min": "amin"}.get(
        a.attr("reduction", "none"))
    if reduction is None:
        raise a.fail(f"reduction={a.attr('reduction')!r}")
    axis = _axis(a, a.attr("axis", 0), a.rank(0))
    idx = _normalized_indices(a, a.t(1), a.shape(0)[axis]) if not a.is_static(1) or (a.s(1) < 0).any() else a.t(1)
    return oar.put_along_axis(a.t(0), idx, a.t(2), axis, reduce=reduction, include_self=True, broadcast=False)


PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@converts("Pad", static=(1, 2, 3))
def _pad(a):
    rank = a.rank(0)
    mode = PAD_MODES.get(a.attr("mode", "constant"))
    if mode is None:
        raise a.fail(f"mode={a.attr('mode')!r}")
    pads = a.ints(1)
    axes = a.ints(3) if a.has(3) else list(range(rank))
    axes = [_axis(a, ax, rank) for ax in axes]
    value = a.s(2)
    value = 0.0 if value is None or value.size == 0 else np.asarray(value).ravel()[0].item()
    full = [0] * (2 * rank)
    n = len(axes)
    for k, ax in enumerate(axes):
        full[2 * ax], full[2 * ax + 1] = pads[k], pads[n + k]
    x = a.t(0)
    if any(p < 0 for p in full):  # negative pads crop
        sl_axes, starts, ends = [], [], []
        for ax in range(rank):
            before, after = full[2 * ax], full[2 * ax + 1]
            if before < 0 or after < 0:
                sl_axes.append(ax)
                starts.append(-before if before < 0 else 0)
                ends.append(after if after < 0 else INT64_MAX)
                full[2 * ax], full[2 * ax + 1] = max(before, 0), max(after, 0)
        x = oar.slice(x, sl_axes, starts, ends)
    return pad_axes(x, full, mode=mode, value=value) if any(full) else x


@converts("Tile", static=(1,))
def _tile(a):
    return oar.tile(a.t(0), a.ints(1))


@converts("Expand", static=(1,))
def _expand(a):
    shape = a.shape(0)
    target = a.s(1, symbolic=True).ravel().tolist()
    rank = max(len(shape), len(target))
    padded_in = [1] * (rank - len(shape)) + list(shape)
    padded_target = [1] * (rank - len(target)) + target
    out, dynamic, grows = [], False, False
    for d, t in zip(padded_in, padded_target):
        if isinstance(t, Dim) or isinstance(d, Dim):
            if isinstance(d, Dim) and not (t == 1 or t == d):
                raise a.fail(f"expand of {list(shape)} to {target}: a dynamic dim against another size")
            grows |= isinstance(t, Dim) and t != d  # 1 -> a dynamic size: counted along an input
            out.append(t if isinstance(t, Dim) and t != d else 1)
            dynamic = True
        else:
            out.append(int(t) if int(d) == 1 else int(d) if int(t) == 1 else int(t))  # 1 broadcasts, even to 0
    x = a.t(0)
    if not dynamic:
        return oar.broadcast_to(oar.reshape(x, padded_in) if len(shape) < rank else x, out)
    # A dynamic dim the input has stays (broadcasting against 1 there); one it grows to comes
    # from a tensor of that size.
    zeros = a.dynamic_full(out, False if x.dtype.name == "bool" else 0, x.dtype.name) if grows else \
        oar.zeros(out, dtype=x.dtype.name)
    return oar.logical_or(x, zeros) if x.dtype.name == "bool" else x + zeros


@converts("DepthToSpace", "SpaceToDepth")
def _depth_space(a):
    n, c, h, w = a.shape(0)
    b = int(a.attr("blocksize"))
    x = a.t(0)
    if isinstance(c, Dim) or isinstance(h, Dim) or isinstance(w, Dim):
        raise a.fail("needs static channel and spatial sizes")
    if a.node.op == "DepthToSpace":
        if a.attr("mode", "DCR") == "DCR":
            y = oar.reshape(x, [-1, b, b, c // (b * b), h, w])
            y = oar.transpose(y, [0, 3, 4, 1, 5, 2])
        else:
            y = oar.reshape(x, [-1, c // (b * b), b, b, h, w])
            y = oar.transpose(y, [0, 1, 4, 2, 5, 3])
        return oar.reshape(y, [-1, c // (b * b), h * b, w * b])
    y = oar.reshape(x, [-1, c, h // b, b, w // b, b])
    y = oar.transpose(y, [0, 3, 5, 1, 2, 4])
    return oar.reshape(y, [-1, c * b * b, h // b, w // b])


@converts("Trilu", static=(1,))
def _trilu(a):
    k = a.ints(1, [0])[0]
    return oar.triu(a.t(0), k) if a.attr("upper", 1) else oar.tril(a.t(0), k)


@converts("OneHot", static=(1, 2))
def _one_hot(a):
    depth = int(np.asarray(a.s(1)).ravel()[0])
    off, on = np.asarray(a.s(2)).ravel()[:2]
    idx = a.t(0)
    idx = oar.cast(idx, "int64")
    idx = oar.where(idx < 0, idx + depth, idx)
    hot = F.one_hot(idx, depth)  # float32, the class axis last
    rank = a.rank(0) + 1
    axis = _axis(a, a.attr("axis", -1), rank)
    if axis != rank - 1:
        perm = list(range(rank - 1))
        perm.insert(axis, rank - 1)
        hot = oar.transpose(hot, perm)
    dtype = a.dtype(2)
    out = hot * float(on - off) + float(off)
    return oar.cast(out, dtype)


@converts("NonZero")
def _nonzero(a):
    return oar.transpose(oar.nonzero(a.t(0)), [1, 0])


@converts("Compress", static=())
def _compress(a):
    x, keep = a.t(0), a.t(1)
    axis = a.attr("axis")
    if axis is None:
        x, axis = oar.reshape(x, [-1]), 0
    else:
        axis = _axis(a, axis, a.rank(0))
    index = oar.reshape(oar.nonzero(keep), [-1])
    return oar.gather(x, index, axis=axis)


@converts("NegativeLogLikelihoodLoss", weights=(2,))
def _nll_loss(a):
    weight = a.t(2) if a.has(2) else None
    return F.nll_loss(a.t(0), a.t(1), weight=weight, ignore_index=int(a.attr("ignore_index", -100)),
                      reduction=a.attr("reduction", "mean"))


@converts("SoftmaxCrossEntropyLoss", weights=(2,))
def _softmax_cross_entropy(a):
    log_prob = F.log_softmax(a.t(0), axis=1)
    weight = a.t(2) if a.has(2) else None
    loss = F.nll_loss(log_prob, a.t(1), weight=weight, ignore_index=int(a.attr("ignore_index", -100)),
                      reduction=a.attr("reduction", "mean"))
    return [loss, log_prob]


@converts("Shape", "Size")
def _shape_at_runtime(a):
    raise a.fail(f"needs the shape of {a.node.inputs[0]!r}, which is not known when the model is imported "
                 f"({list(a.shape(0))}); an oar program reads no shape when it runs")


@converts("Constant")
def _constant(a):
    return oar.to_tensor(constant_value(a.node))


@converts("ConstantOfShape", static=(0,))
def _constant_of_shape(a):
    shape = a.s(0, symbolic=True)
    if not _symbolic(shape):
        return oar.to_tensor(constant_of_shape(a.node, shape))
    fill = constant_of_shape(a.node, np.zeros([0], np.int64))  # an empty array of the fill dtype
    value = np.asarray(a.attr("value", np.zeros([1], np.float32))).ravel()[0]
    return a.dynamic_full(shape.ravel().tolist(), value.item(), oar.ops.get_dtype(fill.dtype).name)


@converts("Range", static=(0, 1, 2))
def _range(a):
    start, limit, delta = (a.s(i, symbolic=True) for i in range(3))
    if not any(_symbolic(v) for v in (start, limit, delta)):
        return oar.to_tensor(range_value(start, limit, delta))
    limit = np.asarray(limit).reshape(()).item()
    if _symbolic(start) or _symbolic(delta) or int(start) != 0 or int(delta) != 1 or not isinstance(limit, Dim):
        raise a.fail(f"a range from {start} to {limit} by {delta} (oar counts 0, 1, ... to a dynamic size only)")
    dtype = oar.ops.get_dtype(np.asarray(start).dtype).name if np.asarray(start).dtype != object else "int64"
    return oar.cast(oar.cumsum(a.ones(limit, "Range's limit"), axis=0) - 1, dtype)


@converts("EyeLike")
def _eye_like(a):
    rows, cols = a.dims(0, None, "EyeLike")
    dtype = ONNX_TO_OAR.get(a.attr("dtype")) if a.attr("dtype") is not None else a.dtype(0)
    return oar.to_tensor(np.eye(rows, cols, k=int(a.attr("k", 0)), dtype=oar.ops.get_dtype(dtype).np))


def constant_value(node: Node) -> np.ndarray:
    attrs = node.attrs
    if "value" in attrs:
        return np.asarray(attrs["value"])
    if "value_float" in attrs:
        return np.asarray(attrs["value_float"], np.float32)
    if "value_floats" in attrs:
        return np.asarray(attrs["value_floats"], np.float32)
    if "value_int" in attrs:
        return np.asarray(attrs["value_int"], np.int64)
    if "value_ints" in attrs:
        return np.asarray(attrs["value_ints"], np.int64)
    raise ModelImportError(f"onnx import: node {node.name!r} (Constant): a {sorted(attrs)} constant, which oar has "
                           f"no tensor for")


def constant_of_shape(node: Node, shape) -> np.ndarray:
    value = node.attrs.get("value")
    value = np.zeros([1], np.float32) if value is None else np.asarray(value)
    return np.full([int(d) for d in np.asarray(shape).ravel()], value.ravel()[0], dtype=value.dtype)


def range_value(start, limit, delta) -> np.ndarray:
    start, limit, delta = (np.asarray(v).reshape(()) for v in (start, limit, delta))
    n = max(int(math.ceil((limit.item() - start.item()) / delta.item())), 0)
    return (start + np.arange(n, dtype=start.dtype) * delta).astype(start.dtype)


# -- resize -----------------------------------------------------------------------------------------
def _nearest_index(mode: str, ctm: str, n_in: int, n_out: int, scale: float) -> np.ndarray:
    """ONNX's nearest-neighbour source index of each output position along one axis."""
    k = np.arange(n_out, dtype=np.float32)
    scale = np.float32(scale)
    if ctm == "half_pixel" or (ctm == "pytorch_half_pixel" and n_out > 1):
        x = (k + 0.5) / scale - 0.5
    elif ctm == "pytorch_half_pixel":
        x = np.zeros_like(k)
    elif ctm == "align_corners":
        x = k * np.float32((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(k)
    elif ctm == "asymmetric":
        x = k / scale
    elif ctm == "tf_half_pixel_for_nn":
        x = (k + 0.5) / scale
    else:
        raise NotStatic(ctm)
    if mode == "round_prefer_floor":
        i = np.ceil(x - 0.5)
    elif mode == "round_prefer_ceil":
        i = np.floor(x + 0.5)
    elif mode == "floor":
        i = np.floor(x)
    elif mode == "ceil":
        i = np.ceil(x)
    else:
        raise NotStatic(mode)
    return np.clip(i, 0, n_in - 1).astype(np.int64)


@converts("Resize", static=(1, 2, 3))
def _resize(a):
    rank, shape = a.rank(0), a.shape(0)
    mode = a.attr("mode", "nearest")
    ctm = a.attr("coordinate_transformation_mode", "half_pixel")
    nearest = a.attr("nearest_mode", "round_prefer_floor")
    if a.attr("antialias", 0):
        raise a.fail("antialias=1")
    if a.attr("keep_aspect_ratio_policy", "stretch") != "stretch":
        raise a.fail(f"keep_aspect_ratio_policy={a.attr('keep_aspect_ratio_policy')!r}")
    axes = [_axis(a, int(ax), rank) for ax in a.attr("axes", list(range(rank)))]
    scales = a.s(2) if a.has(2) and a.s(2).size else None
    sizes = a.s(3, symbolic=True).ravel().tolist() if a.has(3) and a.s(3, symbolic=True).size else None
    full_scales, full_sizes = [1.0] * rank, list(shape)
    for k, ax in enumerate(axes):
        if scales is not None:
            full_scales[ax] = float(scales[k])
        if sizes is not None:
            full_sizes[ax] = sizes[k]
    resized = [ax for ax in range(rank) if (full_scales[ax] != 1.0 if scales is not None
                                            else full_sizes[ax] != shape[ax])]
    if all(ax >= 2 for ax in resized):
        spatial, layout = list(range(2, rank)), {3: "NCL", 4: "NCHW", 5: "NCDHW"}.get(rank)
    elif all(1 <= ax <= rank - 2 for ax in resized):
        spatial, layout = list(range(1, rank - 1)), {3: "NLC", 4: "NHWC", 5: "NDHWC"}.get(rank)
    else:
        spatial, layout = resized, None  # nearest only: one gather per axis
    n_in = a.dims(0, spatial, "Resize")
    if scales is not None:
        n_out = [int(math.floor(n * full_scales[ax])) for n, ax in zip(n_in, spatial)]
        ratios = [full_scales[ax] for ax in spatial]
    else:
        if any(isinstance(full_sizes[ax], Dim) for ax in spatial):
            raise a.fail(f"resizes to the dynamic sizes {[full_sizes[ax] for ax in spatial]}")
        n_out = [int(full_sizes[ax]) for ax in spatial]
        ratios = [o / n for o, n in zip(n_out, n_in)]
    x = a.t(0)
    factor = ratios if scales is not None else None
    size = None if scales is not None else n_out
    if ctm == "pytorch_half_pixel" and all(o > 1 for o in n_out):
        ctm = "half_pixel"
    if layout is not None and mode == "nearest" and ctm == "asymmetric" and nearest == "floor":
        return F.interpolate(x, size=size, scale_factor=factor, mode="nearest", data_format=layout)
    if mode in ("linear", "cubic"):
        if layout is None or ctm not in ("half_pixel", "align_corners", "asymmetric"):
            raise a.fail(f"{mode} resizing of axes {resized} with coordinate_transformation_mode={ctm!r}")
        if mode == "cubic" and (rank != 4 or a.attr("cubic_coeff_a", -0.75) != -0.75 or a.attr("exclude_outside", 0)):
            raise a.fail("cubic resizing other than 2-d with cubic_coeff_a=-0.75 and exclude_outside=0")
        name = {3: "linear", 4: "bilinear", 5: "trilinear"}[rank] if mode == "linear" else "bicubic"
        return F.interpolate(x, size=size, scale_factor=factor, mode=name, align_corners=ctm == "align_corners",
                             align_mode=1 if ctm == "asymmetric" else 0, data_format=layout)
    if mode != "nearest":
        raise a.fail(f"mode={mode!r}")
    try:  # ONNX's nearest neighbours of any coordinate mode: a gather of static indices per axis
        for ax, n, o, r in zip(spatial, n_in, n_out, ratios):
            if o != n or r != 1.0:
                x = oar.gather(x, oar.to_tensor(_nearest_index(nearest, ctm, n, o, r)), axis=ax)
    except NotStatic:
        raise a.fail(f"nearest resizing with coordinate_transformation_mode={ctm!r} and "
                     f"nearest_mode={nearest!r}") from None
    return x


# -- quantization -------------------------------------------------------------------------------------
def _qparams(a: Args, x_rank: int):
    """``(scale, zero point or None, axis or None)`` as tensors: per tensor (a scalar, or one
    value) or per channel along ``axis``."""
    if a.attr("block_size", 0):
        raise a.fail("block quantization (block_size)")
    scale = a.t(1)
    zp = a.t(2) if a.has(2) else None
    if scale.ndim == 0 or (a.is_static(1) and a.s(1).size == 1):
        scale = oar.reshape(scale, []) if scale.ndim else scale
        zp = oar.reshape(zp, []) if zp is not None and zp.ndim else zp
        return scale, zp, None
    return scale, zp, _axis(a, a.attr("axis", 1), x_rank)


def _zero_point_int8(zp, dtype: str, scale):
    """oar's int8 zero point for an ONNX zero point of ``dtype`` (uint8 is int8 shifted by 128)."""
    if zp is None:  # ONNX's default zero point: 0 of the quantized dtype
        return oar.full(scale.shape, -128 if dtype == "uint8" else 0, dtype="int8")
    if dtype == "uint8":
        return oar.cast(oar.cast(zp, "int32") - 128, "int8")
    return oar.cast(zp, "int8")


def _quantized_dtype(a: Args) -> str:
    if a.has(2):
        return a.dtype(2)
    return ONNX_TO_OAR.get(a.attr("output_dtype", 0) or onnx.TensorProto.UINT8, "unknown")


@converts("QuantizeLinear", fold=False, constants=(1, 2))
def _quantize(a):
    scale, zp, axis = _qparams(a, a.rank(0))
    dtype = _quantized_dtype(a)
    if dtype not in ("int8", "uint8"):
        raise a.fail(f"quantization to {dtype} (oar quantizes to int8, and to uint8 through it)")
    q = quantize_linear(a.t(0), scale, _zero_point_int8(zp, a.dtype(2) if a.has(2) else dtype, scale),
                        axis=1 if axis is None else axis)
    if dtype == "int8":
        return q
    # uint8: the int8 result shifted by 128; a DequantizeLinear that reads it takes q itself.
    out = oar.cast(oar.cast(q, "int32") + 128, "uint8")
    if a.state is not None:
        a.state.shifted[id(out)] = (out, q)
    return out


@converts("DequantizeLinear", fold=False, constants=(1, 2))
def _dequantize(a):
    scale, zp, axis = _qparams(a, a.rank(0))
    dtype = a.dtype(0)
    x = a.t(0)
    if dtype == "int32":  # a quantized bias: no int8 range, a plain product
        if axis is not None:
            shape = [1] * a.rank(0)
            shape[axis] = -1
            scale = oar.reshape(scale, shape)
            zp = None if zp is None else oar.reshape(zp, shape)
        x = x if zp is None else x - oar.cast(zp, "int32")
        return oar.cast(x, scale.dtype.name) * scale
    if dtype not in ("int8", "uint8"):
        raise a.fail(f"dequantization of {dtype} (oar dequantizes int8, and uint8 through it)")
    if dtype == "uint8":
        entry = a.state.shifted.get(id(x)) if a.state is not None else None
        x = entry[1] if entry is not None and entry[0] is x else oar.cast(oar.cast(x, "int32") - 128, "int8")
    return dequantize_linear(x, scale, _zero_point_int8(zp, dtype, scale), axis=1 if axis is None else axis)


# -- control flow ---------------------------------------------------------------------------------
@converts("If")
def _if(a):
    then_plan, else_plan = a.node.plans["then_branch"], a.node.plans["else_branch"]
    run = a.state.run_graph
    if a.is_static(0):
        return run(then_plan if bool(np.asarray(a.s(0)).ravel()[0]) else else_plan, [])
    pred = a.t(0)
    outs = cond(pred, lambda: run(then_plan, []), lambda: run(else_plan, []))
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


@converts("Loop")
def _loop(a):
    body = a.node.plans["body"]
    n_carried = len(a.node.inputs) - 2
    if len(body.outputs) != 1 + n_carried:
        raise a.fail(f"{len(body.outputs) - 1 - n_carried} scan output(s) (oar's while_loop carries values, it "
                     f"stacks none)")
    run = a.state.run_graph
    limit = a.t(0) if a.has(0) else None
    keep_going = oar.cast(oar.reshape(a.t(1), []), "bool") if a.has(1) else oar.to_tensor(True)
    carried = [a.t(i) for i in range(2, len(a.node.inputs))]
    if limit is not None:
        limit = oar.cast(oar.reshape(limit, []), "int64")

    def condition(i, c, *vs):
        return c if limit is None else oar.logical_and(i < limit, c)

    def step(i, c, *vs):
        outs = run(body, [i, c, *vs])
        return [i + 1, oar.cast(oar.reshape(outs[0], []), "bool"), *outs[1:]]

    results = while_loop(condition, step, [oar.zeros([], "int64"), keep_going, *carried])
    return list(results[2:])


# -- the analysis: what folds at import, what runs -------------------------------------------------------
@dataclass
class GraphPlan:
    """One graph, analysed: the values known at import (``static``), the symbolic shapes of the
    others, and the nodes that run (in order, dead ones left out)."""

    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    static: collections.ChainMap
    shapes: collections.ChainMap
    used: set[str]


class Analysis:
    """Folds what is static in a graph and its subgraphs; notes which initializers are parameters
    and buffers."""

    def __init__(self, model: onnx.ModelProto, inferred: Inferred, opset: int):
        self.inferred = inferred
        self.opset = opset
        self.initializers = {t.name for g in _walk_graphs(model.graph) for t in g.initializer}

    def param_use(self, conv: Converter, i: int, name: str, static: dict) -> bool:
        """Whether input ``i`` (``name``) reads an initializer that runs as a parameter or buffer."""
        if name not in self.initializers or i in conv.static or i in conv.constants:
            return False
        value = static.get(name)
        if value is None or not isinstance(value, np.ndarray):
            return False
        if i in conv.buffers:
            return True
        if value.dtype.kind == "f":
            return i in conv.weights or value.size > 1
        return value.dtype in (np.int8, np.uint8) and value.size > 1  # a QDQ model's quantized weights

    def shape_of(self, name: str, static, shapes):
        if name in static and isinstance(static[name], np.ndarray):
            return tuple(static[name].shape)
        return shapes.get(name)

    def analyse(self, graph: Graph, outer_static=None, outer_shapes=None) -> GraphPlan:
        static = (outer_static or collections.ChainMap()).new_child(dict(graph.initializers))
        shapes = (outer_shapes or collections.ChainMap()).new_child()
        for name in graph.inputs:
            shapes[name] = self.inferred.shapes.get(name)
        live = _live(graph)
        runs = []
        for node in graph.nodes:
            if id(node) not in live:
                continue
            conv = CONVERTERS[node.op]
            for key, sub in node.graphs.items():
                node.plans[key] = self.analyse(sub, static, shapes)
            values = self.fold(node, conv, static, shapes)
            if values is not None:
                for out, v in zip(node.outputs, values):
                    if out:
                        static[out] = v
                continue
            runs.append(node)
            for out in node.outputs:
                if out:
                    shapes[out] = self.inferred.shapes.get(out)
        used = set(graph.outputs)
        for node in runs:
            used.update(_reads(node))
        return GraphPlan(graph.name, list(graph.inputs), list(graph.outputs), runs, static, shapes, used)

    def fold(self, node: Node, conv: Converter, static, shapes) -> list | None:
        """The node's outputs as arrays when they are known at import, else None."""
        if node.op == "Constant":
            return [constant_value(node)]
        if node.op in ("Shape", "Size"):
            shape = self.shape_of(node.inputs[0], static, shapes)
            if shape is None or any(isinstance(d, Dim) and d.factors[0].startswith("?") for d in shape):
                return None
            if node.op == "Size":
                size = _product(shape)
                return [np.asarray(size, np.int64) if isinstance(size, int) else np.asarray(size, dtype=object)]
            start, end = node.attrs.get("start", 0), node.attrs.get("end")
            return [_sym_array(list(shape)[slice(start, end)])]
        if not conv.fold or node.graphs:
            return None
        values = []
        for i, name in enumerate(node.inputs):
            if not name:
                values.append(None)
                continue
            if name not in static or self.param_use(conv, i, name, static):
                return None
            values.append(static[name])
        if not values:  # no inputs: a random op, say
            return None
        if any(_symbolic(v) for v in values if v is not None):
            folder = SYMBOLIC.get(node.op)
            if folder is None:
                return None
            try:
                out = folder(node, values)
            except NotStatic:
                return None
            return [o if isinstance(o, np.ndarray) else np.asarray(o, dtype=object if isinstance(o, Dim) else None)
                    for o in (out if isinstance(out, list) else [out])]
        # Everything known and no dynamic size: run the converter itself on constants, eagerly.
        shapes_of = [None if v is None else tuple(v.shape) for v in values]
        args = Args(node, values, shapes_of, self.opset, [True] * len(node.outputs), None)
        with oar.no_grad():
            out = call_converter(conv, args)
        outs = out if isinstance(out, (list, tuple)) else [out]
        return [None if t is None else np.asarray(t.numpy()) for t in outs]


def call_converter(conv: Converter, args: Args):
    """``conv`` on ``args``; an oar error it meets names the ONNX node."""
    try:
        return conv.fn(args)
    except ModelImportError:
        raise
    except OarError as exc:
        raise args.fail(f"{type(exc).__name__}: {exc}") from exc


def _live(graph: Graph) -> set[int]:
    """The nodes the graph's outputs need (by id)."""
    needed = set(graph.outputs)
    live = set()
    for node in reversed(graph.nodes):
        if any(o in needed for o in node.outputs if o):
            live.add(id(node))
            needed.update(_reads(node))
    return live


# Folding with dynamic sizes (object arrays of ints and Dims): the ops exporters apply to shapes.
def _fold_gather(node, v):
    data, idx = v
    return np.take(data, np.asarray(idx).astype(np.int64), axis=node.attrs.get("axis", 0))


def _fold_slice(node, v):
    data = v[0]
    starts, ends = [np.asarray(x).ravel().tolist() for x in v[1:3]]
    axes = np.asarray(v[3]).ravel().tolist() if len(v) > 3 and v[3] is not None else list(range(len(starts)))
    steps = np.asarray(v[4]).ravel().tolist() if len(v) > 4 and v[4] is not None else [1] * len(starts)
    index = [slice(None)] * data.ndim
    for ax, s, e, st in zip(axes, starts, ends, steps):
        index[int(ax)] = slice(_as_int(s), max(min(_as_int(e), INT64_MAX), -INT64_MAX), _as_int(st))
    return data[tuple(index)]


def _fold_unsqueeze(node, v):
    axes = np.asarray(v[1]).ravel().tolist() if len(v) > 1 and v[1] is not None else node.attrs["axes"]
    rank = v[0].ndim + len(axes)
    return np.expand_dims(v[0], tuple(sorted(int(a) % rank for a in axes)))


def _fold_squeeze(node, v):
    axes = np.asarray(v[1]).ravel().tolist() if len(v) > 1 and v[1] is not None else node.attrs.get("axes")
    return np.squeeze(v[0], None if axes is None else tuple(int(a) for a in axes))


def _fold_reshape(node, v):
    target = np.asarray(v[1]).ravel().tolist()
    shape = reshape_target(v[0].shape, target, bool(node.attrs.get("allowzero", 0)))
    return v[0].reshape([_as_int(d) for d in shape])


def _fold_cast(node, v):
    to = ONNX_TO_OAR.get(node.attrs["to"])
    if to not in ("int64", "int32"):
        raise NotStatic(f"a dynamic size cast to {to}")
    return v[0]


def _fold_binary(fn):
    def fold(node, v):
        return np.asarray(fn(v[0], v[1]), dtype=object)

    return fold


def _int_div(x, y):
    out = np.empty(np.broadcast(x, y).shape, dtype=object)
    for k, (p, q) in enumerate(np.broadcast(x, y)):
        if isinstance(p, Dim) or isinstance(q, Dim):
            out.flat[k] = p // q
        else:
            p, q = _as_int(p), _as_int(q)
            out.flat[k] = abs(p) // abs(q) * (1 if (p < 0) == (q < 0) else -1)
    return out


def _fold_where(node, v):
    c = np.asarray(v[0])
    if c.dtype == object:
        raise NotStatic("a dynamic condition")
    return np.where(c, v[1], v[2]).astype(object)


SYMBOLIC: dict[str, Callable] = {
    "Identity": lambda node, v: v[0],
    "Cast": _fold_cast,
    "CastLike": lambda node, v: v[0],
    "Gather": _fold_gather,
    "Unsqueeze": _fold_unsqueeze,
    "Squeeze": _fold_squeeze,
    "Concat": lambda node, v: np.concatenate([np.asarray(x, dtype=object) for x in v if x is not None],
                                             axis=node.attrs["axis"]),
    "Slice": _fold_slice,
    "Reshape": _fold_reshape,
    "Add": _fold_binary(lambda x, y: x + y),
    "Sub": _fold_binary(lambda x, y: x - y),
    "Mul": _fold_binary(lambda x, y: x * y),
    "Div": lambda node, v: _int_div(v[0], v[1]),
    "Neg": lambda node, v: np.asarray(-v[0], dtype=object),
    "Equal": lambda node, v: np.asarray(v[0] == v[1]).astype(bool),
    "Where": _fold_where,
    "ReduceProd": lambda node, v: np.asarray(_product(np.asarray(v[0]).ravel()), dtype=object),
    "Flatten": lambda node, v: np.asarray(v[0]).reshape(1, -1) if node.attrs.get("axis", 1) == 0
    else np.asarray(v[0]).reshape(int(np.prod(v[0].shape[:node.attrs.get("axis", 1)])), -1),
    "Transpose": lambda node, v: np.transpose(v[0], node.attrs.get("perm")),
}


# -- normalising the model: static inputs written back as constants --------------------------------------------
def _resolve_static_input(node: Node, i: int, value: np.ndarray, plan: GraphPlan) -> np.ndarray | None:
    """An import-time value for input ``i`` of ``node`` without dynamic sizes (ONNX's form of the
    same meaning: a copied dim 0 or -1 in a reshape target, 1 in an expand shape, the end of the
    axis in a slice bound), or None when it cannot be written so."""
    if not _symbolic(value):
        return value
    shapes = plan.shapes
    try:
        if node.op == "Reshape" and i == 1:
            in_shape = shapes.get(node.inputs[0])
            if in_shape is None:
                return None
            out = reshape_target(in_shape, value.ravel().tolist(), bool(node.attrs.get("allowzero", 0)))
            dynamic = [k for k, d in enumerate(out) if isinstance(d, Dim)]
            resolved = []
            for k, d in enumerate(out):
                if not isinstance(d, Dim):
                    resolved.append(int(d))
                elif k < len(in_shape) and in_shape[k] == d:
                    resolved.append(0)  # ONNX's copy
                elif len(dynamic) == 1:
                    resolved.append(-1)
                else:
                    return None
            return np.asarray(resolved, np.int64)
        if node.op == "Expand" and i == 1:
            in_shape = shapes.get(node.inputs[0])
            if in_shape is None:
                return None
            target = value.ravel().tolist()
            padded = [1] * (len(target) - len(in_shape)) + list(in_shape)
            out = []
            for d, t in zip(padded[-len(target):] if target else [], target):
                if isinstance(t, Dim):
                    if t != d:
                        return None
                    out.append(1)
                else:
                    out.append(int(t))
            return np.asarray(out, np.int64)
        if node.op == "Slice" and i in (1, 2):
            in_shape = shapes.get(node.inputs[0])
            if in_shape is None:
                return None
            axes = list(range(len(in_shape)))
            if len(node.inputs) > 3 and node.inputs[3]:
                given = plan.static.get(node.inputs[3])
                if given is None or _symbolic(given):
                    return None
                axes = [int(ax) % len(in_shape) for ax in np.asarray(given).ravel()]
            out = []
            for k, v in enumerate(value.ravel().tolist()):
                if isinstance(v, Dim):
                    ax = axes[k]
                    if ax >= len(in_shape) or in_shape[ax] != v:
                        return None
                    out.append(INT64_MAX)
                else:
                    out.append(int(v))
            return np.asarray(out, np.int64)
    except NotStatic:
        return None
    return None


def _normalise(model: onnx.ModelProto, opset: int) -> tuple[onnx.ModelProto, Inferred, GraphPlan, Analysis]:
    """Shape inference, folding and writing the folded static inputs back, until nothing changes."""
    for _ in range(MAX_ROUNDS):
        inferred = Inferred(_inferred(model))
        graph = parse_graph(model.graph)
        analysis = Analysis(model, inferred, opset)
        plan = analysis.analyse(graph)
        if not _write_back(model.graph, plan, graph, analysis.initializers):
            return model, inferred, plan, analysis
    return model, inferred, plan, analysis


def _inferred(model: onnx.ModelProto) -> onnx.ModelProto:
    try:
        return onnx.shape_inference.infer_shapes(model, data_prop=True)
    except Exception:  # noqa: BLE001 - data propagation fails on some valid models; plain inference may not
        try:
            return onnx.shape_inference.infer_shapes(model)
        except Exception as exc:  # noqa: BLE001 - onnx's InferenceError and protobuf errors
            raise ModelImportError(f"onnx import: ONNX's shape inference fails on the model: {exc}") from None


def _write_back(proto: onnx.GraphProto, plan: GraphPlan, graph: Graph, initializers: set[str]) -> bool:
    """Replace the inputs of running nodes that are known at import (and not initializers of
    any graph) by initializers of ``proto``, the graph ``plan`` analysed; True when something
    changed."""
    changed = False
    runs = {id(n) for n in plan.nodes}
    by_name = {id(node): pnode for pnode, node in zip(proto.node, graph.nodes)}
    existing = set(initializers)
    counter = itertools.count()
    for node in graph.nodes:
        if id(node) not in runs:
            continue
        pnode = by_name[id(node)]
        for key, sub in node.graphs.items():
            subproto = next(a.g for a in pnode.attribute if a.name == key)
            changed |= _write_back(subproto, node.plans[key], sub, existing)
        conv = CONVERTERS[node.op]
        for i, name in enumerate(node.inputs):
            if not name or name in existing or name not in plan.static:
                continue
            value = plan.static[name]
            if not isinstance(value, np.ndarray):
                continue
            if i in conv.static:
                resolved = _resolve_static_input(node, i, value, plan)
            elif value.dtype in (np.int32, np.int64, np.bool_) and value.size <= 64:
                resolved = value  # a size read as data: a constant lets inference follow it
            else:
                continue  # a folded float tensor stays a program constant (an initializer would be a weight)
            if resolved is None:
                continue
            new = f"{name}__folded{next(counter)}" if name else f"folded{next(counter)}"
            while new in existing:
                new = f"{name}__folded{next(counter)}"
            proto.initializer.append(numpy_helper.from_array(np.ascontiguousarray(resolved), new))
            existing.add(new)
            pnode.input[i] = new
            changed = True
    return changed


# -- the layer --------------------------------------------------------------------------------------------
class RunState:
    """What one run of the graph shares: the parameters and buffers by initializer name, the Gemm
    weights stored transposed, the uint8 quantization shortcuts, and the values of the graphs
    around the one running (an If branch or a Loop body reads them)."""

    def __init__(self, tensors: dict, transposed: set, opset: int, inferred: Inferred, dynamic: bool):
        self.tensors, self.transposed, self.opset, self.inferred = tensors, transposed, opset, inferred
        self.dynamic = dynamic
        self.shifted: dict = {}
        self.env = collections.ChainMap()
        self.plan: GraphPlan | None = None

    def run_graph(self, plan: GraphPlan, inputs: list) -> list:
        outer, outer_plan = self.env, self.plan
        env = outer.new_child()
        self.env, self.plan = env, plan
        try:
            for name, value in zip(plan.inputs, inputs):
                env[name] = value
            for node in plan.nodes:
                self.run_node(node, plan, env)
            return [self.output(name, plan, env) for name in plan.outputs]
        finally:
            self.env, self.plan = outer, outer_plan

    def output(self, name: str, plan: GraphPlan, env):
        if name in env:
            return env[name]
        if name in self.tensors:
            return self.tensors[name]
        if name in plan.static:
            v = plan.static[name]
            if _symbolic(v):  # sizes returned as data: counted when the program runs
                return Args(Node("Identity", f"output {name!r}", [name], [name], {}), [v], [v.shape], self.opset,
                            [True], self).sizes(v, f"the graph output {name!r}")
            return oar.to_tensor(v)
        raise ModelImportError(f"onnx import: the graph output {name!r} is not written by any node")

    def run_node(self, node: Node, plan: GraphPlan, env) -> None:
        conv = CONVERTERS[node.op]
        values, shapes = [], []
        for i, name in enumerate(node.inputs):
            if not name:
                values.append(None)
                shapes.append(None)
                continue
            if name in env:
                v = env[name]
            elif name in self.tensors and i not in conv.static:
                v = self.tensors[name]
            elif name in plan.static:
                v = plan.static[name]
            else:
                raise ModelImportError(f"onnx import: node {node.name!r} ({node.op}) reads {name!r}, which nothing "
                                       f"writes")
            values.append(v)
            shapes.append(self.shape_of(name, v, plan))
        used = [bool(o) and o in plan.used for o in node.outputs]
        out = call_converter(conv, Args(node, values, shapes, self.opset, used, self))
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        for name, t in zip(node.outputs, outs):
            if not name or t is None:
                continue
            expected = self.inferred.dtype(name)
            if expected is not None and isinstance(t, oar.Tensor) and t.dtype.name != expected:
                t = oar.cast(t, expected)  # ONNX's result dtype (oar sums small ints in int64, ...)
            env[name] = t

    def source_of(self, d: Dim):
        """A running tensor with the dynamic size ``d`` as a dim, and that dim: ``(tensor, axis)``."""
        if len(d.factors) != 1 or d.coef != 1 or d.factors[0].startswith(("?", "(")):
            return None
        for name, shape in self.plan.shapes.items():
            if shape is not None and d in shape and name in self.env and isinstance(self.env[name], oar.Tensor):
                if self.env[name].ndim == len(shape):
                    return self.env[name], list(shape).index(d)
        return None

    def shape_of(self, name: str, value, plan: GraphPlan) -> tuple:
        if isinstance(value, np.ndarray):
            return tuple(value.shape)
        if name in self.tensors and value is self.tensors[name]:
            shape = tuple(value.shape)
            return tuple(reversed(shape)) if name in self.transposed else shape
        shape = plan.shapes.get(name)
        if shape is not None and len(shape) == value.ndim:
            return shape
        # No inferred shape: the sizes it has now, unless an input has a dynamic dim (then every
        # dim of it is an unknown size, which folds nothing).
        return tuple(Dim((f"?{name}:{k}",)) for k in range(value.ndim)) if self.dynamic else tuple(value.shape)


class ONNXGraphLayer(nn.Layer):
    """An ONNX graph as an oar Layer: the initializers that run as parameters and buffers are its
    state, under their ONNX names; ``forward`` interprets the graph with oar's functions."""

    def __init__(self, plan: GraphPlan, analysis: Analysis, dynamic: bool):
        super().__init__()
        params, buffers, transposed = _state_of(plan, analysis)
        tensors = {}
        for name, value in params.items():
            # A Parameter made from the array itself: create_parameter would let a global
            # initializer (set_global_initializer) overwrite the imported weights.
            array = value.T if name in transposed else value
            tensors[name] = nn.Parameter(np.ascontiguousarray(array), name=name)
        for name, value in buffers.items():
            t = oar.to_tensor(np.ascontiguousarray(value))
            t.persistable = True
            tensors[name] = t
        _attach(self, tensors, set(params))
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_run", RunState(tensors, transposed, analysis.opset, analysis.inferred, dynamic))

    def forward(self, *inputs):
        self._run.shifted = {}
        outs = self._run.run_graph(self._plan, list(inputs))
        return outs[0] if len(outs) == 1 else outs


def _state_of(plan: GraphPlan, analysis: Analysis):
    """The initializers that run as parameters and buffers, and the Gemm weights stored as oar's
    ``[in, out]`` (those read only by Gemms with ``transB=1``)."""
    params, buffers, readers = {}, {}, collections.defaultdict(list)

    def visit(p: GraphPlan):
        for node in p.nodes:
            conv = CONVERTERS[node.op]
            for i, name in enumerate(node.inputs):
                if name and analysis.param_use(conv, i, name, p.static):
                    value = p.static[name]
                    readers[name].append((node, i))
                    if value.dtype.kind == "f" and i not in conv.buffers:
                        params[name] = value
                    else:
                        buffers[name] = value
            for sub in node.plans.values():
                visit(sub)

    visit(plan)
    for name in buffers:
        params.pop(name, None)  # read as a buffer somewhere: a buffer everywhere
    transposed = {name for name, uses in readers.items() if name in params and params[name].ndim == 2 and
                  all(n.op == "Gemm" and i == 1 and n.attrs.get("transB", 0) for n, i in uses)}
    return params, buffers, transposed


def _tree(names) -> bool:
    """Whether the dotted names form a tree (no name is also the layer path of another)."""
    paths = [tuple(n.split(".")) for n in names]
    if not all(all(p) for p in paths):
        return False
    leaves = set(paths)
    return not any(p[:k] in leaves for p in paths for k in range(1, len(p)))


def state_names(names) -> dict[str, str]:
    """A state dict key for each initializer name: the name itself where the dotted names form a
    tree of layers (``conv1.weight``); ``.`` -> ``_`` for a name with an empty part or one that
    runs through another's leaf (``fc`` and ``fc.weight``: ``fc_weight``), made unique."""
    names = list(names)
    leaves = set(names)
    keys = {}
    for name in names:
        parts = name.split(".")
        clash = not all(parts) or any(".".join(parts[:k]) in leaves for k in range(1, len(parts)))
        keys[name] = (name.replace(".", "_") or "param") if clash else name
    taken = {k for n, k in keys.items() if k == n}
    for name in names:
        if keys[name] != name:
            key = keys[name]
            while key in taken or not _tree(taken | {key}):
                key += "_"
            taken.add(key)
            keys[name] = key
    if not _tree(keys.values()):  # a flattened name is a prefix of another's layers: all flat
        flat = {}
        for name in names:
            key = name.replace(".", "_") or "param"
            while key in flat.values():
                key += "_"
            flat[name] = key
        return flat
    return keys


def _attach(root: nn.Layer, tensors: dict, params: set) -> None:
    """Each tensor at its state dict key (``state_names``) under ``root``, plain layers for the
    dotted prefixes, as ``oar.jit.load`` will attach them."""
    for name, key in state_names(tensors).items():
        parts = key.split(".")
        node = root
        for part in parts[:-1]:
            child = node._sub_layers.get(part)
            if child is None:
                child = nn.Layer()
                node.add_sublayer(part, child)
            node = child
        (node.add_parameter if name in params else node.register_buffer)(parts[-1], tensors[name])


# -- reading and checking the model -----------------------------------------------------------------------
def _read(model) -> onnx.ModelProto:
    if isinstance(model, onnx.ModelProto):
        copy = onnx.ModelProto()
        copy.CopyFrom(model)
        return copy
    if isinstance(model, (bytes, bytearray)):
        return onnx.load_from_string(bytes(model))
    if isinstance(model, (str, os.PathLike)):
        path = os.fspath(model)
        if not os.path.exists(path) and os.path.exists(path + ".onnx"):
            path += ".onnx"
        if not os.path.isfile(path):
            raise FileNotFoundError(f"oar.onnx.load: {path!r}: no such file")
        try:
            return onnx.load(path)
        except Exception as exc:  # noqa: BLE001 - protobuf's decode errors have no common base
            raise ModelImportError(f"oar.onnx.load: {path!r} is not an ONNX model ({exc})") from None
    raise ModelImportError(f"oar.onnx.load: expected a path or an onnx.ModelProto, got {type(model).__name__}")


def _opset_of(model: onnx.ModelProto) -> int:
    opsets = {o.domain: o.version for o in model.opset_import}
    foreign = collections.Counter()
    names = collections.defaultdict(list)
    for n in _walk_nodes(model.graph):
        if n.domain not in DEFAULT_DOMAINS:
            foreign[n.domain] += 1
            names[n.domain].append(f"{n.op_type} {n.name!r}" if n.name else n.op_type)
    if foreign:
        listed = "\n".join(f"  - {d!r}: {c} node(s): {', '.join(names[d][:5])}{' ...' if c > 5 else ''}"
                           for d, c in sorted(foreign.items()))
        raise ModelImportError(f"onnx import: the model uses operator set domains oar does not convert (only the "
                               f"default ONNX domain):\n{listed}")
    version = opsets.get("", opsets.get("ai.onnx"))
    if version is None:
        raise ModelImportError("onnx import: the model imports no version of the default ONNX operator set")
    return int(version)


def _check_coverage(model: onnx.ModelProto) -> None:
    counts = collections.Counter()
    names = collections.defaultdict(list)
    for n in _walk_nodes(model.graph):
        if n.op_type not in CONVERTERS:
            counts[n.op_type] += 1
            if n.name:
                names[n.op_type].append(repr(n.name))
    if counts:
        lines = []
        for op, c in sorted(counts.items()):
            where = f": {', '.join(names[op][:5])}{' ...' if len(names[op]) > 5 else ''}" if names[op] else ""
            lines.append(f"  - {op} (x{c}){where}")
        raise ModelImportError(f"onnx import: {len(counts)} op type(s) of the model have no oar converter, so "
                               f"nothing was converted:\n" + "\n".join(lines) +
                               f"\n(oar converts {len(CONVERTERS)} ONNX op types: oar.onnx.importable_ops() lists them)")


def _upgrade(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    if opset >= MIN_OPSET:
        return model
    try:
        from onnx import version_converter  # only old models need it
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:  # noqa: BLE001 - the converter raises plain RuntimeErrors
        raise ModelImportError(f"onnx import: the model is opset {opset}; oar reads opset {MIN_OPSET} and newer, and "
                               f"onnx's version converter could not bring it to {MIN_OPSET}: {exc}") from None


def _name_dynamic_dims(model: onnx.ModelProto) -> None:
    """Give each dim of an input with neither a size nor a name a name, so that inference
    tracks it (``x_dim0``)."""
    inits = {t.name for t in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits or not vi.type.HasField("tensor_type"):
            continue
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            raise ModelImportError(f"onnx import: input {vi.name!r} has no shape (not even a rank); oar needs the "
                                   f"rank of each input")
        for i, d in enumerate(tt.shape.dim):
            if not d.HasField("dim_value") and not d.dim_param:
                d.dim_param = f"{vi.name}_dim{i}"


def _input_specs(model: onnx.ModelProto) -> list[InputSpec]:
    inits = {t.name for t in model.graph.initializer}
    specs = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        dtype = ONNX_TO_OAR.get(tt.elem_type)
        if dtype is None:
            raise ModelImportError(f"onnx import: input {vi.name!r} is of the ONNX type "
                                   f"{onnx.TensorProto.DataType.Name(tt.elem_type)}, which oar has no dtype for")
        shape = [int(d.dim_value) if d.HasField("dim_value") else None for d in tt.shape.dim]
        specs.append(InputSpec(shape, dtype, vi.name))
    return specs


def load(model, *, save_to: str | None = None):
    """An ONNX model (a path, an ``onnx.ModelProto`` or its bytes) as an oar model: the
    ``TranslatedLayer`` ``oar.jit.load`` returns, which runs on oar's executor, saves with
    ``oar.jit.save``, serves through ``oar.inference`` and fine-tunes like any loaded model.

    Inputs keep their ONNX names and a dim the model leaves dynamic stays dynamic (``-1`` in
    ``input_spec``); outputs are ``output_0``, ``output_1``, ... Float initializers that feed
    weights are parameters under their ONNX names (``fc.weight``; a Gemm weight with ``transB=1``
    is stored as oar's ``[in, out]``), batch norm statistics and quantized int8 weights are
    buffers. ``save_to`` (a path prefix) also keeps the ``oar.jit.save`` files. Op types without
    a converter are listed (count, node names) before anything is converted; operator sets of
    other domains are refused; models older than opset 13 are upgraded with onnx's version
    converter first. Raises ``ModelImportError`` with the node named where oar would compute
    something else (a shape that is only known at run time, a Resize mode oar has no sampling
    for, ...).

    >>> import numpy as np, onnx, oar, oar.onnx
    >>> from onnx import TensorProto, helper, numpy_helper
    >>> w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "fc.weight")
    >>> graph = helper.make_graph(
    ...     [helper.make_node("Gemm", ["x", "fc.weight"], ["h"], transB=1), helper.make_node("Relu", ["h"], ["y"])],
    ...     "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
    ...     [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 2])], initializer=[w])
    >>> model = oar.onnx.load(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    >>> model(oar.ones([4, 3])).tolist()[0]
    [3.0, 12.0]
    >>> list(model.input_spec[0].shape), list(model.state_dict())
    ([-1, 3], ['fc.weight'])
    """
    proto = _read(model)
    opset = _opset_of(proto)
    proto = _upgrade(proto, opset)
    opset = _opset_of(proto)
    _check_coverage(proto)
    _name_dynamic_dims(proto)
    specs = _input_specs(proto)
    proto, inferred, plan, analysis = _normalise(proto, opset)
    dynamic = any(d in (None, -1) for s in specs for d in s.shape)
    layer = ONNXGraphLayer(plan, analysis, dynamic)
    layer.eval()
    if save_to is not None:
        return _capture(layer, specs, os.fspath(save_to))
    with tempfile.TemporaryDirectory(prefix="oar-onnx-import-") as folder:
        return _capture(layer, specs, os.path.join(folder, "model"))


def _capture(layer: ONNXGraphLayer, specs: list[InputSpec], prefix: str):
    """``oar.jit.save`` then ``oar.jit.load``; a dynamic dim the program bakes in is refused."""
    with warnings.catch_warnings():
        # The capture runs on jit.save's example inputs (floats in [0.1, 1), integers 0): what
        # numpy says of their values (an Acosh of 0.5) is not about the user's data.
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", message=".*captured again for each size")  # refused below, by name
        oar.jit.save(layer, prefix, input_spec=specs)
    loaded = oar.jit.load(prefix)
    baked = [f"{spec.name}[{i}]" for spec, saved in zip(specs, loaded.input_spec)
             for i, (d, s) in enumerate(zip(spec.shape, saved.shape)) if d in (None, -1) and s != -1]
    if baked:
        raise ModelImportError(f"onnx import: the converted program depends on the size of the dynamic dim(s) "
                               f"{', '.join(baked)} (an oar op takes it as an attribute there), so it would serve one "
                               f"size only; give the model static sizes for them (onnx.tools.update_model_dims)")
    return loaded


__all__ = ["load", "importable_ops", "ModelImportError", "Dim"]
