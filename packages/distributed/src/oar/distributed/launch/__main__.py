"""``python -m oar.distributed.launch`` and the ``oar-launch`` console script; the manual is
``oar.distributed.launch``'s docstring (``--help`` for the options)."""

import sys

from oar.distributed.launch._launcher import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
