"""Graph passes on ``Program``s: the ``Pass``, its phases, and the pipeline that picks them.

A pass is a named rewrite ``fn(program) -> program`` that keeps the program's outputs within
float tolerance. It belongs to a *phase*; the pipeline (``optimize``) runs the phases in the
order of ``PHASES``, and within a phase the passes in registration order, so a plugin's pass
lands where it belongs whichever package registered first:

- ``simplify``: core's ``constant_folding``, ``common_subexpression_elimination`` (level 1),
  ``remove_detach``, ``remove_identity_ops`` (level 2, inference) and ``dead_code_elimination``
  (level 1, which also runs after every pipeline);
- ``fold``: rewrites that fold parameters into others (oar-nn's conv + batch-norm folding);
- ``quantize``: quantization rewrites (oar-slim's ``quantized_ops``: int8 layers), inference;
- ``fuse``: ops into fused kernels (oar-nn's linear and conv with bias and activation);
- ``fuse_elementwise``: core's ``fuse_elementwise`` (``oar._graph.fusion``), last, so that it
  sees what the other fusions left.

Core's passes, by phase: ``constant_folding`` (level 1) evaluates nodes whose inputs are all
constants (and that draw no random numbers) once; ``common_subexpression_elimination`` (level 1)
computes identical constants and identical nodes once; ``remove_detach`` and
``remove_identity_ops`` (level 2, inference) drop the ``assign`` of ``x.detach()`` and ops that
return their input unchanged; ``dead_code_elimination`` (level 1) removes nodes no output needs
(random ops stay: they advance the generator, as eager does).

A pass has a ``level`` (the smallest optimisation level that runs it) and may be
``inference_only`` (training programs keep the ops their gradients read) or ``opt_in`` (it runs
only when named in ``enable``: a rewrite a user asks for by name). Core's passes are registered through core's builtin plugin (``oar_register_passes``)
exactly as a plugin registers its own; the pipeline reads the registry.

Passes are written with the rewrite toolkit (``oar._graph.rewrite``, public as
``oar.static.passes``); tests compare outputs before and after each on real programs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from oar._engine.autograd import _set_grad_enabled
from oar._engine.dispatch import eager_mode
from oar._engine.registries import OPS, PASSES
from oar._engine.tensor import Tensor
from oar._graph.program import OpNode, Program, attr_key
from oar._graph.rewrite import rename_values
from oar.errors import ArgumentError

DEFAULT_LEVEL = 2
PHASES = ("simplify", "fold", "quantize", "fuse", "fuse_elementwise")
MAX_FOLDED_ELEMENTS = 1 << 20  # a folded constant larger than this stays an op (file size)


class Pass:
    """A named program rewrite in a phase of the pipeline.

    >>> from oar.static.passes import Pass
    >>> identity = Pass("identity", lambda program: program, phase="fuse", level=3)
    >>> identity.name, identity.phase, identity.level, identity.inference_only, identity.opt_in
    ('identity', 'fuse', 3, False, False)
    """

    def __init__(self, name: str, fn: Callable[[Program], Program], *, phase: str = "simplify", level: int = 1,
                 inference_only: bool = False, opt_in: bool = False, doc: str = ""):
        if phase not in PHASES:
            raise ArgumentError(f"Pass {name!r}: phase must be one of {list(PHASES)}, got {phase!r}")
        self.name = name
        self.fn = fn
        self.phase = phase
        self.level = level
        self.inference_only = inference_only
        self.opt_in = opt_in
        self.__doc__ = doc or fn.__doc__

    def __call__(self, program: Program) -> Program:
        return self.fn(program)

    def __repr__(self) -> str:
        flags = "".join((" inference" if self.inference_only else "", " opt-in" if self.opt_in else ""))
        return f"<pass {self.name} {self.phase} level={self.level}{flags}>"


def graph_pass(*, phase: str = "simplify", level: int = 1, inference_only: bool = False,
               opt_in: bool = False) -> Callable[[Callable[[Program], Program]], Pass]:
    """Decorator: the function becomes a ``Pass`` named after it (still called as before).

    >>> from oar.static.passes import graph_pass
    >>> @graph_pass(phase="fuse", level=2, inference_only=True)
    ... def my_fusion(program):
    ...     return program
    >>> my_fusion
    <pass my_fusion fuse level=2 inference>
    """

    def make(fn: Callable[[Program], Program]) -> Pass:
        return Pass(fn.__name__, fn, phase=phase, level=level, inference_only=inference_only, opt_in=opt_in)

    return make


@graph_pass(level=1)
def dead_code_elimination(program: Program) -> Program:
    """Remove nodes whose outputs no output, update or live node reads (random ops stay)."""
    live = set(program.output_ids())
    kept = []
    for node in reversed(program.nodes):
        if any(v in live for v in node.outputs) or "random" in OPS.get(node.op).traits:
            kept.append(node)
            live.update(node.inputs)
    program.nodes = kept[::-1]
    return program.prune()



@graph_pass(level=1)
def common_subexpression_elimination(program: Program) -> Program:
    """Compute identical constants and identical (op, inputs, attributes) nodes once."""
    rename: dict[int, int] = {}
    by_content: dict[tuple, int] = {}
    for name, vid in program.constants.items():
        a = program.constant_data[name]
        key = (a.dtype.str, a.shape, a.tobytes())
        if key in by_content:
            rename[vid] = by_content[key]
        else:
            by_content[key] = vid
    rename_values(program, rename)
    rename = {}
    seen: dict[tuple, list[int]] = {}
    kept = []
    for node in program.nodes:
        node.inputs = [rename.get(v, v) for v in node.inputs]
        if "random" in OPS.get(node.op).traits:
            kept.append(node)
            continue
        key = (node.op, tuple(node.inputs), attr_key(node.attrs), node.no_grad)
        first = seen.get(key)
        if first is None:
            seen[key] = node.outputs
            kept.append(node)
        else:
            rename.update(zip(node.outputs, first))
    program.nodes = kept
    rename_values(program, rename)
    return program.prune()



@graph_pass(level=1)
def constant_folding(program: Program) -> Program:
    """Evaluate nodes whose inputs are all constants (no random ops) into constants."""
    constant = set(program.constants.values())
    kept = []
    for node in program.nodes:
        op = OPS.get(node.op)
        if "random" in op.traits or not all(v in constant for v in node.inputs):
            kept.append(node)
            continue
        args = tuple(Tensor._wrap(program.constant_value(v), "cpu", True, None, 0, None) for v in node.inputs)
        previous = _set_grad_enabled(False)
        try:
            result = eager_mode().apply(op, args, dict(node.attrs))  # the eager kernels, no mode above
        except Exception:  # noqa: BLE001 - an op that cannot run here stays in the program
            kept.append(node)
            continue
        finally:
            _set_grad_enabled(previous)
        results = result if isinstance(result, tuple) else (result,)
        if sum(r._data.size for r in results) > MAX_FOLDED_ELEMENTS:
            kept.append(node)
            continue
        for vid, r in zip(node.outputs, results):
            name = program._unique(f"folded_{vid}")
            value = program.values[vid]
            value.name = name
            value.shape = tuple(r._data.shape)
            program.constants[name] = vid
            program.constant_data[name] = np.array(r._data, copy=True)
            constant.add(vid)
    program.nodes = kept
    return program.prune()



@graph_pass(level=2, inference_only=True)
def remove_detach(program: Program) -> Program:
    """Drop the no_grad ``assign`` nodes that stand for ``detach()``: at inference they copy only."""
    rename = {}
    kept = []
    for node in program.nodes:
        if node.op == "assign" and node.no_grad:
            rename[node.outputs[0]] = node.inputs[0]
        else:
            kept.append(node)
    program.nodes = kept
    rename_values(program, rename)
    return program.prune()


_IDENTITY_SHAPE_OPS = ("reshape", "flatten", "squeeze", "unsqueeze")


def _is_identity(program: Program, node: OpNode) -> bool:
    if len(node.inputs) != 1 or len(node.outputs) != 1:
        return False
    x, y = program.values[node.inputs[0]], program.values[node.outputs[0]]
    if x.dtype is not y.dtype:
        return False
    if node.op in _IDENTITY_SHAPE_OPS:
        # equal shapes with at most one dynamic dim, in the same place: the sizes agree there too
        return x.shape == y.shape and list(x.shape).count(None) <= 1
    if node.op == "cast":
        return True  # same dtype in and out
    if node.op == "scale":
        return y.dtype.is_floating and node.attrs.get("scale", 1.0) == 1 and node.attrs.get("bias", 0.0) == 0
    return False


def _is_input(program: Program, vid: int) -> bool:
    return vid in program.feeds or program.is_param(vid) or program.is_constant(vid)


@graph_pass(level=2, inference_only=True)
def remove_identity_ops(program: Program) -> Program:
    """Drop ops that return their input unchanged: a reshape, flatten or squeeze to the same shape,
    a cast to the same dtype, a scale by 1 plus 0 (Dropout in eval mode and Identity leave no node
    to remove: they return their input while tracing). A returned value stays computed when its
    input is a feed, parameter or constant, so no output is the caller's own tensor."""
    outputs = set(program.output_ids())
    rename = {}
    kept = []
    for node in program.nodes:
        source = node.inputs[0] if node.inputs else None
        if _is_identity(program, node) and not (node.outputs[0] in outputs and _is_input(program, rename.get(source, source))):
            rename[node.outputs[0]] = rename.get(source, source)
        else:
            kept.append(node)
    program.nodes = kept
    rename_values(program, rename)
    return program.prune()





def select_passes(level: int = DEFAULT_LEVEL, *, inference: bool = True, enable=(), disable=()) -> list:
    """The registered passes a pipeline at ``level`` runs: phase by phase, each phase in
    registration order. ``enable`` adds passes by name (opt-in ones included) whatever their
    level; ``disable`` removes them."""
    enable, disable = set(enable), set(disable)
    unknown = (enable | disable) - set(PASSES)
    if unknown:
        raise ValueError(f"unknown pass(es) {sorted(unknown)}; registered: {sorted(PASSES)}")
    chosen = []
    for name, p in PASSES.items():  # a plugin's pass may be any callable: the attributes default
        if name in disable or (getattr(p, "inference_only", False) and not inference):
            continue
        if name in enable or (not getattr(p, "opt_in", False) and getattr(p, "level", 1) <= level):
            chosen.append(p)
    chosen.sort(key=lambda p: PHASES.index(getattr(p, "phase", "simplify")))  # stable within a phase
    return chosen


def optimize(program: Program, level: int = DEFAULT_LEVEL, *, inference: bool = True, enable=(),
             disable=()) -> Program:
    """A rewritten copy of ``program``: the passes ``select_passes`` picks, then dead code out.

    >>> import oar
    >>> from oar.jit import to_static
    >>> from oar.static.passes import optimize
    >>> f = to_static(lambda x: x * (oar.ones([2]) + 1.0))
    >>> _ = f(oar.ones([2]))
    >>> [n.op for n in optimize(f.concrete_program).nodes]
    ['multiply']
    """
    result = program.clone()
    for p in select_passes(level, inference=inference, enable=enable, disable=disable):
        result = p(result)
        if not isinstance(result, Program):
            raise TypeError(f"pass {getattr(p, 'name', p)!r} returned a {type(result).__name__}, not a Program")
    if level >= 1 and "dead_code_elimination" not in set(disable):
        result = dead_code_elimination(result)
    for node in result.nodes:  # control flow (cond / while): each block is a closed program, optimized alike
        for name, block in [(k, a) for k, a in node.attrs.items() if isinstance(a, Program)]:
            node.attrs[name] = optimize(block, level, inference=inference, enable=enable, disable=disable)
    result.validate()
    return result


__all__ = ["Pass", "graph_pass", "PHASES", "optimize", "select_passes", "DEFAULT_LEVEL"]
