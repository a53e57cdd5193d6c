"""Structured filter pruning, as PaddleSlim's ``paddleslim.dygraph`` pruners.

A ``FilterPruner`` captures the model once (``oar.jit.to_static`` on the given input shape, in
eval mode, without side effects), finds each parameter's channel group in the program
(``oar.slim.prune.dependency``), scores the master's channels with its criterion and removes the
lowest for real (``PruningPlan.apply``).

>>> import oar
>>> from oar.slim.prune import L1NormFilterPruner
>>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 8, 3), oar.nn.ReLU(), oar.nn.Conv2D(8, 4, 3))
>>> pruner = L1NormFilterPruner(net, [1, 3, 8, 8])
>>> plan = pruner.prune_vars({"0.weight": 0.5}, axis=0)
>>> net[0].weight.shape, net[2].weight.shape
([4, 3, 3, 3], [4, 4, 3, 3])
>>> net(oar.ones([1, 3, 8, 8])).shape
[1, 4, 4, 4]
>>> pruner.restore()
>>> net[0].weight.shape
[8, 3, 3, 3]
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import types
import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np

import oar
from oar.errors import ArgumentError
from oar.jit import StaticFunction
from oar.nn import Conv2D, Layer
from oar.slim.prune.criteria import fpgm, l1_norm, l2_norm, pruned_mask
from oar.slim.prune.dependency import ChannelGroup, PruningError, find_group
from oar.slim.prune.plan import PruningMask, PruningPlan
from oar.static import InputSpec, Program

SENSITIVE_RATIOS = tuple(round(r, 2) for r in np.arange(0.1, 1, 0.1))


class Status:
    """The sensitivities computed so far (``sensitivies``, PaddleSlim's spelling, and
    ``sensitivities``), saved as JSON (PaddleSlim pickles them): ``{name: {ratio: loss}}``."""

    def __init__(self, src: str | None = None):
        self.sensitivities: dict[str, dict[float, float]] = {}
        if src is not None and os.path.isfile(src):
            self.load(src)

    @property
    def sensitivies(self) -> dict[str, dict[float, float]]:
        return self.sensitivities

    def save(self, dst: str) -> None:
        data = {name: {repr(float(r)): float(loss) for r, loss in losses.items()}
                for name, losses in self.sensitivities.items()}
        with open(dst, "w") as f:
            json.dump({"format": "oar.slim.sensitivities", "version": 1, "sensitivities": data}, f, indent=1)

    def load(self, src: str) -> None:
        with open(src) as f:
            data = json.load(f)
        if data.get("format") != "oar.slim.sensitivities":
            raise ArgumentError(f"{src} is not a sensitivities file written by oar.slim")
        self.sensitivities = {name: {float(r): float(loss) for r, loss in losses.items()}
                              for name, losses in data["sensitivities"].items()}


def _input_specs(inputs) -> list[InputSpec]:
    """``inputs`` -- a shape ``[1, 3, 32, 32]``, a list of shapes, InputSpecs or tensors -- as specs."""
    if isinstance(inputs, (InputSpec, oar.Tensor)):
        inputs = [inputs]
    if isinstance(inputs, Sequence) and inputs and all(isinstance(d, int) for d in inputs):
        inputs = [inputs]
    specs = []
    for i, item in enumerate(inputs):
        if isinstance(item, InputSpec):
            specs.append(item)
        elif isinstance(item, oar.Tensor):
            specs.append(InputSpec(item.shape, item.dtype, f"x{i}"))
        elif isinstance(item, Sequence) and all(isinstance(d, int) for d in item):
            specs.append(InputSpec(list(item), "float32", f"x{i}"))
        else:
            raise ArgumentError(f"inputs: expected a shape, a list of shapes, InputSpecs or tensors, got {item!r}")
    return specs


def capture(model: Layer, inputs) -> Program:
    """The program of ``model``'s forward for ``inputs`` (see ``FilterPruner``), captured in eval
    mode; the model itself is left as it was (its mode, its forward)."""
    forward = model.forward
    if isinstance(forward, StaticFunction):  # the model was given to to_static: capture its Python forward
        forward = types.MethodType(forward.dygraph_function, model)
    modes = [(layer, layer.training) for layer in model.sublayers(include_self=True)]
    model.eval()
    try:
        return oar.jit.to_static(forward, input_spec=_input_specs(inputs)).get_concrete_program()
    finally:
        for layer, mode in modes:
            object.__setattr__(layer, "training", mode)


class FilterPruner:
    """Prune filters (output channels) of a model's convs, with everything that depends on them,
    as ``paddleslim.dygraph.FilterPruner``; a subclass gives the criterion (``cal_mask``).

    ``inputs`` is the input shape (``[1, 3, 32, 32]``), a list of shapes, or InputSpecs/tensors,
    one per forward argument. ``sen_file`` loads sensitivities computed before. Parameters are
    replaced by smaller ones: create the optimizer after pruning (``opt`` is refused for now).
    """

    criterion: Callable[[np.ndarray, int], np.ndarray] = staticmethod(l1_norm)

    def __init__(self, model: Layer, inputs, sen_file: str | None = None, opt=None, skip_leaves: bool = True):
        if opt is not None:
            raise ArgumentError(f"{type(self).__name__}: opt is not supported: pruning replaces the parameters, so "
                                f"create the optimizer after pruning")
        self.model = model
        self.inputs = inputs
        self.skip_leaves = skip_leaves
        self.plan: PruningPlan | None = None
        self.skipped: dict[str, str] = {}
        self._status = Status(sen_file)
        self._program: Program | None = None
        self._program_key = None
        self._original = self._shapes()

    # -- analysis -------------------------------------------------------------------------------
    def _shapes(self) -> dict[str, tuple]:
        shapes = {n: tuple(p.shape) for n, p in self.model.named_parameters()}
        shapes.update({n: tuple(b.shape) for n, b in self.model.named_buffers()})
        return shapes

    @property
    def program(self) -> Program:
        """The model's captured program, captured again when the model's shapes changed."""
        key = tuple(self._shapes().items())
        if self._program is None or key != self._program_key:
            self._program, self._program_key = capture(self.model, self.inputs), key
        return self._program

    def group(self, var_name: str, axis: int = 0) -> ChannelGroup:
        """The channel group of ``var_name`` along ``axis``: what moves with its channels."""
        return find_group(self.program, var_name, axis)

    def conv_weights(self) -> list[str]:
        """The names of the conv weights of the program, in program order."""
        program = self.program
        names = [program.values[n.inputs[1]].name for n in program.nodes
                 if n.op == "conv" and program.is_param(n.inputs[1])]
        return list(dict.fromkeys(names))

    # -- masks and plans ------------------------------------------------------------------------
    def cal_mask(self, pruned_ratio: float, group: ChannelGroup) -> np.ndarray:
        """The keep mask of the group's master channels: the lowest ``criterion`` scores go."""
        value = dict(self.model.named_parameters()).get(group.master)
        if value is None:
            value = dict(self.model.named_buffers())[group.master]
        return pruned_mask(self.criterion(value.numpy(copy=False), group.axis), pruned_ratio)

    def _plan_for(self, group: ChannelGroup, ratio: float) -> PruningPlan:
        keep = self.cal_mask(ratio, group)
        plan = PruningPlan(type(self.model).__name__)
        for name, axis, mask in group.masks(keep):
            plan.add(name, PruningMask(axis, mask, float(ratio)))
        return plan

    def prune_var(self, var_name: str, pruned_axis: int, pruned_ratio: float, apply: str | None = "impretive"
                  ) -> PruningPlan:
        """Prune ``var_name`` along ``pruned_axis`` by ``pruned_ratio`` and everything its channels
        reach; ``apply=None`` only returns the plan."""
        pruned_axis = pruned_axis[0] if isinstance(pruned_axis, (list, tuple)) else pruned_axis
        plan = self._plan_for(self.group(var_name, pruned_axis), pruned_ratio)
        self._apply(plan, apply)
        return plan

    def prune_vars(self, ratios: Mapping[str, float] | float, axis: int = 0, apply: str | None = "impretive"
                   ) -> PruningPlan:
        """Prune each ``{name: ratio}`` (a parameter already pruned as part of an earlier name's
        group is skipped, as in PaddleSlim), or, with one float, every conv's filters by it: a conv
        whose channels reach a fixed shape (the model's output) is skipped then, and listed in
        ``skipped``. Returns the plan; the model is pruned in place unless ``apply=None``."""
        axis = axis[0] if isinstance(axis, (list, tuple)) else axis
        plan = self._plan_vars(ratios, axis)
        if self.skipped:
            warnings.warn(f"prune_vars: {len(self.skipped)} conv(s) not pruned: {'; '.join(self.skipped.values())}",
                          UserWarning, stacklevel=2)
        self._apply(plan, apply)
        self.plan = plan
        return plan

    def _plan_vars(self, ratios: Mapping[str, float] | float, axis: int) -> PruningPlan:
        uniform = not isinstance(ratios, Mapping)
        if uniform:
            ratios = dict.fromkeys(self.conv_weights(), float(ratios))
        self.skipped = {}
        plan = PruningPlan(type(self.model).__name__)
        for name, ratio in ratios.items():
            if plan.contains(name, axis):
                continue
            try:
                group = self.group(name, axis)
            except PruningError as e:
                if not uniform:
                    raise
                self.skipped[name] = str(e)
                continue
            plan.extend(self._plan_for(group, ratio))
            plan.ratios[name] = float(ratio)
        return plan

    def _apply(self, plan: PruningPlan, apply: str | None) -> None:
        if apply in ("impretive", "imperative"):
            plan.apply(self.model)
        elif apply is not None:
            raise ArgumentError(f"apply must be 'impretive' (prune now) or None (plan only), got {apply!r}")

    def restore(self) -> None:
        """Undo the last ``prune_vars``."""
        if self.plan is not None:
            self.plan.restore(self.model)
            self.plan = None

    def status(self) -> dict[str, dict]:
        """Each parameter whose shape pruning changed: ``{name: {"original": shape, "pruned": shape}}``."""
        now = self._shapes()
        return {n: {"original": list(s), "pruned": list(now[n])} for n, s in self._original.items()
                if n in now and now[n] != s}

    # -- sensitivity ----------------------------------------------------------------------------
    def sensitive(self, eval_func: Callable[[], float] | None = None, sen_file: str | None = None,
                  target_vars: Sequence[str] | None = None, skip_vars: Sequence[str] = (),
                  ratios: Sequence[float] = SENSITIVE_RATIOS) -> dict[str, dict[float, float]]:
        """The metric loss of pruning each conv alone: ``{name: {ratio: (base - pruned) / base}}``
        (PaddleSlim's shape and formula), each pruning undone after its evaluation. Ratios already
        in ``sen_file`` are not computed again; the file is written after each one. With neither
        ``eval_func`` nor ``sen_file``, the sensitivities computed so far."""
        if eval_func is None:
            if sen_file is not None:
                self._status.load(sen_file)
            return self._status.sensitivities
        if sen_file is not None and os.path.isfile(sen_file):
            self._status.load(sen_file)
        sens = self._status.sensitivities
        baseline = None
        for name in target_vars if target_vars is not None else self.conv_weights():
            if name in skip_vars:
                continue
            try:
                group = self.group(name, 0)
            except PruningError as e:
                if target_vars is not None:
                    raise
                self.skipped[name] = str(e)
                continue
            for ratio in ratios:
                ratio = round(float(ratio), 2)
                if ratio in sens.get(name, {}):
                    continue
                if baseline is None:
                    baseline = float(eval_func())
                plan = self._plan_for(group, ratio)
                plan.apply(self.model)
                try:
                    pruned = float(eval_func())
                finally:
                    plan.restore(self.model)
                sens.setdefault(name, {})[ratio] = (baseline - pruned) / (baseline + 1e-3)
                if sen_file is not None:
                    self._status.save(sen_file)
        return sens

    # -- pruning to a FLOPs target ----------------------------------------------------------------
    def _flops(self) -> int:
        """The model's FLOPs now, by ``oar.flops`` on ``inputs`` (a batch of 1 where a dimension is free)."""
        shapes = [[d if d is not None and d > 0 else 1 for d in spec.shape] for spec in _input_specs(self.inputs)]
        with contextlib.redirect_stdout(io.StringIO()):  # oar.flops prints its totals, as paddle.flops does
            return oar.flops(self.model, shapes[0] if len(shapes) == 1 else shapes, print_detail=False)

    @staticmethod
    def _get_ratios_by_loss(sensitivities: Mapping[str, Mapping[float, float]], loss: float,
                            skip_vars: Sequence[str] = ()) -> dict[str, float]:
        """Each parameter's largest ratio whose loss is at most ``loss``, interpolated linearly
        between the table's ratios (PaddleSlim's rule); a parameter no ratio of which is within
        ``loss`` is left out."""
        ratios = {}
        for name, losses in sensitivities.items():
            if name in skip_vars:
                continue
            points = sorted((float(r), float(v)) for r, v in losses.items())
            for i in range(len(points) - 1, -1, -1):
                r0, l0 = points[i]
                if l0 <= loss:
                    if i == len(points) - 1:
                        ratios[name] = r0
                    else:
                        r1, l1 = points[i + 1]
                        ratios[name] = r0 + (loss - l0) * (r1 - r0) / (l1 - l0)
                    break
        return ratios

    def _round_to(self, ratios: Mapping[str, float], dims: int = 0, factor: int = 8) -> dict[str, float]:
        """The ratios changed so that the channels kept are a multiple of ``factor`` (at least ``factor``)."""
        shapes = self._shapes()
        rounded = {}
        for name, ratio in ratios.items():
            size = shapes[name][dims]
            kept = max(factor, int(round((1 - ratio) * size / factor)) * factor)
            rounded[name] = max(0.0, (size - kept) / size)
        return rounded

    def get_ratios_by_sensitivity(self, pruned_flops: float, align: int | None = None, dims: int = 0,
                                  skip_vars: Sequence[str] = ()) -> tuple[dict[str, float], float]:
        """The ratios, from the sensitivities (``sensitive()``), that remove at least
        ``pruned_flops`` of the model's FLOPs for the smallest loss budget: every parameter is
        pruned by the largest ratio whose loss is within the budget (``_get_ratios_by_loss``), and
        the budget is bisected, each candidate pruned, measured by ``oar.flops`` and restored.
        Returns ``(ratios, fraction of FLOPs removed)``. ``align`` keeps a multiple of it channels."""
        if not 0.0 < float(pruned_flops) < 1.0:
            raise ArgumentError(f"pruned_flops must be a fraction in (0, 1), got {pruned_flops}")
        sens = {name: losses for name, losses in self._status.sensitivities.items() if name not in skip_vars}
        if not any(sens.values()):
            raise ArgumentError("get_ratios_by_sensitivity: no sensitivities to choose ratios from: call "
                                "sensitive(eval_func) first, or give the pruner a sen_file")
        base = self._flops()
        measured: dict[tuple, float] = {}  # pruned channel counts -> fraction of FLOPs removed

        def removed(loss: float) -> tuple[dict[str, float], float]:
            ratios = self._get_ratios_by_loss(sens, loss)
            if align is not None:
                ratios = self._round_to(ratios, dims, align)
            plan = self._plan_vars(ratios, dims)
            key = tuple((name, m.dims, int(m.mask.sum())) for name, masks in plan.masks.items() for m in masks)
            if key not in measured:
                plan.apply(self.model)
                try:
                    measured[key] = (base - self._flops()) / base
                finally:
                    plan.restore(self.model)
            return ratios, measured[key]

        losses = [v for table in sens.values() for v in table.values()]
        low, high = min(losses) - 1e-9, max(losses)  # nothing is pruned at `low`; every max ratio at `high`
        best, reached = removed(high)
        if reached < pruned_flops:
            raise PruningError(f"get_ratios_by_sensitivity: pruning {len(best)} conv(s) by the largest ratios of the "
                               f"sensitivities removes {reached:.1%} of the FLOPs, less than the {pruned_flops:.1%} "
                               f"asked for: add larger ratios to sensitive(), or prune fewer FLOPs")
        tolerance = 1e-4 * max(high - low, 1e-9)
        while high - low > tolerance:
            mid = (low + high) / 2
            ratios, got = removed(mid)
            if got >= pruned_flops:
                high, best, reached = mid, ratios, got
            else:
                low = mid
        return best, reached

    def sensitive_prune(self, pruned_flops: float, skip_vars: Sequence[str] = (), align: int | None = None
                        ) -> PruningPlan:
        """Prune at least ``pruned_flops`` (a fraction, 0.4 = 40%) of the model's FLOPs for the least
        loss of the metric, by ratios chosen from the sensitivities (``get_ratios_by_sensitivity``;
        compute them with ``sensitive(eval_func)`` first). Depthwise convs are skipped, as in
        PaddleSlim (they are pruned with their input conv). Undoes the previous pruning first. The
        plan's ``ratios`` are the ratios chosen and its ``pruned_flops`` the fraction of FLOPs the
        pruned model has fewer, by ``oar.flops``.

        >>> import oar
        >>> from oar.slim.prune import L1NormFilterPruner
        >>> net = oar.nn.Sequential(oar.nn.Conv2D(3, 16, 3, padding=1), oar.nn.ReLU(),
        ...                         oar.nn.Conv2D(16, 16, 3, padding=1), oar.nn.ReLU(),
        ...                         oar.nn.AdaptiveAvgPool2D(1), oar.nn.Flatten(), oar.nn.Linear(16, 4))
        >>> x = oar.randn([8, 3, 8, 8])
        >>> reference = net(x)
        >>> def evaluate():  # a metric to keep high: here, how close the outputs stay
        ...     return 1.0 / (1.0 + float((net(x) - reference).abs().mean()))
        >>> pruner = L1NormFilterPruner(net, [1, 3, 8, 8])
        >>> _ = pruner.sensitive(eval_func=evaluate)
        >>> plan = pruner.sensitive_prune(0.4)
        >>> plan.pruned_flops >= 0.4, net(x).shape
        (True, [8, 4])
        """
        skip = set(skip_vars)
        for path, layer in self.model.named_sublayers(include_self=True):
            if isinstance(layer, Conv2D) and layer._groups > 1:
                skip.update(f"{path}.{attr}" if path else attr for attr, _ in layer.named_parameters(
                    include_sublayers=False))
        self.restore()
        base = self._flops()
        ratios, _ = self.get_ratios_by_sensitivity(pruned_flops, align=align, dims=0, skip_vars=sorted(skip))
        plan = self.prune_vars(ratios, axis=0)
        plan.pruned_flops = (base - self._flops()) / base
        return plan


class L1NormFilterPruner(FilterPruner):
    """Filters with the lowest mean absolute value go (``paddleslim.dygraph.L1NormFilterPruner``)."""

    criterion = staticmethod(l1_norm)


class L2NormFilterPruner(FilterPruner):
    """Filters with the lowest Euclidean norm go (``paddleslim.dygraph.L2NormFilterPruner``)."""

    criterion = staticmethod(l2_norm)


class FPGMFilterPruner(FilterPruner):
    """Filters closest to the geometric median go (``paddleslim.dygraph.FPGMFilterPruner``)."""

    criterion = staticmethod(fpgm)
