"""``serve()``: the application on uvicorn, one process or ``workers`` behind one port.

uvicorn parses HTTP with httptools and runs the loop on uvloop when they are installed (oar-serving
depends on both): with its pure-Python parser a batch-1 request spends more time in HTTP than in
the model (docs/benchmarks.md, W10).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import tempfile

import uvicorn
from uvicorn.protocols.http.auto import AutoHTTPProtocol

from oar.serving.app import DEFAULT_MAX_REQUEST_BYTES, OPTIONS_ENV


class NoDelayHTTPProtocol(AutoHTTPProtocol):
    """uvicorn's HTTP protocol with Nagle's algorithm off on every connection.

    With ``workers > 1`` uvicorn binds the listening socket itself without naming the TCP protocol,
    and asyncio then leaves Nagle on for the connections it accepts: a response written in two
    parts waited for the client's delayed ACK, about 40 ms per request (uvicorn issue #3149)."""

    def connection_made(self, transport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


def serve(model_repository: str, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
          api_key: str | None = None, max_request_bytes: int | None = None, graceful_shutdown_s: float = 30.0,
          log_level: str = "info", backend: str | None = None) -> None:
    """Serve ``model_repository`` on uvicorn until SIGTERM or Ctrl-C (then finish the accepted
    requests and return). ``backend`` runs the models whose ``config.json`` names no serving backend.

    >>> # serve("models", port=8000, workers=2)  # blocks; `oar-serve` calls this
    """
    options = {"model_repository": os.path.abspath(model_repository), "log_level": log_level,
               "max_request_bytes": max_request_bytes or DEFAULT_MAX_REQUEST_BYTES}
    if api_key:
        options["api_key"] = api_key
    if backend:
        options["backend"] = backend
    os.environ[OPTIONS_ENV] = json.dumps(options)
    metrics_dir = None
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        metrics_dir = tempfile.mkdtemp(prefix="oar-serve-metrics-")  # /metrics sums over the workers
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    # uvicorn stops gracefully on SIGTERM/SIGINT and then raises the signal again under the handler
    # it found: with these, that second signal is only noted, and a graceful stop exits 0.
    stopped_by: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stopped_by.append(signum))
    try:
        uvicorn.run("oar.serving.app:app_from_environment", factory=True, host=host, port=port, workers=workers,
                    http=NoDelayHTTPProtocol, log_level=log_level, timeout_graceful_shutdown=graceful_shutdown_s,
                    access_log=False)
    finally:
        if metrics_dir is not None:
            shutil.rmtree(metrics_dir, ignore_errors=True)
