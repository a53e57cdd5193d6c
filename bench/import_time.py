"""How long ``import oar`` and a first op take, for one or more source trees, processes alternating.

    python bench/import_time.py                          # this checkout
    python bench/import_time.py /path/to/other/checkout . # two trees side by side (before, after)

Each tree's packages/core/src is put first on PYTHONPATH of a fresh process; run it from an
environment that has oar-core's dependencies (numpy, pluggy, ml_dtypes, safetensors) but no oar,
so that each process imports the tree given. Prints, per tree, the median and minimum of
``python -X importtime``'s cumulative figure for ``oar`` and of the wall time of ``import oar``
followed by one op (the first op loads the plugins), and ``import oar`` over ``import numpy``
measured in the same alternation (oar imports numpy, so the ratio is at least 1): the import-time
budget lives here, as a ratio that holds on a busy or a slow machine alike, not in a unit test.

    python bench/import_time.py --max-ratio 3     # exit 1 when import oar takes over 3x import numpy
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

FIRST_OP = "import time; t = time.perf_counter(); import oar; oar.ones([2]) + 1; print((time.perf_counter() - t) * 1e3)"


def _env(tree: Path) -> dict:
    return dict(os.environ, PYTHONPATH=str(tree / "packages" / "core" / "src"))


def import_ms(tree: Path, module: str = "oar") -> float:
    """``module``'s cumulative import time from ``python -X importtime``, in a fresh process."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"], capture_output=True,
                            text=True, env=_env(tree), check=True)
    for line in result.stderr.splitlines():
        fields = line.split("|")
        if len(fields) == 3 and fields[2].strip() == module:
            return int(fields[1]) / 1000
    raise SystemExit(f"no {module!r} line in the importtime output of {tree}")


def first_op_ms(tree: Path) -> float:
    result = subprocess.run([sys.executable, "-c", FIRST_OP], capture_output=True, text=True, env=_env(tree), check=True)
    return float(result.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", type=Path, default=[Path(__file__).resolve().parents[1]])
    parser.add_argument("--runs", type=int, default=20, help="alternating processes per tree (default: 20)")
    parser.add_argument("--max-ratio", type=float, default=None,
                        help="fail (exit 1) when a tree's median import oar / import numpy exceeds this")
    args = parser.parse_args()
    for tree in args.trees:  # warm-up: bytecode written, files in the page cache
        import_ms(tree)
    imports = {tree: [] for tree in args.trees}
    firsts = {tree: [] for tree in args.trees}
    ratios = {tree: [] for tree in args.trees}
    for _ in range(args.runs):
        for tree in args.trees:
            imports[tree].append(import_ms(tree))
            firsts[tree].append(first_op_ms(tree))
            ratios[tree].append(imports[tree][-1] / import_ms(tree, "numpy"))
    over = False
    for tree in args.trees:
        i, f, r = imports[tree], firsts[tree], statistics.median(ratios[tree])
        print(f"{tree}: import oar median {statistics.median(i):.1f} ms (min {min(i):.1f}); "
              f"import oar + first op median {statistics.median(f):.1f} ms (min {min(f):.1f}); "
              f"import oar / import numpy median {r:.2f}x")
        over |= args.max_ratio is not None and r > args.max_ratio
    if over:
        raise SystemExit(f"import oar took more than {args.max_ratio}x import numpy")


if __name__ == "__main__":
    main()
