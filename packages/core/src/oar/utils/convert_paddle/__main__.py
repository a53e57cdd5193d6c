"""``python -m oar.utils.convert_paddle SRC DST``: see ``oar.utils.convert_paddle``."""

import sys

from oar.utils.convert_paddle import main

sys.exit(main())
