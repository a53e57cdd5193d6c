"""``python -m oar.inference check PREFIX --input x.npy [--input y.npy] [--rtol R] [--atol A]``:
run a saved model's inputs through the program as captured and through the Predictor, print the
differences of every output and intermediate value, and exit 1 when one is beyond the tolerance
(2 on a usage error)."""

from __future__ import annotations

import argparse
import sys

import numpy as np


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m oar.inference", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="compare the captured program and the Predictor on given inputs")
    check.add_argument("prefix", help="the model prefix oar.jit.save wrote (PREFIX.json, PREFIX.pdiparams)")
    check.add_argument("--input", action="append", required=True, metavar="FILE.npy",
                       help="one input per flag, in the model's input order (numpy .npy files)")
    check.add_argument("--rtol", type=float, default=None)
    check.add_argument("--atol", type=float, default=None)
    args = parser.parse_args(argv)

    from oar.inference.parity import check_parity  # deferred (import time): --help stays fast

    try:
        inputs = [np.load(path, allow_pickle=False) for path in args.input]
        report = check_parity(None, args.prefix, inputs, rtol=args.rtol, atol=args.atol)
    except (OSError, ValueError, TypeError) as exc:
        print(f"oar.inference check: {exc}", file=sys.stderr)
        return 2
    print(report)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
