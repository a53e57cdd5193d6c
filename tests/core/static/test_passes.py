"""Graph passes: each keeps the outputs (compared before and after on real programs), the
pipeline picks passes by level, and a plugin's pass registered through the hook joins it."""

from __future__ import annotations

import importlib
import types

import numpy as np
import pytest

import oar
from oar._graph import passes as P
from oar._graph.executor import Executor
from oar.jit import to_static
from oar.plugins import registries
from oar.static import BuildStrategy


def capture(fn, *args):
    f = to_static(fn)
    f(*args)
    return f.concrete_program


def outputs(program, *args):
    with oar.no_grad():
        out = Executor(program.clone()).run(list(args))
    return [t.numpy() for t in (out if isinstance(out, (tuple, list)) else [out])]


def assert_same_outputs(before, after, *args):
    for a, b in zip(outputs(before, *args), outputs(after, *args)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def ops(program):
    return [n.op for n in program.nodes]


def test_constant_folding():
    def f(x):
        table = oar.exp(oar.to_tensor([0.0, 1.0, 2.0])) * 2.0 + 1.0  # constants only
        return x * table + oar.sum(oar.ones([3]))

    x = oar.rand([2, 3])
    program = capture(f, x)
    folded = P.constant_folding(program.clone())
    assert ops(program) == ["exp", "multiply", "add", "multiply", "sum", "add"]
    assert ops(folded) == ["multiply", "add"]
    assert_same_outputs(program, folded, x)


def test_constant_folding_leaves_random_ops():
    program = capture(lambda x: x + oar.bernoulli(oar.full([2], 0.5)), oar.ones([2]))
    assert "bernoulli" in ops(P.constant_folding(program.clone()))


def test_common_subexpression_elimination():
    def f(x):
        a = oar.exp(x) * oar.to_tensor([2.0])
        b = oar.exp(x) * oar.to_tensor([2.0])  # the same op on the same (equal) constant
        return a + b + oar.sum(x, axis=0) + oar.sum(x, axis=1).sum()

    x = oar.rand([3, 3])
    program = capture(f, x)
    cse = P.common_subexpression_elimination(program.clone())
    assert ops(program).count("exp") == 2 and ops(cse).count("exp") == 1
    assert ops(cse).count("multiply") == 1 and ops(cse).count("sum") == 3  # other attributes stay
    assert len(cse.constants) == 1
    assert_same_outputs(program, cse, x)


def test_cse_keeps_random_ops_apart():
    program = capture(lambda x: x + oar.rand([2]) + oar.rand([2]), oar.ones([2]))
    assert ops(P.common_subexpression_elimination(program.clone())).count("uniform") == 2


def test_dead_code_elimination_keeps_random_ops():
    def f(x):
        oar.exp(x)  # unused
        oar.rand([2])  # unused, but it advances the generator as eager does
        return x * 2.0

    x = oar.ones([2])
    program = capture(f, x)
    dce = P.dead_code_elimination(program.clone())
    assert ops(dce) == ["uniform", "multiply"]
    assert_same_outputs(program, dce, x)


def test_remove_detach():
    program = capture(lambda x: x.detach() * 2.0 + x, oar.ones([2]))
    out = P.remove_detach(program.clone())
    assert "assign" in ops(program) and "assign" not in ops(out)
    assert_same_outputs(program, out, oar.rand([2]))


def test_pipeline_levels():
    names = lambda level, inference: [p.name for p in P.select_passes(level, inference=inference)]  # noqa: E731
    assert names(0, True) == []
    assert names(1, True) == ["constant_folding", "common_subexpression_elimination", "dead_code_elimination"]
    assert "remove_detach" in names(2, True) and "remove_detach" not in names(2, False)
    assert names(1, True) == names(1, False)
    with pytest.raises(ValueError, match="unknown pass"):
        P.select_passes(2, disable=["no_such_pass"])
    level0 = P.optimize(capture(lambda x: x * oar.ones([2]), oar.ones([2])), 0)
    assert ops(level0) == ["multiply"] and len(level0.constants) == 1


def test_core_passes_are_registered_through_the_hook():
    from oar._builtin import GRAPH_PASSES

    passes = registries().passes
    for name, module in GRAPH_PASSES.items():
        p = passes.get(name)
        assert isinstance(p, P.Pass) and p.name == name and passes.source_of(name) == "oar.core"
        assert p is getattr(importlib.import_module(module), name)


def test_a_plugin_pass_joins_to_static_programs():
    seen = []

    def swap_exp_for_tanh(program):
        seen.append(len(program.nodes))
        for node in program.nodes:
            if node.op == "exp":
                node.op = "tanh"
        return program

    plugin = types.ModuleType("test_pass_plugin")

    @oar.hookimpl
    def oar_register_passes(passes):
        passes.register("swap_exp_for_tanh", P.Pass("swap_exp_for_tanh", swap_exp_for_tanh, level=1))

    plugin.oar_register_passes = oar_register_passes
    oar.plugins.register(plugin, name="test_pass_plugin")
    try:
        f = to_static(lambda x: oar.exp(x))
        x = oar.to_tensor([0.5])
        f(x)
        with oar.no_grad():
            assert f(x).tolist() == oar.tanh(x).tolist()
        assert seen
        off = to_static(lambda x: oar.exp(x), build_strategy=BuildStrategy(disable_passes=["swap_exp_for_tanh"]))
        off(x)
        with oar.no_grad():
            assert off(x).tolist() == oar.exp(x).tolist()
    finally:
        oar.plugins.unregister("test_pass_plugin")


def test_optimize_checks_what_a_pass_returns():
    def broken(program):
        return None

    plugin = types.ModuleType("test_broken_pass")

    @oar.hookimpl
    def oar_register_passes(passes):
        passes.register("broken", P.Pass("broken", broken, level=9))

    plugin.oar_register_passes = oar_register_passes
    oar.plugins.register(plugin, name="test_broken_pass")
    try:
        program = capture(lambda x: x + 1.0, oar.ones([1]))
        with pytest.raises(TypeError, match="pass 'broken' returned a NoneType"):
            P.optimize(program, 9)
        assert ops(P.optimize(program, 2)) == ["add"]  # level 9 passes stay out below level 9
    finally:
        oar.plugins.unregister("test_broken_pass")


def test_optimization_level_of_to_static():
    def f(x):
        return x * (oar.ones([2]) + 1.0) + oar.exp(x) + oar.exp(x)

    x = oar.rand([2])
    raw = to_static(f, build_strategy=0)
    opt = to_static(f)
    for g in (raw, opt):
        g(x)
        with oar.no_grad():
            np.testing.assert_allclose(g(x).numpy(), f(x).numpy(), rtol=1e-6)
    assert ops(raw._last.inference_executor.program) == ops(raw.concrete_program)
    # level 2 fuses the elementwise ops, the one exp left by CSE (read twice) included
    assert ops(opt._last.inference_executor.program) == ["fused_elementwise"]
    level1 = to_static(f, build_strategy=1)
    with oar.no_grad():
        level1(x)
    assert ops(level1._last.inference_executor.program) == ["multiply", "exp", "add", "add"]
