"""The helpers converted code calls (under the name ``__oar_jst``).

Each helper behaves exactly like the Python it replaces when its condition is a Python value, or
a tensor whose value does not depend on the captured function's inputs. When the condition is a
traced tensor that depends on them, it builds ``oar.static.nn.cond`` / ``while_loop``:

- the variables a branch or loop body assigns travel through the op: tensors as they are,
  Python numbers as tensors (a counter in a tensor-dependent loop becomes an int64 tensor),
  other Python values only when every path leaves them the same;
- a variable that exists on one path only is, after the op, an ``UndefinedVar`` that raises a
  clear error naming it and the line when it is used;
- what the op cannot hold -- a branch or loop that changes Python state (an object in place, a
  global), a variable holding different Python objects on different paths -- breaks the graph
  at that line (the function falls back to eager with one warning, or raises under
  ``full_graph=True``).
"""

from __future__ import annotations

import builtins
import functools
import weakref

import numpy as np

from oar._engine.dispatch import _mode_stack
from oar._engine.tensor import Tensor, to_tensor
from oar._graph.tracing import GraphBreakError, TracingMode, user_location
from oar._ops.assign import assign
from oar._ops.creation import zeros
from oar._ops.elementwise import cast, logical_and, logical_not, logical_or
from oar._ops.shape import reshape
from oar.errors import ArgumentError, OarError
from oar.jit.dy2static.transformer import RETURN_VALUE_PREFIX
from oar.static import nn as static_nn


class UndefinedVariableError(OarError, NameError):
    """A variable used where it has no value on every path of a converted ``if`` or loop."""


class UndefinedVar:
    """The value of a variable that is not defined (yet) on the path the program takes."""

    __slots__ = ("name", "reason")

    def __init__(self, name: str, reason: str | None = None):
        self.name, self.reason = name, reason

    def _fail(self, *args, **kwargs):
        why = self.reason or "it is used before it is assigned"
        raise UndefinedVariableError(f"local variable {self.name!r} has no value here: {why}")

    __getattr__ = __call__ = __iter__ = __len__ = __getitem__ = __setitem__ = __bool__ = __index__ = _fail
    __float__ = __int__ = __array__ = __neg__ = __pos__ = __abs__ = __invert__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _fail
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = _fail

    def __repr__(self) -> str:
        return f"<undefined {self.name}>"


def return_value(value, placeholder: bool = False):
    """The function's result (``placeholder``: the one-exit return variable, ``None`` when the
    function fell off its end); a variable without a value here raises its clear error."""
    if isinstance(value, UndefinedVar):
        if placeholder:
            return None
        value._fail()
    if isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, UndefinedVar):
                item._fail()
    return value


# ------------------------------------------------------------------------------------------
# is this a traced tensor?
# ------------------------------------------------------------------------------------------
def _tracer() -> TracingMode | None:
    for mode in reversed(_mode_stack):
        if isinstance(mode, TracingMode):
            return mode if mode.recording else None
    return None


def _depends_on_inputs(tracer: TracingMode, t: Tensor) -> bool:
    """Whether ``t``'s values depend on the captured function's inputs (else Python may read them)."""
    entry = tracer.table.get(id(t))
    if entry is not None and entry[0] is t:
        vid = entry[1]
    elif id(t) in tracer.state or not t.stop_gradient or t.persistable:
        return True
    else:
        vid = tracer._traced_array(t._data)
    return vid is not None and vid in tracer.dynamic


def _traced(value) -> TracingMode | None:
    """The recording tracer when ``value`` is a tensor it traces from the inputs, else None."""
    if not isinstance(value, Tensor):
        return None
    tracer = _tracer()
    if tracer is None or not _depends_on_inputs(tracer, value):
        return None
    return tracer


def _location() -> str:
    filename, lineno = user_location(2)
    return f"{filename}:{lineno}"


def _break(tracer: TracingMode, reason: str) -> None:
    tracer.break_graph(reason)  # raises GraphBreakError under full_graph=True


# ------------------------------------------------------------------------------------------
# values through an op: flatten to tensors, numbers become tensors
# ------------------------------------------------------------------------------------------
_NUMBERS = (bool, int, float, np.bool_, np.integer, np.floating)

class _IdentitySet:
    """A set of tensors by identity, not keeping them alive (a WeakSet compares with ``==``,
    which on tensors is an op)."""

    def __init__(self):
        self._refs: dict[int, weakref.ref] = {}

    def add(self, t: Tensor) -> None:
        key = id(t)
        self._refs[key] = weakref.ref(t, lambda _, key=key: self._refs.pop(key, None))

    def __contains__(self, t) -> bool:
        ref = self._refs.get(id(t))
        return ref is not None and ref() is t


# Tensors that stand for a Python number (a counter ``i = 0`` carried by a loop): nothing else can
# refer to them, so ``i += 1`` inside a block may work on a copy made inside that block -- as
# Python's ints behave -- instead of writing into a tensor from outside the block.
_FROM_NUMBERS = _IdentitySet()


def _as_tensor(value) -> Tensor:
    if isinstance(value, (bool, np.bool_)):
        out = to_tensor(bool(value), dtype="bool")
    elif isinstance(value, (int, np.integer)):
        out = to_tensor(int(value), dtype="int64")
    else:
        out = to_tensor(float(value), dtype="float32")
    _FROM_NUMBERS.add(out)
    return out


def _own_copies(values: list) -> list:
    """``values`` with the tensors that stand for Python numbers copied (see ``_FROM_NUMBERS``)."""
    out = []
    for v in values:
        if isinstance(v, Tensor) and v in _FROM_NUMBERS:
            v = assign(v)
            _FROM_NUMBERS.add(v)
        out.append(v)
    return out


def _flatten(value, leaves: list, numbers: list | None = None):
    """The structure of ``value`` with its tensors (and numbers, as tensors) moved to ``leaves``
    (the positions of the numbers go to ``numbers``)."""
    if isinstance(value, Tensor):
        leaves.append(value)
        return ("T",)
    if isinstance(value, _NUMBERS):
        if numbers is not None:
            numbers.append(len(leaves))
        leaves.append(_as_tensor(value))
        return ("T",)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return ("nt", type(value), tuple(_flatten(v, leaves, numbers) for v in value))
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_flatten(v, leaves, numbers) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((k, _flatten(v, leaves, numbers)) for k, v in value.items()))
    return ("py", value)


def _unflatten(spec, leaves) -> object:
    if spec[0] == "T":
        return next(leaves)
    if spec[0] == "py":
        return spec[1]
    if spec[0] is dict:
        return {k: _unflatten(s, leaves) for k, s in spec[1]}
    if spec[0] == "nt":
        return spec[1](*[_unflatten(s, leaves) for s in spec[2]])
    items = [_unflatten(s, leaves) for s in spec[1]]
    return items if spec[0] is list else tuple(items)


def _same_spec(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "nt":
        return a[1] is b[1] and all(_same_spec(x, y) for x, y in zip(a[2], b[2]))
    if a[0] == "T":
        return True
    if a[0] == "py":
        return a[1] is b[1] or (type(a[1]) is type(b[1]) and _equal(a[1], b[1]))
    if len(a[1]) != len(b[1]):
        return False
    if a[0] is dict:
        return all(ka == kb and _same_spec(sa, sb) for (ka, sa), (kb, sb) in zip(a[1], b[1]))
    return all(_same_spec(x, y) for x, y in zip(a[1], b[1]))


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - objects without a usable ==: only identity counts
        return False


def _describe(spec) -> str:
    if spec[0] == "T":
        return "a tensor"
    if spec[0] == "py":
        if isinstance(spec[1], UndefinedVar):
            return "not defined"
        return repr(spec[1]) if isinstance(spec[1], (str, type(None))) else f"a {type(spec[1]).__name__}"
    return f"a {spec[1].__name__}" if spec[0] == "nt" else f"a {spec[0].__name__}"


def _zeros_like(spec, leaves_meta):
    """A structure like ``spec`` whose tensors are zeros shaped like ``leaves_meta``."""
    it = iter(leaves_meta)

    def build(s):
        if s[0] == "T":
            # Only rank and dtype matter (the value is never read: the return flag is false on
            # this path), and sizes of 1 keep the program free of the input's sizes.
            shape, dtype = next(it)
            return zeros([1] * len(shape), dtype=dtype)
        if s[0] == "py":
            return s[1]
        if s[0] is dict:
            return {k: build(x) for k, x in s[1]}
        if s[0] == "nt":
            return s[1](*[build(x) for x in s[2]])
        items = [build(x) for x in s[1]]
        return items if s[0] is list else tuple(items)

    return build(spec)


class _Mismatch(Exception):
    """The paths of a converted ``if`` or loop leave a variable in forms one op cannot hold."""


class _Retry(Exception):
    """A return value exists on one path only: run the op again with zeros on the other path."""

    def __init__(self, slot: int, spec, metas):
        super().__init__(slot)
        self.slot, self.spec, self.metas = slot, spec, metas


def _is_return_value(name: str) -> bool:
    return name.startswith(RETURN_VALUE_PREFIX)


def _user_name(name: str) -> str:
    return "the return value" if _is_return_value(name) else name


# ------------------------------------------------------------------------------------------
# if / else
# ------------------------------------------------------------------------------------------
def _predicate(pred: Tensor, what: str) -> Tensor:
    if int(np.prod(pred._data.shape)) != 1:
        raise ArgumentError(f"{_location()}: the condition of this {what} is a tensor of shape {pred.shape}; a "
                            f"condition must hold one element (use .any() or .all())")
    if pred.dtype.name != "bool":
        pred = cast(pred, "bool")
    return reshape(pred, []) if pred._data.ndim else pred


def convert_ifelse(pred, true_fn, false_fn, get_args, set_args, names, true_names, false_names, effect,
                   exits=(False, False)):
    """``if pred: true_fn() else: false_fn()``, as a ``cond`` op when ``pred`` is a traced tensor.

    The branch functions assign ``names`` (through ``nonlocal``); ``get_args`` / ``set_args``
    read and write them; ``effect`` is ``(line, code)`` of a statement that changes a Python
    object in place, or None; ``exits`` says whether each branch always ends by returning,
    breaking or continuing (the rest of the block is then guarded by that flag).
    """
    tracer = _traced(pred)
    nn = static_nn if tracer is not None else None
    if nn is None:
        true_fn() if pred else false_fn()
        return
    where = _location()
    if effect is not None:
        _break(tracer, f"a branch of this tensor-dependent if changes Python state (line {effect[0]}: "
                       f"{effect[1]}); both branches would run: return values from the branches instead")
        true_fn() if pred else false_fn()
        return
    pred = _predicate(pred, "if")
    init = list(get_args())
    # A variable first assigned in one branch exists on that path only -- unless it is the
    # return value, or the other branch returns (breaks, continues): a flag then guards every
    # later read, and zeros stand in for it on that path.
    dropped = {i for i, n in enumerate(names) if isinstance(init[i], UndefinedVar) and not _is_return_value(n)
               and (n in true_names) != (n in false_names) and not exits[n in true_names]}
    slots = [i for i in range(len(names)) if i not in dropped]
    fills: dict[int, tuple] = {}
    for attempt in range(len(slots) + 2):
        try:
            if attempt > len(slots):
                raise _Mismatch("its branches' variables could not be matched")
            out = _run_cond(nn, pred, true_fn, false_fn, get_args, set_args, init, slots, fills, names, exits)
            break
        except _Retry as r:
            fills[r.slot] = (r.spec, r.metas)
        except GraphBreakError:
            raise
        except Exception as e:  # noqa: BLE001 - _Mismatch, or a branch eager would not take failing
            set_args(tuple(init))
            reason = str(e) if isinstance(e, _Mismatch) else f"tracing both branches raised {type(e).__name__}: {e}"
            _break(tracer, f"this tensor-dependent if cannot become a cond op at {where}: {reason}")
            true_fn() if pred else false_fn()
            return
    values = list(init)
    for i in dropped:
        values[i] = UndefinedVar(names[i], f"it is assigned in only one branch of the tensor-dependent if at "
                                           f"{where}; assign it before the if (or in both branches)")
    for i, v in zip(slots, out):
        values[i] = v
    set_args(tuple(values))


def _run_cond(nn, pred, true_fn, false_fn, get_args, set_args, init, slots, fills, names, exits):
    seen: dict[str, list] = {}  # branch -> [(spec, leaf metas)] per slot
    numbers: set[int] = set()  # output positions that stand for Python numbers

    def branch(fn, which):
        def run():
            start = _own_copies(init)
            watched = _watch(start)
            set_args(tuple(start))
            fn()
            _check_unchanged(watched, names, "a branch of this tensor-dependent if")
            values = list(get_args())
            other = seen.get("false" if which == "true" else "true")
            leaves: list = []
            mine = []
            for k, i in enumerate(slots):
                v = values[i]
                if isinstance(v, UndefinedVar) and (_is_return_value(names[i]) or exits[which == "false"]):
                    # Not set on this path, and a flag guards every read of it: zeros shaped like
                    # the other path's value stand in.
                    if i in fills:
                        v = _zeros_like(*fills[i])
                    elif other is not None and not _undefined(other[k][0]):
                        v = _zeros_like(*other[k])
                slot_leaves: list = []
                spec = _flatten(v, slot_leaves)
                mine.append((spec, [(tuple(t._data.shape), t.dtype) for t in slot_leaves]))
                numbers.update(len(leaves) + j for j, t in enumerate(slot_leaves) if t in _FROM_NUMBERS)
                leaves.extend(slot_leaves)
            seen[which] = mine
            if other is not None:
                first_fills = exits[which == "true"]  # the other branch ran first
                _compare(other, mine, slots, names, first_fills)
            set_args(tuple(init))
            return leaves or None
        return run

    result = nn.cond(pred, branch(true_fn, "true"), branch(false_fn, "false"))
    leaves = [] if result is None else list(result) if isinstance(result, (list, tuple)) else [result]
    for k in numbers:
        _FROM_NUMBERS.add(leaves[k])
    it = iter(leaves)
    return [_unflatten(spec, it) for spec, _ in seen["true"]]


def _watch(values) -> list:
    """(slot, tensor, buffer, version) of the tensors among ``values`` that a block must not
    write in place: every one but the copies standing for Python numbers."""
    watched = []
    for i, v in enumerate(values):
        leaves: list = []
        _flatten(v, leaves) if not isinstance(v, _NUMBERS) else None
        for t in leaves:
            if t not in _FROM_NUMBERS:
                watched.append((i, t, t._data, t._vc[0] if t._vc is not None else 0))
    return watched


def _check_unchanged(watched, names, where: str) -> None:
    """An in-place write (``x += y``) to a tensor the block did not make: other names may share
    that tensor, which a program's values cannot."""
    for i, t, data, version in watched:
        if t._data is not data or (t._vc[0] if t._vc is not None else 0) != version:
            raise _Mismatch(f"{where} changes {_user_name(names[i])} in place (x += ..., x.add_(...)); write "
                            f"{_user_name(names[i])} = {_user_name(names[i])} + ... instead")


def _undefined(spec) -> bool:
    return spec[0] == "py" and isinstance(spec[1], UndefinedVar)


def _compare(first, second, slots, names, first_fills: bool) -> None:
    """Check that both branches leave each variable in the same form (raises _Mismatch/_Retry)."""
    for k, ((a, _), (b, b_metas)) in enumerate(zip(first, second)):
        if _same_spec(a, b):
            continue
        name = names[slots[k]]
        if (_is_return_value(name) or first_fills) and _undefined(a) and not _undefined(b):
            raise _Retry(slots[k], b, b_metas)  # the first branch must fill it: run the op again
        raise _Mismatch(f"{_user_name(name)} is {_describe(a)} in one branch and {_describe(b)} in the other")


def _count(spec) -> int:
    if spec[0] == "T":
        return 1
    if spec[0] == "py":
        return 0
    if spec[0] == "nt":
        return sum(_count(s) for s in spec[2])
    if spec[0] is dict:
        return sum(_count(s) for _, s in spec[1])
    return sum(_count(s) for s in spec[1])


def convert_ifelse_expr(pred, true_fn, false_fn):
    """``true_fn() if pred else false_fn()``, as a ``cond`` op when ``pred`` is a traced tensor."""
    box = [None]

    def get():
        return (box[0],)

    def put(values):
        box[0] = values[0]

    def assign(fn):
        def run():
            box[0] = fn()
        return run

    convert_ifelse(pred, assign(true_fn), assign(false_fn), get, put, ("value",), ("value",), ("value",), None)
    return box[0]


# ------------------------------------------------------------------------------------------
# and / or / not
# ------------------------------------------------------------------------------------------
def _bool_tensor(value) -> Tensor:
    if isinstance(value, Tensor):
        return value if value.dtype.name == "bool" else cast(value, "bool")
    return _as_tensor(bool(value))


def convert_logical_and(*operands):
    """``a and b and ...`` with each operand a zero-argument function: Python's short circuit on
    Python values, ``logical_and`` (every operand evaluated) once a traced tensor is involved."""
    return _logical(operands, "and")


def convert_logical_or(*operands):
    """``a or b or ...``: see ``convert_logical_and``."""
    return _logical(operands, "or")


def _logical(operands, kind: str):
    combine = logical_and if kind == "and" else logical_or
    value = operands[0]()
    for k, operand in enumerate(operands[1:], 1):
        tracer = _traced(value)
        if tracer is None:
            if (not value) if kind == "and" else value:  # Python's short circuit
                return value
            value = operand()
            continue
        try:
            other = operand()
        except GraphBreakError:
            raise
        except Exception as e:  # noqa: BLE001 - Python would not have evaluated it
            _break(tracer, f"`{kind}` on a tensor condition evaluates every operand, and operand {k + 1} raised "
                           f"{type(e).__name__}: {e}")
            return _logical([functools.partial(_same, value), *operands[k:]], kind)  # the graph is broken: Python
        value = combine(_bool_tensor(value), _bool_tensor(other))
    return value


def _same(value):
    return value


def convert_logical_not(value):
    """``not value``: ``logical_not`` on a traced tensor."""
    if _traced(value) is not None:
        return logical_not(_bool_tensor(value))
    return not value


def is_python_true(value) -> bool:
    """True for a true Python value (a traced tensor is never "true" to Python)."""
    return _traced(value) is None and bool(value)


# ------------------------------------------------------------------------------------------
# Python state: len() of a traced tensor, variables outside the function
# ------------------------------------------------------------------------------------------
def convert_len(length, value):
    """``len(value)``: a traced tensor's first dim as ``value.shape[0]`` gives it (a dynamic one
    as a SymInt, whose comparisons the capture guards)."""
    if length is builtins.len and isinstance(value, Tensor):
        tracer = _tracer()
        dims = tracer.sym_shape(value) if tracer is not None else None
        if dims:
            return dims[0]
    return length(value)


def outer_store(name: str, kind: str) -> None:
    """The function is about to assign the ``global`` / ``nonlocal`` variable ``name``: a program
    would not do it again on later calls, so the capture breaks at this line."""
    tracer = _tracer()
    if tracer is not None:
        _break(tracer, f"the function assigns the {kind} variable {name!r}, which a program would not do again on "
                       f"later calls; keep such state outside the to_static function")


# ------------------------------------------------------------------------------------------
# loops
# ------------------------------------------------------------------------------------------
def range_args(rng, *args):
    """(start, stop, step) of ``range(*args)``; tensors are kept, Python ints checked as range does."""
    if rng is not builtins.range:
        raise ArgumentError(f"{_location()}: 'range' is not the builtin range here; oar converted this for loop as "
                            f"one over the builtin range (mark the function with oar.jit.not_to_static)")
    if not any(isinstance(a, Tensor) for a in args):
        r = builtins.range(*args)
        return r.start, r.stop, r.step
    for a in args:
        if isinstance(a, Tensor) and not a.dtype.is_integer:
            raise TypeError(f"{_location()}: range() takes integer tensors, got a {a.dtype.name} tensor")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (args[0], args[1], 1) if len(args) == 2 else args
    if isinstance(step, int) and step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return start, stop, step


def range_cond(index, stop, step):
    """Whether a range loop at ``index`` runs once more."""
    if isinstance(step, Tensor):
        return convert_logical_or(lambda: convert_logical_and(lambda: step > 0, lambda: index < stop),
                                  lambda: convert_logical_and(lambda: step < 0, lambda: index > stop))
    return index < stop if step > 0 else index > stop


def convert_while_loop(cond_fn, body_fn, get_args, set_args, names, effect):
    """``while cond_fn(): body_fn()``, as a ``while_loop`` op once the condition is a traced tensor
    (the iterations before that, on Python values, run as Python)."""
    while True:
        pred = cond_fn()
        tracer = _traced(pred)
        nn = static_nn if tracer is not None else None
        if nn is not None:
            break
        if not pred:
            return
        body_fn()
    where = _location()
    if effect is not None:
        _break(tracer, f"the body of this tensor-dependent while loop changes Python state (line "
                       f"{effect[0]}: {effect[1]}); it would run once for all iterations: carry values in variables")
        _python_loop(pred, cond_fn, body_fn)
        return
    init = list(get_args())
    fills: dict[int, tuple] = {}
    for attempt in range(len(names) + 2):
        try:
            if attempt > len(names):
                raise _Mismatch("its variables could not be matched")
            values = _run_while(nn, cond_fn, body_fn, get_args, set_args, init, names, fills, where)
            break
        except _Retry as r:
            fills[r.slot] = (r.spec, r.metas)
        except GraphBreakError:
            raise
        except Exception as e:  # noqa: BLE001 - _Mismatch, or the traced body failing where eager would not
            set_args(tuple(init))
            reason = str(e) if isinstance(e, _Mismatch) else f"tracing the body raised {type(e).__name__}: {e}"
            _break(tracer, f"this tensor-dependent while loop cannot become a while_loop op at {where}: {reason}")
            _python_loop(cond_fn(), cond_fn, body_fn)
            return
    set_args(tuple(values))


def _python_loop(pred, cond_fn, body_fn) -> None:
    while pred:
        body_fn()
        pred = cond_fn()


def _run_while(nn, cond_fn, body_fn, get_args, set_args, init, names, fills, where):
    # Loop variables: what the body assigns and has a value before the loop. A variable first
    # assigned inside the body is recomputed by every iteration and has no value after the loop
    # (a return value gets zeros before the loop: the return flag says whether it was set).
    carried, specs, leaves = [], [], []
    for i, v in enumerate(init):
        if isinstance(v, UndefinedVar) and i in fills:
            v = _zeros_like(*fills[i])
        if isinstance(v, UndefinedVar):
            continue
        carried.append(i)
        specs.append(_flatten(v, leaves))
    numbers = {k for k, t in enumerate(leaves) if t in _FROM_NUMBERS}
    counts = [_count(s) for s in specs]
    in_dtypes = [t.dtype for t in leaves]

    def state(flat):
        values = list(init)
        it = iter(flat)
        for i, spec in zip(carried, specs):
            values[i] = _unflatten(spec, it)
        return values

    def cond(*flat):
        set_args(tuple(state(flat)))
        return _predicate(_bool_tensor(cond_fn()), "while loop")

    def body(*flat):
        # A counter that was a Python number is a fresh tensor: ``i += 1`` may update it in place
        # (no other name can see it), so each iteration works on its own copy.
        flat = [assign(t) if k in numbers else t for k, t in enumerate(flat)]
        for k in numbers:
            _FROM_NUMBERS.add(flat[k])
        start = state(flat)
        watched = _watch(start)
        set_args(tuple(start))
        body_fn()
        _check_unchanged(watched, names, "the body of this tensor-dependent while loop")
        after = list(get_args())
        out: list = []
        for k, i in enumerate(carried):
            spec = _flatten(after[i], out)
            if not _same_spec(specs[k], spec):
                raise _Mismatch(f"{_user_name(names[i])} is {_describe(specs[k])} before the loop and "
                                f"{_describe(spec)} after an iteration")
        for i, v in enumerate(after):
            if i not in carried and not isinstance(v, UndefinedVar) and _is_return_value(names[i]):
                leaves_: list = []
                spec = _flatten(v, leaves_)
                raise _Retry(i, spec, [(tuple(t._data.shape), t.dtype) for t in leaves_])
        for k, (t, dtype) in enumerate(zip(out, in_dtypes)):
            if t.dtype is not dtype:
                name = names[carried[_slot_of(counts, k)]]
                raise _Mismatch(f"{_user_name(name)} is {dtype.name} before the loop and {t.dtype.name} after an "
                                f"iteration (start it with a value of the loop's dtype, e.g. 0.0 instead of 0)")
        return out

    final = list(nn.while_loop(cond, body, leaves)) if leaves else []
    for k in numbers:
        _FROM_NUMBERS.add(final[k])
    values = state(final)
    for i in range(len(init)):
        if i not in carried:
            values[i] = UndefinedVar(names[i], f"it is first assigned inside the tensor-dependent while loop at "
                                               f"{where}; assign it before the loop to use it after")
    return values


def _slot_of(counts, leaf: int) -> int:
    for k, c in enumerate(counts):
        if leaf < c:
            return k
        leaf -= c
    return len(counts) - 1


__all__ = ["UndefinedVar", "UndefinedVariableError", "convert_ifelse", "convert_ifelse_expr", "convert_while_loop",
           "convert_logical_and", "convert_logical_or", "convert_logical_not", "range_args",
           "range_cond", "is_python_true", "return_value", "convert_len", "outer_store", "GraphBreakError"]
