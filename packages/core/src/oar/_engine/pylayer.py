"""``PyLayer``: a custom op with a Python forward and backward, as ``paddle.autograd.PyLayer``.

``MyLayer.apply(*args)`` runs ``MyLayer.forward(ctx, *args)`` without recording the tape and, when
some tensor input needs a gradient, attaches the tensor outputs to one tape ``Node`` whose op is
a ``PyLayerOp``: its ``grad`` calls ``MyLayer.backward(ctx, *output_grads)``. The engine treats it
like any op, so it frees what ``ctx`` saved after backward, and ``create_graph=True``
differentiates a backward written with oar ops.
"""

from __future__ import annotations

from typing import Any

from oar._engine import eager as _eager
from oar._engine.autograd import _set_grad_enabled
from oar._engine.dispatch import modes_above_eager
from oar._engine.tape import Node, _version_of
from oar._engine.tensor import Tensor
from oar.errors import GradientError


class _SavedOutput:
    """Stands in ``ctx`` for a saved tensor that is also an output of the layer.

    The output is rebuilt from the node at backward time (``Node.outputs``), so ``ctx`` holds no
    reference to its own node (no reference cycle) and the output stays differentiable.
    """

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


class PyLayerContext:
    """What ``forward`` leaves for ``backward``: saved tensors and any attribute set on it.

    >>> import oar
    >>> from oar.autograd import PyLayer
    >>> class Cube(PyLayer):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x * x
    ...     @staticmethod
    ...     def backward(ctx, dy):
    ...         (x,) = ctx.saved_tensor()
    ...         return dy * 3 * x * x
    >>> x = oar.to_tensor([2.0], stop_gradient=False)
    >>> Cube.apply(x).backward()
    >>> x.grad.tolist()
    [12.0]
    """

    def __init__(self):
        self.container: tuple | None = None
        self.not_inplace_tensors: tuple = ()
        self.non_differentiable: tuple = ()
        self.materialize_grads = True
        self._versions: tuple = ()
        self._node: Node | None = None  # set only while backward runs
        self._layer_name = "PyLayer"

    def save_for_backward(self, *tensors: Tensor) -> None:
        """Keep ``tensors`` for ``backward`` (call it once, inside ``forward``)."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(
                    f"{self._layer_name}.forward: save_for_backward takes tensors, argument {i} is a "
                    f"{type(t).__name__}; store other values as attributes of ctx"
                )
        self.container = tensors
        self._versions = tuple(_version_of(t) if t is not None else 0 for t in tensors)

    def saved_tensor(self) -> tuple | None:
        """The tensors given to ``save_for_backward`` (None if it was not called)."""
        if self.container is None:
            if self._node is not None and self._node.released:
                self._node._check_alive()
            return None
        out = []
        for i, (t, version) in enumerate(zip(self.container, self._versions)):
            if isinstance(t, _SavedOutput):
                if self._node is None:
                    raise GradientError(f"{self._layer_name}: saved outputs can be read in backward only")
                t = self._node.outputs[t.index]
            elif t is not None and t._vc is not None and t._vc[0] != version:
                raise GradientError(
                    f"{self._layer_name}.backward: saved tensor {i} (shape {t.shape}) was modified in "
                    f"place after forward (version {version} -> {t._vc[0]}); save a .clone() instead"
                )
            out.append(t)
        return tuple(out)

    def mark_not_inplace(self, *tensors: Tensor) -> None:
        """Mark inputs that ``forward`` returns unchanged; oar always returns new output tensors."""
        self.not_inplace_tensors = tensors

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Mark outputs that get no gradient (``backward`` still receives zeros for them)."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, ``backward`` gets None (not zeros) for outputs that received no gradient."""
        self.materialize_grads = bool(value)


class PyLayerOp:
    """The "op" of a PyLayer call's tape node: the engine reads ``name``, ``grad``, ``release``."""

    __slots__ = ("name", "layer", "ctx", "slots", "materialize_grads")
    traits = frozenset()

    def __init__(self, layer: type, ctx: PyLayerContext, slots: list):
        self.name = layer.__name__
        self.layer = layer
        self.ctx = ctx
        self.slots = slots  # per tensor argument of forward: None (one tensor) or a list's length
        self.materialize_grads = ctx.materialize_grads

    def grad(self, node: Node, *grads):
        ctx = self.ctx
        ctx._node = node
        try:
            result = self.layer.backward(ctx, *grads)
        finally:
            ctx._node = None
        if not isinstance(result, (tuple, list)):
            result = (result,)
        elif len(self.slots) == 1 and self.slots[0] is not None and not (
            len(result) == 1 and isinstance(result[0], (tuple, list))
        ):
            result = (result,)  # the one input is a list: this is its list of gradients
        if len(result) != len(self.slots):
            raise GradientError(
                f"{self.name}.backward returned {len(result)} gradient(s), but {self.name}.forward "
                f"took {len(self.slots)} tensor input(s); return one gradient (or None) per tensor input"
            )
        flat = []
        for arg, (count, g) in enumerate(zip(self.slots, result)):
            if count is None:
                flat.append(g)
            elif g is None:
                flat.extend([None] * count)
            elif isinstance(g, (tuple, list)) and len(g) == count:
                flat.extend(g)
            else:
                raise GradientError(
                    f"{self.name}.backward: tensor input {arg} was a list of {count} tensors, so its "
                    f"gradient must be a list of {count} tensors, got {type(g).__name__}"
                )
        for i, (g, shape) in enumerate(zip(flat, node.in_shapes)):
            if g is None:
                continue
            if not isinstance(g, Tensor):
                raise GradientError(
                    f"{self.name}.backward returned a {type(g).__name__} for input {i}; expected a "
                    f"Tensor or None"
                )
            if tuple(g._data.shape) != shape:
                raise GradientError(
                    f"{self.name}.backward returned a gradient of shape {g.shape} for input {i}, "
                    f"which has shape {list(shape)}"
                )
        return tuple(flat)

    def release(self) -> None:
        self.ctx.container = None

    def __repr__(self) -> str:
        return f"<oar PyLayer {self.name}>"


def _tensor_inputs(args: tuple, kwargs: dict) -> tuple[list, list]:
    """The tensor inputs of a call, flattened, and per tensor argument its list length or None."""
    flat, slots = [], []
    for value in (*args, *kwargs.values()):
        if isinstance(value, Tensor):
            flat.append(value)
            slots.append(None)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Tensor) for v in value):
            flat.extend(value)
            slots.append(len(value))
    return flat, slots


def _break_capture(layer: type) -> None:
    """Under to_static, a PyLayer recording its backward is a graph break: a program holds its
    forward's ops but not the Python backward, so training it would silently use other gradients."""
    for mode in modes_above_eager():
        mode.python_backward(f"PyLayer {layer.__name__}")


class PyLayer:
    """Subclass with static ``forward(ctx, *args)`` and ``backward(ctx, *grads)``; call ``apply``.

    ``backward`` gets one gradient per tensor output of ``forward`` and returns one gradient (or
    None) per tensor input; write it with oar ops so that ``create_graph=True`` works through it.

    >>> import oar
    >>> from oar.autograd import PyLayer
    >>> class CusTanh(PyLayer):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         y = oar.tanh(x)
    ...         ctx.save_for_backward(y)
    ...         return y
    ...     @staticmethod
    ...     def backward(ctx, dy):
    ...         (y,) = ctx.saved_tensor()
    ...         return dy * (1 - y * y)
    >>> x = oar.to_tensor([0.0, 1.0], stop_gradient=False)
    >>> CusTanh.apply(x).sum().backward()
    >>> [round(v, 4) for v in x.grad.tolist()]
    [1.0, 0.42]
    """

    @staticmethod
    def forward(ctx: PyLayerContext, *args: Any, **kwargs: Any):
        raise NotImplementedError("a PyLayer subclass must define a static forward(ctx, *args)")

    @staticmethod
    def backward(ctx: PyLayerContext, *grads: Any):
        raise NotImplementedError("a PyLayer subclass must define a static backward(ctx, *grads)")

    @classmethod
    def apply(cls, *args: Any, **kwargs: Any):
        """Run ``forward`` and, when an input needs a gradient, record ``backward`` on the tape."""
        if cls.backward is PyLayer.backward:
            raise NotImplementedError(f"{cls.__name__} must define a static backward(ctx, *grads)")
        ctx = PyLayerContext()
        ctx._layer_name = cls.__name__
        inputs, slots = _tensor_inputs(args, kwargs)
        record = _eager.grad_enabled and any(not t.stop_gradient for t in inputs)
        if record:
            _break_capture(cls)

        previous = _set_grad_enabled(False)
        try:
            result = cls.forward(ctx, *args, **kwargs)
        finally:
            _set_grad_enabled(previous)
        if not record:
            return result

        single = isinstance(result, Tensor)
        items = [result] if single else list(result) if isinstance(result, (tuple, list)) else None
        if items is None:
            raise GradientError(
                f"{cls.__name__}.forward returned a {type(result).__name__}; expected a Tensor or a "
                f"tuple/list of them"
            )
        positions = [i for i, v in enumerate(items) if isinstance(v, Tensor)]
        if not positions:
            return result
        outs = [items[i] for i in positions]
        datas = tuple(t._data for t in outs)
        vcs = tuple([0] for _ in outs)
        node = Node(PyLayerOp(cls, ctx, slots), {}, tuple(inputs), datas, vcs, inputs[0]._backend)

        non_diff = {id(t) for t in ctx.non_differentiable}
        wrapped = []
        for k, (t, vc) in enumerate(zip(outs, vcs)):
            if id(t) in non_diff or t._data.dtype.kind not in "fcV":
                wrapped.append(Tensor._wrap(t._data, t._backend, True, None, 0, None))
            else:
                wrapped.append(Tensor._wrap(t._data, t._backend, False, node, k, vc))
        if ctx.container:
            # A saved output is rebuilt from the node in backward; a saved input stays itself.
            input_ids = {id(t) for t in inputs}
            out_index = {id(t): k for k, t in enumerate(outs) if id(t) not in input_ids}
            ctx.container = tuple(
                _SavedOutput(out_index[id(t)]) if id(t) in out_index else t for t in ctx.container
            )
            ctx._versions = tuple(0 if isinstance(t, _SavedOutput) else v for t, v in zip(ctx.container, ctx._versions))
        for i, w in zip(positions, wrapped):
            items[i] = w
        if single:
            return items[0]
        return tuple(items) if isinstance(result, tuple) else items


__all__ = ["PyLayer", "PyLayerContext", "PyLayerOp"]
