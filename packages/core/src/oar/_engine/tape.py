"""The tape: one ``Node`` per op call that needs a gradient, and the tensors' version counters.

A node holds the op, its attributes, its input tensors and its output arrays; it is also the
``ctx`` the op's gradient rule receives. Where each input's gradient goes (its edge) is fixed
when the node is recorded, so an in-place op that later rebinds a tensor does not redirect it.

In-place ops bump a tensor's version counter; a gradient rule that reads a saved tensor whose
version changed raises ``GradientError`` instead of computing a wrong gradient.
"""

from __future__ import annotations

from oar._engine.tensor import Tensor
from oar.errors import GradientError


class Node:
    """The record of one op call, and the ``ctx`` its gradient rule receives."""

    __slots__ = (
        "op", "attrs", "_inputs", "_edges", "_in_versions", "_out_data", "_out_vcs", "out_meta",
        "hooks", "retained", "released", "needs_input_grad", "backend",
    )

    def __init__(self, op, attrs, inputs, out_data, out_vcs, backend):
        self.op = op
        self.attrs = attrs
        self._inputs = inputs
        # Where each input's gradient goes, fixed now: an in-place op may later rebind the tensor.
        # (List comprehensions, not generators: this runs on every recorded op call.)
        self._edges = tuple([_edge(t) for t in inputs])
        self._in_versions = tuple([_version_of(t) for t in inputs])
        self._out_data = out_data
        self._out_vcs = out_vcs
        self.out_meta = tuple([(o.shape, o.dtype) for o in out_data])
        self.hooks = None  # {output index: [(hook, weakref to the tensor), ...]} for non-leaf tensors
        self.retained = None  # {output index: tensor} for retain_grads()
        self.released = False
        self.needs_input_grad = tuple([not t.stop_gradient for t in inputs])
        self.backend = backend

    # -- what a gradient rule reads --------------------------------------------------------
    @property
    def inputs(self) -> tuple:
        """The input tensors, checked not to have been modified in place since the forward."""
        self._check_alive()
        for i in range(len(self._inputs)):
            self._check_version(i)
        return self._inputs

    def input(self, i: int):
        """Input ``i`` alone, checked as ``inputs`` are: a rule that needs only some inputs reads
        them this way, so an in-place change of an input it does not read is no error."""
        self._check_alive()
        self._check_version(i)
        return self._inputs[i]

    def _check_version(self, i: int) -> None:
        t, saved = self._inputs[i], self._in_versions[i]
        if t._vc is not None and t._vc[0] != saved:
            raise GradientError(
                f"op {self.op.name!r} needs its input {i} (shape {list(t._data.shape)}, "
                f"{t.dtype.name}) for the backward pass, but that tensor was modified in place "
                f"after the forward (version {saved} -> {t._vc[0]}); call .clone() before the "
                f"in-place op"
            )

    @property
    def in_shapes(self) -> tuple:
        """Input shapes as tuples (readable even after an in-place change, no check)."""
        return tuple([tuple(t._data.shape) for t in self._inputs])

    @property
    def outputs(self) -> tuple:
        """The outputs as tensors attached to this node (so ``create_graph`` can go through them)."""
        self._check_alive()
        outs = []
        for i, (data, vc) in enumerate(zip(self._out_data, self._out_vcs)):
            if vc[0] != 0:
                raise GradientError(
                    f"op {self.op.name!r} needs its output {i} for the backward pass, but that "
                    f"tensor was modified in place after the forward; call .clone() before the "
                    f"in-place op"
                )
            # Integer and bool outputs never carry a gradient, here as when the op ran.
            outs.append(Tensor._wrap(data, self.backend, data.dtype.kind not in "fcV", self, i, vc))
        return tuple(outs)

    def output(self, i: int):
        """Output ``i`` alone, checked as ``outputs`` are: a rule that needs only one output (max
        pooling's mask) reads it this way, so an in-place change of another output is no error."""
        self._check_alive()
        data, vc = self._out_data[i], self._out_vcs[i]
        if vc[0] != 0:
            raise GradientError(
                f"op {self.op.name!r} needs its output {i} for the backward pass, but that tensor was "
                f"modified in place after the forward; call .clone() before the in-place op"
            )
        return Tensor._wrap(data, self.backend, data.dtype.kind not in "fcV", self, i, vc)

    @property
    def out(self):
        return self.outputs[0]

    def _check_alive(self) -> None:
        if self.released:
            raise GradientError(
                f"trying to run backward through op {self.op.name!r} a second time, but its saved "
                f"values were freed after the first backward; pass retain_graph=True to the first "
                f"backward() if you need to backward twice"
            )

    def release(self) -> None:
        self._inputs = self._edges
        self._out_data = ()
        self.released = True
        release_op = getattr(self.op, "release", None)  # a PyLayer frees what its ctx saved
        if release_op is not None:
            release_op()

    def __repr__(self) -> str:
        return f"<Node {self.op.name}>"


class _Released:
    """A graph edge without the data: where an input's gradient goes (its node and output slot)."""

    __slots__ = ("_node", "_out_index", "stop_gradient")

    def __init__(self, t):
        self._node = t._node
        self._out_index = t._out_index
        self.stop_gradient = t.stop_gradient


def _edge(t):
    """The edge to input ``t`` as it is now. A leaf that needs a gradient is its own edge (its
    ``.grad`` is filled; an in-place op cannot rebind it while grad is enabled)."""
    if t._node is None:
        # Constants (the scalar of ``x * 2.0``) all share one edge: no allocation per op call.
        return _CONSTANT_EDGE if t.stop_gradient else t
    return _Released(t)


_CONSTANT_EDGE = object.__new__(_Released)
_CONSTANT_EDGE._node, _CONSTANT_EDGE._out_index, _CONSTANT_EDGE.stop_gradient = None, 0, True


def _version_of(t) -> int:
    if t._vc is None:
        t._vc = [0]
    return t._vc[0]
