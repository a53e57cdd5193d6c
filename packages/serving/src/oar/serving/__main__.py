"""``oar-serve`` / ``python -m oar.serving``: serve a model repository over the Open Inference
Protocol (KServe v2) REST API.

    oar-serve --model-repository DIR [--host 127.0.0.1] [--port 8000] [--workers N]
              [--api-key KEY | env OAR_SERVE_API_KEY] [--max-request-bytes N] [--backend NAME]

SIGTERM (or Ctrl-C) stops accepting, finishes every accepted request and exits 0.
"""

from __future__ import annotations

import argparse
import os
import sys


def parse_args(argv: list[str] | None):
    parser = argparse.ArgumentParser(prog="oar-serve", description="Serve the models of a repository over the Open "
                                     "Inference Protocol (KServe v2) REST API; see docs/serving.md.")
    parser.add_argument("--model-repository", required=True, metavar="DIR",
                        help="a folder laid out DIR/<model>/<version>/ (each version what oar.jit.save wrote)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the port to listen on (default 8000)")
    parser.add_argument("--workers", type=int, default=1,
                        help="worker processes behind the one port, each with its own copy of the models")
    parser.add_argument("--api-key", default=None,
                        help="require 'Authorization: Bearer KEY' (or the env var OAR_SERVE_API_KEY; off by default)")
    parser.add_argument("--max-request-bytes", type=int, default=None,
                        help="refuse request bodies over this many bytes with 413 (default 8 MiB)")
    parser.add_argument("--graceful-shutdown-s", type=float, default=30.0,
                        help="on SIGTERM, how long to wait for accepted requests before closing (default 30)")
    parser.add_argument("--backend", default=None, metavar="NAME",
                        help="the serving backend of models whose config.json names none (default: 'oar', or "
                             "'onnxruntime' for a version holding a model.onnx; oar-onnx adds 'onnxruntime')")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    args = parser.parse_args(argv)
    if not os.path.isdir(args.model_repository):
        parser.error(f"--model-repository {args.model_repository!r} is not a folder (DIR/<model>/<version>/...)")
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    if args.max_request_bytes is not None and args.max_request_bytes < 1:
        parser.error(f"--max-request-bytes must be >= 1, got {args.max_request_bytes}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from oar.serving import serve  # deferred (import time): --help needs no models

    serve(args.model_repository, host=args.host, port=args.port, workers=args.workers, api_key=args.api_key,
          max_request_bytes=args.max_request_bytes, graceful_shutdown_s=args.graceful_shutdown_s,
          log_level=args.log_level, backend=args.backend)
    return 0


if __name__ == "__main__":
    sys.exit(main())
