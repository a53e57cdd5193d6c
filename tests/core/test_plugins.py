"""The plugin system: entry-point discovery, blocking, tracing, broken plugins, late registration,
kernel priorities, and the worked example plugin installed into a fresh environment.

Entry points are read once per process, so every test that needs a different set of installed
plugins runs ``python`` in a subprocess with fake distributions (a ``*.dist-info`` folder and a
module) on its ``PYTHONPATH``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import numpy as np
import pytest

import oar
from oar.errors import PluginError, RegistryError
from oar.plugins import PLUGIN_PRIORITY, REFERENCE_PRIORITY, Op, hookimpl, registries

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PLUGIN = REPO / "examples" / "oar-plugin-example"

FOO_PLUGIN = """
    from oar.plugins import Op, hookimpl

    triple_op = Op("foo_triple", reference=lambda x: x * 3, meta=lambda x: x, traits={"elementwise"})


    @triple_op.defgrad
    def _triple_grad(ctx, g):
        return g * 3


    class FooBlock:
        pass


    @hookimpl
    def oar_register_ops(ops):
        ops.add(triple_op)


    @hookimpl
    def oar_register_layers(layers):
        layers.register("FooBlock", FooBlock)
"""


def make_distribution(root: Path, name: str, version: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """An installed distribution as importlib.metadata sees it: a dist-info folder and its modules."""
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"  # as wheels spell it (PEP 427)
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text("[oar]\n" + "".join(f"{ep} = {target}\n" for ep, target in entry_points.items()))
    for module, source in modules.items():
        (root / f"{module}.py").write_text(textwrap.dedent(source))


def run_python(args: list[str], path: Path | None, **env_vars: str) -> subprocess.CompletedProcess:
    """``python *args`` with ``path`` on PYTHONPATH and only the plugin switches given here."""
    env = {k: v for k, v in os.environ.items() if k not in ("OAR_DISABLE_PLUGINS", "OAR_TRACE_PLUGINS")}
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(path), env.get("PYTHONPATH")]))
    env.update(env_vars)
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120)


def plugins_json(path: Path | None, **env_vars: str) -> dict[str, dict]:
    result = run_python(["-m", "oar", "plugins", "--json"], path, **env_vars)
    assert result.returncode == 0, result.stderr
    return {info["name"]: info for info in json.loads(result.stdout)}


@pytest.fixture
def foo_site(tmp_path: Path) -> Path:
    make_distribution(tmp_path, "foo", "1.0", {"foo": "foo_plugin"}, {"foo_plugin": FOO_PLUGIN})
    return tmp_path


def test_entry_point_plugin_is_listed_with_version_and_registrations(foo_site):
    infos = plugins_json(foo_site)
    foo = infos["foo"]
    assert (foo["version"], foo["status"], foo["module"]) == ("1.0", "loaded", "foo_plugin")
    assert foo["registered"] == {"ops": ["foo_triple"], "kernels": ["foo_triple@cpu"], "layers": ["FooBlock"]}
    assert infos["oar.core"]["status"] == "loaded"

    text = run_python(["-m", "oar", "plugins"], foo_site)
    assert text.returncode == 0, text.stderr
    assert "foo 1.0 [loaded] (foo_plugin)" in text.stdout.splitlines()
    assert "    ops: foo_triple" in text.stdout.splitlines()


def test_oar_console_script_is_the_same_command(foo_site):
    script = shutil.which("oar", path=str(Path(sys.executable).parent))
    assert script is not None, "the oar console script is not installed next to this interpreter"
    env = {**os.environ, "PYTHONPATH": str(foo_site)}
    result = subprocess.run([script, "plugins"], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "foo 1.0 [loaded] (foo_plugin)" in result.stdout.splitlines()


def test_entry_point_plugin_op_runs_without_importing_its_module(foo_site):
    script = """
        import json, sys, oar
        assert "foo_plugin" not in sys.modules  # importing oar loads no plugin
        triple = oar.plugins.registries().ops.get("foo_triple")
        x = oar.to_tensor([1.0, 2.0], stop_gradient=False)
        triple(x).sum().backward()
        print(json.dumps([triple(x).tolist(), x.grad.tolist(), oar.plugins.registries().ops.source_of("foo_triple")]))
    """
    result = run_python(["-c", textwrap.dedent(script)], foo_site)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[3.0, 6.0], [3.0, 3.0], "foo"]


def test_disabled_plugin_is_blocked_and_registers_nothing(foo_site):
    infos = plugins_json(foo_site, OAR_DISABLE_PLUGINS=" other , foo")
    assert infos["foo"]["status"] == "blocked"
    assert infos["foo"]["registered"] == {}
    assert infos["oar.core"]["status"] == "loaded"

    script = """
        import sys, oar
        assert "foo_triple" not in oar.plugins.registries().ops
        assert "FooBlock" not in oar.plugins.registries().layers
        assert "foo_plugin" not in sys.modules, "a blocked plugin must not even be imported"
        from foo_plugin import triple_op  # the op object exists, but it was never registered
        try:
            triple_op(oar.to_tensor([1.0]))
        except oar.errors.RegistryError as exc:
            print(exc)
    """
    result = run_python(["-c", textwrap.dedent(script)], foo_site, OAR_DISABLE_PLUGINS="foo")
    assert result.returncode == 0, result.stderr
    assert "'foo_triple' is not registered" in result.stdout
    assert "OAR_DISABLE_PLUGINS" in result.stdout


def test_trace_plugins_logs_hook_calls_to_stderr(foo_site):
    load = ["-c", "import oar; oar.plugins.load_plugins()"]
    traced = run_python(load, foo_site, OAR_TRACE_PLUGINS="1")
    traced_without_foo = run_python(load, None, OAR_TRACE_PLUGINS="1")
    assert traced.returncode == 0 and traced_without_foo.returncode == 0, traced.stderr
    lines = [line for line in traced.stderr.splitlines() if line.startswith("[oar plugins]")]
    assert any("oar_register_ops" in line for line in lines)
    # foo implements oar_register_ops and oar_register_layers: one traced call more of each.
    for hook in ("oar_register_ops", "oar_register_layers"):
        call = f"{hook} [hook]"
        assert traced.stderr.count(call) == traced_without_foo.stderr.count(call) + 1, hook
    assert traced.stderr.count("oar_register_kernels [hook]") == traced_without_foo.stderr.count("oar_register_kernels [hook]")

    for quiet in (run_python(load, foo_site), run_python(load, foo_site, OAR_TRACE_PLUGINS="0")):
        assert quiet.returncode == 0, quiet.stderr
        assert "[oar plugins]" not in quiet.stderr


BROKEN_AT_IMPORT = """
    raise RuntimeError("boom at import")
"""

BROKEN_IN_HOOK = """
    import numpy as np
    from oar.plugins import Op, hookimpl

    CALLED = []  # the hooks that ran before the failure, so the test can check its premise
    half_op = Op("half_registered", reference=lambda x: x / 2, meta=lambda x: x)


    @hookimpl
    def oar_register_kernels(kernels):
        kernels.register("exp", "cpu", lambda x: np.zeros_like(x), dtypes=["float32"], priority=1000)
        CALLED.append("kernels")


    @hookimpl
    def oar_register_ops(ops):
        ops.add(half_op)
        CALLED.append("ops")


    @hookimpl
    def oar_register_passes(passes):
        raise ValueError("pass table corrupt")
"""

GOOD = """
    from oar.plugins import Op, hookimpl

    good_op = Op("good_double", reference=lambda x: x * 2, meta=lambda x: x)


    @hookimpl
    def oar_register_ops(ops):
        ops.add(good_op)
"""


def test_broken_plugins_warn_by_name_and_others_keep_working(tmp_path):
    make_distribution(tmp_path, "broken-import", "0.1", {"bad_import": "broken_import_plugin"},
                      {"broken_import_plugin": BROKEN_AT_IMPORT})
    make_distribution(tmp_path, "broken-hook", "0.2", {"bad_hook": "broken_hook_plugin"},
                      {"broken_hook_plugin": BROKEN_IN_HOOK})
    make_distribution(tmp_path, "good", "0.3", {"good": "good_plugin"}, {"good_plugin": GOOD})
    script = """
        import json, sys, warnings
        import oar
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reg = oar.plugins.registries()
        print(json.dumps({
            "warnings": [[w.category.__name__, str(w.message)] for w in caught],
            "ops": sorted(reg.ops),
            "good": reg.ops.get("good_double")(oar.to_tensor([1.0, 2.0])).tolist(),
            "exp": oar.exp(oar.to_tensor([0.0])).tolist(),
            "exp_kernel_sources": [k.source for k in reg.kernels.candidates("exp", "cpu")],
            "hooks_that_ran": sys.modules["broken_hook_plugin"].CALLED,
            "status": {i.name: [i.status, i.error] for i in oar.plugins.plugin_infos()},
        }))
    """
    result = run_python(["-c", textwrap.dedent(script)], tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)

    # One PluginWarning per broken plugin, keyed by the plugin it names (other installed plugins
    # are none of this test's business).
    by_plugin = {}
    for category, message in report["warnings"]:
        named = re.search(r"plugin '([^']+)'", message)
        if category == "PluginWarning" and named:
            by_plugin.setdefault(named.group(1), []).append(message)
    assert len(by_plugin.get("bad_hook", [])) == 1 and "ValueError: pass table corrupt" in by_plugin["bad_hook"][0]
    assert len(by_plugin.get("bad_import", [])) == 1 and "RuntimeError: boom at import" in by_plugin["bad_import"][0]
    assert "good" not in by_plugin
    assert report["status"]["bad_import"] == ["failed", "RuntimeError: boom at import"]
    assert report["status"]["bad_hook"] == ["failed", "ValueError: pass table corrupt"]
    assert report["status"]["good"][0] == "loaded"

    assert report["good"] == [2.0, 4.0]
    # The broken plugin had registered an op and a kernel before failing; both are gone.
    assert report["hooks_that_ran"] == ["kernels", "ops"]
    assert "half_registered" not in report["ops"]
    assert "bad_hook" not in report["exp_kernel_sources"]
    assert report["exp"] == [1.0]


class LatePlugin:
    """A plugin object registered with ``oar.plugins.register`` after loading is done."""

    def __init__(self):
        self.op = Op("late_double", reference=lambda x: x * 2, meta=lambda x: x, traits={"elementwise"})

    @hookimpl
    def oar_register_ops(self, ops):
        ops.add(self.op)

    @hookimpl
    def oar_register_layers(self, layers):
        layers.register("LateBlock", LatePlugin)


def test_late_plugin_receives_historic_registrations():
    oar.plugins.load_plugins()  # the registration hooks have been called already
    plugin = LatePlugin()
    oar.plugins.register(plugin, name="late", version="9.9")
    try:
        assert registries().ops.source_of("late_double") == "late"
        assert registries().layers.get("LateBlock") is LatePlugin
        assert plugin.op(oar.to_tensor([1.5])).tolist() == [3.0]
        info = next(i for i in oar.plugins.plugin_infos() if i.name == "late")
        assert (info.version, info.status) == ("9.9", "loaded")
        assert info.registered == {"ops": ["late_double"], "kernels": ["late_double@cpu"], "layers": ["LateBlock"]}
        with pytest.raises(PluginError, match="'late' is already registered"):
            oar.plugins.register(LatePlugin(), name="late")
        assert "late_double" in registries().ops  # the refused duplicate removed nothing
    finally:
        oar.plugins.unregister("late")
    assert "late_double" not in registries().ops
    assert "LateBlock" not in registries().layers
    with pytest.raises(RegistryError, match="'late_double' is not registered"):
        plugin.op(oar.to_tensor([1.5]))


class CountingExp:
    """Kernels for core's exp on float32: one above the reference, one below it."""

    def __init__(self, priority: int):
        self.priority = priority
        self.calls = 0

    def exp_float32(self, x):
        self.calls += 1
        return np.exp(x)

    @hookimpl
    def oar_register_kernels(self, kernels):
        kernels.register("exp", "cpu", self.exp_float32, dtypes=["float32"], priority=self.priority)


def test_higher_priority_kernel_wins_and_unregistering_restores_the_reference():
    x32 = oar.to_tensor([0.0, 1.0])
    x64 = oar.to_tensor([0.0, 1.0], dtype="float64")
    oar.exp(x32)  # fill the kernel cache first: registering must invalidate it
    kernels = registries().kernels
    serving_before = kernels.lookup("exp", "cpu", oar.float32).source
    fast = CountingExp(PLUGIN_PRIORITY * 100)  # above any kernel another installed plugin may add
    oar.plugins.register(fast, name="fast-exp")
    try:
        np.testing.assert_allclose(oar.exp(x32).numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
        assert fast.calls == 1
        oar.exp(x64)  # float64 was not declared: the reference serves it
        assert fast.calls == 1
        assert kernels.lookup("exp", "cpu", oar.float32).source == "fast-exp"
    finally:
        oar.plugins.unregister("fast-exp")
    oar.exp(x32)
    assert fast.calls == 1
    assert kernels.lookup("exp", "cpu", oar.float32).source == serving_before

    slow = CountingExp(REFERENCE_PRIORITY - 1)
    oar.plugins.register(slow, name="slow-exp")
    try:
        oar.exp(x32)
        assert slow.calls == 0  # below the reference: never chosen
    finally:
        oar.plugins.unregister("slow-exp")


# -- the worked example of docs/plugins.md, installed as a user would --------------------------------

@pytest.fixture(scope="module")
def example_venv(tmp_path_factory) -> Path:
    """A fresh venv that sees this interpreter's packages (oar-core, numpy, pluggy, hatchling, pip)
    and has the example plugin installed as a regular wheel: the example is on no path but its own.

    ``--system-site-packages`` would expose the *base* interpreter, not the venv running the tests,
    so a ``.pth`` line adds this interpreter's site-packages (processing their ``.pth`` files too,
    which is how an editable oar-core is found).
    """
    root = tmp_path_factory.mktemp("example-venv")
    venv.create(root, with_pip=False)
    python = root / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    own_site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                              capture_output=True, text=True, check=True).stdout.strip()
    lines = [f"import site; site.addsitedir({path!r})" for path in site.getsitepackages()]
    (Path(own_site) / "parent_site_packages.pth").write_text("\n".join(lines) + "\n")
    install = subprocess.run(
        [python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", str(EXAMPLE_PLUGIN)],
        capture_output=True, text=True, timeout=300,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    return python


def run_in(python: Path, args: list[str], **env_vars: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OAR_DISABLE_PLUGINS", "OAR_TRACE_PLUGINS", "PYTHONPATH")}
    env.update(env_vars)
    return subprocess.run([python, *args], env=env, capture_output=True, text=True, timeout=120)


EXAMPLE_CHECK = """
    import json, sys
    import numpy as np
    import oar

    assert "oar_plugin_example" not in sys.modules
    ops = oar.plugins.registries().ops  # the first lookup loads the entry points
    logcosh = ops.get("logcosh")
    x = np.linspace(-3.0, 3.0, 13)
    forward = logcosh(oar.to_tensor(x)).numpy()

    # Gradient of sum(logcosh(x)) against central finite differences, in float64.
    xt = oar.to_tensor(x, stop_gradient=False)
    (analytic,) = oar.grad(logcosh(xt).sum(), xt)
    eps = 1e-6
    numeric = [
        (float(logcosh(oar.to_tensor(x + eps * e)).sum()) - float(logcosh(oar.to_tensor(x - eps * e)).sum())) / (2 * eps)
        for e in np.eye(x.size)
    ]
    exp_kernel = oar.plugins.registries().kernels.lookup("exp", "cpu", oar.float32)
    calls_before = exp_kernel.fn.calls
    oar.exp(oar.to_tensor([1.0, 2.0]))
    print(json.dumps({
        "forward_error": float(np.max(np.abs(forward - np.log(np.cosh(x))))),
        "forward_dtype": str(forward.dtype),
        "grad_error": float(np.max(np.abs(analytic.numpy() - np.array(numeric)))),
        "op_source": ops.source_of("logcosh"),
        "exp_kernel_source": exp_kernel.source,
        "exp_kernel_calls": exp_kernel.fn.calls - calls_before,
        "plugin_module": sys.modules["oar_plugin_example.plugin"].__file__,
    }))
"""


@pytest.mark.slow
def test_example_plugin_is_found_through_its_entry_point(example_venv):
    result = run_in(example_venv, ["-c", textwrap.dedent(EXAMPLE_CHECK)])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["forward_dtype"] == "float64"
    assert report["forward_error"] < 1e-12
    assert report["grad_error"] < 1e-6
    assert report["op_source"] == "example"  # registered under its entry-point name
    assert report["exp_kernel_source"] == "example"
    assert report["exp_kernel_calls"] == 1
    assert "site-packages" in report["plugin_module"]  # the installed wheel, not the source tree

    listing = run_in(example_venv, ["-m", "oar", "plugins"])
    assert listing.returncode == 0, listing.stderr
    lines = listing.stdout.splitlines()
    assert "example 0.1.0 [loaded] (oar_plugin_example.plugin)" in lines
    assert "    ops: logcosh" in lines
    assert "    kernels: exp@cpu, logcosh@cpu" in lines
    assert ("    layers: LogCoshLoss" in lines) == NN_INSTALLED
    assert "    passes: skip_negation_under_logcosh" in lines


EXAMPLE_PASS_CHECK = """
    import json
    import numpy as np
    import oar
    from oar._graph.passes import optimize

    logcosh = oar.plugins.registries().ops.get("logcosh")
    traced = oar.jit.to_static(lambda x: logcosh(-x) * 2.0)
    x = oar.to_tensor(np.linspace(-2.0, 2.0, 7))
    eager = (logcosh(-x) * 2.0).numpy()
    program = traced.concrete_program if traced(x) is not None else None
    optimized = optimize(program)
    print(json.dumps({
        "captured": [n.op for n in program.nodes],
        "optimized": [n.op for n in optimized.nodes],
        "source": oar.plugins.registries().passes.source_of("skip_negation_under_logcosh"),
        "error": float(np.max(np.abs(traced(x).numpy() - eager))),
    }))
"""


@pytest.mark.slow
def test_example_plugin_pass_rewrites_to_static_programs(example_venv):
    # The plugin's pass is registered through its entry point and joins the optimisation of every
    # to_static program: the neg feeding logcosh is gone, and the outputs are unchanged.
    result = run_in(example_venv, ["-c", textwrap.dedent(EXAMPLE_PASS_CHECK)])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["captured"] == ["neg", "logcosh", "multiply"]
    assert report["optimized"] == ["logcosh", "multiply"]
    assert report["source"] == "example"
    assert report["error"] < 1e-12


NN_INSTALLED = importlib.util.find_spec("oar.nn") is not None

EXAMPLE_LAYER_CHECK = """
    import json
    import numpy as np
    import oar

    layers = oar.plugins.registries().layers
    report = {"registered": "LogCoshLoss" in layers}
    if report["registered"]:
        loss_layer = layers.get("LogCoshLoss")(reduction="sum")
        x, y = np.array([0.5, -1.0, 3.0]), np.array([0.0, 1.0, -1.0])
        report["source"] = layers.source_of("LogCoshLoss")
        report["is_layer"] = isinstance(loss_layer, oar.nn.Layer)
        report["error"] = abs(float(loss_layer(oar.to_tensor(x), oar.to_tensor(y))) - float(np.log(np.cosh(x - y)).sum()))
    print(json.dumps(report))
"""


@pytest.mark.slow
def test_example_plugin_layer_is_registered_exactly_when_oar_nn_is_installed(example_venv):
    # With oar-nn the example's LogCoshLoss layer is in the layer registry under the plugin's name;
    # with oar-core alone (the isolated core run) the plugin skips it and everything else works.
    result = run_in(example_venv, ["-c", textwrap.dedent(EXAMPLE_LAYER_CHECK)])
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["registered"] == NN_INSTALLED
    if NN_INSTALLED:
        assert report["source"] == "example"
        assert report["is_layer"] is True
        assert report["error"] < 1e-12


@pytest.mark.slow
def test_example_plugin_disabled_leaves_core_untouched(example_venv):
    script = """
        import sys, oar
        assert "logcosh" not in oar.plugins.registries().ops
        assert oar.plugins.registries().kernels.lookup("exp", "cpu", oar.float32).source != "example"
        assert "oar_plugin_example" not in sys.modules
        print(oar.exp(oar.to_tensor([0.0])).tolist())
    """
    result = run_in(example_venv, ["-c", textwrap.dedent(script)], OAR_DISABLE_PLUGINS="example")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[1.0]"


@pytest.mark.slow
def test_example_plugin_docstring_examples_run(example_venv):
    # Here the package is imported by name, as its users do; discovery is tested above.
    script = """
        import doctest, sys
        import importlib.util
        import oar_plugin_example, oar_plugin_example.ops
        modules = [oar_plugin_example, oar_plugin_example.ops]
        if importlib.util.find_spec("oar.nn") is not None:
            import oar_plugin_example.layers
            modules.append(oar_plugin_example.layers)
        results = [doctest.testmod(m) for m in modules]
        print(sum(r.attempted for r in results), sum(r.failed for r in results))
    """
    result = run_in(example_venv, ["-c", textwrap.dedent(script)])
    assert result.returncode == 0, result.stderr
    attempted, failed = map(int, result.stdout.split()[-2:])
    assert attempted >= 6 and failed == 0, result.stdout
