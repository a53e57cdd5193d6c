"""``ServerProcess``: ``oar-serve`` in a child process, for tests, benchmarks and notebooks.

>>> # with ServerProcess("models") as server:
>>> #     urllib.request.urlopen(server.url + "/v2/health/ready")
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on now (the OS's choice)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class ServerProcess:
    """``python -m oar.serving --model-repository DIR ...`` started in a child process.

    ``start()`` returns once ``/v2/health/ready`` answers 200 (or raises with the server's log);
    ``stop()`` sends SIGTERM and returns the exit status; the log is in ``log_path``.
    """

    def __init__(self, model_repository: str, *args: str, host: str = "127.0.0.1", port: int | None = None,
                 env: dict | None = None, ready_timeout_s: float = 120.0):
        self.host, self.port = host, port or free_port(host)
        self.url = f"http://{host}:{self.port}"
        self.command = [sys.executable, "-m", "oar.serving", "--model-repository", os.fspath(model_repository),
                        "--host", host, "--port", str(self.port), *args]
        self.env = {**os.environ, **(env or {})}
        self.ready_timeout_s = ready_timeout_s
        self.process: subprocess.Popen | None = None
        handle, self.log_path = tempfile.mkstemp(prefix="oar-serve-", suffix=".log")
        os.close(handle)

    def start(self) -> ServerProcess:
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"oar-serve exited with {self.process.returncode} before it was ready:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/v2/health/ready", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"oar-serve was not ready after {self.ready_timeout_s} s:\n{self.log()}")

    def log(self) -> str:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, then wait for the exit (SIGKILL after ``timeout_s``); the exit status."""
        if self.process is None:
            return 0
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServerProcess:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        os.unlink(self.log_path)
