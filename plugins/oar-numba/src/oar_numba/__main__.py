"""``python -m oar_numba warm``: compile the common kernels into numba's disk cache ahead of the
first run (see ``oar_numba.warm``)."""

from __future__ import annotations

import sys

USAGE = "usage: python -m oar_numba warm    # compile the common CPU kernels into the disk cache"


def main(argv: list[str]) -> int:
    if argv != ["warm"]:
        print(USAGE, file=sys.stderr)
        return 2
    from oar_numba.warm import warm  # deferred (import time): --help needs no oar

    seconds = warm()
    print(f"oar-numba warm: done in {seconds:.1f} s; later runs load the compiled kernels from the cache",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
