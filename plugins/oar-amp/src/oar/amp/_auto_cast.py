"""``auto_cast``: the dispatch mode that casts each op's inputs by Paddle 3's rules.

Every op call passes through ``AutoCastMode`` while an ``auto_cast`` block is active. The mode
decides the dtype the op computes in -- Paddle's ``GetAmpDestDtype`` -- from the op's kind, which
comes from its AMP category (``oar.ops.amp_category``) and Paddle's lists (``oar.amp.amp_lists``)
with the block's custom lists applied:

========  ===================================  ============================================
kind      which ops                            dtype
========  ===================================  ============================================
white     ``low_precision`` ops; ``custom_     the low dtype (float16 or bfloat16)
          white_list``; float16 only: Paddle's
          ``ONLY_FP16_WHITE_LIST``
black     O1: ``fp32`` ops; O1 and O2: Paddle's  float32
          ``EXTRA_BLACK_LIST``; ``custom_black_
          list``
gray      the others (``promote`` ops)         OD: float32. O1, O2: float32 when an input is
                                               float32, else the low dtype. O2 with
                                               ``use_promote=False``: the low dtype
========  ===================================  ============================================

Only float32, float16 and bfloat16 inputs are cast (float64 and integers stay); norms
(``batch_norm``, ``layer_norm``) decide by, and cast, their input ``x`` alone, so their float32
scale and statistics stay. A cast is the ``cast`` op dispatched below this mode: eager code runs
it, and to_static's tracer -- which the mode stays above, being ``outermost`` -- records it as a
node of the program. Nested blocks replace the state of the one around them for their duration,
``enable=False`` included, as in Paddle.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field

from oar.amp import amp_lists
from oar.errors import ArgumentError
from oar.ops import AMP_FP32, AMP_LOW_PRECISION, Mode, Tensor, amp_category, get_dtype
from oar.plugins import registries

LEVELS = ("O0", "OD", "O1", "O2")
LOW_DTYPES = ("float16", "bfloat16")
CASTABLE = frozenset({"float32", "float16", "bfloat16"})  # Paddle's NeedCast: float64 and integers stay

WHITE, BLACK, GRAY, KEEP = "white", "black", "gray", "keep"

# Ops whose inputs autocast never changes: the cast itself, and the control-flow ops, whose inputs
# must keep the dtypes their captured blocks were traced with.
NEVER_CAST = frozenset({"cast", "cond", "while"})
# Norms take the dtype of x alone and cast only x (Paddle's GetPromoteType and AmpAutoCast).
DECIDE_BY_X = frozenset({"batch_norm", "batch_norm_infer", "layer_norm"})
CAST_X_ONLY = DECIDE_BY_X | {"weight_only_linear"}


@dataclass
class AmpState:
    """One ``auto_cast`` block's settings, with the kinds of the ops it met."""

    enable: bool
    level: str
    dtype: str
    use_promote: bool
    custom_white: frozenset = frozenset()
    custom_black: frozenset = frozenset()
    only_fp16_white: frozenset = frozenset()  # Paddle's lists by oar's op names
    extra_black: frozenset = frozenset()
    kinds: dict = field(default_factory=dict, repr=False)

    @property
    def key(self):
        """What a to_static capture made in this block depends on (None when it casts nothing)."""
        if not self.enable:
            return None
        return ("oar.amp", self.level, self.dtype, self.use_promote, self.custom_white, self.custom_black)

    def kind(self, op) -> str:
        found = self.kinds.get(op.name)
        if found is None:
            found = self.kinds[op.name] = self._classify(op)
        return found

    def _classify(self, op) -> str:
        name = op.name
        if name in NEVER_CAST:
            return KEEP
        if name in self.custom_black:
            return BLACK
        if name in self.custom_white:
            return WHITE
        category = amp_category(op)
        if category == AMP_LOW_PRECISION or (self.dtype == "float16" and name in self.only_fp16_white):
            return WHITE
        if self.level in ("O1", "O2") and name in self.extra_black:
            return BLACK
        if self.level == "O1" and category == AMP_FP32:
            return BLACK
        return GRAY

    def target(self, op, inputs: tuple) -> str:
        """The dtype ``op`` computes in for these inputs (Paddle's ``GetAmpDestDtype``)."""
        kind = self.kind(op)
        if kind == WHITE:
            return self.dtype
        if kind == BLACK:
            return "float32"
        if self.level == "OD":
            return "float32"
        if self.level == "O2" and not self.use_promote:
            return self.dtype
        deciding = inputs[:1] if op.name in DECIDE_BY_X else inputs
        for t in deciding:
            if isinstance(t, Tensor) and t.dtype.name == "float32":
                return "float32"
        return self.dtype


_PADDLE_LISTS: list = [None, frozenset(), frozenset()]  # (the op names they were resolved against, ...)


def _paddle_lists() -> tuple[frozenset, frozenset]:
    """Paddle's ONLY_FP16_WHITE_LIST and EXTRA_BLACK_LIST by oar's op names, resolved again when
    a plugin added or removed ops."""
    names = frozenset(registries().ops)
    if _PADDLE_LISTS[0] != names:
        _PADDLE_LISTS[:] = [names, frozenset(amp_lists.resolve_all(amp_lists.ONLY_FP16_WHITE_LIST)),
                            frozenset(amp_lists.resolve_all(amp_lists.EXTRA_BLACK_LIST))]
    return _PADDLE_LISTS[1], _PADDLE_LISTS[2]


class AutoCastMode(Mode):
    """Casts each op's inputs by the innermost ``auto_cast`` block's state (see the module docstring)."""

    outermost = True  # what it casts must be what to_static's tracer, pushed later, records

    def __init__(self):
        self.states: list[AmpState] = []

    @property
    def capture_key(self):
        return self.states[-1].key if self.states else None

    def apply(self, op, inputs, attrs):
        state = self.states[-1]
        if state.enable and state.kind(op) != KEEP:
            inputs = self._cast_inputs(state, op, inputs)
        return self.apply_below(op, inputs, attrs)

    def _cast_inputs(self, state: AmpState, op, inputs: tuple) -> tuple:
        target = state.target(op, inputs)
        limit = 1 if op.name in CAST_X_ONLY else len(inputs)
        cast_op = None
        out = list(inputs)
        for i in range(limit):
            t = inputs[i]
            if isinstance(t, Tensor):
                name = t.dtype.name
                if name != target and name in CASTABLE:
                    if cast_op is None:
                        cast_op = registries().ops.get("cast")
                    out[i] = self.apply_below(cast_op, (t,), {"dtype": target})
        return tuple(out)


_MODE = AutoCastMode()
# The dtype of the last enabled block entered: GradScaler.scale reads it (see GradScaler.scale).
LAST_DTYPE: list[str | None] = [None]


def current_state() -> AmpState | None:
    """The innermost active block's state, or None outside every ``auto_cast`` block."""
    return _MODE.states[-1] if _MODE.states else None


def is_autocast_enabled(device_type=None) -> bool:
    """Whether the innermost ``auto_cast`` block casts (False outside every block, and inside
    ``auto_cast(enable=False)`` or ``level='O0'``). ``device_type`` is accepted as Paddle's: oar's
    rules are the same on every device.

    >>> import oar
    >>> with oar.amp.auto_cast():
    ...     oar.amp.is_autocast_enabled()
    True
    >>> oar.amp.is_autocast_enabled()
    False
    """
    state = current_state()
    return state is not None and state.enable


def get_autocast_dtype(device_type=None):
    """The low-precision dtype of the innermost enabled ``auto_cast`` block, else Paddle's default
    AMP dtype, float16.

    >>> import oar
    >>> with oar.amp.auto_cast(dtype="bfloat16"):
    ...     oar.amp.get_autocast_dtype()
    oar.bfloat16
    >>> oar.amp.get_autocast_dtype()
    oar.float16
    """
    return get_dtype(current_state().dtype if is_autocast_enabled() else "float16")


get_autocast_cpu_dtype = get_autocast_gpu_dtype = get_autocast_dtype  # Paddle's aliases, one rule on every device


def _names(custom, argument: str) -> frozenset:
    if custom is None:
        return frozenset()
    if isinstance(custom, str) or not hasattr(custom, "__iter__"):
        raise ArgumentError(f"auto_cast: {argument} must be a set, list or tuple of op names, got {custom!r}")
    resolved = set()
    for name in custom:
        if not isinstance(name, str):
            raise ArgumentError(f"auto_cast: {argument} must hold op names (str), got {name!r}")
        found = amp_lists.resolve(name)
        if not found:
            warnings.warn(f"auto_cast: {argument} names {name!r}, which is no op of oar (nor a Paddle operator "
                          f"name oar maps to one); it has no effect", UserWarning, stacklevel=4)
        resolved.update(found)
    return frozenset(resolved)


def make_state(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
               use_promote=True) -> AmpState:
    """Check ``auto_cast``'s arguments as Paddle does and build the block's state."""
    if not isinstance(level, str) or level.upper() not in LEVELS:
        raise ArgumentError(f"auto_cast: level should be O0, OD, O1 or O2, got {level!r}")
    level = level.upper()
    if not isinstance(dtype, str):
        dtype = getattr(dtype, "name", dtype)
    dtype = str(dtype).lower()
    if enable and dtype not in LOW_DTYPES:
        raise ArgumentError(f"auto_cast: if enable amp, dtype should be 'float16' or 'bfloat16', got {dtype!r}")
    if custom_white_list and custom_black_list:
        overlap = sorted(set(custom_white_list) & set(custom_black_list))
        if overlap:
            raise ArgumentError(f"auto_cast: custom white list overlap custom black list: {overlap}")
    enabled = bool(enable) and level != "O0"
    only_fp16_white, extra_black = _paddle_lists()
    return AmpState(enabled, level, dtype if enabled else "float32", bool(use_promote),
                    _names(custom_white_list, "custom_white_list"), _names(custom_black_list, "custom_black_list"),
                    only_fp16_white, extra_black)


@contextlib.contextmanager
def amp_guard(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
              use_promote=True):
    """The context manager behind ``auto_cast`` (Paddle's ``amp_guard``)."""
    state = make_state(enable, custom_white_list, custom_black_list, level, dtype, use_promote)
    if state.enable:
        LAST_DTYPE[0] = state.dtype
    if not _MODE.states:
        _MODE.__enter__()
    _MODE.states.append(state)
    try:
        yield
    finally:
        _MODE.states.pop()
        if not _MODE.states:
            _MODE.__exit__(None, None, None)


def auto_cast(enable=True, custom_white_list=None, custom_black_list=None, level="O1", dtype="float16",
              use_promote=True):
    """A block in which each op computes in the dtype Paddle 3's AMP rules give it.

    ``level``: ``'O1'`` casts the inputs of white-list ops (conv, matmul, linear, einsum, ...) to
    ``dtype`` and keeps black-list ops (softmax, the losses, norms, exp/log/pow, sum/mean, ...) in
    float32; the others follow their inputs. ``'O2'`` (with ``decorate``'s low-precision
    parameters) runs almost everything in ``dtype``: only Paddle's extra black list (embedding,
    interpolation, scatter) stays float32, and with ``use_promote=False`` an op with a float32 input
    is cast down too. ``'OD'`` runs the white list in ``dtype`` and everything else in float32.
    ``'O0'`` or ``enable=False`` turns autocast off inside an enclosing block.
    ``custom_white_list``/``custom_black_list`` add ops by oar's names (``'add'``, ``'conv'``) or
    Paddle's (``'elementwise_add'``, ``'conv2d'``). Unlike Paddle's CPU build, which warns and keeps
    float32, oar applies the rules on every device. Under ``oar.jit.to_static`` the casts are
    nodes of the captured program.

    >>> import oar
    >>> conv = oar.nn.Conv2D(3, 2, 3, bias_attr=False)
    >>> data = oar.rand([1, 3, 8, 8])
    >>> with oar.amp.auto_cast(dtype="bfloat16"):
    ...     out = conv(data)
    ...     total = out.sum()
    >>> out.dtype, total.dtype
    (oar.bfloat16, oar.float32)
    >>> with oar.amp.auto_cast(custom_black_list={"conv2d"}):
    ...     conv(data).dtype
    oar.float32
    """
    return amp_guard(enable, custom_white_list, custom_black_list, level, dtype, use_promote)
