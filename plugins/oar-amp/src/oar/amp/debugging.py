"""``oar.amp.debugging``: what mixed precision did and where it went wrong (Paddle's
``paddle.amp.debugging``).

- Operator statistics: ``collect_operator_stats()`` (or ``enable_operator_stats_collection()`` ...
  ``disable_operator_stats_collection()``) counts the calls of each op by the dtype it computed in
  -- float16, bfloat16, float32 or other -- and prints Paddle's table at the end.
- ``check_numerics(tensor, op_type, var_name)``: the number of NaNs, Infs and zeros of a tensor
  and its max, min and mean; raises ``NumericsError`` on a NaN or Inf in the default mode.
- The tensor checker: ``enable_tensor_checker(TensorCheckerConfig(enable=True))`` checks the
  outputs of every op that runs (gradient rules included, until ``disable_tensor_checker()``)
  and, in the default mode, raises at the first op whose output holds a NaN or an Inf, naming the
  op, the output, its dtype and shape, and the user's line that called it.

Both are dispatch modes under ``auto_cast``'s, so they see the ops as autocast made them: the casts
and each op in the dtype it ran in.
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from enum import Enum

import numpy as np

import oar
from oar.amp import amp_lists
from oar.errors import ArgumentError, OarError
from oar.ops import Mode, Tensor

STAT_COLUMNS = ("float16", "bfloat16", "float32", "other")


class NumericsError(OarError, RuntimeError):
    """A tensor held NaN or Inf where the check was asked to stop (``check_numerics``, the tensor checker)."""


class DebugMode(Enum):
    """What the tensor checker and ``check_numerics`` do (Paddle's values).

    CHECK_NAN_INF_AND_ABORT: report a tensor with NaN/Inf and stop (raise ``NumericsError``).
    CHECK_NAN_INF: report tensors with NaN/Inf and go on. CHECK_ALL_FOR_OVERFLOW: report float32
    outputs outside float16's range. CHECK_ALL: report every output. CHECK_ALL_AND_ABORT: report
    every output, stop at a NaN/Inf. DUMP_ALL: as CHECK_ALL.
    """

    CHECK_NAN_INF_AND_ABORT = 0
    CHECK_NAN_INF = 1
    CHECK_ALL_FOR_OVERFLOW = 2
    CHECK_ALL = 3
    CHECK_ALL_AND_ABORT = 4
    DUMP_ALL = 5


ABORTING = (DebugMode.CHECK_NAN_INF_AND_ABORT, DebugMode.CHECK_ALL_AND_ABORT)
FLOAT16_MAX = float(np.finfo(np.float16).max)


# -- operator statistics ----------------------------------------------------------------------------
def _computed_dtype(inputs, outputs) -> str:
    """The dtype an op computed in, as Paddle's kernel key: its first floating input's, else its
    first floating output's."""
    for group in (inputs, outputs):
        for t in group:
            if isinstance(t, Tensor) and t.dtype.is_floating:
                name = t.dtype.name
                return name if name in STAT_COLUMNS else "other"
    return "other"


class OperatorStats(dict):
    """``{op name: {"float16": calls, "bfloat16": calls, "float32": calls, "other": calls}}``."""

    def table(self) -> str:
        """Paddle's table of the statistics."""
        width = 120
        lines = [_banner(" op list ", width),
                 "<--------------- Op Name ---------------- | -- FP16 Calls --- | -- BF16 Calls --- | "
                 "--- FP32 Calls--- | -- Other Calls -->"]
        for name in sorted(self):
            counts = self[name]
            lines.append(f"  {name:<40}|  " + "|  ".join(f"{counts[c]:<17}" for c in STAT_COLUMNS).rstrip())
        lines.append(_banner(f" op count: {len(self)} ", width))
        return "\n".join(lines)


def _banner(text: str, width: int) -> str:
    side = (width - 2 - len(text)) // 2
    return "<" + "-" * side + text + "-" * (width - 2 - len(text) - side) + ">"


class OperatorStatsMode(Mode):
    """Counts each op call by the dtype it computed in."""

    def __init__(self):
        self.stats = OperatorStats()

    def apply(self, op, inputs, attrs):
        out = self.apply_below(op, inputs, attrs)
        outputs = out if isinstance(out, tuple) else (out,)
        counts = self.stats.get(op.name)
        if counts is None:
            counts = self.stats[op.name] = dict.fromkeys(STAT_COLUMNS, 0)
        counts[_computed_dtype(inputs, outputs)] += 1
        return out


_STATS: list[OperatorStatsMode] = []


def enable_operator_stats_collection() -> None:
    """Start counting the op calls by dtype (``disable_operator_stats_collection`` prints them)."""
    if _STATS:
        return
    mode = OperatorStatsMode()
    mode.__enter__()
    _STATS.append(mode)


def disable_operator_stats_collection() -> None:
    """Stop counting and print the table of op calls by dtype."""
    if not _STATS:
        return
    mode = _STATS.pop()
    mode.__exit__(None, None, None)
    print(mode.stats.table())


@contextlib.contextmanager
def collect_operator_stats():
    """Count the op calls of the block by the dtype each computed in, and print Paddle's table at
    its end; the block gets the statistics (``{op: {dtype: calls}}``) as well.

    >>> import oar
    >>> with oar.amp.debugging.collect_operator_stats() as stats:  # doctest: +ELLIPSIS
    ...     with oar.amp.auto_cast(dtype="bfloat16"):
    ...         y = oar.matmul(oar.ones([2, 2]), oar.ones([2, 2])).sum()
    <---...
    >>> stats["matmul"]["bfloat16"], stats["sum"]["float32"], stats["cast"]["bfloat16"]
    (1, 1, 1)
    """
    enable_operator_stats_collection()
    mode = _STATS[-1]
    try:
        yield mode.stats
    finally:
        disable_operator_stats_collection()


# -- numerics -------------------------------------------------------------------------------------
def _numerics(array: np.ndarray) -> tuple[int, int, int, float, float, float]:
    values = np.asarray(array, dtype=np.float32 if array.dtype != np.float64 else np.float64)
    nan = np.isnan(values)
    inf = np.isinf(values)
    finite = values[~(nan | inf)]
    zeros = int(np.count_nonzero(finite == 0))
    if finite.size:
        return int(nan.sum()), int(inf.sum()), zeros, float(finite.max()), float(finite.min()), float(finite.mean())
    return int(nan.sum()), int(inf.sum()), zeros, 0.0, 0.0, 0.0


def _short_dtype(name: str) -> str:
    return {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64"}.get(name, name)


def _report(device: str, op: str, tensor: str, dtype: str, numel: int, stats, level: str = "ERROR") -> str:
    nan, inf, zero, high, low, mean = stats
    return (f"[PRECISION] [{level}] in [device={device}, op={op}, tensor={tensor}, dtype={_short_dtype(dtype)}], "
            f"numel={numel}, num_nan={nan}, num_inf={inf}, num_zero={zero}, max={high:e}, min={low:e}, mean={mean:e}")


def check_numerics(tensor: Tensor, op_type: str, var_name: str,
                   debug_mode: DebugMode = DebugMode.CHECK_NAN_INF_AND_ABORT) -> tuple[Tensor, Tensor]:
    """The NaNs, Infs and zeros of ``tensor`` (``stats``: int64 ``[num_nan, num_inf, num_zero]``)
    and its ``values``: float32 ``[max, min, mean]`` of its finite elements. In the default mode
    a NaN or Inf raises ``NumericsError`` naming ``op_type`` and ``var_name``; in the others it is
    printed and the check goes on.

    >>> import oar
    >>> from oar.amp.debugging import DebugMode, check_numerics
    >>> x = oar.to_tensor([1.0, 0.0, float("inf")])
    >>> stats, values = check_numerics(x, "pow", "res", debug_mode=DebugMode.CHECK_ALL)  # doctest: +ELLIPSIS
    [PRECISION] [ERROR] in [device=cpu, op=pow, tensor=res, dtype=fp32], numel=3, num_nan=0, num_inf=1, ...
    >>> stats.tolist(), values.tolist()
    ([0, 1, 1], [1.0, 0.0, 0.5])
    """
    if not isinstance(tensor, Tensor):
        raise ArgumentError(f"check_numerics: tensor must be an oar Tensor, got {type(tensor).__name__}")
    if not isinstance(debug_mode, DebugMode):
        raise ArgumentError(f"check_numerics: debug_mode must be an oar.amp.debugging.DebugMode, got {debug_mode!r}")
    array = tensor.numpy()
    stats = _numerics(array) if array.dtype.kind == "f" or tensor.dtype.is_floating else (0, 0, 0, 0.0, 0.0, 0.0)
    bad = stats[0] or stats[1]
    line = _report(tensor.place.backend, op_type, var_name,
                   tensor.dtype.name, int(array.size), stats)
    if bad and debug_mode in ABORTING:
        raise NumericsError(f"check_numerics: {line}")
    if bad or debug_mode in (DebugMode.CHECK_ALL, DebugMode.CHECK_ALL_AND_ABORT, DebugMode.DUMP_ALL):
        print(line)
    return (oar.to_tensor(np.array(stats[:3], np.int64)), oar.to_tensor(np.array(stats[3:], np.float32)))


# -- the tensor checker ---------------------------------------------------------------------------
def _oar_dirs() -> tuple[str, ...]:
    return tuple(os.path.abspath(p) + os.sep for p in sys.modules["oar"].__path__)


def _user_frames(limit: int) -> list[str]:
    """The innermost ``limit`` frames of the caller's stack outside oar's packages, innermost last."""
    dirs = _oar_dirs()
    frames = [f for f in traceback.extract_stack()[:-1] if not os.path.abspath(f.filename).startswith(dirs)]
    frames = [f for f in frames if not f.filename.startswith("<frozen")]
    return [f"{os.path.basename(f.filename)}:{f.lineno}" for f in frames[-max(limit, 1):]]


class TensorCheckerConfig:
    """What the tensor checker checks (Paddle's ``TensorCheckerConfig``).

    ``enable``: check at all. ``debug_mode``: a ``DebugMode`` (default: stop at the first NaN/Inf).
    ``output_dir``: append the reports to ``<output_dir>/tensor_checker.log`` instead of printing
    them. ``checked_op_list`` / ``skipped_op_list``: the ops to check / not to check, by oar's
    names or Paddle's. ``debug_step``: ``[start, end)``, the steps to check, counting each
    ``enable_tensor_checker`` call as a step. ``stack_height_limit``: how many of the user's
    frames a report names. ``reports`` lists what the checker found, oldest first.
    """

    def __init__(self, enable: bool, debug_mode: DebugMode = DebugMode.CHECK_NAN_INF_AND_ABORT, output_dir=None,
                 checked_op_list=None, skipped_op_list=None, debug_step=None, stack_height_limit: int = 1):
        if not isinstance(debug_mode, DebugMode):
            raise ArgumentError(f"TensorCheckerConfig: debug_mode must be a DebugMode, got {debug_mode!r}")
        self.enable = bool(enable)
        self.debug_mode = debug_mode
        self.output_dir = output_dir
        self.checked_op_list = amp_lists.resolve_all(checked_op_list or ())
        self.skipped_op_list = amp_lists.resolve_all(skipped_op_list or ())
        if debug_step is not None:
            if not (isinstance(debug_step, (list, tuple)) and len(debug_step) == 2
                    and all(isinstance(s, int) for s in debug_step) and 0 <= debug_step[0] < debug_step[1]):
                raise ArgumentError(f"TensorCheckerConfig: debug_step must be [start, end) with 0 <= start < end, "
                                    f"got {debug_step!r}")
        self.debug_step = None if debug_step is None else tuple(debug_step)
        self.stack_height_limit = int(stack_height_limit)
        self.current_step = 0
        self.reports: list[str] = []

    def _checks(self, op_name: str) -> bool:
        if self.checked_op_list and op_name not in self.checked_op_list:
            return False
        return op_name not in self.skipped_op_list

    def _next_step(self) -> bool:
        """Whether this step is checked; counts the step."""
        step = self.current_step
        self.current_step += 1
        return self.debug_step is None or self.debug_step[0] <= step < self.debug_step[1]

    def _emit(self, line: str) -> None:
        self.reports.append(line)
        if self.output_dir is None:
            print(line)
        else:
            os.makedirs(self.output_dir, exist_ok=True)
            with open(os.path.join(self.output_dir, "tensor_checker.log"), "a") as log:
                log.write(line + "\n")


class TensorCheckerMode(Mode):
    """Checks the floating outputs of every op call (see ``TensorCheckerConfig``)."""

    def __init__(self, config: TensorCheckerConfig):
        self.config = config

    def apply(self, op, inputs, attrs):
        out = self.apply_below(op, inputs, attrs)
        config = self.config
        if config._checks(op.name):
            outputs = out if isinstance(out, tuple) else (out,)
            for index, t in enumerate(outputs):
                if isinstance(t, Tensor) and t.dtype.is_floating:
                    self._check(op, inputs, index, t)
        return out

    def _check(self, op, inputs, index: int, t: Tensor) -> None:
        config, mode = self.config, self.config.debug_mode
        stats = _numerics(t.numpy())
        bad = stats[0] or stats[1]
        overflow = (mode is DebugMode.CHECK_ALL_FOR_OVERFLOW and t.dtype.name == "float32"
                    and max(abs(stats[3]), abs(stats[4])) > FLOAT16_MAX)
        report_all = mode in (DebugMode.CHECK_ALL, DebugMode.CHECK_ALL_AND_ABORT, DebugMode.DUMP_ALL)
        if not (bad or overflow or report_all):
            return
        where = ", ".join(_user_frames(config.stack_height_limit))
        line = _report(t.place.backend, op.name, f"output {index}",
                       t.dtype.name, int(np.prod(t.shape)), stats, "ERROR" if bad or overflow else "INFO")
        line += f" (called at {where})" if where else ""
        config._emit(line)
        if bad and mode in ABORTING:
            inputs_finite = all(not isinstance(x, Tensor) or not x.dtype.is_floating or np.isfinite(
                x.numpy().astype(np.float64)).all() for x in inputs)
            origin = "from finite inputs" if inputs_finite else "from an input that already held NaN or Inf"
            raise NumericsError(f"op {op.name!r} produced {stats[0]} NaN and {stats[1]} Inf in its output {index} "
                                f"({t.dtype.name}{list(t.shape)}), {origin}"
                                + (f", called at {where}" if where else "") + f"\n{line}")


_CHECKER: list[TensorCheckerMode] = []


def enable_tensor_checker(checker_config: TensorCheckerConfig) -> None:
    """Check the outputs of every op from now on, as ``checker_config`` says (one training step
    for ``debug_step``'s count), until ``disable_tensor_checker()``.

    >>> import oar
    >>> from oar.amp.debugging import TensorCheckerConfig, enable_tensor_checker, disable_tensor_checker
    >>> enable_tensor_checker(TensorCheckerConfig(enable=True))
    >>> try:
    ...     y = oar.log(oar.to_tensor([1.0, -1.0]))  # doctest: +ELLIPSIS
    ... except oar.amp.debugging.NumericsError as error:
    ...     print(str(error).splitlines()[0])
    [PRECISION] [ERROR] in [device=cpu, op=log, tensor=output 0, dtype=fp32], ...
    op 'log' produced 1 NaN and 0 Inf in its output 0 (float32[2]), from finite inputs, called at ...
    >>> disable_tensor_checker()
    """
    if not isinstance(checker_config, TensorCheckerConfig):
        raise ArgumentError(f"enable_tensor_checker: expected a TensorCheckerConfig, got "
                            f"{type(checker_config).__name__}")
    disable_tensor_checker()
    if not checker_config.enable or not checker_config._next_step():
        return
    mode = TensorCheckerMode(checker_config)
    mode.__enter__()
    _CHECKER.append(mode)


def disable_tensor_checker() -> None:
    """Stop checking the ops' outputs."""
    while _CHECKER:
        _CHECKER.pop().__exit__(None, None, None)
