"""The Program: what ``to_static`` captures, passes rewrite, the executor runs and ``jit.save`` writes.

A ``Program`` is an ordered list of ``OpNode``s over typed ``Value``s (SSA: each value is
defined once). A value's shape may hold ``None`` for a dynamic dim (the batch of an
``InputSpec([None, 784])``). Values are defined by one of:

- a *feed*: a graph input the caller gives (one per input tensor, in order);
- a *parameter*: a named input whose tensor the program keeps aside (``param_tensors``), so a
  trained layer's weights are read at run time, never baked in;
- a *constant*: a small tensor captured during tracing, stored with the program;
- an op node's output.

``outputs`` is the (possibly nested) structure the function returned, with ``ValueRef`` leaves
for tensors. ``updates`` names the state the program writes back after a run: a parameter or
buffer changed in place (batch norm's running statistics in training), or an input changed in
place (``x.add_(1)``).

``print(program)`` shows one op per line::

    %y: float32[?, 6, 24, 24] = conv(%x, %conv1.weight) {stride: [1, 1], ...}

``to_json()`` / ``Program.from_json()`` round-trip a program without loss through a versioned
schema (``{"schema": "oar.program", "version": 1, ...}``).
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.op import TensorMeta
from oar._engine.registries import OPS, ensure_plugins_loaded
from oar.errors import OarError, RegistryError, SerializationError

SCHEMA = "oar.program"
SCHEMA_VERSION = 2  # the newest schema version this oar reads
# Version 2 added control flow (sub-programs in node attributes); a program without control flow
# is still written as version 1, so that older oar versions keep reading it.
PLAIN_SCHEMA_VERSION = 1

class Value:
    """One typed value of a program: ``id``, ``shape`` (a tuple, ``None`` for a dynamic dim),
    ``dtype`` (an ``oar.DType``) and, for inputs, parameters and constants, a ``name``."""

    __slots__ = ("id", "shape", "dtype", "name")

    def __init__(self, id: int, shape, dtype, name: str | None = None):
        self.id = id
        self.shape = tuple(None if d is None else int(d) for d in shape)
        self.dtype = _dt.get_dtype(dtype)
        self.name = name

    @property
    def meta(self) -> TensorMeta:
        return TensorMeta(self.shape, self.dtype)

    @property
    def ref(self) -> str:
        return f"%{self.name}" if self.name is not None else f"%{self.id}"

    def __repr__(self) -> str:
        return f"{self.ref}: {self.meta!r}"


class ValueRef:
    """A leaf of a program's output structure: the value with this id."""

    __slots__ = ("id",)

    def __init__(self, id: int):
        self.id = id

    def __eq__(self, other) -> bool:
        return isinstance(other, ValueRef) and other.id == self.id

    def __hash__(self) -> int:
        return hash(("ValueRef", self.id))

    def __repr__(self) -> str:
        return f"ValueRef({self.id})"


class OpNode:
    """One op call: the op's name, input and output value ids, its attributes, whether it ran
    under ``no_grad`` inside the captured function (replayed without recording a gradient), and
    ``where``: the user's source line that called it (``"model.py:12"``), where the capture saw one
    (an exporter or a pass names it in its messages)."""

    __slots__ = ("op", "inputs", "outputs", "attrs", "no_grad", "where")

    def __init__(self, op: str, inputs, outputs, attrs: dict | None = None, no_grad: bool = False,
                 where: str | None = None):
        self.op = op
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = dict(attrs or {})
        self.no_grad = bool(no_grad)
        self.where = where

    def __repr__(self) -> str:
        return f"<OpNode {self.op} {self.inputs} -> {self.outputs}>"


def _fmt_attr(v) -> str:
    if isinstance(v, str):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_fmt_attr(x)}" for k, x in v.items()) + "}"
    return repr(v.item() if isinstance(v, np.generic) else v)


def iter_refs(structure) -> Iterator[ValueRef]:
    """Every ``ValueRef`` of an output structure, depth first."""
    if isinstance(structure, ValueRef):
        yield structure
    elif isinstance(structure, (list, tuple)):
        for item in structure:
            yield from iter_refs(item)
    elif isinstance(structure, dict):
        for item in structure.values():
            yield from iter_refs(item)


def map_refs(structure, fn):
    """The structure with every ``ValueRef`` replaced by ``fn(ref)`` (containers rebuilt)."""
    if isinstance(structure, ValueRef):
        return fn(structure)
    if isinstance(structure, list):
        return [map_refs(s, fn) for s in structure]
    if isinstance(structure, tuple):
        items = [map_refs(s, fn) for s in structure]
        return type(structure)(*items) if hasattr(structure, "_fields") else tuple(items)
    if isinstance(structure, dict):
        return type(structure)((k, map_refs(v, fn)) for k, v in structure.items())
    return structure


class Program:
    """A captured graph: op nodes over typed values, with named inputs, parameters, constants.

    >>> import oar
    >>> from oar.jit import to_static
    >>> from oar.static import InputSpec
    >>> f = to_static(lambda x: oar.exp(x) * 2.0, input_spec=[InputSpec([None, 3], name="x")])
    >>> print(f.concrete_program)  # doctest: +NORMALIZE_WHITESPACE
    program(%x: float32[?, 3]) {
      constants:
        %const_0: float32[] = 2.0
      %1: float32[?, 3] = exp(%x)
      %3: float32[?, 3] = multiply(%1, %const_0)
      return %3
    }
    """

    def __init__(self):
        self.values: dict[int, Value] = {}
        self.nodes: list[OpNode] = []
        self.feeds: list[int] = []
        self.params: dict[str, int] = {}
        self.param_tensors: dict[str, Any] = {}
        self.param_kinds: dict[str, str] = {}  # name -> "parameter" | "buffer"
        self.constants: dict[str, int] = {}
        self.constant_data: dict[str, np.ndarray] = {}
        self.outputs: Any = None
        self.updates: list[tuple[str, Any, int]] = []  # ("param", name, vid) | ("feed", index, vid)
        self.meta: dict[str, Any] = {}
        self._next_id = 0

    # -- building -----------------------------------------------------------------------------
    def new_value(self, shape, dtype, name: str | None = None) -> Value:
        v = Value(self._next_id, shape, dtype, name)
        self.values[v.id] = v
        self._next_id += 1
        return v

    def _unique(self, name: str) -> str:
        taken = {v.name for v in self.values.values()}
        if name not in taken:
            return name
        n = 1
        while f"{name}_{n}" in taken:
            n += 1
        return f"{name}_{n}"

    def add_feed(self, shape, dtype, name: str) -> Value:
        v = self.new_value(shape, dtype, self._unique(name))
        self.feeds.append(v.id)
        return v

    def add_param(self, name: str, tensor, kind: str = "parameter") -> Value:
        v = self.new_value(tuple(tensor.shape), tensor.dtype, name)
        self.params[name] = v.id
        self.param_tensors[name] = tensor
        self.param_kinds[name] = kind
        return v

    def add_constant(self, array: np.ndarray, name: str | None = None) -> Value:
        name = self._unique(name or f"const_{len(self.constants)}")
        v = self.new_value(array.shape, _dt.NP_TO_DTYPE[array.dtype], name)
        self.constants[name] = v.id
        self.constant_data[name] = array
        return v

    def add_node(self, op: str, inputs, outputs, attrs=None, no_grad: bool = False, where: str | None = None) -> OpNode:
        node = OpNode(op, inputs, outputs, attrs, no_grad, where)
        self.nodes.append(node)
        return node

    # -- reading ------------------------------------------------------------------------------
    @property
    def feed_values(self) -> list[Value]:
        return [self.values[i] for i in self.feeds]

    def output_ids(self) -> list[int]:
        """The value ids the outputs and the state updates read (kept alive by every pass)."""
        return [r.id for r in iter_refs(self.outputs)] + [vid for _, _, vid in self.updates]

    def producers(self) -> dict[int, OpNode]:
        return {vid: node for node in self.nodes for vid in node.outputs}

    def users(self) -> dict[int, list[OpNode]]:
        out: dict[int, list[OpNode]] = {}
        for node in self.nodes:
            for vid in node.inputs:
                out.setdefault(vid, []).append(node)
        return out

    def is_constant(self, vid: int) -> bool:
        v = self.values[vid]
        return v.name is not None and self.constants.get(v.name) == vid

    def is_param(self, vid: int) -> bool:
        v = self.values[vid]
        return v.name is not None and self.params.get(v.name) == vid

    def is_static(self, vid: int) -> bool:
        """A parameter or a constant: a value that no feed changes (folding passes read these)."""
        return self.is_param(vid) or self.is_constant(vid)

    def constant_value(self, vid: int) -> np.ndarray:
        return self.constant_data[self.values[vid].name]

    def op_names(self) -> list[str]:
        """The ops of every node, sub-programs (control-flow blocks) included."""
        return sorted({n.op for n in self.walk()})

    def walk(self) -> Iterator[OpNode]:
        """Every node, depth first: the nodes of a control-flow node's blocks follow it."""
        for node in self.nodes:
            yield node
            for block in sub_programs(node):
                yield from block.walk()

    def has_control_flow(self) -> bool:
        return any(True for n in self.nodes for _ in sub_programs(n))

    def clone(self) -> Program:
        """A copy whose node list, values and tables can be rewritten without touching this one
        (constant arrays and parameter tensors are shared, not copied)."""
        p = Program()
        p.values = {k: Value(v.id, v.shape, v.dtype, v.name) for k, v in self.values.items()}
        p.nodes = [OpNode(n.op, n.inputs, n.outputs, _copy_attrs(n.attrs), n.no_grad, n.where) for n in self.nodes]
        p.feeds = list(self.feeds)
        p.params = dict(self.params)
        p.param_tensors = dict(self.param_tensors)
        p.param_kinds = dict(self.param_kinds)
        p.constants = dict(self.constants)
        p.constant_data = dict(self.constant_data)
        p.outputs = map_refs(self.outputs, lambda r: ValueRef(r.id))
        p.updates = list(self.updates)
        p.meta = dict(self.meta)
        p._next_id = self._next_id
        return p

    def prune(self) -> Program:
        """Drop values no node, output or table refers to, and parameters and constants no node
        reads (in place; returns self)."""
        used = set(self.output_ids()) | set(self.feeds)
        for node in self.nodes:
            used.update(node.inputs)
            used.update(node.outputs)
        # A parameter or buffer a state update writes stays, even when no node reads it (a
        # buffer the function only overwrites): the update needs its tensor.
        used.update(self.params[target] for kind, target, _ in self.updates
                    if kind == "param" and target in self.params)
        for name, vid in list(self.params.items()):
            if vid not in used:
                del self.params[name], self.param_tensors[name], self.param_kinds[name]
        for name, vid in list(self.constants.items()):
            if vid not in used:
                del self.constants[name], self.constant_data[name]
        self.values = {k: v for k, v in self.values.items() if k in used}
        return self

    def validate(self) -> None:
        """Check that every value is defined once, before its first use (raises ValueError)."""
        defined = set(self.feeds) | set(self.params.values()) | set(self.constants.values())
        for i, node in enumerate(self.nodes):
            for vid in node.inputs:
                if vid not in defined:
                    raise ValueError(f"program node {i} ({node.op}) reads %{vid} before it is defined")
            for vid in node.outputs:
                if vid in defined:
                    raise ValueError(f"program node {i} ({node.op}) redefines %{vid}")
                defined.add(vid)
            blocks = list(sub_programs(node))
            for name, block in zip(_block_names(node), blocks):
                # A block is closed: it reads its own inputs (feeds), constants and values only.
                try:
                    block.validate()
                except ValueError as exc:
                    raise ValueError(f"program node {i} ({node.op}) {name}: {exc}") from None
                if block.params:
                    raise ValueError(f"program node {i} ({node.op}) {name} has parameters of its own; "
                                     f"parameters are inputs of the control-flow node")
            if blocks:
                _check_control_flow(self, i, node)
        for vid in self.output_ids():
            if vid not in defined:
                raise ValueError(f"program output %{vid} is never defined")

    # -- printing -----------------------------------------------------------------------------
    def __str__(self) -> str:
        v = self.values
        feeds = ", ".join(repr(v[i]) for i in self.feeds)
        lines = [f"program({feeds}) {{"]
        if self.params:
            lines.append("  params:")
            lines.extend(f"    {v[i]!r}" for i in self.params.values())
        if self.constants:
            lines.append("  constants:")
            for name, i in self.constants.items():
                data = self.constant_data[name]
                shown = f" = {_fmt_attr(data.tolist())}" if data.size <= 4 and data.dtype.kind in "biuf" else ""
                lines.append(f"    {v[i]!r}{shown}")
        backward_start = self.meta.get("backward_start")  # set by oar._graph.static_backward.append_backward
        for index, node in enumerate(self.nodes):
            if index == backward_start:
                lines.append("  // backward")
            lines.extend(_node_lines(node, v, "  "))
        for kind, target, vid in self.updates:
            shown = f"%{target}" if kind == "param" else f"input {target}"
            lines.append(f"  update {shown} <- {v[vid].ref}")
        lines.append(f"  return {_fmt_structure(self.outputs, v)}")
        lines.append("}")
        return "\n".join(lines)

    __repr__ = __str__

    # -- JSON ---------------------------------------------------------------------------------
    def to_json(self, *, inline_constants: bool = True) -> dict:
        """The program as JSON-able data (schema ``oar.program``: version 2 with control flow, else 1).

        Constants are stored inline (base64) unless ``inline_constants=False``, in which case
        the caller stores ``constant_data`` elsewhere (``jit.save`` puts them in the
        parameters file) and passes them back to ``from_json``.
        """
        constants = []
        for name, vid in self.constants.items():
            entry = {"name": name, "value": vid}
            if inline_constants:
                entry["data"] = _encode_array(self.constant_data[name])
            constants.append(entry)
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION if self.has_control_flow() else PLAIN_SCHEMA_VERSION,
            "values": [[v.id, list(v.shape), v.dtype.name, v.name] for v in self.values.values()],
            "feeds": list(self.feeds),
            "params": [{"name": n, "value": vid, "kind": self.param_kinds.get(n, "parameter")}
                       for n, vid in self.params.items()],
            "constants": constants,
            "nodes": [_encode_node(n) for n in self.nodes],
            "outputs": encode_structure(self.outputs),
            "updates": [[kind, target, vid] for kind, target, vid in self.updates],
            "meta": _encode_attr(self.meta, "program meta"),
        }

    @classmethod
    def from_json(cls, data: dict, *, constants: dict | None = None, params: dict | None = None,
                  op_sources: dict | None = None, check_ops: bool = True, where: str = "program") -> Program:
        """Rebuild a program from ``to_json()`` data.

        ``constants`` supplies constant arrays stored outside the JSON; ``params`` maps parameter
        names to tensors. An op that is not registered raises ``RegistryError`` naming the
        plugin that provides it (from ``op_sources``, a map op -> package);
        a newer schema version or a damaged document raises ``SerializationError``.
        """
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            raise SerializationError(f"{where}: not an oar program (no \"schema\": \"{SCHEMA}\")")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise SerializationError(f"{where}: the program's schema version {version!r} is not an int: the file is corrupted")
        if version > SCHEMA_VERSION:
            raise SerializationError(
                f"{where}: written with program schema version {version}, newer than this oar reads "
                f"(version {SCHEMA_VERSION} and older): upgrade oar"
            )
        try:
            p = cls._decode(data, constants or {}, params or {}, where)
        except SerializationError:
            raise
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise SerializationError(f"{where}: the program is damaged ({type(exc).__name__}: {exc}): the file is corrupted") from None
        if check_ops:
            check_ops_registered(p.op_names(), op_sources, where)
        try:
            p.validate()
        except ValueError as exc:
            raise SerializationError(f"{where}: the program is inconsistent ({exc}): the file is corrupted") from None
        return p

    @classmethod
    def _decode(cls, data: dict, constants: dict, params: dict, where: str) -> Program:
        p = cls()
        for vid, shape, dtype, name in data["values"]:
            if not isinstance(vid, int) or vid in p.values:
                raise SerializationError(f"{where}: value id {vid!r} is invalid or repeated: the file is corrupted")
            p.values[vid] = Value(vid, shape, dtype, name)
        p._next_id = max(p.values, default=-1) + 1
        p.feeds = [int(i) for i in data["feeds"]]
        for entry in data["params"]:
            name = entry["name"]
            p.params[name] = int(entry["value"])
            p.param_kinds[name] = entry.get("kind", "parameter")
            if name in params:
                p.param_tensors[name] = params[name]
        for entry in data["constants"]:
            name = entry["name"]
            p.constants[name] = int(entry["value"])
            if "data" in entry:
                p.constant_data[name] = _decode_array(entry["data"], where)
            elif name in constants:
                p.constant_data[name] = np.asarray(constants[name])
            else:
                raise SerializationError(f"{where}: the data of constant {name!r} is missing: the file is corrupted")
            v = p.values[p.constants[name]]
            got = p.constant_data[name]
            if tuple(got.shape) != v.shape or got.dtype != v.dtype.np:
                raise SerializationError(
                    f"{where}: constant {name!r} holds {got.dtype}{list(got.shape)} but the program says "
                    f"{v.meta!r}: the file is corrupted")
        p.nodes = [_decode_node(n) for n in data["nodes"]]
        p.outputs = decode_structure(data["outputs"])
        p.updates = [(kind, target, int(vid)) for kind, target, vid in data["updates"]]
        p.meta = _decode_attr(data.get("meta", {}))
        for vid in [*p.feeds, *p.params.values(), *p.constants.values(), *p.output_ids()]:
            if vid not in p.values:
                raise SerializationError(f"{where}: the program refers to an undeclared value %{vid}: the file is corrupted")
        for node in p.nodes:
            for vid in (*node.inputs, *node.outputs):
                if vid not in p.values:
                    raise SerializationError(f"{where}: op {node.op!r} refers to an undeclared value %{vid}: "
                                             f"the file is corrupted")
        return p


def check_ops_registered(names, op_sources: dict | None = None, where: str = "program") -> None:
    """Raise ``RegistryError`` naming the package to install for each op not registered.

    ``op_sources`` maps op -> package, as ``jit.save`` records it from the op registry when it
    writes a program (``requires``)."""
    ensure_plugins_loaded()
    missing = [n for n in names if n not in OPS._entries]
    if not missing:
        return
    parts = []
    for name in missing:
        package = (op_sources or {}).get(name)
        parts.append(f"{name!r} (from {package}: pip install {package})" if package
                     else f"{name!r} (from the plugin that registered it when the program was saved)")
    raise RegistryError(
        f"{where} needs op{'s' if len(parts) > 1 else ''} {', '.join(parts)}, not registered here; install "
        f"the package and make sure OAR_DISABLE_PLUGINS does not block it"
    )


def attr_key(attrs: dict) -> str:
    """A canonical string of attributes, for comparing nodes."""
    try:
        return json.dumps(_encode_attr(attrs, "attrs"), sort_keys=True)
    except SerializationError:
        return repr(sorted(attrs.items(), key=lambda kv: kv[0]))


def program_signature(program: Program) -> tuple:
    """What makes two captures the same program: nodes, attributes, constants' contents,
    parameters, outputs and updates (not the metas, which differ in dynamic dims only)."""
    constants = tuple((name, vid, a.dtype.str, a.shape, a.tobytes())
                      for (name, vid), a in zip(program.constants.items(), program.constant_data.values()))
    try:
        outputs = json.dumps(encode_structure(program.outputs), sort_keys=True)
    except SerializationError:
        outputs = repr(program.outputs)
    return (
        tuple((n.op, tuple(n.inputs), tuple(n.outputs), attr_key(n.attrs), n.no_grad) for n in program.nodes),
        constants, tuple(program.params.items()), tuple(program.feeds), outputs, tuple(program.updates),
    )


def sub_programs(node: OpNode) -> Iterator[Program]:
    """The blocks (sub-programs) of a control-flow node, in attribute order; none for other ops."""
    for a in node.attrs.values():
        if isinstance(a, Program):
            yield a


def _check_control_flow(program: Program, i: int, node: OpNode) -> None:
    """The node's inputs and outputs fit its blocks (the op's meta function says so)."""
    op = OPS.lookup(node.op)
    if op is None:
        return
    try:
        metas = op.meta(*[program.values[v].meta for v in node.inputs], **node.attrs)
    except (OarError, KeyError, TypeError) as exc:
        raise ValueError(f"program node {i} ({node.op}) does not fit its blocks: {exc}") from None
    metas = (metas,) if isinstance(metas, TensorMeta) else tuple(metas)
    if len(metas) != len(node.outputs):
        raise ValueError(f"program node {i} ({node.op}) has {len(node.outputs)} outputs, its blocks "
                         f"return {len(metas)}")


def _block_names(node: OpNode) -> list[str]:
    return [k for k, a in node.attrs.items() if isinstance(a, Program)]


def _node_lines(node: OpNode, values: dict, indent: str) -> list[str]:
    """One op per line; a control-flow node's blocks follow it, indented, as ``name(args) {...}``."""
    outs = ", ".join(repr(values[i]) for i in node.outputs)
    args = ", ".join(values[i].ref for i in node.inputs)
    plain = {k: a for k, a in node.attrs.items() if not isinstance(a, Program)}
    attrs = " {" + ", ".join(f"{k}: {_fmt_attr(a)}" for k, a in plain.items()) + "}" if plain else ""
    lines = [f"{indent}{outs} = {node.op}({args}){attrs}{'  # no_grad' if node.no_grad else ''}"]
    for name, block in ((k, a) for k, a in node.attrs.items() if isinstance(a, Program)):
        bv = block.values
        feeds = ", ".join(repr(bv[i]) for i in block.feeds)
        lines.append(f"{indent}  {name}({feeds}) {{")
        for cname, i in block.constants.items():
            data = block.constant_data[cname]
            shown = f" = {_fmt_attr(data.tolist())}" if data.size <= 4 and data.dtype.kind in "biuf" else ""
            lines.append(f"{indent}    {bv[i]!r}{shown}")
        for inner in block.nodes:
            lines.extend(_node_lines(inner, bv, indent + "    "))
        lines.append(f"{indent}    return {_fmt_structure(block.outputs, bv)}")
        lines.append(f"{indent}  }}")
    return lines


def _fmt_structure(s, values) -> str:
    if isinstance(s, ValueRef):
        return values[s.id].ref
    if isinstance(s, list):
        return "[" + ", ".join(_fmt_structure(x, values) for x in s) + "]"
    if isinstance(s, tuple):
        return "(" + ", ".join(_fmt_structure(x, values) for x in s) + ("," if len(s) == 1 else "") + ")"
    if isinstance(s, dict):
        return "{" + ", ".join(f"{k!r}: {_fmt_structure(x, values)}" for k, x in s.items()) + "}"
    return repr(s)


def _copy_attrs(v):
    if isinstance(v, Program):  # a control-flow block: rewritten copies must not share it
        return v.clone()
    if isinstance(v, dict):
        return {k: _copy_attrs(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_attrs(x) for x in v]
    if isinstance(v, tuple):
        return tuple(_copy_attrs(x) for x in v)
    return v


# ------------------------------------------------------------------------------------------
# lossless JSON of attributes and structures: JSON values as they are, the rest tagged
# ------------------------------------------------------------------------------------------
def _encode_attr(v, where: str):
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"$float": "nan" if v != v else ("inf" if v > 0 else "-inf")}
    if isinstance(v, np.generic):
        return {"$np": [np.dtype(v.dtype).name if v.dtype != _dt.bfloat16.np else "bfloat16",
                        _encode_attr(v.item(), where)]}
    if isinstance(v, list):
        return [_encode_attr(x, where) for x in v]
    if isinstance(v, tuple):
        return {"$tuple": [_encode_attr(x, where) for x in v]}
    if isinstance(v, _dt.DType):
        return {"$dtype": v.name}
    if isinstance(v, Program):  # a control-flow block, constants inline
        return {"$program": v.to_json()}
    if isinstance(v, dict):
        if all(isinstance(k, str) and not k.startswith("$") for k in v):
            return {k: _encode_attr(x, where) for k, x in v.items()}
        return {"$dict": [[_encode_attr(k, where), _encode_attr(x, where)] for k, x in v.items()]}
    raise SerializationError(f"{where}: a {type(v).__name__} ({v!r:.80}) cannot be stored in a program file; op "
                             f"attributes must be JSON data (None, bool, int, float, str, lists, tuples, dicts)")


def _decode_attr(v):
    if isinstance(v, list):
        return [_decode_attr(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (key, x), = v.items()
            if key == "$float":
                return float(x)
            if key == "$tuple":
                return tuple(_decode_attr(i) for i in x)
            if key == "$np":
                name, value = x
                return _dt.get_dtype(name).np.type(_decode_attr(value))
            if key == "$dtype":
                return _dt.get_dtype(x)
            if key == "$program":
                return Program.from_json(x, check_ops=False, where="a control-flow block")
            if key == "$dict":
                return {_decode_attr(k): _decode_attr(i) for k, i in x}
        return {k: _decode_attr(x) for k, x in v.items()}
    return v


def _encode_node(n: OpNode) -> dict:
    out = {"op": n.op, "inputs": list(n.inputs), "outputs": list(n.outputs),
           "attrs": {k: _encode_attr(a, f"op {n.op!r} attribute {k!r}") for k, a in n.attrs.items()}}
    if n.no_grad:
        out["no_grad"] = True
    if n.where is not None:
        out["where"] = n.where
    return out


def _decode_node(d: dict) -> OpNode:
    if not isinstance(d.get("op"), str):
        raise SerializationError(f"an op node has no op name ({d!r:.80})")
    return OpNode(d["op"], [int(i) for i in d["inputs"]], [int(i) for i in d["outputs"]],
                  {k: _decode_attr(a) for k, a in d.get("attrs", {}).items()}, d.get("no_grad", False),
                  d["where"] if isinstance(d.get("where"), str) else None)


def encode_structure(s):
    """An output structure as JSON: ``{"value": id}``, ``{"tuple": [...]}``, ``{"list": [...]}``,
    ``{"dict": [[key, node], ...]}`` or ``{"literal": value}``."""
    if isinstance(s, ValueRef):
        return {"value": s.id}
    if isinstance(s, list):
        return {"list": [encode_structure(x) for x in s]}
    if isinstance(s, tuple):
        return {"tuple": [encode_structure(x) for x in s]}
    if isinstance(s, dict):
        return {"dict": [[_encode_attr(k, "an output key"), encode_structure(x)] for k, x in s.items()]}
    return {"literal": _encode_attr(s, "a returned value")}


def decode_structure(d):
    if not isinstance(d, dict) or len(d) != 1:
        raise SerializationError(f"bad output structure node {d!r:.80}")
    (kind, x), = d.items()
    if kind == "value":
        return ValueRef(int(x))
    if kind == "list":
        return [decode_structure(i) for i in x]
    if kind == "tuple":
        return tuple(decode_structure(i) for i in x)
    if kind == "dict":
        return {_decode_attr(k): decode_structure(i) for k, i in x}
    if kind == "literal":
        return _decode_attr(x)
    raise SerializationError(f"unknown output structure node kind {kind!r}")


def _encode_array(a: np.ndarray) -> dict:
    shape = list(np.shape(a))  # before ascontiguousarray, which makes a 0-d array 1-d
    a = np.ascontiguousarray(a)
    return {"dtype": _dt.NP_TO_DTYPE[a.dtype].name, "shape": shape,
            "base64": base64.b64encode(a.tobytes()).decode("ascii")}


def _decode_array(d: dict, where: str) -> np.ndarray:
    try:
        dtype = _dt.get_dtype(d["dtype"]).np
        raw = base64.b64decode(d["base64"], validate=True)
        return np.frombuffer(raw, dtype=dtype).reshape(d["shape"]).copy()
    except Exception as exc:  # noqa: BLE001 - any failure here means damaged data
        raise SerializationError(f"{where}: a constant's data is damaged ({exc}): the file is corrupted") from None
