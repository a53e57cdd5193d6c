"""oar-hydra: ``oar-run``, the Hydra application that trains, checkpoints and exports oar models
from composed configs, with the config groups of every installed oar package.

>>> from oar_hydra import register_configs
>>> sorted(n for n in register_configs().list("optimizer"))
['adam.yaml', 'adamw.yaml', 'momentum.yaml', 'sgd.yaml']
"""

from oar_hydra.app import MissingPackageError, check_overrides, main
from oar_hydra.data import DataSplits
from oar_hydra.schema import ConfigValueError, RunConfig, TrainerConfig, register_configs, validate

__version__ = "0.1.0"
__all__ = ["main", "register_configs", "check_overrides", "validate", "RunConfig", "TrainerConfig", "DataSplits",
           "ConfigValueError", "MissingPackageError"]
