"""docs/ops.md, the op contract, is generated from the op registry and stays true.

An op's name and attributes are what saved programs, passes, kernels and lowerings key on, so they
are a contract users and plugin authors rely on. The table lists every op oar-core and oar-nn
register: the package, the attributes (as the op tables' cases call each op), the traits, the AMP
category and the Paddle API it serves -- declared with ``Op(paddle=...)`` where the op's name is
not a Paddle function's, found in oar's public namespaces otherwise.

``python tests/test_ops_doc.py`` rewrites docs/ops.md after an op changes.
"""

from __future__ import annotations

import inspect
import sys
import types
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "ops.md"
PACKAGES = {"oar.core": "oar-core", "nn": "oar-nn"}

HEADER = """# oar's ops: names, attributes and the Paddle API they serve

Generated from the op registry by `python tests/test_ops_doc.py`; `tests/test_ops_doc.py` fails
when it is out of date. An op is defined once (`oar.ops.Op`) and is what a saved program's node,
a graph pass, a kernel (`oar_register_kernels`) and a lowering (`oar_register_op_lowerings`)
name: the op names and their attributes below are a stable contract. Where an op's name is not
the Paddle function's (`conv` serves `conv1d`, `conv2d` and `conv3d`; `gaussian` serves `normal`
and `randn`), its definition says so (`Op(paddle=...)`) and the last column shows it; "programs
and gradients only" marks ops that no public function calls directly (gradients of other ops,
what the fusion passes emit).

Traits: `elementwise`, `binary`, `reduction`, `shape`, `view` (the output is a view of the input,
as Paddle's: an in-place op on it writes into the input), `alias` (the output may be the input's
memory, but is a tensor of its own), `nondiff` (no gradient), `random`, `inplace`, `creation`,
`fusible` (elementwise fusion may chain it), `complex` (right for complex tensors as it is: complex64
and complex128 join its dtypes), `transfer` (moves its input to another device). AMP: `low_precision` (float16/bfloat16 under
autocast), `fp32` (always float32), `promote` (the widest input dtype). A plugin may override an
op's AMP category (`oar.ops.amp_category` gives the one that applies).

| op | package | attributes | traits | AMP | called by |
| --- | --- | --- | --- | --- | --- |
"""


def _public_function(name: str) -> str | None:
    """Where oar exposes a function (or Tensor method) named ``name``, in Paddle's spelling."""
    import oar
    import oar.nn.functional as F
    import oar.nn.quant as Q

    for prefix, namespace in (("paddle.", oar), ("paddle.nn.functional.", F), ("paddle.nn.quant.", Q),
                              ("paddle.Tensor.", oar.Tensor)):
        value = getattr(namespace, name, None)
        if callable(value) and not isinstance(value, types.ModuleType) and not inspect.isclass(value):
            return f"`{prefix}{name}`"
    return None


def _paddle_column(name: str, op, ops) -> str:
    if op.paddle is not None:
        return ", ".join(f"`paddle.{p}`" for p in op.paddle) or "programs and gradients only"
    found = _public_function(name)
    if found is not None:
        return found
    if name.endswith("_grad") and name[: -len("_grad")] in ops:
        return f"gradient of `{name[: -len('_grad')]}`"
    raise AssertionError(f"op {name!r} serves no public function of its name: declare Op(paddle=[...]) "
                         f"or paddle=() for an op of programs and gradients only")


def _attributes_by_op() -> dict[str, set[str]]:
    """The attribute names each op is dispatched with, over the op tables' cases."""
    from oar.ops import Mode
    from oar.testing import check_output
    from tests.core.op_cases import all_cases as core_cases
    from tests.nn.op_cases import all_cases as nn_cases

    seen: dict[str, set[str]] = {}

    class Recorder(Mode):
        def apply(self, op, inputs, attrs):
            seen.setdefault(op.name, set()).update(attrs)
            return self.apply_below(op, inputs, attrs)

    for case in [*core_cases(), *nn_cases()]:
        with Recorder():
            try:
                check_output(case, case.dtypes[0])
            except AssertionError:  # the op tables' own tests report it
                pass
    return seen


def render() -> str:
    from oar.plugins import registries

    ops = registries().ops
    attributes = _attributes_by_op()
    rows = []
    for name, op in sorted(ops.items()):
        source = ops.source_of(name)
        if source not in PACKAGES:
            continue
        attrs = ", ".join(f"`{a}`" for a in sorted(attributes.get(name, ()))) or "—"
        traits = ", ".join(sorted(op.traits)) or "—"
        rows.append(f"| `{name}` | {PACKAGES[source]} | {attrs} | {traits} | {op.amp} | {_paddle_column(name, op, ops)} |")
    return HEADER + "\n".join(rows) + "\n"


def test_docs_ops_md_is_up_to_date():
    pytest.importorskip("oar.nn", reason="the table covers oar-nn's ops too")
    assert DOC.read_text() == render(), "docs/ops.md is out of date: run python tests/test_ops_doc.py"


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(REPO)}")
