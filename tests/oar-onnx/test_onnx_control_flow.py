"""Control flow through ONNX: ``cond`` -> If, ``while`` -> Loop, checked in ONNX Runtime against
eager oar.

The op table's cases (the ops called with hand-built blocks), then models as users write them:
``oar.static.nn.cond`` / ``while_loop`` and Python ``if`` / ``while`` / ``for`` on tensors under
to_static, exported once with a dynamic batch and run at batch 1 and 7 through the one file, every
branch taken and loops of different trip counts (none included); nested control flow; programs
built by hand for the forms capture seldom writes (a ``[1]`` condition, a loop variable given
twice, a body that returns a captured value).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx_test_support import core_op_cases, export_and_compare, session

import oar
import oar.nn as nn
import oar.nn.functional as F
import oar.onnx
from oar.onnx import ExportError
from oar.static import InputSpec, Program, ValueRef
from oar.static.nn import cond, while_loop

CASES = {c.id: c for c in core_op_cases() if c.op in ("cond", "while")}
# If and Loop have versions 13, 16, 19, 21, 23, 24, 25 (the types they carry): oar's oldest opset,
# the default (version 16's), and two newer.
OPSETS = [13, 17, 21, 25]
BATCH_SPEC = [InputSpec([None, 4], "float32", "x")]


def onnx_ops(graph: onnx.GraphProto) -> list[str]:
    """Every node's op type, the subgraphs' included (depth first)."""
    ops = []
    for node in graph.node:
        ops.append(node.op_type)
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                ops += onnx_ops(attr.g)
    return ops


def batches(*scales: float, features: int = 4) -> list[list[np.ndarray]]:
    """Inputs at batch 1 and 7 for each scale (``rng`` fixed: the tests are deterministic)."""
    rng = np.random.default_rng(0)
    return [[(scale * rng.standard_normal((batch, features))).astype(np.float32)] for scale in scales
            for batch in (1, 7)]


def check_batch_model(layer, feeds, tmp_path, *, opset: int = 17, expect=("If",), batched=None) -> onnx.ModelProto:
    """Export ``layer`` once with a dynamic batch, compare ONNX Runtime with eager on every feed,
    and check the file: strict shape inference, the batch symbolic (in the input and in the
    outputs ``batched``, by index: all of rank 2 by default), the control flow kept."""
    layer.eval()
    model = export_and_compare(layer, feeds[0], tmp_path, specs=BATCH_SPEC, opset=opset, feeds_for=feeds[1:])
    onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True, data_prop=True)
    batch = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert batch.dim_param == "batch" and not batch.HasField("dim_value")
    for i, output in enumerate(model.graph.output):  # no batch size baked into an output either
        dims = output.type.tensor_type.shape.dim
        if (i in batched) if batched is not None else len(dims) == 2:
            assert not dims[0].HasField("dim_value"), output
    ops = onnx_ops(model.graph)
    for op in expect:
        assert op in ops, f"{op} not in {ops}"
    return model


def eager(layer, x: np.ndarray):
    with oar.no_grad():
        return layer(oar.to_tensor(x))


# -- the op table ----------------------------------------------------------------------------------
@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case_id", ["cond_true", "cond_false"])
def test_cond_case_takes_both_branches_through_one_file(case_id, opset, tmp_path):
    case = CASES[case_id]
    pred, x = case.inputs  # float64, as the blocks are typed
    flipped = np.logical_not(pred)
    model = export_and_compare(case.fn, case.inputs, tmp_path, opset=opset, feeds_for=[[flipped, x]],
                               rtol=case.rtol, atol=case.atol)
    assert [n.op_type for n in model.graph.node] == ["If"]
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


@pytest.mark.parametrize("opset", OPSETS)
@pytest.mark.parametrize("case_id", ["while_3_iterations", "while_no_iteration"])
def test_while_case_runs_every_trip_count_through_one_file(case_id, opset, tmp_path):
    case = CASES[case_id]
    i, x, n = case.inputs
    other_counts = [[np.array(0), x, np.array(7)], [np.array(2), x, np.array(3)], [np.array(9), x, np.array(0)]]
    model = export_and_compare(case.fn, case.inputs, tmp_path, opset=opset, feeds_for=other_counts,
                               rtol=case.rtol, atol=case.atol)
    assert "Loop" in [n.op_type for n in model.graph.node]
    (loop,) = [n for n in model.graph.node if n.op_type == "Loop"]
    assert loop.input[0] == ""  # no trip count: the condition alone stops the loop
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_every_control_flow_case_of_the_table_is_tested_here():
    assert sorted(CASES) == ["cond_false", "cond_true", "while_3_iterations", "while_no_iteration"]


# -- cond in models ----------------------------------------------------------------------------------
class CondGate(nn.Layer):
    """A residual branch taken only when the features are positive on average."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.proj = nn.Linear(4, 3)
        self.skip = nn.Linear(4, 3)

    def forward(self, x):
        h = F.relu(self.fc(x)) + x
        return cond(x.mean() > 0, lambda: self.proj(h) * 2.0, lambda: self.skip(h) - self.proj.bias)


class PythonIfGate(CondGate):
    """CondGate written with a Python ``if`` on a tensor (converted by to_static)."""

    def forward(self, x):
        h = F.relu(self.fc(x)) + x
        if x.mean() > 0:
            out = self.proj(h) * 2.0
        else:
            out = self.skip(h) - self.proj.bias
        return out


@pytest.mark.parametrize("layer_type", [CondGate, PythonIfGate])
@pytest.mark.parametrize("opset", OPSETS)
def test_a_tensor_dependent_branch_exports_as_if_and_takes_both_branches(layer_type, opset, tmp_path):
    oar.seed(1)
    layer = layer_type()
    # Positive and negative inputs: the true branch, then the false one, at batch 1 and 7.
    feeds = [[np.abs(a)] for (a,) in batches(1.0)] + [[-np.abs(a)] for (a,) in batches(1.0)]
    taken = {bool(a.mean() > 0) for (a,) in feeds}
    assert taken == {True, False}
    check_batch_model(layer, feeds, tmp_path, opset=opset, expect=("If",))


def test_branches_returning_an_input_a_parameter_and_several_values(tmp_path):
    class Pick(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            # The true branch hands back an outside tensor and a parameter unchanged: ONNX's If
            # output must still be a tensor the branch writes.
            y = self.fc(x)
            return cond(x.sum() > 0, lambda: (x, self.fc.bias, y), lambda: (y * 3.0, self.fc.bias * 0.5, -x))

    oar.seed(2)
    feeds = [[np.abs(a)] for (a,) in batches(1.0)] + [[-np.abs(a)] for (a,) in batches(1.0)]
    check_batch_model(Pick(), feeds, tmp_path, batched=(0, 2))


def test_branches_of_different_static_sizes_give_a_dynamic_output(tmp_path):
    def f(x):
        # The true branch keeps 4 columns, the false one 2: the If output's dim is dynamic.
        return cond(x.sum() > 0, lambda: x * 2.0, lambda: F.max_pool2d(x, 2, 2))

    x = np.abs(np.random.default_rng(3).standard_normal((1, 1, 4, 4))).astype(np.float32)
    model = export_and_compare(f, [x], tmp_path, feeds_for=[[-x]])
    (out,) = model.graph.output
    assert [d.HasField("dim_value") for d in out.type.tensor_type.shape.dim][2:] == [False, False]


def test_an_output_that_a_branch_also_reads(tmp_path):
    def f(x):
        # y is both the model's first output and read by the branches (by name, from inside If):
        # naming it output_0 must not leave the branches reading a name that no longer exists.
        y = oar.tanh(x) * 2.0
        return y, cond(x.sum() > 0, lambda: y + 1.0, lambda: y * y)

    x = np.random.default_rng(4).standard_normal((2, 3)).astype(np.float32)
    export_and_compare(f, [np.abs(x)], tmp_path, feeds_for=[[-np.abs(x)]])


# -- while in models ---------------------------------------------------------------------------------
class Refine(nn.Layer):
    """Repeated refinement until the mean square of the state falls under a tolerance (at most
    ``max_iter`` steps); returns the state and the number of steps taken."""

    def __init__(self, tol: float = 1e-3, max_iter: int = 40):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.tol, self.max_iter = tol, max_iter

    def forward(self, x):
        def not_done(i, h):
            return oar.logical_and((h * h).mean() > self.tol, i < self.max_iter)

        def step(i, h):
            return i + 1, oar.tanh(self.fc(h)) * 0.5

        i, h = while_loop(not_done, step, [oar.zeros([], "int64"), x])
        return h, i


class PythonWhileRefine(Refine):
    """Refine written with a Python ``while`` on tensors (converted by to_static)."""

    def forward(self, x):
        h = x
        i = oar.zeros([], "int64")  # a tensor from the start: eager returns one too when no step runs
        while (h * h).mean() > self.tol and i < self.max_iter:
            h = oar.tanh(self.fc(h)) * 0.5
            i = i + 1  # (``i += 1`` on a tensor is an in-place write, which a captured loop refuses)
        return h, i


def refine_feeds() -> list[list[np.ndarray]]:
    # Large inputs need several steps, tiny ones none (the condition is false before the first).
    return batches(3.0, 0.5, 1e-3)


@pytest.mark.parametrize("layer_type", [Refine, PythonWhileRefine])
@pytest.mark.parametrize("opset", OPSETS)
def test_refinement_loop_runs_as_many_steps_as_each_input_needs(layer_type, opset, tmp_path):
    oar.seed(3)
    layer = layer_type()
    layer.eval()
    feeds = refine_feeds()
    steps = {int(eager(layer, a)[1].numpy()) for (a,) in feeds}
    assert 0 in steps and len(steps) >= 3, steps  # no step, and different numbers of steps
    check_batch_model(layer, feeds, tmp_path, opset=opset, expect=("Loop",))


def test_for_range_of_a_tensor_with_a_break(tmp_path):
    class Unroll(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            total = x * 0.0
            for _ in range(oar.full([], 6, "int64")):
                x = self.fc(x)
                if x.abs().mean() > 2.0:
                    break
                total = total + x
            return total

    oar.seed(4)
    check_batch_model(Unroll(), batches(0.1, 3.0, 30.0), tmp_path, expect=("Loop", "If"))


# -- nested control flow -----------------------------------------------------------------------------
class CondInWhile(nn.Layer):
    """Each step halves the state or pushes it through a layer, depending on its sign."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        def step(i, h):
            h = cond(h.sum() > 0, lambda: h * 0.5, lambda: oar.tanh(self.fc(h)) + 0.25)
            return i + 1, h

        i, h = while_loop(lambda i, h: oar.logical_and(h.abs().mean() > 0.05, i < 20), step,
                          [oar.zeros([], "int64"), x])
        return h, i


class WhileInCond(nn.Layer):
    """A loop only on one branch; the other branch is one layer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        def shrink():
            (h,) = while_loop(lambda h: h.abs().mean() > 0.5, lambda h: (self.fc(h) * 0.5,), [x])
            return h

        return cond(x.mean() > 0, shrink, lambda: F.relu(self.fc(x)))


class PythonNested(nn.Layer):
    """Python ``if`` inside a Python ``while`` inside a Python ``if``, all on tensors."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = x
        if x.sum() > 0:
            i = 0
            while h.abs().mean() > 0.3 and i < 5:
                if h.mean() > 0:
                    h = self.fc(h)
                else:
                    h = h * -0.5
                i += 1
        else:
            h = x * 2.0
        return h


@pytest.mark.parametrize("layer_type,expect", [(CondInWhile, ("Loop", "If")), (WhileInCond, ("If", "Loop")),
                                               (PythonNested, ("If", "Loop"))])
@pytest.mark.parametrize("opset", [13, 17])
def test_nested_control_flow(layer_type, expect, opset, tmp_path):
    oar.seed(5)
    model = check_batch_model(layer_type(), batches(0.2, 1.0, -1.0, 4.0), tmp_path, opset=opset, expect=expect)
    (outer,) = [n for n in model.graph.node if n.op_type == expect[0]]
    inner = [n.op_type for a in outer.attribute if a.type == onnx.AttributeProto.GRAPH for n in a.g.node]
    assert expect[1] in inner  # nested in the subgraph, not beside it


def test_nested_control_flow_at_the_newest_opset_passes_the_full_check(tmp_path):
    oar.seed(5)
    layer = CondInWhile()
    layer.eval()
    newest = onnx.defs.onnx_opset_version()
    path = str(tmp_path / "m")
    oar.onnx.export(layer, path, input_spec=BATCH_SPEC, opset_version=newest)
    model = onnx.load(path + ".onnx")
    assert model.opset_import[0].version == newest
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)


def test_nested_blocks_use_names_unique_across_every_graph(tmp_path):
    oar.seed(6)
    layer = CondInWhile()
    layer.eval()
    path = str(tmp_path / "m")
    oar.onnx.export(layer, path, input_spec=BATCH_SPEC)
    model = onnx.load(path + ".onnx")
    written: list[str] = []

    def collect(graph):
        written.extend(i.name for i in graph.input)
        written.extend(i.name for i in graph.initializer)
        for node in graph.node:
            written.extend(o for o in node.output if o)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    collect(attr.g)

    collect(model.graph)
    assert len(written) == len(set(written)), sorted(n for n in written if written.count(n) > 1)


# -- programs built by hand --------------------------------------------------------------------------
def block(feeds, build) -> Program:
    """A block with feeds of the metas ``feeds``; ``build(block, *feed_ids)`` returns output ids."""
    b = Program()
    ids = [b.new_value(shape, dtype).id for shape, dtype in feeds]
    b.feeds = list(ids)
    b.outputs = [ValueRef(v) for v in build(b, *ids)]
    return b


def node(b: Program, op: str, inputs, shape, dtype, **attrs) -> int:
    out = b.new_value(shape, dtype).id
    b.add_node(op, inputs, [out], attrs)
    return out


def run_program(program: Program, feeds: dict, tmp_path, opset: int = 17) -> list[np.ndarray]:
    path = str(tmp_path / "p")
    oar.onnx.export(program, path, opset_version=opset)
    model = onnx.load(path + ".onnx")
    onnx.checker.check_model(model, full_check=True)
    onnx.shape_inference.infer_shapes(model, strict_mode=True)
    return session(path + ".onnx").run(None, feeds)


def counting_loop(history: bool = False) -> Program:
    """``while i < n: i, a, b = i + 1, b, a + c`` with ``a`` and ``b`` both started from ``x``
    (one tensor given twice), ``c`` captured and the condition of shape [1]."""
    var = ([1], "int64"), ([3], "float32"), ([3], "float32")
    captured = ([1], "int64"), ([3], "float32")
    cond_block = block(var + captured, lambda b, i, a, x, n, c: [node(b, "less_than", [i, n], [1], "bool")])

    def body(b, i, a, x, n, c):
        one = b.add_constant(np.ones([1], np.int64), "one").id
        return [node(b, "add", [i, one], [1], "int64"), x, node(b, "add", [a, c], [3], "float32")]

    p = Program()
    n, x, c = p.add_feed([1], "int64", "n"), p.add_feed([3], "float32", "x"), p.add_feed([3], "float32", "c")
    zero = p.add_constant(np.zeros([1], np.int64), "zero")
    outs = [p.new_value(s, d).id for s, d in var]
    if history:
        outs += [p.new_value([], "int64").id] + [p.new_value([None, *s], d).id for s, d in var]
    p.add_node("while", [zero.id, x.id, x.id, n.id, c.id], outs,
               {"cond_block": cond_block, "body_block": block(var + captured, body), "num_loop_vars": 3,
                **({"history": True} if history else {})})
    p.outputs = [ValueRef(v) for v in outs[:3]]
    p.validate()
    return p


@pytest.mark.parametrize("trips", [0, 1, 4])
def test_loop_with_a_one_element_condition_a_repeated_input_and_a_swap(trips, tmp_path):
    x, c = np.array([1.0, 2.0, 3.0], np.float32), np.array([0.5, -1.0, 2.0], np.float32)
    i, a, b = run_program(counting_loop(), {"n": np.array([trips]), "x": x, "c": c}, tmp_path)
    want_a, want_b = x, x
    for _ in range(trips):
        want_a, want_b = want_b, want_a + c
    assert i.tolist() == [trips]
    np.testing.assert_allclose(a, want_a, rtol=1e-6)
    np.testing.assert_allclose(b, want_b, rtol=1e-6)


def test_the_loop_history_of_a_training_program_is_refused_naming_the_op(tmp_path):
    with pytest.raises(ExportError, match="'while'.*history=True"):
        oar.onnx.export(counting_loop(history=True), str(tmp_path / "h"))
    assert not (tmp_path / "h.onnx").exists()


def test_a_cond_reading_the_same_outside_tensor_twice(tmp_path):
    branch = [([2], "float32"), ([2], "float32")]
    true_block = block(branch, lambda b, u, v: [node(b, "add", [u, v], [2], "float32")])
    false_block = block(branch, lambda b, u, v: [v])  # returns its input: an Identity in the branch
    p = Program()
    pred, x = p.add_feed([], "bool", "p"), p.add_feed([2], "float32", "x")
    out = p.new_value([2], "float32").id
    p.add_node("cond", [pred.id, x.id, x.id], [out], {"true_block": true_block, "false_block": false_block})
    p.outputs = [ValueRef(out)]
    p.validate()
    x_value = np.array([1.5, -2.0], np.float32)
    for taken, want in ((True, 2 * x_value), (False, x_value)):
        (got,) = run_program(p, {"p": np.array(taken), "x": x_value}, tmp_path, opset=13)
        np.testing.assert_allclose(got, want)
