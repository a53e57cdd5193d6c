"""docs/paddle-coverage.md, how much of Paddle's public API ``import oar as paddle`` serves, stays true.

The names are PaddlePaddle's own, read from a real install by ``tools/paddle_names.py`` into
docs/data/paddle-<version>-names.json, so this test needs no Paddle. Each name counts as provided
when oar's namespace of the same path has it (``paddle.nn.functional.relu`` -> ``oar.nn.functional.relu``,
``paddle.Tensor.add`` -> ``oar.Tensor.add``); a namespace oar lacks, or whose distribution is not
installed, provides none, with the reason oar itself gives. The names oar decides not to provide are
in docs/data/paddle-not-provided.json, each group with its reason, and the table shows them apart.

``python tests/test_paddle_coverage.py`` rewrites docs/paddle-coverage.md after a name is added.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import re
from pathlib import Path

import pytest

import oar

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "paddle-coverage.md"
NAMES = REPO / "docs" / "data" / "paddle-3.3.1-names.json"
NOT_PROVIDED = REPO / "docs" / "data" / "paddle-not-provided.json"
REGENERATE = "python tests/test_paddle_coverage.py"

# Namespaces oar serves completely: each must stay so (a name Paddle has and oar drops fails here,
# whatever the regenerated table says). Add a namespace once it reaches 100%.
COMPLETE = ("paddle.amp", "paddle.callbacks", "paddle.device", "paddle.device.cuda", "paddle.distributed",
            "paddle.distribution", "paddle.fft", "paddle.incubate.autotune", "paddle.io", "paddle.jit", "paddle.linalg",
            "paddle.metric", "paddle.nn", "paddle.nn.functional", "paddle.nn.initializer", "paddle.nn.utils",
            "paddle.onnx", "paddle.optimizer", "paddle.optimizer.lr", "paddle.profiler", "paddle.quantization",
            "paddle.regularizer", "paddle.signal", "paddle.sparse", "paddle.text", "paddle.utils",
            "paddle.vision.datasets", "paddle.vision.models", "paddle.vision.ops", "paddle.vision.transforms")


def paddle_data() -> dict:
    return json.loads(NAMES.read_text(encoding="utf-8"))


def paddle_names() -> tuple[str, dict[str, list[str]]]:
    """Paddle's version and its public names per namespace (from the data file)."""
    data = paddle_data()
    return data["paddle_version"], {namespace: sorted(names) for namespace, names in data["namespaces"].items()}


def not_provided() -> dict[str, str]:
    """Fully qualified Paddle name -> the reason oar does not provide it."""
    decisions = json.loads(NOT_PROVIDED.read_text(encoding="utf-8"))["decisions"]
    return {name: decision["reason"] for decision in decisions for name in decision["names"]}


def oar_namespace(namespace: str) -> tuple[object | None, str | None]:
    """oar's counterpart of Paddle's ``namespace``, or None and why there is none.

    >>> oar_namespace("paddle.nn")[0] is oar.nn
    True
    """
    if namespace == "paddle":
        return oar, None
    path = "oar" + namespace[len("paddle"):]
    try:
        return importlib.import_module(path), None
    except ModuleNotFoundError as exc:
        # Only the namespace itself (or a package above it) missing means "not there"; a module that
        # fails to import one of its own dependencies is a bug this test must not hide.
        if exc.name is None or not (path == exc.name or path.startswith(exc.name + ".")):
            raise
    holder = oar  # not a module: maybe an attribute (a class like oar.Tensor), or oar says why it is absent
    for depth, part in enumerate(path.split(".")[1:], start=2):
        try:
            holder = getattr(holder, part)
        except AttributeError as exc:
            message = str(exc)
            if "has no attribute" in message:  # Python's own error: oar has no such namespace at all
                return None, f"oar has no `{'.'.join(path.split('.')[:depth])}`"
            return None, message  # oar's own: which distribution provides it, and how to install it
    return holder, None


def provides(holder: object, name: str) -> bool:
    try:
        getattr(holder, name)
    except AttributeError:
        return False
    return True


def parameter_names(signature: str) -> list[str]:
    """The named parameters of a signature as the data file writes it (``*args``/``**kwargs`` left out).

    >>> parameter_names("(x, axis=None, *, dtype=None, **kwargs)")
    ['x', 'axis', 'dtype']
    """
    source = re.sub(r"<[^<>]*>", "None", signature)  # reprs in defaults, such as <class 'list'>
    args = ast.parse(f"def f{source}: pass").body[0].args
    return [arg.arg for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def lacking_parameters(paddle_signature: str | None, value: object, method: bool) -> list[str]:
    """Paddle's parameters that oar's ``value`` does not accept ([] where it takes ``**kwargs`` or has no
    signature to compare); for a Tensor method, the tensor's own first parameter is left out of both."""
    if paddle_signature is None or not callable(value):
        return []
    try:
        parameters = inspect.signature(value).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return []
    paddle_parameters = parameter_names(paddle_signature)
    oar_parameters = list(parameters)
    if method:
        paddle_parameters, oar_parameters = paddle_parameters[1:], oar_parameters[1:]
    return [name for name in paddle_parameters if name not in oar_parameters]


class Namespace:
    """One namespace's count: Paddle's names, those oar provides, those it decided not to, the rest."""

    def __init__(self, namespace: str, signatures: dict[str, str | None], decided: dict[str, str]):
        names = sorted(signatures)
        self.name = namespace
        self.holder, self.absent_because = oar_namespace(namespace)
        self.paddle = names
        self.provided = [n for n in names if self.holder is not None and provides(self.holder, n)]
        self.not_provided = [n for n in names if f"{namespace}.{n}" in decided and n not in self.provided]
        self.missing = [n for n in names if n not in self.provided and n not in self.not_provided]
        method = namespace == "paddle.Tensor"
        lacking = {n: lacking_parameters(signatures[n], getattr(self.holder, n), method) for n in self.provided}
        self.lacking_parameters = {n: params for n, params in lacking.items() if params}

    def coverage(self) -> str:
        return percent(len(self.provided), len(self.paddle))

    def coverage_of_intended(self) -> str:
        return percent(len(self.provided), len(self.paddle) - len(self.not_provided))


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "—"


def count() -> tuple[str, list[Namespace]]:
    data = paddle_data()
    decided = not_provided()
    return data["paddle_version"], [Namespace(namespace, signatures, decided)
                                    for namespace, signatures in data["namespaces"].items()]


def render() -> str:
    version, namespaces = count()
    decided = not_provided()
    total_paddle = sum(len(ns.paddle) for ns in namespaces)
    total_provided = sum(len(ns.provided) for ns in namespaces)
    total_decided = sum(len(ns.not_provided) for ns in namespaces)
    lines = [
        f"# oar's coverage of PaddlePaddle {version}'s public API",
        "",
        f"Generated by `{REGENERATE}`; the test fails when this page is out of date. The names are",
        f"Paddle {version}'s own, read from a real install by `tools/paddle_names.py` into",
        f"[`docs/data/paddle-{version}-names.json`](data/paddle-{version}-names.json) (each namespace's",
        "`__all__`, the public names of `dir(paddle.Tensor)`, and a few top-level names Paddle's tutorials use",
        "beyond its `__all__`). A name counts as provided when oar's namespace of the same path has it;",
        "*not provided* are the names oar decides not to provide, listed at the end with the reason",
        "([`docs/data/paddle-not-provided.json`](data/paddle-not-provided.json)). *Coverage* is oar's",
        "names over all of Paddle's; *of intended* leaves the names oar does not provide out.",
        "",
        "| namespace | Paddle | oar | not provided | missing | coverage | of intended |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for ns in namespaces:
        lines.append(f"| `{ns.name}` | {len(ns.paddle)} | {len(ns.provided)} | {len(ns.not_provided)} | "
                     f"{len(ns.missing)} | {ns.coverage()} | {ns.coverage_of_intended()} |")
    lines.append(f"| **all** | {total_paddle} | {total_provided} | {total_decided} | "
                 f"{total_paddle - total_provided - total_decided} | {percent(total_provided, total_paddle)} | "
                 f"{percent(total_provided, total_paddle - total_decided)} |")
    lines += ["", "## Missing names", ""]
    for ns in namespaces:
        if not ns.missing:
            continue
        lines.append(f"### `{ns.name}` ({len(ns.missing)})")
        lines.append("")
        if ns.absent_because:
            lines += [ns.absent_because, ""]
        lines += [", ".join(f"`{name}`" for name in ns.missing), ""]
    lacking = [(ns.name, name, params) for ns in namespaces for name, params in ns.lacking_parameters.items()]
    lines += ["## Provided, without some of Paddle's parameters", "",
              f"{len(lacking)} names: a call that passes one of these parameters (by keyword) fails in oar; a",
              "function that takes `**kwargs` is not counted here.", ""]
    lines += [f"- `{namespace}.{name}`: {', '.join(f'`{p}`' for p in params)}" for namespace, name, params in lacking]
    lines += ["", "## Not provided, by decision", "", "| names | reason |", "| --- | --- |"]
    by_reason: dict[str, list[str]] = {}
    for name, reason in decided.items():
        by_reason.setdefault(reason, []).append(name)
    for reason, names in by_reason.items():
        lines.append(f"| {', '.join(f'`{name}`' for name in names)} | {reason} |")
    return "\n".join(lines) + "\n"


def test_docs_paddle_coverage_md_is_up_to_date():
    pytest.importorskip("oar.nn", reason="the table counts oar-nn's namespaces too")
    assert DOC.read_text(encoding="utf-8") == render(), f"docs/paddle-coverage.md is out of date: run {REGENERATE}"


@pytest.mark.parametrize("namespace", COMPLETE)
def test_complete_namespaces_stay_complete(namespace):
    subpackage = "oar." + namespace.split(".")[1]
    if importlib.util.find_spec(subpackage) is None:
        pytest.skip(f"{subpackage} is not installed here")
    ns = Namespace(namespace, paddle_data()["namespaces"][namespace], not_provided())
    assert ns.missing == [], f"oar{namespace[len('paddle'):]} no longer has Paddle's {ns.missing}"


def test_each_decision_names_a_paddle_name_oar_does_not_provide():
    _, names = paddle_names()
    known = {f"{namespace}.{name}" for namespace, namespace_names in names.items() for name in namespace_names}
    decided = not_provided()
    assert sorted(set(decided) - known) == [], "not Paddle names (a typo, or a namespace not counted)"
    provided_anyway = []
    for qualified in decided:
        namespace, _, name = qualified.rpartition(".")
        holder, _ = oar_namespace(namespace)
        if holder is not None and provides(holder, name):
            provided_anyway.append(qualified)
    assert provided_anyway == [], f"oar provides these after all: remove them from {NOT_PROVIDED.name}"


def test_a_namespace_whose_distribution_is_absent_provides_nothing_and_says_why(monkeypatch):
    # A stand-in for any lazily loaded subpackage whose distribution is not installed (oar-amp, ...).
    monkeypatch.setitem(oar._LAZY_MODULES, "not_installed_here", "oar-amp")
    holder, reason = oar_namespace("paddle.not_installed_here")
    assert holder is None
    assert "oar-amp" in reason and "plugins/oar-amp" in reason
    ns = Namespace("paddle.not_installed_here", {"auto_cast": "(enable=True)"}, {})
    assert (ns.provided, ns.missing) == ([], ["auto_cast"])


def test_a_namespace_oar_lacks_is_named_as_missing():
    assert oar_namespace("paddle.no_such_namespace") == (None, "oar has no `oar.no_such_namespace`")
    assert oar_namespace("paddle.nn.no_such_namespace") == (None, "oar has no `oar.nn.no_such_namespace`")


if __name__ == "__main__":
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC.relative_to(REPO)}")
