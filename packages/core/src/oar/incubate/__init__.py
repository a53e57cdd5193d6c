"""``oar.incubate``: features whose API follows Paddle's ``paddle.incubate`` and may still change.

- ``oar.incubate.autotune``: let oar pick the fastest kernel per shape and the DataLoader's
  ``num_workers`` (``set_config``, Paddle's switch; docs/autotune.md).

>>> import oar
>>> oar.incubate.autotune.get_config()["kernel"]["enable"]
False
"""

from oar.incubate import autotune as autotune

__all__ = ["autotune"]
