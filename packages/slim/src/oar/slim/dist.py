"""Knowledge distillation for dygraph models: PaddleSlim's teacher-student losses and ``Distill``.

The losses are plain differentiable functions of oar Tensors:

- ``soft_label_loss(student_logits, teacher_logits, student_temperature=1.0, teacher_temperature=1.0)``:
  PaddleSlim's ``soft_label``, the cross entropy ``-sum softmax(t / Tt) * log_softmax(s / Ts)`` over
  the last (class) axis, averaged over the other positions; *not* multiplied by ``T**2``, as in
  PaddleSlim (give the config a ``weight`` of ``T**2`` to keep the gradient's scale, or use ``kl_loss``).
- ``kl_loss(student_logits, teacher_logits, temperature=1.0)``: Hinton's
  ``T**2 * KL(softmax(t / T) || softmax(s / T))``, summed over classes and averaged over the other
  positions (``batchmean`` for ``[N, C]`` logits). It differs from ``soft_label_loss`` with equal
  temperatures by ``T**2`` and the teacher's entropy, a constant for the student.
- ``l2_loss(a, b)``: PaddleSlim's ``l2``, the mean squared difference of two tensors of one shape.
- ``fsp_loss(student_a, student_b, teacher_a, teacher_b)``: PaddleSlim's ``fsp``, the mean squared
  difference of the two models' FSP matrices (``fsp_matrix``: ``[N, C1, H*W] @ [N, H*W, C2] / (H*W)``).

``Distill(configs, students, teachers)`` is PaddleSlim's ``paddleslim.dygraph.dist.Distill``: it
captures named intermediate outputs of the models with forward post-hooks while it runs them, and
returns ``(distill_loss, student_output, teacher_output)``. Its sublayers are the students (and any
alignment layers), never the teachers, so ``Distill.parameters()`` is what the optimizer trains.

Where PaddleSlim is silent or asserts, oar raises ``DistillError`` (a ``ValueError``) naming the
config, the model, the layer and the shapes.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import oar
import oar.nn.functional as F
from oar import nn
from oar.errors import ArgumentError
from oar.nn import Layer
from oar.ops import Tensor

__all__ = ["Distill", "DistillError", "fsp_loss", "fsp_matrix", "kl_loss", "l2_loss", "soft_label_loss"]


class DistillError(ArgumentError):
    """A distillation config, layer or tensor shape that does not fit the models."""


def _same_shape(name: str, a: Tensor, b: Tensor, what: str = "student and teacher") -> None:
    if list(a.shape) != list(b.shape):
        raise DistillError(f"{name}: the {what} tensors must have one shape, got {list(a.shape)} and {list(b.shape)}")


def soft_label_loss(student_logits: Tensor, teacher_logits: Tensor, student_temperature: float = 1.0,
                    teacher_temperature: float = 1.0) -> Tensor:
    """PaddleSlim's soft-label loss: ``mean(-sum(softmax(t / Tt) * log_softmax(s / Ts), axis=-1))``.

    The teacher's softened distribution is the target of the student's; the sum runs over the
    last (class) axis and the mean over the rest. No ``T**2`` factor (PaddleSlim has none).

    >>> import oar
    >>> from oar.slim.dist import soft_label_loss
    >>> logits = oar.to_tensor([[2.0, 0.0]])
    >>> round(float(soft_label_loss(logits, logits)), 4)  # the entropy of softmax([2, 0])
    0.3653
    """
    _same_shape("soft_label_loss", student_logits, teacher_logits)
    target = F.softmax(teacher_logits / teacher_temperature, axis=-1)
    return -(target * F.log_softmax(student_logits / student_temperature, axis=-1)).sum(axis=-1).mean()


def kl_loss(student_logits: Tensor, teacher_logits: Tensor, temperature: float = 1.0) -> Tensor:
    """Hinton's distillation loss ``T**2 * KL(softmax(t / T) || softmax(s / T))``.

    The divergence is summed over the last (class) axis and averaged over the rest; ``T**2`` keeps
    the gradient's size independent of the temperature. Zero when the logits agree.

    >>> import oar
    >>> from oar.slim.dist import kl_loss
    >>> s, t = oar.to_tensor([[1.0, 2.0, 3.0]]), oar.to_tensor([[1.0, 2.0, 3.0]])
    >>> float(kl_loss(s, t, temperature=4.0))
    0.0
    >>> round(float(kl_loss(s, oar.to_tensor([[3.0, 2.0, 1.0]]), temperature=2.0)), 4)
    1.2806
    """
    _same_shape("kl_loss", student_logits, teacher_logits)
    log_student = F.log_softmax(student_logits / temperature, axis=-1)
    log_teacher = F.log_softmax(teacher_logits / temperature, axis=-1)
    kl = (log_teacher.exp() * (log_teacher - log_student)).sum(axis=-1).mean()
    return kl * (temperature * temperature)


def l2_loss(a: Tensor, b: Tensor) -> Tensor:
    """PaddleSlim's ``l2`` distillation loss: the mean of ``(a - b) ** 2``; ``a`` and ``b`` have one shape.

    >>> import oar
    >>> from oar.slim.dist import l2_loss
    >>> float(l2_loss(oar.to_tensor([1.0, 2.0]), oar.to_tensor([1.0, 4.0])))
    2.0
    """
    _same_shape("l2_loss", a, b)
    return ((a - b) ** 2).mean()


def fsp_matrix(x: Tensor, y: Tensor) -> Tensor:
    """The flow-of-solution-procedure matrix of two feature maps (Yim et al., 2017; Paddle's ``fsp_matrix``).

    ``x`` is ``[N, C1, H, W]`` and ``y`` is ``[N, C2, H, W]``, with the same ``N``, ``H`` and ``W``;
    the result is ``[N, C1, C2]``: ``x.reshape([N, C1, H*W]) @ y.reshape([N, C2, H*W]).T / (H*W)``.

    >>> import oar
    >>> from oar.slim.dist import fsp_matrix
    >>> fsp_matrix(oar.ones([2, 3, 4, 4]), oar.ones([2, 5, 4, 4])).shape
    [2, 3, 5]
    """
    if len(x.shape) != 4 or len(y.shape) != 4 or x.shape[0] != y.shape[0] or x.shape[2:] != y.shape[2:]:
        raise DistillError(f"fsp_matrix: the two feature maps must be [N, C1, H, W] and [N, C2, H, W] with the same "
                           f"N, H and W, got {list(x.shape)} and {list(y.shape)}")
    n, c1, h, w = x.shape
    return oar.matmul(x.reshape([n, c1, h * w]), y.reshape([n, y.shape[1], h * w]), transpose_y=True) / (h * w)


def fsp_loss(student_a: Tensor, student_b: Tensor, teacher_a: Tensor, teacher_b: Tensor) -> Tensor:
    """PaddleSlim's FSP loss: the mean squared difference of ``fsp_matrix(student_a, student_b)`` and
    ``fsp_matrix(teacher_a, teacher_b)``.

    Each model's pair shares ``N``, ``H`` and ``W``; the two models' pairs share the channel counts
    (their FSP matrices are ``[N, C1, C2]``), not necessarily the spatial size.

    >>> import oar
    >>> from oar.slim.dist import fsp_loss
    >>> a, b = oar.ones([2, 3, 8, 8]), oar.ones([2, 4, 8, 8])
    >>> float(fsp_loss(a, b, 2 * oar.ones([2, 3, 4, 4]), oar.ones([2, 4, 4, 4])))  # FSP entries 1 and 2
    1.0
    """
    student, teacher = fsp_matrix(student_a, student_b), fsp_matrix(teacher_a, teacher_b)
    _same_shape("fsp_loss", student, teacher, "student and teacher FSP")
    return ((student - teacher) ** 2).mean()


def _ce_loss(student_logits: Tensor, teacher_logits: Tensor, temperature: float = 1.0) -> Tensor:
    # PaddleSlim's CELoss on two logits: DistillationLoss divides both by its temperature.
    return soft_label_loss(student_logits, teacher_logits, temperature, temperature)


def _paddleslim_kl_loss(student_logits: Tensor, teacher_logits: Tensor, temperature: float = 1.0) -> Tensor:
    # PaddleSlim's KLLoss: kl_div(reduction="mean") averages over classes too, and has no T**2.
    return kl_loss(student_logits, teacher_logits, temperature) / (temperature * temperature * student_logits.shape[-1])


# The config's loss_function: oar's names, and PaddleSlim's class names where they mean the same.
# The number is how many captured tensors the loss takes from each model.
LOSSES: dict[str, tuple[Callable[..., Tensor], int]] = {
    "l2": (l2_loss, 1),
    "MSELoss": (l2_loss, 1),
    "soft_label": (soft_label_loss, 1),
    "CELoss": (_ce_loss, 1),
    "kl": (kl_loss, 1),
    "KLLoss": (_paddleslim_kl_loss, 1),
    "fsp": (fsp_loss, 2),
}
ALIGN_TYPES = ("1x1conv", "3x3conv", "linear")
_TERM_KEYS = {"model_name_pairs", "layers_name", "loss_function", "io", "idx", "weight", "align_params"}


@dataclass(frozen=True)
class _Capture:
    """One tensor a loss reads: the input or output (``io``) of layer ``layer`` of model ``model``."""

    model: str
    layer: str
    io: str
    idx: int | None

    def describe(self) -> str:
        return f"{self.model} layer {self.layer!r} {self.io}{'' if self.idx is None else f'[{self.idx}]'}"


@dataclass
class _Term:
    """One loss between one student-side and one teacher-side set of captures."""

    key: str
    loss_function: str
    fn: Callable[..., Tensor]
    params: dict[str, Any]
    weight: float
    sides: tuple[tuple[_Capture, ...], tuple[_Capture, ...]]
    align: int | None  # index into Distill._align_layers
    align_side: int


def _pairs(value, where: str) -> list[tuple[str, str]]:
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(isinstance(v, str) for v in value):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(p, (list, tuple)) and len(p) == 2 and all(isinstance(v, str) for v in p) for p in value):
        raise DistillError(f"Distill: {where}: model_name_pairs must be a pair of model names or a list of pairs, "
                           f"such as [['student_0', 'teacher_0']]; got {value!r}")
    return [tuple(p) for p in value]


def _align_layer(params: dict, where: str) -> tuple[Layer, int]:
    params = dict(params)
    side = {"student": 0, "teacher": 1}.get(params.pop("transpose_model", "student"))
    kind = str(params.pop("align_type", "")).lower()
    missing = [k for k in ("in_channel", "out_channel") if k not in params]
    if side is None or kind not in ALIGN_TYPES or missing or set(params) - {"in_channel", "out_channel"}:
        raise DistillError(f"Distill: {where}: align_params needs align_type (one of {', '.join(ALIGN_TYPES)}), "
                           f"in_channel and out_channel, and optionally transpose_model ('student' or 'teacher'); "
                           f"got {params!r}")
    cin, cout = int(params["in_channel"]), int(params["out_channel"])
    if kind == "linear":
        return nn.Linear(cin, cout), side
    size = 1 if kind == "1x1conv" else 3
    return nn.Conv2D(cin, cout, size, padding=size // 2), side


class Distill(Layer):
    """PaddleSlim's dygraph ``Distill``: students trained on distillation losses between named
    intermediate outputs of theirs and their teachers'.

    Arguments:
        configs: a list of dicts, PaddleSlim's format. Each has a ``loss_function`` (``"l2"``,
            ``"soft_label"``, ``"kl"``, ``"fsp"``, or PaddleSlim's ``"MSELoss"``, ``"CELoss"``,
            ``"KLLoss"``) and ``layers``, a list of dicts with ``layers_name``: one layer path per
            model of the pair (as ``named_sublayers()`` names them, ``"features.3"``; for ``"fsp"``
            a list of two paths per model). Either level may set ``weight`` (1.0), ``model_name_pairs``
            (``[["student_0", "teacher_0"]]``; models are named by role and position), ``io``
            (``["output", "output"]``; ``"input"`` takes a layer's input), ``idx`` (``[None, None]``:
            which tensor of a tuple), ``align_params`` (``{"align_type": "1x1conv" | "3x3conv" |
            "linear", "in_channel": ..., "out_channel": ...}``: a trainable layer mapping the
            student's tensor to the teacher's width) and the loss's own parameters (``temperature``
            for ``"kl"``, ``"CELoss"``, ``"KLLoss"``; ``student_temperature``, ``teacher_temperature``
            for ``"soft_label"``). A layer's own key wins over its config's.
        students, teachers: a Layer or a list of them. The teachers are put in eval mode, run
            without gradients and are not sublayers of ``Distill``: ``parameters()``, ``state_dict()``
            and ``train()`` are the students' (and the alignment layers').
        return_model_outputs: whether ``forward`` returns ``(distill_loss, student_output,
            teacher_output)`` (PaddleSlim's order; a list per role when it has several models) or
            ``distill_loss`` alone.

    ``forward(*inputs, **kwargs)`` runs every student and teacher on the same inputs, with hooks on
    the configured layers only during the call; ``distill_loss`` is the weighted sum of the losses,
    each of which ``last_losses`` holds (weighted) by name. Unknown layers, models or losses raise
    ``DistillError`` here; a tensor that does not fit its loss raises it on the first forward.

    >>> import oar
    >>> from oar.slim.dist import Distill
    >>> _ = oar.seed(0)
    >>> teacher = oar.nn.Sequential(oar.nn.Linear(4, 16), oar.nn.ReLU(), oar.nn.Linear(16, 3))
    >>> student = oar.nn.Sequential(oar.nn.Linear(4, 8), oar.nn.ReLU(), oar.nn.Linear(8, 3))
    >>> configs = [{"loss_function": "kl", "temperature": 4.0, "layers": [{"layers_name": ["2", "2"]}]},
    ...            {"loss_function": "l2", "weight": 0.1, "layers": [{"layers_name": ["1", "1"],
    ...             "align_params": {"align_type": "linear", "in_channel": 8, "out_channel": 16}}]}]
    >>> distill = Distill(configs, student, teacher)
    >>> optimizer = oar.optimizer.Adam(parameters=distill.parameters(), learning_rate=1e-2)
    >>> x, y = oar.randn([32, 4]), oar.randint(0, 3, [32, 1])
    >>> distill_loss, logits, teacher_logits = distill(x)
    >>> loss = oar.nn.functional.cross_entropy(logits, y) + distill_loss
    >>> loss.backward()
    >>> optimizer.step()
    >>> sorted(distill.last_losses)
    ['kl_student_0_teacher_0_2_2', 'l2_student_0_teacher_0_1_1']
    >>> teacher[0].weight.grad is None
    True
    """

    def __init__(self, configs: Sequence[dict], students: Layer | Sequence[Layer], teachers: Layer | Sequence[Layer],
                 *, return_model_outputs: bool = True):
        super().__init__()
        students = [students] if isinstance(students, Layer) else list(students)
        teachers = [teachers] if isinstance(teachers, Layer) else list(teachers)
        for role, models in (("students", students), ("teachers", teachers)):
            if not models or not all(isinstance(m, Layer) for m in models):
                raise DistillError(f"Distill: {role} must be an oar.nn.Layer or a non-empty list of them, "
                                   f"got {[type(m).__name__ for m in models]}")
        if not isinstance(configs, (list, tuple)) or not configs or not all(isinstance(c, dict) for c in configs):
            raise DistillError(f"Distill: configs must be a non-empty list of dicts (PaddleSlim's format), got "
                               f"{configs!r:.200}")
        self._student_models = nn.LayerList(students)
        # A tuple, not a LayerList: the teachers stay out of parameters(), state_dict() and train().
        self._teacher_models = tuple(teacher.eval() for teacher in teachers)
        self._return_model_outputs = return_model_outputs
        self._models = {f"student_{i}": m for i, m in enumerate(students)}
        self._models.update({f"teacher_{i}": m for i, m in enumerate(teachers)})
        self._layers = {name: dict(m.named_sublayers()) for name, m in self._models.items()}
        self._align_layers = nn.LayerList()
        self._terms: list[_Term] = []
        for i, config in enumerate(configs):
            self._add_config(i, copy.deepcopy(config))
        self._captures = sorted({(c.model, c.layer) for t in self._terms for side in t.sides for c in side})
        self.last_losses: dict[str, Tensor] = {}

    def _add_config(self, index: int, config: dict) -> None:
        layers = config.pop("layers", None)
        if not isinstance(layers, (list, tuple)) or not layers or not all(isinstance(layer, dict) for layer in layers):
            raise DistillError(f"Distill: config {index} needs 'layers', a non-empty list of dicts with 'layers_name'; "
                               f"got {layers!r}")
        for j, layer_config in enumerate(layers):
            self._add_term(f"config {index} layer {j}", {**config, **layer_config})

    def _add_term(self, where: str, config: dict) -> None:
        name = config.get("loss_function")
        if name not in LOSSES:
            raise DistillError(f"Distill: {where}: unknown loss_function {name!r}; use one of {', '.join(LOSSES)}")
        fn, arity = LOSSES[name]
        params = {k: v for k, v in config.items() if k not in _TERM_KEYS}
        accepted = list(inspect.signature(fn).parameters)[2 * arity:]
        unknown = [k for k in params if k not in accepted]
        if unknown:
            raise DistillError(f"Distill: {where}: loss {name!r} takes no parameter {', '.join(map(repr, unknown))}; "
                               f"its parameters are {accepted or 'none'}")
        names = config.get("layers_name")
        io, idx = list(config.get("io", ["output", "output"])), list(config.get("idx", [None, None]))
        if not isinstance(names, (list, tuple)) or len(names) != 2 or len(io) != 2 or len(idx) != 2:
            raise DistillError(f"Distill: {where}: layers_name, io and idx need one entry per model of the pair, "
                               f"got layers_name={names!r}, io={io!r}, idx={idx!r}")
        align, align_side = None, 0
        if config.get("align_params") is not None:
            if arity != 1:
                raise DistillError(f"Distill: {where}: align_params applies to one-tensor losses, not {name!r}")
            layer, align_side = _align_layer(config["align_params"], where)
            self._align_layers.append(layer)
            align = len(self._align_layers) - 1
        for pair in _pairs(config.get("model_name_pairs", [["student_0", "teacher_0"]]), where):
            sides = tuple(self._side(where, model, names[k], io[k], idx[k], arity) for k, model in enumerate(pair))
            paths = ["+".join(c.layer for c in side) for side in sides]
            key = base = f"{name}_{pair[0]}_{pair[1]}_{paths[0]}_{paths[1]}"
            n = 1
            while any(t.key == key for t in self._terms):
                key, n = f"{base}_{n}", n + 1
            self._terms.append(_Term(key, name, fn, params, float(config.get("weight", 1.0)), sides, align, align_side))

    def _side(self, where: str, model: str, names, io: str, idx, arity: int) -> tuple[_Capture, ...]:
        if model not in self._models:
            raise DistillError(f"Distill: {where}: no model {model!r}; the models are {', '.join(self._models)}")
        names = [names] if isinstance(names, str) else list(names)
        if len(names) != arity:
            raise DistillError(f"Distill: {where}: loss takes {arity} layer(s) of {model}, got {names!r}")
        if io not in ("output", "input"):
            raise DistillError(f"Distill: {where}: io must be 'output' or 'input', got {io!r}")
        for layer in names:
            if layer not in self._layers[model]:
                known = list(self._layers[model])
                raise DistillError(f"Distill: {where}: {model} ({type(self._models[model]).__name__}) has no layer "
                                   f"{layer!r}; its layers are {', '.join(known[:24])}{', ...' if len(known) > 24 else ''}")
        return tuple(_Capture(model, layer, io, idx) for layer in names)

    def forward(self, *inputs, **kwargs):
        calls: dict[tuple[str, str], list] = {key: [] for key in self._captures}

        def recorder(store: list):
            def hook(layer, layer_inputs, outputs):
                store.append((layer_inputs, outputs))
            return hook

        handles = []
        try:
            for model, layer in self._captures:
                handles.append(self._layers[model][layer].register_forward_post_hook(recorder(calls[model, layer])))
            student_outputs = [m(*inputs, **kwargs) for m in self._student_models]
            with oar.no_grad():
                teacher_outputs = [m(*inputs, **kwargs) for m in self._teacher_models]
        finally:
            for handle in handles:
                handle.remove()
        losses = {}
        for term in self._terms:
            tensors = [[self._tensor(c, calls[c.model, c.layer]) for c in side] for side in term.sides]
            if term.align is not None:
                side = tensors[term.align_side]
                side[0] = self._align_layers[term.align](side[0])
            try:
                losses[term.key] = term.fn(*tensors[0], *tensors[1], **term.params) * term.weight
            except DistillError as error:
                got = "; ".join(f"{c.describe()} {list(t.shape)}" for side, ts in zip(term.sides, tensors)
                                for c, t in zip(side, ts))
                raise DistillError(f"Distill: loss {term.loss_function!r} ({term.key}) on {got}: {error}") from error
        self.last_losses = losses
        values = list(losses.values())
        distill_loss = values[0]
        for value in values[1:]:
            distill_loss = distill_loss + value
        if not self._return_model_outputs:
            return distill_loss
        return (distill_loss, student_outputs[0] if len(student_outputs) == 1 else student_outputs,
                teacher_outputs[0] if len(teacher_outputs) == 1 else teacher_outputs)

    @staticmethod
    def _tensor(capture: _Capture, calls: list) -> Tensor:
        if not calls:
            raise DistillError(f"Distill: {capture.describe()}: the layer did not run in forward; name one that does")
        if len(calls) > 1:
            raise DistillError(f"Distill: {capture.describe()} ran {len(calls)} times in one forward; name a layer "
                               f"that runs once (a layer reused in forward, such as a shared ReLU, is ambiguous)")
        inputs, outputs = calls[0]
        value = outputs if capture.io == "output" else inputs
        if capture.idx is not None:
            value = value[capture.idx]
        elif isinstance(value, (tuple, list)) and len(value) == 1:
            value = value[0]
        if not isinstance(value, Tensor):
            raise DistillError(f"Distill: {capture.describe()} is a {type(value).__name__}"
                               f"{f' of {len(value)}' if isinstance(value, (tuple, list)) else ''}, not a Tensor; "
                               f"give 'idx' in the config to pick one")
        return value
