"""What an ONNX lowering is handed: the ``LoweringContext`` of the graph being written.

A lowering is ``fn(node, ctx)``, registered for an op under the target ``"onnx"``
(``lowerings.add("onnx", "my_op", fn)`` in ``oar_register_op_lowerings``). ``node`` is the
program's ``oar.static.OpNode`` (``node.op``, ``node.inputs``, ``node.outputs``: value ids;
``node.attrs``: the op's attributes as ``docs/ops.md`` lists them). The lowering writes ONNX nodes
with ``ctx.emit`` so that the node's outputs (``ctx.outputs(node)``) are defined::

    def lower_scale(node, ctx):
        x, = ctx.inputs(node)
        scaled = ctx.emit("Mul", [x, ctx.constant(node.attrs["scale"], like=node.inputs[0])])
        ctx.emit("Add", [scaled, ctx.constant(node.attrs["bias"], like=node.inputs[0])], ctx.outputs(node))

A lowering that cannot write a node with these attributes (an ONNX op missing in the opset, an
attribute combination ONNX has no form for) raises ``ctx.unsupported(node, reason)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import onnx
from oar.errors import OarError
from onnx import TensorProto, helper, numpy_helper

# oar's dtype names -> ONNX's element types.
ONNX_DTYPES = {
    "float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "int8": TensorProto.INT8, "int16": TensorProto.INT16,
    "int32": TensorProto.INT32, "int64": TensorProto.INT64, "uint8": TensorProto.UINT8,
    "bool": TensorProto.BOOL, "complex64": TensorProto.COMPLEX64, "complex128": TensorProto.COMPLEX128,
}


class ExportError(OarError, ValueError):
    """The program cannot be written as ONNX: ops without a lowering (listed with their counts and
    the user's source lines), or a node whose attributes ONNX has no form for."""


class LoweringContext:
    """The ONNX graph being written for one program (a control-flow block gets its own).

    ``opset`` is the target opset version; lowerings branch on it where ONNX changed an op
    (``Split``'s sizes became an input at 13, ``ReduceMean``'s axes at 18, ...).
    """

    def __init__(self, program, opset: int, names: dict[int, str] | None = None, prefix: str = ""):
        self.program = program
        self.opset = opset
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._names: dict[int, str] = dict(names or {})
        self._taken: set[str] = set(self._names.values())
        self._constants: dict[tuple, str] = {}
        self._prefix = prefix
        self._current: str = ""
        self._output_ids: set[int] | None = None
        self._users: dict | None = None
        self._producers: dict | None = None
        self.absorbed: set[int] = set()
        self._done: set[int] = set()

    # -- values ---------------------------------------------------------------------------------
    def name(self, vid: int) -> str:
        """The ONNX tensor name of value ``vid`` (its program name where it has one)."""
        name = self._names.get(vid)
        if name is None:
            value = self.program.values.get(vid)
            name = self.fresh(value.name if value is not None and value.name else f"v{vid}")
            self._names[vid] = name
        return name

    def bind(self, vid: int, name: str) -> None:
        """Make ``name`` the ONNX tensor of value ``vid`` (a lowering that writes no node for an
        op that returns its input: dropout at inference, a no-op cast)."""
        self._names[vid] = name

    def inputs(self, node) -> list[str]:
        return [self.name(v) for v in node.inputs]

    def outputs(self, node) -> list[str]:
        return [self.name(v) for v in node.outputs]

    def shape(self, vid: int) -> tuple:
        """The value's shape: ints, ``None`` for a dim known only at run time."""
        return self.program.values[vid].shape

    def dtype(self, vid: int) -> str:
        """The value's oar dtype name (``"float32"``)."""
        return self.program.values[vid].dtype.name

    def onnx_dtype(self, vid_or_dtype) -> int:
        """ONNX's element type of a value (by id) or of an oar dtype name."""
        name = self.dtype(vid_or_dtype) if isinstance(vid_or_dtype, int) else str(vid_or_dtype)
        try:
            return ONNX_DTYPES[name]
        except KeyError:
            raise ExportError(f"onnx export: dtype {name} has no ONNX element type") from None

    def is_used(self, vid: int) -> bool:
        """Whether a node, an output or a state update of the program reads value ``vid`` (an op's
        second output that nothing reads, max_pool's indices at inference, need not be written)."""
        return vid in self._outputs() or bool(self.users(vid))

    def _outputs(self) -> set[int]:
        if self._output_ids is None:
            self._output_ids = set(self.program.output_ids())
        return self._output_ids

    def users(self, vid: int) -> list:
        """The program's nodes that read value ``vid``."""
        if self._users is None:
            self._users = self.program.users()
        return self._users.get(vid, [])

    def producer(self, vid: int):
        """The program's node that writes value ``vid`` (None for feeds, parameters, constants)."""
        if self._producers is None:
            self._producers = self.program.producers()
        return self._producers.get(vid)

    def sole_reader(self, vid: int):
        """The one node that reads ``vid`` when nothing else (no other node, no output) does."""
        readers = self.users(vid)
        return readers[0] if len(readers) == 1 and vid not in self._outputs() else None

    def is_static(self, vid: int) -> bool:
        """A parameter or a constant (an initializer of the ONNX graph)."""
        return self.program.is_static(vid)

    def absorb(self, node) -> None:
        """Mark a later node as written by the current lowering (a lowering that folds the
        following ``add`` of a bias into its node); the lowering must bind its outputs."""
        self.absorbed.add(id(node))

    def lowered(self, node) -> bool:
        """Whether ``node`` has been written already (it comes earlier in the program)."""
        return id(node) in self._done

    def static_value(self, vid: int) -> np.ndarray | None:
        """The array of a constant value (captured numbers, index tensors), None for anything else."""
        if self.program.is_constant(vid):
            return self.program.constant_value(vid)
        return None

    # -- writing --------------------------------------------------------------------------------
    def fresh(self, hint: str = "t") -> str:
        """A tensor name not used yet in this model."""
        base = f"{self._prefix}{hint}"
        name, n = base, 1
        while name in self._taken:
            name = f"{base}_{n}"
            n += 1
        self._taken.add(name)
        return name

    def emit(self, op_type: str, inputs: Sequence[str], outputs=None, *, domain: str = "", **attrs):
        """Write one ONNX node. ``outputs``: None (one new tensor), an int (that many new tensors),
        a name or a list of names. Returns the output name, or the list of names when ``outputs``
        is an int or a list. An input of ``""`` is an omitted optional input."""
        if outputs is None or isinstance(outputs, str):
            names = [outputs or self.fresh(op_type.lower())]
        elif isinstance(outputs, int):
            names = [self.fresh(op_type.lower()) for _ in range(outputs)]
        else:
            names = list(outputs)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        node_name = self.fresh(f"{self._current or op_type}/{op_type}") if self._current else None
        self.nodes.append(helper.make_node(op_type, list(inputs), names, name=node_name, domain=domain or None,
                                           **attrs))
        return names[0] if outputs is None or isinstance(outputs, str) else names

    def constant(self, value, dtype=None, *, like: int | None = None, hint: str = "const") -> str:
        """An initializer holding ``value`` (cast to ``dtype``, an oar/numpy dtype name, or to the
        dtype of value ``like``); equal small constants share one initializer."""
        if like is not None:
            dtype = self.dtype(like)
        array = np.asarray(value, dtype=dtype) if dtype is not None else np.asarray(value)
        if array.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)  # a Python float: float32, the dtype models compute in
        key = None
        if array.size <= 64:
            key = (array.dtype.str, array.shape, array.tobytes())
            if key in self._constants:
                return self._constants[key]
        name = self.fresh(hint)
        self.add_initializer(name, array)
        if key is not None:
            self._constants[key] = name
        return name

    def int64s(self, values) -> str:
        """A 1-D int64 initializer (shapes, axes, pads, starts/ends)."""
        return self.constant(np.asarray(list(values), dtype=np.int64))

    def add_initializer(self, name: str, array: np.ndarray) -> None:
        if array.dtype.name == "bfloat16":
            tensor = helper.make_tensor(name, TensorProto.BFLOAT16, array.shape,
                                        array.view(np.uint16).flatten().tolist(), raw=False)
        else:
            # np.ascontiguousarray returns at least 1-d: a 0-d constant would become [1]
            tensor = numpy_helper.from_array(np.ascontiguousarray(array).reshape(array.shape), name)
        self.initializers.append(tensor)

    def unsupported(self, node, reason: str) -> ExportError:
        """The error a lowering raises for a node it cannot write (``raise ctx.unsupported(...)``)."""
        where = f" (at {node.where})" if getattr(node, "where", None) else ""
        return ExportError(f"onnx export: op {node.op!r}{where}: {reason}")

    def lower_block(self, block, input_names: Sequence[str], graph_name: str, *, outer_names: Sequence[str] = ()):
        """A control-flow block (a closed sub-program) as an ONNX graph (a ``GraphProto``) whose
        outputs are the block's outputs. Its first feeds are the graph's inputs, named
        ``input_names`` (a Loop body's iteration number, condition and loop-carried values); the
        remaining feeds are tensors of the enclosing graphs that the block reads by name,
        ``outer_names`` (an ONNX ``If`` branch takes no inputs, a Loop body reads what it does not
        carry). The block's own tensors are named under ``graph_name/`` (ONNX forbids a subgraph to
        reuse a name of an enclosing graph)."""
        from oar.onnx._export import lower_program  # the exporter drives nested blocks too

        return lower_program(block, self.opset, graph_name, input_names=input_names, parent=self,
                             outer_names=outer_names)
