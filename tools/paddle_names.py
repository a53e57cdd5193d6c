"""Write docs/data/paddle-<version>-names.json: PaddlePaddle's public names and signatures per namespace.

    python3 tools/paddle_names.py                     # installs Paddle into a throw-away venv first
    python3 tools/paddle_names.py --python PATH       # uses the Python of a venv that has Paddle already

The file is what ``tests/test_paddle_coverage.py`` counts oar against (it writes
docs/paddle-coverage.md), so that test never needs Paddle. Like the benchmark suite, this script keeps
Paddle out of oar's own environments: without ``--python`` it creates a virtual environment in a
temporary folder, installs the pinned CPU wheel there (numpy < 2.4, which Paddle 3.3.1 needs), runs
itself inside it with ``--dump`` and removes the folder.

A namespace's names are its ``__all__`` (every namespace listed has one), for ``paddle.Tensor`` the
public names of ``dir(paddle.Tensor)``, plus the few names of ``EXTRA_NAMES``. A name maps to its
signature without annotations (``"(x, axis=None, keepdim=False, name=None, *, dtype=None, out=None)"``;
a class's is its constructor's), or to null where there is none to read: constants, dtypes, properties,
and the functions Paddle implements in C++ without a text signature.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
import venv
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PADDLE_VERSION = "3.3.1"
REQUIREMENTS = (f"paddlepaddle=={PADDLE_VERSION}", "numpy<2.4")  # numpy: see shared notes on Paddle 3.3.1

# The namespaces a model, a tutorial or a deployment touches; each maps to oar's of the same path.
NAMESPACES = (
    "paddle", "paddle.Tensor", "paddle.nn", "paddle.nn.functional", "paddle.nn.initializer", "paddle.nn.utils",
    "paddle.linalg", "paddle.fft", "paddle.signal", "paddle.distribution", "paddle.optimizer",
    "paddle.optimizer.lr", "paddle.regularizer", "paddle.io", "paddle.metric", "paddle.callbacks",
    "paddle.vision.models", "paddle.vision.transforms", "paddle.vision.datasets", "paddle.vision.ops",
    "paddle.amp", "paddle.jit", "paddle.static", "paddle.autograd", "paddle.device", "paddle.device.cuda",
    "paddle.utils", "paddle.sparse", "paddle.text", "paddle.quantization", "paddle.inference",
    "paddle.distributed", "paddle.profiler", "paddle.onnx", "paddle.incubate.autotune",
)
# Public at Paddle's top level, in its documentation and tutorials, yet absent from ``paddle.__all__``.
EXTRA_NAMES = {
    "paddle": (
        "set_device", "get_device", "is_compiled_with_cuda", "is_compiled_with_rocm", "is_compiled_with_xpu",
        "is_compiled_with_cinn", "is_compiled_with_distribute", "is_compiled_with_custom_device",
        "is_compiled_with_ipu",
    ),
}
ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object reprs in defaults: the same on every run without it


def signature_of(value) -> str | None:
    """``value``'s call signature without annotations, or None where it has none to read."""
    if not callable(value):
        return None
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):  # C++ functions without a text signature
        return None
    plain = signature.replace(
        parameters=[p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()],
        return_annotation=inspect.Signature.empty,
    )
    return ADDRESS.sub("", str(plain))


def public_names(namespace: str) -> dict[str, str | None]:
    """The public names of one of Paddle's namespaces (running inside Paddle's venv)."""
    import paddle

    if namespace == "paddle.Tensor":
        holder, names = paddle.Tensor, [name for name in dir(paddle.Tensor) if not name.startswith("_")]
    else:
        holder = importlib.import_module(namespace)
        names = [*holder.__all__, *EXTRA_NAMES.get(namespace, ())]
    # getattr on the class: a property then reads as the descriptor (no signature), a method as a function.
    return {name: signature_of(getattr(holder, name, None)) for name in sorted(set(names))}


def dump() -> dict:
    warnings.simplefilter("ignore")  # Paddle warns at import about ccache and CPU features
    import paddle

    return {
        "paddle_version": paddle.__version__,
        "generated_by": "python3 tools/paddle_names.py",
        "namespaces": {namespace: public_names(namespace) for namespace in NAMESPACES},
    }


def run_in_throwaway_venv(output: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="paddle-names-") as folder:
        print(f"installing {' '.join(REQUIREMENTS)} into a throw-away venv ({folder})", flush=True)
        venv.create(folder, with_pip=True)
        python = Path(folder) / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        subprocess.run([python, "-m", "pip", "install", "--quiet", *REQUIREMENTS], check=True)
        run_with(python, output)


def run_with(python: Path, output: Path) -> None:
    subprocess.run([python, __file__, "--dump", "--output", output], check=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", type=Path, help="a Python that has paddlepaddle installed")
    parser.add_argument("--output", type=Path, default=REPO / "docs" / "data" / f"paddle-{PADDLE_VERSION}-names.json")
    parser.add_argument("--dump", action="store_true", help="(internal) run inside Paddle's venv and write the file")
    args = parser.parse_args(argv)
    if args.dump:
        data = dump()
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        counts = ", ".join(f"{ns} {len(names)}" for ns, names in data["namespaces"].items())
        print(f"wrote {args.output}: {counts}")
    elif args.python is not None:
        run_with(args.python, args.output)
    else:
        run_in_throwaway_venv(args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
