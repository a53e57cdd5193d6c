"""What the layering made public for other packages: lazy registry entries, the lowering table,
AMP categories, pass phases and opt-in passes, the executor's observer, the fusible trait -- and
that eager code never imports the static graph."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError, RegistryError
from oar.jit import to_static
from oar.ops import NUMPY_OUT, Op, amp_category, lowering, same_meta
from oar.plugins import Lazy, Registry, hookimpl, registries
from oar.static import InputSpec
from oar.static.passes import PHASES, Pass, graph_pass, observe, optimize, select_passes


def run_python(script: str) -> dict:
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                            timeout=120, check=True)
    return json.loads(result.stdout.splitlines()[-1])


def test_eager_code_never_imports_the_static_graph():
    report = run_python("""
        import json, sys
        import oar
        x = oar.to_tensor([[1.0, -2.0], [3.0, 4.0]], stop_gradient=False)
        loss = (oar.tanh(x @ x) + x.exp()).sum()
        loss.backward()
        for row in x:  # iteration and .to() are op methods too
            row.to("float64")
        "cond" in oar.plugins.registries().ops and oar.plugins.registries().passes  # registries read
        print(json.dumps(sorted(m for m in sys.modules if m.startswith(("oar._graph", "oar.jit", "oar.static")))))
    """)
    assert report == []


def test_a_lazy_entry_is_imported_on_first_use_as_its_registrant():
    registry = Registry("test thing")
    registry.register("dumps", Lazy("json:dumps"))
    assert "dumps" in registry and registry.source_of("dumps") == "oar"
    assert registry.get("dumps") is json.dumps
    assert dict(registry.items())["dumps"] is json.dumps
    with pytest.raises(RegistryError, match="module:attribute"):
        Lazy("json.dumps")


def test_a_lazy_op_registers_its_kernel_when_first_looked_up(tmp_path, monkeypatch):
    module = tmp_path / "lazy_op_module.py"
    module.write_text(textwrap.dedent("""
        import numpy as np
        from oar.ops import Op, same_meta
        imported = True
        triple_op = Op("lazy_triple", reference=lambda x: x * 3, meta=same_meta, traits={"nondiff"})
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugin = types.ModuleType("lazy_op_plugin")

    @hookimpl
    def oar_register_ops(ops):
        ops.add(Lazy("lazy_op_module:triple_op"), name="lazy_triple")

    plugin.oar_register_ops = oar_register_ops
    oar.plugins.register(plugin, name="lazy_op_plugin")
    try:
        assert "lazy_op_module" not in sys.modules and "lazy_triple" in registries().ops
        op = registries().ops.get("lazy_triple")
        assert sys.modules["lazy_op_module"].imported
        assert op(oar.to_tensor([1.0, 2.0])).tolist() == [3.0, 6.0]
        assert registries().ops.source_of("lazy_triple") == "lazy_op_plugin"
        assert "lazy_triple@cpu" in registries().kernels.names_from("lazy_op_plugin")
    finally:
        oar.plugins.unregister("lazy_op_plugin")
        sys.modules.pop("lazy_op_module", None)


def test_an_op_declares_its_lowerings_and_a_plugin_adds_others():
    assert lowering(NUMPY_OUT, "add") is np.add
    assert lowering(NUMPY_OUT, "exp") is np.exp and lowering(NUMPY_OUT, "sigmoid") is None
    plugin = types.ModuleType("lowering_plugin")

    @hookimpl
    def oar_register_op_lowerings(lowerings):
        lowerings.add("toy", "exp", "EXP({0})")

    plugin.oar_register_op_lowerings = oar_register_op_lowerings
    oar.plugins.register(plugin, name="lowering_plugin")
    try:
        assert lowering("toy", "exp") == "EXP({0})"
        assert registries().lowerings.ops_for("toy") == ["exp"]
    finally:
        oar.plugins.unregister("lowering_plugin")
    assert lowering("toy", "exp") is None


def test_the_amp_category_is_the_ops_unless_a_plugin_overrides_it():
    assert (amp_category("matmul"), amp_category("exp"), amp_category("add")) == ("low_precision", "fp32", "promote")
    plugin = types.ModuleType("amp_plugin")

    @hookimpl
    def oar_register_amp_categories(amp):
        amp.register("add", "fp32")

    plugin.oar_register_amp_categories = oar_register_amp_categories
    oar.plugins.register(plugin, name="amp_plugin")
    try:
        assert amp_category("add") == "fp32" and amp_category(registries().ops.get("add")) == "fp32"
    finally:
        oar.plugins.unregister("amp_plugin")
    assert amp_category("add") == "promote"


def _capture(fn, *args):
    static = to_static(fn)
    static(*args)
    return static.concrete_program


def test_passes_run_phase_by_phase_whatever_the_registration_order():
    ran = []

    def recorder(name):
        def run(program):
            ran.append(name)
            return program
        return run

    plugin = types.ModuleType("phase_plugin")

    @hookimpl
    def oar_register_passes(passes):  # registered in the reverse of their phases
        passes.register("late_fuse", Pass("late_fuse", recorder("late_fuse"), phase="fuse", level=1))
        passes.register("early_fold", Pass("early_fold", recorder("early_fold"), phase="fold", level=1))

    plugin.oar_register_passes = oar_register_passes
    oar.plugins.register(plugin, name="phase_plugin")
    try:
        names = [p.name for p in select_passes(1)]
        assert names.index("dead_code_elimination") < names.index("early_fold") < names.index("late_fuse")
        optimize(_capture(lambda x: x * 2.0, oar.ones([2])), 1)
        assert ran == ["early_fold", "late_fuse"]
    finally:
        oar.plugins.unregister("phase_plugin")
    with pytest.raises(ArgumentError, match="phase must be one of"):
        Pass("nowhere", lambda p: p, phase="later")
    assert PHASES == ("simplify", "fold", "quantize", "fuse", "fuse_elementwise")


def test_an_opt_in_pass_runs_only_when_named():
    @graph_pass(phase="quantize", level=1, opt_in=True)
    def double_the_output(program):
        (node,) = program.nodes
        node.attrs = {**node.attrs, "scale": node.attrs["scale"] * 2}
        return program

    plugin = types.ModuleType("opt_in_plugin")
    plugin.oar_register_passes = hookimpl(lambda passes: passes.register(double_the_output.name, double_the_output))
    oar.plugins.register(plugin, name="opt_in_plugin")
    try:
        program = _capture(lambda x: oar.scale(x, 3.0), oar.ones([2]))
        assert "double_the_output" not in [p.name for p in select_passes(3)]
        assert optimize(program, 2).nodes[0].attrs["scale"] == 3.0
        assert optimize(program, 2, enable=["double_the_output"]).nodes[0].attrs["scale"] == 6.0
    finally:
        oar.plugins.unregister("opt_in_plugin")


def test_an_observer_sees_each_nodes_outputs_and_the_batch_runs_whole(monkeypatch):
    import oar._graph.executor as executor_module

    static = to_static(lambda x: oar.tanh(x * 2.0) + x, input_spec=[InputSpec([None, 512], "float32")])
    x = oar.to_tensor(np.linspace(-1, 1, 64 * 512, dtype=np.float32).reshape(64, 512))
    expected = static(x).numpy()  # captures
    monkeypatch.setattr(executor_module, "_spreads_batch", lambda kernel: False)
    parts = []
    monkeypatch.setattr(executor_module, "run_in_parts", lambda work, n: parts.append(n) or [work(k) for k in range(n)])
    seen = []

    def observer(program, node, outputs):
        seen.append((program, node.op, outputs[0].shape))

    oar.set_num_threads(2)
    try:
        static(x)
        assert parts == [2]  # without an observer the batch runs in parts
        with observe(observer):
            got = static(x).numpy()
    finally:
        oar.set_num_threads(1)
    assert parts == [2] and seen, "the observed run was split or not observed"
    program = seen[0][0]
    assert [op for _, op, _ in seen] == [n.op for n in program.nodes]
    assert all(shape == (64, 512) for _, _, shape in seen)
    np.testing.assert_array_equal(got, expected)
    static(x)
    assert len(seen) == len(program.nodes)  # none after the block


def test_elementwise_fusion_chains_the_ops_that_declare_the_fusible_trait():
    def cube_into(x, out):
        return np.power(x, 3, out=out)  # out may be x's own buffer: one ufunc writes it safely

    fusible = Op("test_cube", reference=lambda x: x * x * x, meta=same_meta, traits={"elementwise", "fusible"},
                 lowerings={NUMPY_OUT: cube_into})
    opaque = Op("test_cube_opaque", reference=lambda x: x * x * x, meta=same_meta, traits={"elementwise"})
    fusible.defgrad(lambda ctx, g: g * 3.0 * ctx.inputs[0] * ctx.inputs[0])
    opaque.defgrad(lambda ctx, g: g * 3.0 * ctx.inputs[0] * ctx.inputs[0])
    plugin = types.ModuleType("fusible_plugin")

    @hookimpl
    def oar_register_ops(ops):
        ops.add(fusible)
        ops.add(opaque)

    plugin.oar_register_ops = oar_register_ops
    oar.plugins.register(plugin, name="fusible_plugin")
    try:
        x = oar.to_tensor(np.linspace(-1, 1, 8, dtype=np.float32))
        for op, fused in ((fusible, True), (opaque, False)):
            program = optimize(_capture(lambda t, op=op: op(t * 2.0) + 1.0, x), 2)
            ops = [n.op for n in program.nodes]
            assert (ops == ["fused_elementwise"]) == fused, ops
        static = to_static(lambda t: fusible(t * 2.0) + 1.0)
        static(x)
        np.testing.assert_allclose(static(x).numpy(), (x.numpy() * 2.0) ** 3 + 1.0, rtol=1e-6)
    finally:
        oar.plugins.unregister("fusible_plugin")


def test_a_lazy_entry_that_cannot_be_imported_names_the_entry_and_its_plugin():
    registry = Registry("serving backend")
    registry.register("fast", Lazy("no_such_module_of_oar:load"))
    with pytest.raises(RegistryError, match=r"serving backend 'fast', registered by plugin 'oar' as "
                                            r"Lazy\('no_such_module_of_oar:load'\), cannot be imported: "
                                            r"ModuleNotFoundError"):
        registry.get("fast")
    registry.register("typo", Lazy("json:dumpz"))
    with pytest.raises(RegistryError, match=r"'typo'.*json:dumpz.*AttributeError"):
        registry.get("typo")
