"""An example oar plugin: the ``logcosh`` op and a counting float32 kernel for ``exp``.

Installing the distribution is enough for oar to find it (entry-point group ``oar``); import
this package only for its public function:

>>> import oar
>>> from oar_plugin_example import logcosh
>>> round(float(logcosh(oar.to_tensor(0.0))), 6)
0.0
"""

from oar_plugin_example.ops import logcosh, logcosh_op

__version__ = "0.1.0"
__all__ = ["logcosh", "logcosh_op"]
