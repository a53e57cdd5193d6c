"""``ProgressBar``: the progress display of ``oar.Model``'s ProgBarLogger, in Paddle's format.

On a terminal the bar is redrawn in place (``\\r``) with the step, the values, the time per step
and the estimated time left; the finished bar stays as one line. Anywhere else (a log file, a
pipe, CI) it writes plain lines, one per ``update``, never a ``\\r``: Paddle writes carriage
returns and backspaces into log files, oar does not.

    step  10/63 [====>.........................] - loss: 0.5012 - acc: 0.8020 - ETA: 1s - 12ms/step
    step 10/63 - loss: 0.5012 - acc: 0.8020 - ETA: 1s - 12ms/step
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

_REDRAW_SECONDS = 0.1  # a live bar is redrawn at most this often (the last step is always drawn)


def stream_is_terminal(stream) -> bool:
    """True where ``stream`` can redraw a line in place: a TTY, or a Jupyter kernel's stream."""
    isatty = getattr(stream, "isatty", None)
    try:
        if isatty is not None and isatty():
            return os.environ.get("TERM") != "dumb"
    except (ValueError, OSError):  # a closed or detached stream
        return False
    return "ipykernel" in sys.modules and stream in (sys.__stdout__, sys.stdout)


def format_value(value) -> str:
    """Paddle's number format: ``0.5012`` (four decimals), ``1.2000e-04`` for tiny values; lists
    (the loss is a list of one value per loss term) are space-separated."""
    values = value if isinstance(value, (list, tuple)) else [value]
    parts = []
    for v in values:
        if isinstance(v, np.ndarray) and v.size == 1:
            v = v.item()
        if isinstance(v, (float, np.floating)):
            parts.append(f"{v:.4f}" if abs(v) > 1e-3 or v == 0 else f"{v:.4e}")
        else:
            parts.append(str(v))
    return " ".join(parts)


def format_duration(seconds: float) -> str:
    """``7s``, ``2:05``, ``1:02:05``."""
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


def format_speed(seconds_per_step: float, unit: str = "step") -> str:
    """Paddle's ``12ms/step`` (``s``, ``ms`` or ``us`` per step)."""
    if seconds_per_step >= 1 or seconds_per_step == 0:
        return f"{seconds_per_step:.0f}s/{unit}"
    if seconds_per_step >= 1e-3:
        return f"{seconds_per_step * 1e3:.0f}ms/{unit}"
    return f"{seconds_per_step * 1e6:.0f}us/{unit}"


class ProgressBar:
    """Progress over ``num`` steps (``None`` when the count is unknown), as ``paddle.hapi``'s
    ProgressBar: ``update(current, values)`` shows step ``current`` with ``values``, a list of
    ``(name, value)`` pairs.

    ``dynamic`` chooses the display: True redraws one line in place, False writes one line per
    update; the default (None) asks the output stream whether it is a terminal. ``file`` is the
    stream, ``sys.stdout`` at the time of each write by default.

    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgressBar(num=4, file=out)
    >>> bar.update(2, [("loss", 0.25)])
    >>> out.getvalue().startswith("step 2/4 - loss: 0.2500 - ETA: ")
    True
    """

    def __init__(self, num: int | None = None, width: int = 30, verbose: int = 1, start: bool = True,
                 file=None, name: str = "step", dynamic: bool | None = None):
        if num is not None and (isinstance(num, bool) or not isinstance(num, (int, np.integer)) or num <= 0):
            raise ValueError(f"ProgressBar: num must be None or a positive int, got {num!r}")
        self._num = None if num is None else int(num)
        self._width = int(width)
        self._verbose = verbose
        self._file = file
        self.name = name
        self._dynamic = dynamic
        self._start = time.perf_counter() if start else None
        self._last_draw = float("-inf")
        self._drawn_width = 0  # width of the line a live bar last drew, to blank what is left of it

    @property
    def file(self):
        return self._file if self._file is not None else sys.stdout

    @property
    def dynamic(self) -> bool:
        return stream_is_terminal(self.file) if self._dynamic is None else bool(self._dynamic)

    def start(self) -> None:
        """Restart the clock that the speed and the ETA are measured from."""
        self._start = time.perf_counter()

    def _count(self, current: int) -> str:
        if self._num is None:
            return f"{self.name} {current:3d}"
        digits = len(str(self._num))
        return f"{self.name} {current:{digits}d}/{self._num}"

    def _bar(self, current: int) -> str:
        filled = min(self._width, int(self._width * current / self._num))
        head = "" if filled == 0 else ("=" * filled if current >= self._num else "=" * (filled - 1) + ">")
        return f"[{head}{'.' * (self._width - len(head))}]"

    def update(self, current_num: int, values=None, force: bool = False) -> None:
        """Show step ``current_num`` with ``values`` (``[(name, value), ...]`` or a dict). A live
        bar redraws at most ten times a second unless ``force`` or the last step is reached."""
        if self._start is None:
            self.start()
        now = time.perf_counter()
        finished = self._num is not None and current_num >= self._num
        dynamic = self.dynamic
        if dynamic and not (force or finished) and now - self._last_draw < _REDRAW_SECONDS:
            return
        self._last_draw = now
        per_step = (now - self._start) / current_num if current_num else 0.0
        items = list(values.items()) if isinstance(values, dict) else list(values or [])
        info = "".join(f" - {name}: {format_value(value)}" for name, value in items)
        if self._num is not None and not finished and current_num:
            info += f" - ETA: {format_duration(per_step * (self._num - current_num))}"
        info += f" - {format_speed(per_step, self.name)}"
        out = self.file
        if dynamic:
            line = self._count(current_num) + (f" {self._bar(current_num)}" if self._num is not None else "") + info
            padding = " " * max(0, self._drawn_width - len(line))
            self._drawn_width = 0 if finished else len(line)
            out.write("\r" + line + padding + ("\n" if finished else ""))
        else:
            out.write(self._count(current_num) + info + "\n")
        out.flush()

    def finish_line(self) -> None:
        """End a live bar's line early (when a loop stops before the last step)."""
        if self.dynamic and self._drawn_width:
            self.file.write("\n")
            self.file.flush()
            self._drawn_width = 0


__all__ = ["ProgressBar"]
