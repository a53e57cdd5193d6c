"""``oar-onnx``: export a model saved with ``oar.jit.save`` from the command line, or list what keeps
it from exporting.

    oar-onnx export out/model out/model.onnx [--opset 17]
    oar-onnx check out/model            # exit 1 and the list of ops without a lowering
    oar-onnx import model.onnx out/imported   # an ONNX file as an oar model (jit.save's two files)
"""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="oar-onnx", description="ONNX export and import for oar models.")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser("export", help="write a model saved by oar.jit.save as an ONNX file")
    export.add_argument("prefix", help="the model's path prefix (what oar.jit.save was given)")
    export.add_argument("output", help="the ONNX file to write")
    export.add_argument("--opset", type=int, default=None, help="the ONNX opset version (default: 17)")
    check = commands.add_parser("check", help="list the ops of a saved model that have no ONNX lowering")
    check.add_argument("prefix")
    imported = commands.add_parser("import", help="convert an ONNX file into an oar model (oar.jit.save's files)")
    imported.add_argument("onnx_file")
    imported.add_argument("prefix", help="where to write <prefix>.json and <prefix>.pdiparams")
    args = parser.parse_args(argv)

    import oar
    import oar.errors
    import oar.onnx
    from oar.onnx._export import DEFAULT_OPSET

    try:
        if args.command == "export":
            oar.onnx.export(args.prefix, args.output, opset_version=args.opset or DEFAULT_OPSET)
            print(f"wrote {args.output if args.output.endswith('.onnx') else args.output + '.onnx'}")
        elif args.command == "check":
            missing = oar.onnx.check_exportable(args.prefix)
            if missing:
                print(f"{len(missing)} op(s) without an ONNX lowering:")
                for entry in missing:
                    print(f"  - {entry}")
                return 1
            print("every op has an ONNX lowering")
        else:
            layer = oar.onnx.load(args.onnx_file)
            oar.jit.save(layer, args.prefix)
            print(f"wrote {args.prefix}.json and {args.prefix}.pdiparams")
    except (oar.errors.OarError, FileNotFoundError) as exc:
        print(f"oar-onnx {args.command}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
