"""``python -m oar plugins`` (and the ``oar`` console script): what is installed and registered."""

from __future__ import annotations

import argparse
import json
import sys

from oar._version import __version__
from oar.plugins import plugin_infos


def _plugins_command(args) -> int:
    infos = plugin_infos()
    if args.json:
        print(json.dumps([info.__dict__ for info in infos], indent=2))
        return 0
    for info in infos:
        version = f" {info.version}" if info.version else ""
        print(f"{info.name}{version} [{info.status}] ({info.module})")
        if info.error:
            print(f"    error: {info.error}")
        for kind, names in sorted(info.registered.items()):
            shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
            print(f"    {kind}: {shown}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="oar", description="oar command-line tools")
    sub = parser.add_subparsers(dest="command")
    plugins = sub.add_parser("plugins", help="list loaded plugins, their versions and what each registered")
    plugins.add_argument("--json", action="store_true", help="print machine-readable JSON")
    sub.add_parser("version", help="print oar's version")
    args = parser.parse_args(argv)
    if args.command == "plugins":
        return _plugins_command(args)
    if args.command == "version":
        print(__version__)
        return 0
    parser.print_help()
    return 0


if __name__ == "__main__":
    sys.exit(main())
