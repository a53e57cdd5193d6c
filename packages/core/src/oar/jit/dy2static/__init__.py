"""Dynamic-to-static: Python control flow that depends on tensors becomes control-flow ops.

``oar.jit.to_static`` traces the *converted* twin of the user's function: its source is parsed,
its ``if`` / ``while`` / ``for ... in range`` / ``break`` / ``continue`` / early ``return`` /
``and`` / ``or`` / ``not`` / ternaries are rewritten into calls of the helpers in ``runtime``
(``transformer`` says how), and the tree is compiled with the user's file and line numbers. At
capture time a helper whose condition is a Python value runs plain Python (so shape checks and
flags are evaluated once, as before); one whose condition is a tensor computed from the inputs
builds ``oar.static.nn.cond`` / ``while_loop``. A function that cannot be converted (no source,
a generator, ``locals()``, ...) is traced as it is.

>>> import oar
>>> @oar.jit.to_static
... def f(x):
...     if x.sum() > 0:
...         y = x * 2.0
...     else:
...         y = -x
...     return y
>>> f(oar.to_tensor([1.0, 2.0])).tolist(), f(oar.to_tensor([-1.0, -2.0])).tolist()
([2.0, 4.0], [1.0, 2.0])
"""

from oar.jit.dy2static.convert import convert_function as convert_function
from oar.jit.dy2static.convert import converted_source as converted_source
from oar.jit.dy2static.convert import why_not_converted as why_not_converted
from oar.jit.dy2static.runtime import UndefinedVariableError as UndefinedVariableError

__all__ = ["convert_function", "converted_source", "why_not_converted", "UndefinedVariableError"]
