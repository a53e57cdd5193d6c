"""Dynamic dims handed to Python during a capture, and the guards their uses leave.

While ``to_static`` captures with an ``InputSpec`` that leaves a dim dynamic (``None``), ``x.shape``
of a traced tensor gives that dim as a ``SymInt``: an ``int`` of the capture's size that also
knows which input dim it stands for (``x.shape[0]`` of the first input: ``("dim", 0, 0)``) or how it
was computed from such dims (``x.shape[0] * 2 - 1``). When Python *decides* something on it -- a
comparison, ``bool()``, ``min``/``max``, a dict lookup -- the outcome is recorded as a guard in
the capture's ``ShapeGuards``::

    if x.shape[0] > 2:        # guard: input 0's dim 0 > 2 was False at batch 1
        return x * 2
    return x * 3

The program is reused only for calls whose input shapes give every guard the outcome it had;
another outcome captures again (``oar.jit.api``), so a Python branch on a size is never taken
from the wrong capture. A dim whose origin cannot be told (the dynamic dim of a ``concat`` along
the batch, a value inside a control-flow block) is ``("unknown",)``: deciding on it makes the
capture specific to its input shapes (``ShapeGuards.unknown``). A size that reaches an op's
attributes (``reshape(x, [x.shape[0], -1])``) bakes it in: the tracer records that too
(``ShapeGuards.baked``).

What it cannot see: a size turned into a plain number first (``int(d)``, ``np.prod(x.shape)``,
``float.__mul__`` of a float on the left: ``0.5 * d``), or ``len(t)`` in code that dy2static does
not convert. The second trace at another size (``oar.jit.api``) remains the net for those.
"""

from __future__ import annotations

import math
import operator

_ARITHMETIC = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
    "mod": operator.mod, "truediv": operator.truediv, "pow": operator.pow,
}
_COMPARISONS = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}
_UNARY = {"neg": operator.neg, "abs": abs, "floor": math.floor, "ceil": math.ceil, "round": round}
UNKNOWN = ("unknown",)
_PLAIN_NUMBERS = (int, float)


class UnknownDim(Exception):
    """An expression that reads a dim of unknown origin: it cannot be evaluated on other shapes."""


def evaluate(expr, shapes):
    """The value of ``expr`` for inputs of ``shapes`` (one shape tuple per program feed)."""
    if type(expr) is not tuple:
        return expr
    head = expr[0]
    if head == "dim":
        return shapes[expr[1]][expr[2]]
    if head == "unknown":
        raise UnknownDim
    if head in _UNARY:
        return _UNARY[head](evaluate(expr[1], shapes))
    return _ARITHMETIC[head](evaluate(expr[1], shapes), evaluate(expr[2], shapes))


def reads_unknown(expr) -> bool:
    if type(expr) is not tuple:
        return False
    if expr[0] == "unknown":
        return True
    return expr[0] != "dim" and any(reads_unknown(e) for e in expr[1:])


class ShapeGuards:
    """The decisions a capture's Python took on dynamic dims: ``{(op, lhs, rhs): outcome}``.

    ``unknown``: a decision on a dim of unknown origin (the capture holds for its exact input
    shapes only); ``baked``: a dynamic size reached an op's attributes.
    """

    def __init__(self):
        self.decisions: dict[tuple, bool] = {}
        self.unknown = False
        self.baked = False
        self.active = True

    def record(self, op: str, lhs, rhs, outcome: bool) -> None:
        if not self.active:
            return
        if reads_unknown(lhs) or reads_unknown(rhs):
            self.unknown = True
            return
        self.decisions.setdefault((op, lhs, rhs), bool(outcome))

    def hold(self, shapes) -> bool:
        """Whether inputs of ``shapes`` give every decision the outcome it had at capture."""
        try:
            for (op, lhs, rhs), outcome in self.decisions.items():
                if bool(_COMPARISONS[op](evaluate(lhs, shapes), evaluate(rhs, shapes))) is not outcome:
                    return False
        except (IndexError, ZeroDivisionError, ArithmeticError, TypeError, ValueError, UnknownDim):
            return False
        return True

    def pin(self, concrete, shapes) -> None:
        """Hold only for these sizes of the dims ``shapes`` leaves dynamic (``concrete``: the
        inputs' actual shapes)."""
        for k, (actual, shape) in enumerate(zip(concrete, shapes)):
            for axis, d in enumerate(shape):
                if d is None:
                    self.decisions.setdefault(("eq", ("dim", k, axis), int(actual[axis])), True)

    def same_decisions(self, other: ShapeGuards) -> bool:
        return self.decisions == other.decisions and self.unknown == other.unknown


def _expr_of(value):
    """The expression of an operand: a SymInt/SymFloat's own, a plain number itself, else None."""
    if isinstance(value, _Sym):
        return value.expr
    if isinstance(value, _PLAIN_NUMBERS):
        return int(value) if isinstance(value, int) else float(value)  # bool -> int: one key per value
    return None


class _Sym:
    """What SymInt and SymFloat share: arithmetic keeps the expression, decisions are recorded."""

    expr: object
    guards: ShapeGuards

    def _plain(self):
        raise NotImplementedError

    def _arith(self, op: str, other, reflected: bool):
        rhs = _expr_of(other)
        if rhs is None:
            return NotImplemented
        a, b = self._plain(), other._plain() if isinstance(other, _Sym) else other
        if reflected:
            a, b = b, a
        value = _ARITHMETIC[op](a, b)
        expr = (op, rhs, self.expr) if reflected else (op, self.expr, rhs)
        return sym(value, expr, self.guards)

    def _compare(self, op: str, other):
        rhs = _expr_of(other)
        if rhs is None:
            return getattr(self._plain(), f"__{op}__")(other)
        outcome = _COMPARISONS[op](self._plain(), other._plain() if isinstance(other, _Sym) else other)
        self.guards.record(op, self.expr, rhs, outcome)
        return outcome

    def _unary(self, op: str):
        return sym(_UNARY[op](self._plain()), (op, self.expr), self.guards)

    def __bool__(self):
        return self._compare("ne", 0)

    def __pos__(self):
        return self

    def __round__(self, ndigits=None):
        return self._unary("round") if ndigits is None else round(self._plain(), ndigits)


def _methods(op: str) -> dict:
    """``__op__`` (and ``__rop__`` for arithmetic) of ``_Sym`` for one operator."""
    if op in _COMPARISONS:
        return {f"__{op}__": lambda self, other: self._compare(op, other)}
    if op in _UNARY:
        return {f"__{op}__": lambda self: self._unary(op)}
    return {f"__{op}__": lambda self, other: self._arith(op, other, False),
            f"__r{op}__": lambda self, other: self._arith(op, other, True)}


for _op in (*_COMPARISONS, *_ARITHMETIC, "neg", "abs", "floor", "ceil"):
    for _name, _method in _methods(_op).items():
        setattr(_Sym, _name, _method)


class SymInt(_Sym, int):
    """A dynamic dim as Python sees it during a capture (see the module docstring)."""

    __hash__ = int.__hash__

    def _plain(self) -> int:
        return int.__int__(self)

    def __repr__(self) -> str:
        return int.__repr__(self)


class SymFloat(_Sym, float):
    """A float computed from dynamic dims (``x.shape[0] / 2``)."""

    __hash__ = float.__hash__

    def _plain(self) -> float:
        return float.__float__(self)

    def __repr__(self) -> str:
        return float.__repr__(self)


def sym(value, expr, guards: ShapeGuards):
    """``value`` carrying ``expr``: a SymInt for an int, a SymFloat for a float."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        out = int.__new__(SymInt, value)
    elif isinstance(value, float):
        out = float.__new__(SymFloat, value)
    else:
        return value
    out.expr, out.guards = expr, guards
    return out


def plain_attrs(value, guards: ShapeGuards | None):
    """``value`` (an op's attributes) with every SymInt/SymFloat as a plain number; marks
    ``guards.baked`` when there was one: the program then depends on that size."""
    if isinstance(value, _Sym):
        if guards is not None and guards.active:
            guards.baked = True
        return value._plain()
    if isinstance(value, dict):
        if not any(isinstance(v, (_Sym, dict, list, tuple)) for v in value.values()):
            return value
        return {k: plain_attrs(v, guards) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_attrs(v, guards) for v in value]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(plain_attrs(v, guards) for v in value)
    if isinstance(value, slice):
        return slice(plain_attrs(value.start, guards), plain_attrs(value.stop, guards), plain_attrs(value.step, guards))
    return value


__all__ = ["SymInt", "SymFloat", "ShapeGuards", "UNKNOWN", "UnknownDim", "evaluate", "plain_attrs", "sym"]
