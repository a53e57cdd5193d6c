"""``python -m oar_hydra``: the same as ``oar-run``."""

from oar_hydra.app import main

main()
