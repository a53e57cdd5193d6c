"""Op cases of the control-flow family (cond, while): the ops called directly with hand-built
blocks. (``oar.static.nn.cond`` / ``while_loop`` themselves are tested in
``tests/core/static/test_control_flow.py``.)"""

from __future__ import annotations

import numpy as np

from oar._graph.control_flow import cond_op, while_op
from oar._graph.program import ValueRef
from oar.static import Program
from oar.testing import OpCase

from ._data import rand


def _block(feeds, body):
    """A block whose feeds have the metas ``feeds``; ``body(block, feed ids)`` adds nodes and
    returns the output ids."""
    block = Program()
    ids = []
    for shape, dtype in feeds:
        v = block.new_value(shape, dtype)
        block.feeds.append(v.id)
        ids.append(v.id)
    block.outputs = [ValueRef(i) for i in body(block, ids)]
    return block


def _node(block, op, inputs, shape, dtype):
    out = block.new_value(shape, dtype)
    block.add_node(op, inputs, [out.id])
    return out.id


EXP = _block([([2, 3], "float64")], lambda b, ids: [_node(b, "exp", ids, [2, 3], "float64")])
NEG = _block([([2, 3], "float64")], lambda b, ids: [_node(b, "neg", ids, [2, 3], "float64")])


def _loop_cond(b, ids):
    i, x, n = ids
    return [_node(b, "less_than", [i, n], [], "bool")]


def _loop_body(b, ids):
    i, x, n = ids
    one = b.add_constant(np.asarray(1, np.int64), "one").id
    return [_node(b, "add", [i, one], [], "int64"), _node(b, "add", [x, _node(b, "sin", [x], [3], "float64")], [3],
                                                                 "float64")]


LOOP = [([], "int64"), ([3], "float64"), ([], "int64")]
COND_BLOCK, BODY_BLOCK = _block(LOOP, _loop_cond), _block(LOOP, _loop_body)


def _cond(p, x):
    return cond_op(p, x, true_block=EXP, false_block=NEG)[0]


def _while(i, x, n):
    return while_op(i, x, n, cond_block=COND_BLOCK, body_block=BODY_BLOCK, num_loop_vars=2)[1]


def _while_ref(i, x, n):
    while i < n:
        i, x = i + 1, x + np.sin(x)
    return x


F64 = ("float64",)  # the blocks are typed float64
CASES = [
    OpCase("cond", _cond, lambda p, x: np.exp(x) if p else -x, [np.array(True), rand(2, 3)], dtypes=F64, id="cond_true"),
    OpCase("cond", _cond, lambda p, x: np.exp(x) if p else -x, [np.array([False]), rand(2, 3)], dtypes=F64, id="cond_false"),
    OpCase("while", _while, _while_ref, [np.array(0), rand(3), np.array(3)], dtypes=F64,
           id="while_3_iterations"),
    OpCase("while", _while, _while_ref, [np.array(5), rand(3), np.array(3)], dtypes=F64,
           id="while_no_iteration"),
]
