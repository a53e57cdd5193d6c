"""Tracing a Python function into a ``Program``: the mode that ``to_static`` pushes.

``TracingMode`` sits on the dispatch mode stack while the function runs on real tensors. Each op
call runs eagerly below it -- so Python control flow on shapes works and every tensor holds real
values -- and is recorded as an ``OpNode`` whose output metas come from the op's meta function
on the input *values'* metas (keeping dynamic ``None`` dims). A side table maps each tensor seen
to its value. A tensor the table does not know is

- a parameter or buffer (a layer's, by its structured name; or any tensor with
  ``stop_gradient=False`` or ``persistable=True``): a named program input read at run time;
- a tensor sharing the buffer of a traced value (``x.detach()``): an ``assign`` under no_grad;
- otherwise a constant, copied into the program (``oar.zeros(...)`` made inside the function).

Python reading a traced value -- ``bool(t)``, ``float(t)``, ``t.item()``, ``t.numpy()``,
``t.tolist()``, printing it -- means data-dependent Python: the program would bake one answer
in. The tracer detects it (``Tensor.numpy`` calls it, and every other read goes through
``numpy``) and *breaks the graph*: the capture is abandoned, the function finishes eagerly
(its results are right), and the caller falls back to eager for that function, warning once
with the file and line of the user's code -- or raises ``GraphBreakError`` with
``full_graph=True``. Reseeding the global random generator inside the function is a break too:
a program replays its random ops, not the seeding.

With ``guard_shapes=True`` (``to_static``'s captures) the dynamic dims of traced tensors reach the
user's Python as ``SymInt``s (``oar._graph.symbolic``): the decisions Python takes on them are
recorded in ``shape_guards``, and a size that reaches an op's attributes marks the capture as
baked. The tracer also lists in ``called`` the user functions that ran (with their instance), for
to_static's guards on the Python values they read.
"""

from __future__ import annotations

import functools
import operator
import os
import sys
from typing import Any

import numpy as np

from oar._engine import eager as _eager
from oar._engine.dispatch import Mode
from oar._engine.op import TensorMeta
from oar._engine.registries import BACKENDS
from oar._engine.tensor import DATA_WATCHERS, SHAPE_WATCHERS, Tensor
from oar._graph.program import Program, ValueRef, _copy_attrs
from oar._graph.symbolic import UNKNOWN, ShapeGuards, evaluate, plain_attrs, sym
from oar._ops.random import default_generator
from oar.errors import OarError


class GraphBreakError(OarError, RuntimeError):
    """A to_static function with ``full_graph=True`` does something a Program cannot hold
    (data-dependent Python control flow, reading a tensor's values into Python, ...)."""


_OAR_DIRS: list[str] = []


def _oar_dirs() -> tuple[str, ...]:
    if not _OAR_DIRS:  # every distribution's oar/ folder (the namespace's __path__)
        _OAR_DIRS.extend(os.path.abspath(p) + os.sep for p in sys.modules["oar"].__path__)
    return tuple(_OAR_DIRS)


def user_location(skip: int = 1) -> tuple[str, int]:
    """(file, line) of the innermost frame outside oar's packages: the user's code that did it."""
    dirs = _oar_dirs()
    frame = sys._getframe(skip)
    fallback = None
    while frame is not None:
        filename = frame.f_code.co_filename
        if fallback is None:
            fallback = (filename, frame.f_lineno)
        if not os.path.abspath(filename).startswith(dirs) and not filename.startswith("<frozen"):
            return filename, frame.f_lineno
        frame = frame.f_back
    return fallback or ("<unknown>", 0)


_USER_CODE: dict = {}  # code object -> whether it is outside oar's packages


def is_user_code(code) -> bool:
    """Whether ``code`` lies outside oar's packages (the user's, or another library's)."""
    known = _USER_CODE.get(code)
    if known is None:
        filename = code.co_filename
        known = _USER_CODE[code] = not filename.startswith("<frozen") and \
            not os.path.abspath(filename).startswith(_oar_dirs())
    return known


def location_of(exc: BaseException) -> str | None:
    """``"file.py:LINE"`` of the innermost frame of ``exc``'s traceback in the user's code."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        if is_user_code(tb.tb_frame.f_code):
            found = f"{os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


def add_location(exc: BaseException, where: str | None) -> BaseException:
    """Name the user's line ``where`` (``"model.py:12"``) in ``exc``'s message, once, keeping its
    type: a one-string-argument exception gets `` (at model.py:12)`` appended, any other a note."""
    if where is None or getattr(exc, "_oar_where", None) is not None:
        return exc
    try:
        exc._oar_where = where
    except AttributeError:  # an exception type without a __dict__
        return exc
    args = exc.args
    if len(args) == 1 and isinstance(args[0], str) and type(exc).__str__ is BaseException.__str__:
        exc.args = (f"{args[0]} (at {where})",)
    else:
        exc.add_note(f"(at {where})")
    return exc


def _version(t: Tensor) -> int:
    return t._vc[0] if t._vc is not None else 0


def _rng_state():
    return default_generator().bit_generator.state


class GraphBreak:
    """Where and why a capture was abandoned."""

    __slots__ = ("filename", "lineno", "reason")

    def __init__(self, filename: str, lineno: int, reason: str):
        self.filename, self.lineno, self.reason = filename, lineno, reason

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}: {self.reason}"


class TracingMode(Mode):
    """Record op calls into ``program`` while running them eagerly (see the module docstring).

    ``state`` maps ``id(tensor)`` of a layer's parameters and buffers to ``(name, kind, tensor)``
    (kind: ``"parameter"`` or ``"buffer"``); ``full_graph`` makes a graph break raise
    ``GraphBreakError``; ``isolate`` makes ``restore()`` undo the capture's in-place writes;
    ``guard_shapes`` hands dynamic dims to the user's Python as SymInts (see the module docstring).
    """

    def __init__(self, program: Program, state: dict[int, tuple[str, str, Tensor]] | None = None,
                 full_graph: bool = False, isolate: bool = False, guard_shapes: bool = False):
        self.program = program
        self.table: dict[int, list] = {}  # id(tensor) -> [tensor, value id, version]
        self.arrays: dict[int, tuple[Any, int]] = {}  # id(array) -> (array, value id): buffer aliases
        self.dynamic: set[int] = set()  # value ids that depend on inputs, parameters or random draws
        # Values that live inside a control-flow block (oar.static.nn.cond / while_loop): a tensor
        # bound to one cannot be read outside its block.
        self.hidden: set[int] = set()
        self.state = state or {}
        self.state_by_array = {id(t._data): t for (_, _, t) in self.state.values()}
        self.param_tensors: dict[str, Tensor] = {}  # captured parameters by name
        self.feed_tensors: list[Tensor] = []
        self.full_graph = full_graph
        self.grad_at_entry = _eager.grad_enabled
        self.broken: GraphBreak | None = None
        self.recording = True
        self._rng = None
        # isolate: a capture that is not the user's call keeps copies of the parameters and inputs
        # it reads, and ``restore()`` undoes its in-place writes.
        self.isolate = isolate
        self._saved: dict[int, tuple] = {}
        self._grads: dict[int, tuple] = {}  # id(parameter) -> (it, its .grad, a copy) when first seen
        for (_, _, t) in self.state.values():
            self._remember_grad(t)
        self.shape_guards = ShapeGuards() if guard_shapes else None
        # value id -> per axis: None for a static dim, else the input dims it may be (see _inherit_dims)
        self.dim_exprs: dict[int, tuple] = {}
        self.called: dict[tuple, tuple] = {}  # (function, instance or None) of the user functions that ran

    # -- the table ----------------------------------------------------------------------------
    def _save(self, t: Tensor) -> None:
        if self.isolate and id(t) not in self._saved and type(t._data) is np.ndarray:
            self._saved[id(t)] = (t, t._data, t._data.copy(), _version(t), t._vc)

    def restore(self) -> None:
        """Put back the values of the parameters and inputs an isolated capture changed in place."""
        for t, data, copy, version, vc in self._saved.values():
            if t._data is not data or _version(t) != version:
                # its counter too: a write that gave t a new buffer gave it a counter of its own,
                # and the old buffer's counter is the one its views share
                t._data, t._vc = data, vc
                if data.flags.writeable:
                    np.copyto(data, copy)
                else:
                    t._data = copy

    def _bind(self, t: Tensor, vid: int) -> None:
        self.table[id(t)] = [t, vid, _version(t)]
        self.arrays[id(t._data)] = (t._data, vid)

    def feed(self, t: Tensor, shape, name: str) -> int:
        self._save(t)
        v = self.program.add_feed(shape, t.dtype, name)
        if self.shape_guards is not None:
            k = len(self.feed_tensors)
            self.dim_exprs[v.id] = tuple(None if d is not None else (("dim", k, axis),) for axis, d in enumerate(shape))
        if id(t) not in self.table:  # one tensor given twice is fed once (the cache key knows)
            self._bind(t, v.id)
        self.dynamic.add(v.id)
        self.feed_tensors.append(t)
        return v.id

    def _traced_array(self, data) -> int | None:
        """The value whose buffer ``data`` is, or is a view of."""
        while data is not None:
            hit = self.arrays.get(id(data))
            if hit is not None and hit[0] is data:
                return hit[1]
            data = getattr(data, "base", None)
        return None

    def value_of(self, t: Tensor) -> int:
        """The value id of ``t``, capturing it as a parameter or constant when it is new."""
        entry = self.table.get(id(t))
        if entry is not None and entry[0] is t:
            if entry[2] == _version(t):
                if entry[1] in self.hidden:
                    self.break_graph("a tensor computed inside a cond branch or a while_loop body is used outside "
                                     "it; return it from the branch or body instead")
                return entry[1]
            # Changed in place outside apply_inplace (oar.assign(x, output=t)): follow its buffer.
            hit = self.arrays.get(id(t._data))
            if hit is not None and hit[0] is t._data:
                self._bind(t, hit[1])
                return hit[1]
            self.break_graph("a tensor was modified in place outside oar's ops")
            return entry[1]
        data = t._data
        hit = self.arrays.get(id(data))
        if hit is None or hit[0] is not data:
            owner = self.state_by_array.get(id(data))
            if owner is not None and owner is not t and owner._data is data:  # detach() of a parameter
                hit = (data, self.value_of(owner))
        if hit is not None and hit[0] is data:
            # Shares a traced buffer without an op (x.detach()): the same values, no gradient.
            src = self.program.values[hit[1]]
            out = self.program.new_value(src.shape, src.dtype)
            self.program.add_node("assign", [src.id], [out.id], {}, no_grad=True)
            if hit[1] in self.dynamic:
                self.dynamic.add(out.id)
            if hit[1] in self.dim_exprs:
                self.dim_exprs[out.id] = self.dim_exprs[hit[1]]
            self._bind(t, out.id)
            return out.id
        known = self.state.get(id(t))
        if known is not None or not t.stop_gradient or t.persistable:
            if known is not None:
                name, kind = known[0], known[1]
            else:
                name = t.name
                kind = "buffer" if t.stop_gradient else "parameter"
            name = name if name not in self.program.params else self.program._unique(name)
            self._save(t)
            v = self.program.add_param(name, t, kind)
            self.param_tensors[name] = t
            self._remember_grad(t)
            self.dynamic.add(v.id)
            self._bind(t, v.id)
            return v.id
        if self._traced_array(getattr(data, "base", None)) is not None:
            self.break_graph("a tensor was made from a traced tensor's buffer outside oar's ops")
        if type(data) is np.ndarray:
            array = np.array(data, copy=True)
        else:
            array = np.array(BACKENDS.get(t._backend).to_numpy(data), copy=True)
        v = self.program.add_constant(array)
        self._bind(t, v.id)
        return v.id

    # -- the mode -----------------------------------------------------------------------------
    def apply(self, op, inputs: tuple, attrs: dict):
        if not self.recording:
            return self.apply_below(op, inputs, attrs)
        if self.shape_guards is not None and attrs:
            attrs = plain_attrs(attrs, self.shape_guards)  # a dynamic size in an attribute: baked in
        if op.promote and len(inputs) > 1:
            dtype0 = inputs[0]._data.dtype
            if any(t._data.dtype != dtype0 for t in inputs):
                # Casts first, as eager does, so that they are recorded and the node's inputs agree.
                inputs = _eager._promote_inputs(op, inputs)
        in_ids = [self.value_of(t) for t in inputs]
        random = "random" in op.traits
        if random:
            self._check_rng()
        out = self.apply_below(op, inputs, attrs)
        if random and self._rng is not None:
            self._rng = _rng_state()
        if not self.recording:
            return out
        outs = out if type(out) is tuple else (out,)
        values = self.program.values
        metas = self._out_metas(op, [values[i].meta for i in in_ids], attrs, outs)
        dynamic = random or any(i in self.dynamic for i in in_ids)
        out_ids = []
        for t, m in zip(outs, metas):
            v = self.program.new_value(m.shape, m.dtype)
            self._bind(t, v.id)
            if dynamic:
                self.dynamic.add(v.id)
            out_ids.append(v.id)
        if self.shape_guards is not None:
            self._inherit_dims(inputs, in_ids, outs, metas, out_ids)
        filename, lineno = user_location(2)
        self.program.add_node(op.name, in_ids, out_ids, _copy_attrs(attrs),
                              no_grad=self.grad_at_entry and not _eager.grad_enabled,
                              where=f"{os.path.basename(filename)}:{lineno}")
        return out

    @staticmethod
    def _out_metas(op, in_metas, attrs, outs) -> list[TensorMeta]:
        # The meta's dynamic dims (None) survive even when every input is static: an op whose output
        # size depends on the data (nonzero, masked_select) must not record the example's size.
        actual = [TensorMeta(tuple(t._data.shape), t.dtype) for t in outs]
        try:
            m = op.meta(*in_metas, **attrs)
            metas = (m,) if isinstance(m, TensorMeta) else tuple(m)
        except Exception:  # noqa: BLE001 - a meta that cannot take dynamic dims: keep what ran
            return actual
        if len(metas) != len(actual):
            return actual
        merged = []
        for m, a in zip(metas, actual):
            if len(m.shape) != len(a.shape):
                merged.append(a)
            else:
                merged.append(TensorMeta(tuple(None if d is None else s for d, s in zip(m.shape, a.shape)), a.dtype))
        return merged

    def _inherit_dims(self, inputs, in_ids, outs, metas, out_ids) -> None:
        """The input dims each dynamic output dim may be: those of the op's inputs with the same
        size (the batch passed through). Several candidates are told apart when Python reads the
        dim (``_pick``); none leaves the dim's origin unknown. The second trace at another size
        checks the choice (``ShapeGuards`` values are evaluated there against the real sizes)."""
        by_size: dict | None = None
        for t, m, vid in zip(outs, metas, out_ids):
            if None not in m.shape:
                continue
            if by_size is None:
                by_size = {}
                for t_in, i in zip(inputs, in_ids):
                    for candidates, size in zip(self.dim_exprs.get(i) or (), t_in._data.shape):
                        if candidates:
                            known = by_size.setdefault(size, [])
                            known.extend(e for e in candidates if e not in known)
            self.dim_exprs[vid] = tuple(None if d is not None else tuple(by_size.get(s, ()))
                                        for d, s in zip(m.shape, t._data.shape))

    def note_call(self, function, instance=None) -> None:
        """A user function (bound to ``instance``) runs during the capture."""
        self.called.setdefault((id(function), id(instance)), (function, instance))

    def _pick(self, candidates: tuple):
        if not candidates:
            return UNKNOWN
        first = candidates[0]
        for other in candidates[1:]:  # equal now; the capture holds while they stay equal
            self.shape_guards.record("eq", first, other, True)
        return first

    def sym_shape(self, t: Tensor) -> list | None:
        """``t``'s shape with its dynamic dims as SymInts, or None when it has none (or ``t`` is
        not a value of this capture)."""
        guards = self.shape_guards
        if guards is None or not guards.active or not self.recording:
            return None
        entry = self.table.get(id(t))
        if entry is None or entry[0] is not t or entry[2] != _version(t):
            return None
        shape = t._data.shape
        exprs = self.dim_exprs.get(entry[1])
        if exprs is None:
            value = self.program.values.get(entry[1])
            if value is None or value.shape is None or None not in value.shape:
                return None
            exprs = tuple(None if d is not None else () for d in value.shape)  # dynamic, origin unknown
        if len(exprs) != len(shape):
            return None
        dims = [s if candidates is None else sym(s, self._pick(candidates), guards)
                for s, candidates in zip(shape, exprs)]
        feeds = [f._data.shape for f in self.feed_tensors]
        for d, size, candidates in zip(dims, shape, exprs):
            # An origin chosen by size must give this very size: at the second trace's sizes too.
            if candidates and evaluate(d.expr, feeds) != size:
                guards.unknown = True
        return dims

    def _on_shape(self, t: Tensor, what: str):
        """``t.shape`` / ``t.size`` during the capture: SymInts for the user's code (oar's own code
        gets plain ints, its decisions are the second trace's to check)."""
        dims = self.sym_shape(t) if is_user_code(sys._getframe(2).f_code) else None
        if dims is None:
            return list(t._data.shape) if what == "shape" else int(t._data.size)
        return dims if what == "shape" else functools.reduce(operator.mul, dims, 1)

    def rebind(self, target: Tensor, result: Tensor) -> None:
        """``target`` now holds ``result``'s value (an in-place op): later reads use that value."""
        if not self.recording:
            return
        entry = self.table.get(id(target))
        if entry is None or entry[0] is not target:
            self.value_of(target)  # a parameter or feed seen first here: it becomes an input
        vid = self.value_of(result)
        self._bind(target, vid)

    def on_data_access(self, t: Tensor) -> None:
        """Python is about to read ``t``'s values: a graph break when they depend on the inputs."""
        if not self.recording:
            return
        entry = self.table.get(id(t))
        if entry is not None and entry[0] is t:
            vid = entry[1] if entry[2] == _version(t) else self._traced_array(t._data)
        elif id(t) in self.state or not t.stop_gradient or t.persistable:
            vid = -1  # a parameter's values
        else:
            vid = self._traced_array(t._data)
        if vid is not None and (vid == -1 or vid in self.dynamic):
            self.break_graph("Python reads the values of a traced tensor (bool(), float(), int(), .item(), "
                             ".numpy(), .tolist(), print, ...): data-dependent Python cannot be captured")

    def _check_rng(self) -> None:
        state = _rng_state()
        if self._rng is None:
            self._rng = state
        elif state != self._rng:
            self.break_graph("the global random generator was reseeded or drawn from outside oar's ops "
                             "(oar.seed inside the function?); a program replays random ops, not the seeding")

    def python_backward(self, what: str) -> None:
        if self.recording:
            self.break_graph(f"{what} has a Python backward, which a program cannot hold")

    def break_graph(self, reason: str, location: tuple[str, int] | None = None) -> None:
        """Abandon the capture at the user's line (``location``, or the innermost user frame)."""
        filename, lineno = location or user_location(2)
        self.broken = GraphBreak(filename, lineno, reason)
        self.recording = False
        if self.full_graph:
            raise GraphBreakError(f"to_static(full_graph=True): {self.broken}")

    # -- entering and leaving -----------------------------------------------------------------
    def __enter__(self):
        super().__enter__()
        DATA_WATCHERS.append(self.on_data_access)
        if self.shape_guards is not None:
            SHAPE_WATCHERS.append(self._on_shape)
        try:
            self._rng = _rng_state() if "oar._ops.random" in sys.modules else None
        except Exception:  # noqa: BLE001
            self._rng = None
        return self

    def __exit__(self, *exc):
        DATA_WATCHERS.remove(self.on_data_access)
        if self.shape_guards is not None:
            SHAPE_WATCHERS.remove(self._on_shape)
        return super().__exit__(*exc)

    def finish(self, result) -> Any:
        """The output structure of ``result`` (ValueRefs for tensors), and the state updates."""
        if self.recording and self._rng is not None and _rng_state() != self._rng:
            self.break_graph("the global random generator was reseeded inside the function (oar.seed?); a "
                             "program replays random ops, not the seeding")
        structure = self._structure(result)
        if self.recording:
            self._check_untraced_writes()
        if not self.recording:
            return None
        program = self.program
        for name, t in self.param_tensors.items():
            vid = self.table[id(t)][1]
            if vid != program.params[name]:
                program.updates.append(("param", name, vid))
        for i, t in enumerate(self.feed_tensors):
            if next(j for j, u in enumerate(self.feed_tensors) if u is t) != i:  # given twice: updated once
                continue
            vid = self.table[id(t)][1]
            if vid != program.feeds[i]:
                program.updates.append(("feed", i, vid))
        program.outputs = structure
        return structure

    def _remember_grad(self, t: Tensor) -> None:
        if id(t) not in self._grads:
            grad = t._grad
            copy = None if grad is None or type(grad._data) is not np.ndarray else grad._data.copy()
            self._grads[id(t)] = (t, grad, copy)

    def _check_untraced_writes(self) -> None:
        """A parameter or input written without an op (an optimizer step), or a gradient set or
        cleared (``backward()``, ``clear_grad()``) inside the function: a replay would skip it."""
        for t in [*self.param_tensors.values(), *self.feed_tensors]:
            entry = self.table.get(id(t))
            if entry is not None and entry[0] is t and entry[2] != _version(t):
                self.break_graph("a parameter or input was modified without an op (an optimizer step inside the "
                                 "function?); call opt.step() outside the to_static function")
                return
        for t, grad, copy in self._grads.values():
            if t._grad is not grad or (copy is not None and not np.array_equal(grad._data, copy, equal_nan=True)):
                self.break_graph("a parameter's .grad changed inside the function (backward() or clear_grad()?); "
                                 "a program replays the forward: call loss.backward() and the optimizer outside "
                                 "the to_static function")
                return

    def _structure(self, obj):
        if isinstance(obj, Tensor):
            return ValueRef(self.value_of(obj))
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return plain_attrs(obj, self.shape_guards)  # a dynamic size returned: the program holds this one
        if isinstance(obj, (list, tuple)):
            items = [self._structure(o) for o in obj]
            if isinstance(obj, list):
                return items
            return type(obj)(*items) if hasattr(obj, "_fields") else tuple(items)
        if isinstance(obj, dict):
            return type(obj)((k, self._structure(v)) for k, v in obj.items())
        if isinstance(obj, np.generic):
            return obj.item()
        self.break_graph(f"the function returns a {type(obj).__name__}, which a program cannot hold (return "
                         f"tensors, numbers, strings, None, and lists, tuples and dicts of them)")
        return None
