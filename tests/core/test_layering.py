"""oar-core in one-way layers, read from the source (every import, function-level ones included):

- each core module imports only its own layer's earlier modules or lower layers (``LAYERS``, in
  order; ``ALLOWED_CYCLES`` lists the one pair that imports both ways);
- a function-level import says why it is one (``REASONS``) on its line or the line above;
- oar-nn, the plugins and the examples import no private module of another distribution;
- core's code names no op that oar-nn registers;
- each layer stays within its size budget in code lines (blank lines, comments and docstrings
  not counted), ratcheted from the sizes the layering work left: lower a budget when a layer
  shrinks; raising one is a decision the change that needs it states, and the engine and the op
  definitions together stay within 10,000 lines.

``python tests/core/test_layering.py`` prints the layers with their sizes and budgets, as
docs/architecture.md shows them.
"""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CORE = REPO / "packages" / "core" / "src"

# Lowest first. Within a layer, a module imports only the modules listed before it (a package's
# __init__ is listed after its modules and may import them all).
LAYERS: list[tuple[str, list[str]]] = [
    ("L0 foundations", ["oar._version", "oar.errors", "oar.hookspecs"]),
    ("L1 eager engine", [
        "oar._engine.dtypes", "oar._engine.dispatch", "oar._engine.op", "oar._engine.registries",
        "oar._engine.device", "oar._engine.memory", "oar._engine.profiling", "oar._engine.tensor", "oar._engine.tape", "oar._engine.eager",
        "oar._engine.inplace", "oar._engine.autograd", "oar._engine.pylayer", "oar._engine.threads",
        "oar._engine.serialization", "oar._engine",
    ]),
    ("L2 op definitions", [
        "oar._ops._common", "oar._ops.creation", "oar._ops.shape", "oar._ops.reduction", "oar._ops.indexing",
        "oar._ops.elementwise", "oar._ops.fused_elementwise", "oar._ops.linalg", "oar._ops.random",
        "oar._ops.assign", "oar._ops.inplace", "oar._ops.linalg_ext", "oar._ops.special", "oar._ops.manipulation", "oar._ops.statistics",
        "oar._ops.complex", "oar._ops.compat", "oar._ops", "oar._ops.tensor_methods",
    ]),
    ("L3 static graph", [
        "oar._graph.program", "oar._graph.rewrite", "oar._graph.symbolic", "oar._graph.tracing",
        "oar._graph.executor", "oar._graph.control_flow", "oar._graph.passes", "oar._graph.fusion",
        "oar._graph.static_backward", "oar._graph",
    ]),
    ("L4 public surfaces", [
        "oar.ops", "oar.framework", "oar.utils.convert_paddle", "oar.utils.convert_paddle.__main__", "oar.utils.install_check", "oar.utils",
        "oar.autograd", "oar.device._streams", "oar.device.cuda", "oar.device", "oar.profiler._statistics", "oar.profiler",
        "oar.incubate.autotune", "oar.incubate",
        "oar.linalg", "oar.fft", "oar.signal", "oar.sparse._tensor", "oar.sparse._math", "oar.sparse.nn.functional",
        "oar.sparse.nn", "oar.sparse", "oar.distribution._special", "oar.distribution._base", "oar.distribution._continuous",
        "oar.distribution._discrete", "oar.distribution._multivariate", "oar.distribution._transform",
        "oar.distribution", "oar.static.input", "oar.static.nn",
        "oar.static.passes", "oar.static", "oar.jit._guards", "oar.jit.dy2static.transformer", "oar.jit.dy2static.runtime",
        "oar.jit.dy2static.convert", "oar.jit.dy2static", "oar.jit._run_program", "oar.jit.api",
        "oar.jit.translated_layer", "oar.jit._save_load", "oar.jit",
    ]),
    ("L5 tools", ["oar.plugins._manager", "oar.plugins", "oar._builtin", "oar.testing", "oar.__main__"]),
    ("the package", ["oar"]),
]
# (importer, imported): the one pair that imports both ways (the other way at function level).
ALLOWED_CYCLES = {("oar._ops.shape", "oar._ops.reduction")}  # their gradients are each other
REASONS = ("deferred (import time)", "optional dependency", "allowed cycle")

# Code lines per layer: the combined budget of the engine and the op definitions is ENGINE_AND_OPS_BUDGET.
BUDGETS = {
    "L0 foundations": 85,
    "L1 eager engine": 2832,  # from 2250: oar.save's depth limit and stale temporaries, allocation errors;
    # +163: views that share memory with their base, and in-place writes through them (#24);
    # +43: Paddle 3's type promotion, where it raises included (promoted_dtype, #24)
    # +67: Tensor.register_post_accumulate_grad_hook, oar.autograd.queue_callback and oar.from_numpy
    # (#21: what DataParallel's buckets need)
    # +110: the profiler's engine side: oar._engine.profiling (spans, the tensor memory count), the
    # backward's spans, Mode.observer so that to_static runs its programs under a profiler (#20)
    # +40: kernel alternatives in the kernel registry and autotune's tuner on a lookup miss (#20)
    # +12: gradients that meet summed in place once the backward owns the sum (#23)
    # +26: complex64 and complex128, Paddle's promotion with them, their printing, the ops' `complex` trait (#19)
    # +11: a device backend's buffers: the `transfer` trait, Backend.copy, set_device's reason (#22)
    "L2 op definitions": 7741,  # +43: the view ops' view_inverse rules (#24); +11: Paddle's scalar operands (#24);
    # +1001: oar.linalg's 20 ops with their gradient rules (linalg_ext, #19)
    # +3: creation functions counted by oar.device's memory statistics (#20)
    # +20: oar.add_n (#23), sigmoid's kernel without np.where (#23)
    # +2892: Paddle's top-level and Tensor names (#19): the special functions (special, 698), splits,
    # stacks, scatters and in-place shape variants (manipulation, 575), nan-reductions, quantiles,
    # histograms and unique (statistics, 621), complex tensors and the fft ops (complex, 414), the
    # aliases, casts, tensor information and random fills (compat, 578)
    # +21: a device's tensors (#22): to_device through the target backend, random ops drawing on the
    # device that has a kernel for them, index lists made on the indexed tensor's device, and the
    # creation functions' `device` and `requires_grad` (Paddle 3.3's)
    "L3 static graph": 2941,  # +4: the executor uploads a program's constants to its backend (#22); +250: to_static's guards on dynamic dims (symbolic) and errors naming the line (#24)
    # +7: the executor reports each program node to a profiler and to the memory count (#20)
    "L4 public surfaces": 6850,  # +1247: oar.distribution, Paddle's distributions, transforms and KL rules (#19);
    # +330: to_static's guards on Python values, refused randomness and mutations (#24);
    # +9: oar.utils.public_dir, a dir() of the public API only (#19); +46: the oar.linalg namespace (#19)
    # +260: oar.utils.convert_paddle, Paddle's pickled checkpoints read without running them (#19)
    # +64: oar.utils.run_check, Paddle's install check on every device (#20)
    # +169: oar.device, Paddle's device queries and memory statistics (oar.device.cuda for a GPU plugin) (#20)
    # +528: oar.profiler, Paddle's Profiler, RecordEvent, schedulers, traces and summary tables (#20)
    # +217: oar.incubate.autotune, Paddle's set_config: kernel choice per shape with its cache file,
    # the DataLoader's tuning settings (#20)
    # +76: an eval-mode to_static call without no_grad runs the inference program and recomputes the
    # training forward only for a backward; the profiler's Kernel Summary (#23)
    # +1436: Paddle's namespaces (#19): oar.sparse (644), oar.fft and oar.signal (83), oar.framework's
    # flags, dtype info and constants (166), oar.device's streams and queries, oar.autograd's jacobian
    # and hessian, oar.utils' deprecated/try_import, jit.ignore_module and logging; jit.save of a model
    # traced without input_spec and of every @to_static method
    "L5 tools": 750,  # +3: `python -m oar doctor` gives the GPU backend's reason (#22); +15: oar.testing.numeric_gradient and line_of, used by the tests of several packages;
    # +142: python -m oar doctor, what is installed and what is broken with its fix (#20)
    "the package": 150,  # +1: oar.distribution's lazy entry (#19)
    # +6: oar.device and oar.profiler's lazy entries, OAR_COUNT_MEMORY=1 counting from import (#20)
    # +1: oar.incubate's lazy entry (#20)
    # +8: the star imports of four new op families and the lazy oar.fft and oar.signal (#19)
    # +13: the compat family and oar.framework, the lazy oar.sparse and oar.text, Paddle 3's dtype aliases and
    # top-level functionals served by oar-nn (#19); +1: dir(oar) asks whether a subpackage is installed, not
    # its module (#19)
}
ENGINE_AND_OPS_BUDGET = 10_600  # from 10,000: Paddle's top-level and Tensor names (#19)

# Strings in core equal to an nn op's name that are no reference to that op.
NOT_OP_REFERENCES = {
    ("oar/_ops/elementwise.py", "relu"),  # paddle.scale's act argument, computed with maximum
    ("oar/_ops/manipulation.py", "unfold"),  # paddle.unfold (sliding windows, composed), not nn's im2col op
    ("oar/_ops/statistics.py", "linear"),  # quantile's interpolation mode, not nn's linear op
    ("oar/sparse/nn/functional.py", "relu"),  # paddle.sparse.nn.functional's names: functions of a
    ("oar/sparse/nn/functional.py", "leaky_relu"),  # sparse tensor's values, composed of core ops
    ("oar/sparse/nn/functional.py", "softmax"),
    ("oar/__init__.py", "group_norm"),  # oar.group_norm, oar.layer_norm: Paddle's top-level names for nn's
    ("oar/__init__.py", "layer_norm"),  # functionals, resolved lazily from oar.nn.functional
}


CORE_TOP_LEVEL = {p.stem for p in (CORE / "oar").iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def core_modules() -> dict[str, Path]:
    return {module_name(p, CORE): p for p in sorted((CORE / "oar").rglob("*.py"))}


def _resolve(name: str, known) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(path: Path, module: str, known) -> list[tuple[str, int, bool, str]]:
    """``(imported module, line, function-level, reason comment)`` for each ``oar`` import."""
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    in_function: set[int] = set()
    typing_only: set[int] = set()  # under ``if TYPE_CHECKING:``: never run, names for annotations
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            in_function.update(id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only.update(id(n) for n in ast.walk(node))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names]  # a submodule, or a name of ``base``
        else:
            continue
        comment = " ".join(lines[max(node.lineno - 2, 0):node.end_lineno])
        for target in targets:
            if target.split(".")[0] != "oar":
                continue
            resolved = _resolve(target, known)
            if resolved == "oar" and target != "oar" and target.split(".")[1] not in CORE_TOP_LEVEL:
                top = target.split(".")[1]
                assert not top.startswith("_"), f"{path}:{node.lineno}: imports {target}, which does not exist"
                resolved = target  # another distribution's module (oar.nn): outside the layers
            if resolved is not None and resolved != module:
                found.append((resolved, node.lineno, id(node) in in_function, comment))
    return found


def _positions() -> dict[str, tuple[int, int]]:
    return {m: (layer, index) for layer, (_, modules) in enumerate(LAYERS) for index, m in enumerate(modules)}


def test_every_core_module_has_a_place_in_the_layers():
    positions = _positions()
    missing = sorted(set(core_modules()) - set(positions))
    stale = sorted(set(positions) - set(core_modules()))
    assert not missing, f"core modules not in LAYERS (give each its layer and place): {missing}"
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_core_imports_only_downward():
    modules = core_modules()
    positions = _positions()
    upward = []
    for module, path in modules.items():
        here = positions[module]
        for target, line, _, _ in imports_of(path, module, modules):
            if target in positions and positions[target] >= here and (module, target) not in ALLOWED_CYCLES:
                upward.append(f"{path.relative_to(REPO)}:{line}: {module} ({LAYERS[here[0]][0]}) imports {target} "
                              f"({LAYERS[positions[target][0]][0]}), which is not below it")
    assert not upward, "imports that point upward:\n" + "\n".join(upward)


def function_level_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, the comment on that line and the one above)`` of every import inside a function."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found.append((inner.lineno, " ".join(lines[max(inner.lineno - 2, 0):inner.end_lineno])))
    return found


def test_function_level_imports_say_why():
    unexplained = []
    for path in core_modules().values():
        for line, comment in function_level_imports(path):
            if not any(reason in comment for reason in REASONS):
                unexplained.append(f"{path.relative_to(REPO)}:{line}")
    assert not unexplained, (f"function-level imports without a reason ({' / '.join(REASONS)}) in a comment on "
                             f"their line or the line above:\n" + "\n".join(unexplained))


def _distributions() -> dict[str, tuple[Path, set[str]]]:
    """Each non-core distribution folder -> (its source root, the top modules it provides)."""
    found = {}
    for pyproject in sorted([*REPO.glob("packages/*/pyproject.toml"), *REPO.glob("plugins/*/pyproject.toml"),
                             *REPO.glob("examples/*/pyproject.toml")]):
        src = pyproject.parent / "src"
        if pyproject.parent.name == "core" or not src.is_dir():
            continue
        provided = set()
        for top in src.iterdir():
            if top.name == "oar":
                provided.update(f"oar.{sub.stem}" for sub in top.iterdir() if sub.suffix == ".py" or sub.is_dir())
            elif top.is_dir() or top.suffix == ".py":
                provided.add(top.stem)
        found[pyproject.parent.relative_to(REPO).as_posix()] = (src, provided)
    return found


def _private_of_another(name: str, provided: set[str]) -> bool:
    parts = name.split(".")
    private = any(p.startswith("_") and not p.startswith("__") for p in parts)
    own = any(name == top or name.startswith(top + ".") for top in provided)
    return private and not own


def test_other_distributions_and_examples_import_only_public_modules():
    bad = []
    for folder, (src, provided) in _distributions().items():
        files = sorted(src.rglob("*.py"))
        if folder == "examples/oar-plugin-example":
            files += sorted((REPO / "examples").glob("*.py"))
        for path in files:
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module] + [f"{node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
                for name in names:
                    if _private_of_another(name, provided):
                        bad.append(f"{path.relative_to(REPO)}:{node.lineno}: imports {name}")
    assert not bad, "imports of another distribution's private modules or names:\n" + "\n".join(bad)


def _docstring_ids(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def test_core_names_no_op_that_nn_registers():
    nn = pytest.importorskip("oar.nn.functional", reason="oar-nn is not installed in this session")
    nn_ops = {op.name for op in nn.ALL_OPS}
    named = []
    for path in core_modules().values():
        tree = ast.parse(path.read_text())
        docstrings = _docstring_ids(tree)
        rel = path.relative_to(CORE).as_posix()
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in nn_ops
                    and id(node) not in docstrings and (rel, node.value) not in NOT_OP_REFERENCES):
                named.append(f"{rel}:{node.lineno}: {node.value!r}")
    assert not named, "core's code names ops of oar-nn (declare a trait or a lowering at the op instead):\n" + \
        "\n".join(named)


def code_lines(path: Path) -> int:
    """Lines holding code: no blank line, comment or docstring."""
    source = path.read_text()
    docstring_lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                docstring_lines.update(range(first.lineno, first.end_lineno + 1))
    lines: set[int] = set()
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            lines.update(line for line in range(token.start[0], token.end[0] + 1) if line not in docstring_lines)
    return len(lines)


def layer_sizes() -> dict[str, int]:
    modules = core_modules()
    layer_of = {m: LAYERS[layer][0] for m, (layer, _) in _positions().items()}
    sizes = dict.fromkeys(BUDGETS, 0)
    for module, path in modules.items():
        sizes[layer_of[module]] += code_lines(path)
    return sizes


def test_each_layer_is_within_its_budget():
    sizes = layer_sizes()
    over = [f"{layer}: {sizes[layer]} code lines, budget {budget}" for layer, budget in BUDGETS.items()
            if sizes[layer] > budget]
    assert not over, "layers over their size budget:\n" + "\n".join(over)
    engine_and_ops = sizes["L1 eager engine"] + sizes["L2 op definitions"]
    assert engine_and_ops <= ENGINE_AND_OPS_BUDGET, f"engine + op definitions: {engine_and_ops} code lines"


def main() -> None:
    sizes = layer_sizes()
    print(f"{'layer':22s} {'code lines':>10s} {'budget':>8s}  modules")
    for layer, modules in LAYERS:
        shown = ", ".join(m.replace("oar.", "", 1) for m in modules)
        print(f"{layer:22s} {sizes[layer]:10d} {BUDGETS[layer]:8d}  {shown}")
    print(f"{'core':22s} {sum(sizes.values()):10d}")


if __name__ == "__main__":
    sys.exit(main())
