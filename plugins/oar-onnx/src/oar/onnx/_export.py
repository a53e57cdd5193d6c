"""From a Layer, a to_static function, a saved model or a Program to an ONNX model.

The program is captured as ``oar.jit.save`` captures it, then rewritten by the passes that keep
ops ONNX knows (simplification, conv + batch-norm folding) but not by the fusion passes: their
fused ops exist for oar's kernels, and ONNX Runtime fuses for itself. Every node is then written
by its op's ``"onnx"`` lowering (``oar.ops.lowering("onnx", op)``). ``check_exportable`` lists the
ops without one before anything is written.
"""

from __future__ import annotations

import collections
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

import oar
import onnx
from oar.onnx._context import ExportError, LoweringContext
from oar.ops import lowering
from oar.plugins import registries
from oar.static import Program
from oar.static.passes import iter_refs, optimize, rename_values, select_passes
from oar.utils import atomic_file
from onnx import helper

TARGET = "onnx"
DEFAULT_OPSET = 17
MIN_OPSET = 13
# The phases whose passes write ops for oar's own kernels (quantized_conv2d, fused_conv2d,
# fused_elementwise, ...): an exported model keeps the plain ops (an int8 model its QDQ pairs),
# which every ONNX runtime fuses in its own way.
KERNEL_PHASES = ("quantize", "fuse", "fuse_elementwise")


def max_opset() -> int:
    """The newest opset of the default domain the installed onnx package knows."""
    return onnx.defs.onnx_opset_version()


# -- getting a program ------------------------------------------------------------------------------
def program_of(model, input_spec=None) -> Program:
    """The inference program of ``model``: a ``Program``, a path prefix of ``oar.jit.save`` (or its
    ``.json``), a ``TranslatedLayer``, a Layer or a to_static function (captured as ``jit.save``
    captures it, with ``input_spec``)."""
    if isinstance(model, Program):
        program = model
    elif isinstance(model, (str, os.PathLike)):
        prefix = os.fspath(model)
        prefix = prefix[:-len(".json")] if prefix.endswith(".json") else prefix
        program = oar.jit.load(prefix).program()
    elif isinstance(model, oar.jit.TranslatedLayer):
        program = model.program()
    else:
        with tempfile.TemporaryDirectory(prefix="oar-onnx-") as folder:
            prefix = os.path.join(folder, "model")
            oar.jit.save(model, prefix, input_spec=input_spec)
            program = oar.jit.load(prefix).program()
    return inference_program(program)


def inference_program(program: Program) -> Program:
    """``program`` after the inference passes that keep ONNX's ops (not the kernel fusions), with
    what its parameters alone compute folded into new parameters."""
    fusions = [p.name for p in select_passes(2, inference=True) if getattr(p, "phase", "") in KERNEL_PHASES]
    return fold_parameters(optimize(program, 2, inference=True, disable=fusions))


# Ops kept as nodes even on parameters: a weight's fake quantization is the QDQ pair that int8
# runtimes look for (dequantizing int8 weights is kept by the size rule: it would grow the file).
KEPT_UNFOLDED = frozenset({"fake_quantize_dequantize"})


def _same_shape_ancestor(program: Program, vid: int, producers: dict) -> str | None:
    """The name of the parameter that a folded value stands for: the nearest one of its shape among
    the values it was computed from (breadth first, later inputs first: a conv's weight times batch
    norm's scale is the conv's weight)."""
    shape, pending, seen = program.values[vid].shape, collections.deque([vid]), set()
    while pending:
        current = pending.popleft()
        if current in seen:
            continue
        seen.add(current)
        if current != vid and program.is_param(current) and program.values[current].shape == shape:
            return program.values[current].name
        node = producers.get(current)
        if node is not None:
            pending.extend(reversed(node.inputs))
    return None


def fold_parameters(program: Program) -> Program:
    """Compute once, at export, the nodes that read only parameters and constants (conv +
    batch-norm folding leaves ``weight * gamma / sqrt(var + eps)``): the file then holds the
    folded weights under the original parameter's name, as other exporters write them. A
    ``reshape`` of a folded value that only the graph reads stays, so a bias stays a ``[C]`` vector
    that a lowering can put into its node (Conv's B). In place; returns ``program``."""
    ops = registries().ops
    static = set(program.params.values()) | set(program.constants.values())
    foldable = []
    def nbytes(vid):
        value = program.values[vid]
        return math.prod(d or 0 for d in value.shape) * np.dtype(value.dtype.np).itemsize

    for node in program.nodes:
        if node.inputs and all(v in static for v in node.inputs) and "random" not in ops.get(node.op).traits \
                and node.op not in KEPT_UNFOLDED and not any(isinstance(a, Program) for a in node.attrs.values()) \
                and max(nbytes(v) for v in node.outputs) <= max(nbytes(v) for v in node.inputs):  # never grows the file
            foldable.append(node)
            static.update(node.outputs)
    chosen = {id(n) for n in foldable}
    users = program.users()
    for node in foldable:
        if node.op == "reshape" and not any(id(r) in chosen for v in node.outputs for r in users.get(v, [])):
            chosen.discard(id(node))  # a bias's reshape right before the graph reads it: see above
    if not chosen:
        return program
    producers = program.producers()
    arrays = {vid: np.asarray(program.param_tensors[name].numpy()) for name, vid in program.params.items()}
    arrays.update((vid, program.constant_data[name]) for name, vid in program.constants.items())
    folded: dict[int, np.ndarray] = {}
    for node in program.nodes:
        if id(node) not in chosen:
            continue
        with oar.no_grad():
            out = ops.get(node.op)(*[oar.to_tensor(arrays[v]) for v in node.inputs], **node.attrs)
        for vid, tensor in zip(node.outputs, out if isinstance(out, (tuple, list)) else (out,)):
            arrays[vid] = folded[vid] = np.asarray(tensor.numpy())
    removed = chosen
    if not removed:
        return program
    kept = [n for n in program.nodes if id(n) not in removed]
    read = {v for n in kept for v in n.inputs} | set(program.output_ids())
    rename, given = {}, set()
    for vid, array in folded.items():
        if vid not in read:
            continue
        name = _same_shape_ancestor(program, vid, producers) or "folded"
        if name in given or (name in program.params and any(program.params[name] in n.inputs for n in kept)):
            base, n = f"{name}.folded", 1  # the original is still read as it is, or named already
            name = base
            while name in given or name in program.params:
                name, n = f"{base}_{n}", n + 1
        given.add(name)
        if name in program.params:
            old = program.params.pop(name)
            program.param_tensors.pop(name)
            program.param_kinds.pop(name)
            program.values[old].name = None
        rename[vid] = program.add_param(name, oar.to_tensor(array)).id
    program.nodes = kept
    rename_values(program, rename)
    return program.prune()


# -- the coverage check -----------------------------------------------------------------------------
@dataclass
class MissingOp:
    """An op of the program that has no ONNX lowering: how often it occurs and where."""

    op: str
    count: int
    where: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = f" at {', '.join(self.where[:5])}{' ...' if len(self.where) > 5 else ''}" if self.where else ""
        return f"{self.op} (x{self.count}){lines}"


def missing_lowerings(program: Program) -> list[MissingOp]:
    """The ops of ``program`` (control-flow blocks included) without an ONNX lowering, by name."""
    found: dict[str, MissingOp] = {}
    for node in program.walk():
        if lowering(TARGET, node.op) is not None:
            continue
        entry = found.setdefault(node.op, MissingOp(node.op, 0))
        entry.count += 1
        if node.where and node.where not in entry.where:
            entry.where.append(node.where)
    return sorted(found.values(), key=lambda m: m.op)


def missing_error(missing: Sequence[MissingOp]) -> ExportError:
    listed = "\n".join(f"  - {m}" for m in missing)
    return ExportError(f"onnx export: {len(missing)} op(s) of the model have no ONNX lowering, so nothing "
                       f"was written:\n{listed}\n(oar.onnx.check_exportable lists them; a plugin adds a lowering "
                       f"with oar_register_op_lowerings, target 'onnx')")


# -- writing ----------------------------------------------------------------------------------------
def _value_info(ctx: LoweringContext, vid: int, name: str, dim_names: Sequence[str | None] | None = None):
    shape = ctx.shape(vid)
    dims = []
    for i, d in enumerate(shape):
        if d is not None:
            dims.append(d)
        else:
            dims.append(dim_names[i] if dim_names and dim_names[i] else None)
    return helper.make_tensor_value_info(name, ctx.onnx_dtype(vid), dims)


def _feed_dim_names(program: Program) -> dict[int, list[str | None]]:
    """Names for the dynamic dims of the feeds: ``batch`` for a dynamic first dim (shared by the
    feeds, as a batch is), ``<input>_dim<i>`` for the others."""
    names = {}
    for vid in program.feeds:
        value = program.values[vid]
        names[vid] = [None if d is not None else ("batch" if i == 0 else f"{value.name}_dim{i}")
                      for i, d in enumerate(value.shape)]
    return names


def lower_program(program: Program, opset: int, graph_name: str, *, input_names: Sequence[str] | None = None,
                  output_names: Sequence[str] | None = None, parent: LoweringContext | None = None,
                  keep_param_names: bool = True, outer_names: Sequence[str] = ()) -> onnx.GraphProto:
    """``program`` as an ONNX graph. A top-level graph takes its feeds as inputs and its parameters
    and constants as initializers; a block (``parent`` given) gets ``input_names`` for its first
    feeds, which are the graph's inputs, and ``outer_names`` for the rest, which it reads from the
    enclosing graph by name (an ONNX ``If`` branch has no inputs; a ``Loop`` body reads what it
    does not carry)."""
    names = {}
    if outer_names and len(program.feeds) != len(input_names or ()) + len(outer_names):
        raise ExportError(f"onnx export: block {graph_name!r} has {len(program.feeds)} feeds, given "
                          f"{len(input_names or ())} input names and {len(outer_names)} outer names")
    graph_feeds = program.feeds[:len(program.feeds) - len(outer_names)]
    if input_names is not None:
        names.update(zip(program.feeds, [*input_names, *outer_names]))
    else:
        names.update((vid, program.values[vid].name) for vid in program.feeds)
    prefix = f"{graph_name}/" if parent is not None else ""
    ctx = LoweringContext(program, opset, names, prefix=prefix)
    if parent is not None:
        ctx._taken |= parent._taken  # block tensors must not shadow the enclosing graph's names
    if keep_param_names:
        for name, vid in program.params.items():
            ctx.bind(vid, name)
            ctx._taken.add(name)
    for name, vid in program.params.items():
        ctx.add_initializer(ctx.name(vid), np.asarray(program.param_tensors[name].numpy()))
    for name, vid in program.constants.items():
        ctx.add_initializer(ctx.name(vid), np.asarray(program.constant_data[name]))

    for node in program.nodes:
        if id(node) in ctx.absorbed:
            continue
        lower = lowering(TARGET, node.op)
        if lower is None:
            raise missing_error(missing_lowerings(program))
        ctx._current = node.op
        lower(node, ctx)
        ctx._done.add(id(node))
        for vid in node.outputs:  # every output must be defined by now
            if vid not in ctx._names:
                raise ExportError(f"onnx export: the lowering of {node.op!r} did not write output %{vid}")
    ctx._current = ""

    out_vids = [r.id for r in iter_refs(program.outputs)]
    if output_names is None:
        output_names = [f"output_{i}" for i in range(len(out_vids))] if parent is None else \
            [ctx.fresh("out") for _ in out_vids]
    graph_outputs = []
    feed_set = set(program.feeds)
    seen_outputs: set[str] = set()
    # Tensors that control-flow subgraphs (If branches, Loop bodies) read by name: renaming one
    # where it is written would leave those readers behind, so it is renamed by Identity.
    nested_reads: set[str] = set()
    subgraphs = [a.g for n in ctx.nodes for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    while subgraphs:
        g = subgraphs.pop()
        for n in g.node:
            nested_reads.update(n.input)
            subgraphs += [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH]
    for vid, wanted in zip(out_vids, output_names):
        current = ctx.name(vid)
        # An ONNX graph output is a tensor a node writes, named once: rename by Identity where the
        # value is a feed, an initializer, or already another output.
        if current != wanted:
            if vid in feed_set or program.is_static(vid) or current in seen_outputs or current in nested_reads or \
                    not _rename_producer(ctx, current, wanted):
                ctx.emit("Identity", [current], wanted)
        seen_outputs.add(wanted)
        graph_outputs.append(_value_info(ctx, vid, wanted))

    dim_names = _feed_dim_names(program) if parent is None else {}
    graph_inputs = [_value_info(ctx, vid, ctx.name(vid), dim_names.get(vid)) for vid in graph_feeds]
    if parent is not None:  # names written later in the enclosing graph must not shadow the block's
        parent._taken |= ctx._taken
    return helper.make_graph(ctx.nodes, graph_name, graph_inputs, graph_outputs, initializer=ctx.initializers)


def _rename_producer(ctx: LoweringContext, current: str, wanted: str) -> bool:
    """Rename the tensor ``current`` to ``wanted`` where it is written (no Identity node needed)."""
    producer = None
    for n in ctx.nodes:
        if current in n.output:
            producer = n
    if producer is None:
        return False
    for n in ctx.nodes:
        for i, name in enumerate(n.input):
            if name == current:
                n.input[i] = wanted
    for i, name in enumerate(producer.output):
        if name == current:
            producer.output[i] = wanted
    for vid, name in list(ctx._names.items()):
        if name == current:
            ctx._names[vid] = wanted
    ctx._taken.add(wanted)
    return True


def _check_opset(opset_version) -> int:
    if not isinstance(opset_version, int) or isinstance(opset_version, bool):
        raise ExportError(f"onnx export: opset_version must be an int, got {opset_version!r}")
    newest = max_opset()
    if not MIN_OPSET <= opset_version <= newest:
        raise ExportError(f"onnx export: opset_version {opset_version} is not supported: oar writes opsets "
                          f"{MIN_OPSET} to {newest} (the newest the installed onnx {onnx.__version__} knows)")
    return opset_version


def to_model(program: Program, opset_version: int = DEFAULT_OPSET, *, graph_name: str = "oar") -> onnx.ModelProto:
    """``program`` (an inference program, see ``inference_program``) as a checked ONNX model."""
    opset = _check_opset(opset_version)
    missing = missing_lowerings(program)
    if missing:
        raise missing_error(missing)
    graph = lower_program(program, opset, graph_name)
    model = helper.make_model(graph, producer_name="oar", producer_version=oar.__version__,
                              opset_imports=[helper.make_opsetid("", opset)])
    # The IR version the opset needs, no newer: a runtime reads every IR version up to its own.
    model.ir_version = min(onnx.IR_VERSION, _ir_version_for(opset))
    return model


def _ir_version_for(opset: int) -> int:
    table = [(row[2], row[1]) for row in onnx.helper.VERSION_TABLE]  # (ai.onnx opset, ir version)
    fitting = [ir for op, ir in table if op >= opset]
    return min(fitting) if fitting else onnx.IR_VERSION


def check_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """onnx's full check (with strict shape inference); returns the model with inferred shapes."""
    onnx.checker.check_model(model, full_check=True)
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)


def save_model(model: onnx.ModelProto, path: str) -> None:
    """Write ``model`` to ``path`` atomically (a crash leaves the old file or none)."""
    with atomic_file(path, "wb") as f:
        f.write(model.SerializeToString())


def op_counts(model: onnx.ModelProto) -> collections.Counter:
    """How many nodes of each ONNX op type ``model``'s main graph holds."""
    return collections.Counter(n.op_type for n in model.graph.node)
