"""Fetching dataset files: into ``~/.cache/oar/dataset/<name>/`` (or ``$OAR_DATA_HOME/<name>/``),
over urllib, checked against the md5 the publisher lists, written atomically."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from oar.errors import SerializationError


def data_home() -> Path:
    """Where downloaded datasets go: ``$OAR_DATA_HOME``, else ``~/.cache/oar/dataset``."""
    return Path(os.environ.get("OAR_DATA_HOME") or Path.home() / ".cache" / "oar" / "dataset").expanduser()


def md5file(path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(urls: str | Sequence[str], module_name: str, md5sum: str | None, save_name: str | None = None,
             retries: int = 2, timeout: float = 60.0) -> str:
    """The path of the file at ``urls`` (tried in order, ``retries`` times each) in the cache
    folder ``module_name``; an existing file with the right md5 is not fetched again."""
    urls = [urls] if isinstance(urls, str) else list(urls)
    target = data_home() / module_name / (save_name or urls[0].rsplit("/", 1)[-1])
    if target.is_file() and (md5sum is None or md5file(target) == md5sum):
        return str(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for url in urls:
        for _ in range(retries):
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=timeout) as response:
                    for chunk in iter(lambda: response.read(1 << 20), b""):
                        out.write(chunk)
                    out.flush()
                    os.fsync(out.fileno())
                got = md5file(tmp)
                if md5sum is not None and got != md5sum:
                    failures.append(f"{url}: md5 {got}, expected {md5sum}")
                    continue
                os.replace(tmp, target)
                return str(target)
            except OSError as exc:  # URLError and timeouts are OSErrors
                failures.append(f"{url}: {exc}")
            finally:
                if os.path.exists(tmp):
                    os.remove(tmp)
    raise OSError(
        f"could not download {target.name} into {target.parent}:\n  " + "\n  ".join(failures)
        + f"\nDownload it yourself and pass its path, or put it at {target}."
    )


def check_exists_and_download(path, urls, md5sum: str, module_name: str, download_ok: bool) -> str:
    """``path`` when given and present (its content is not checked: any file in the format is
    fine), else the cached download."""
    if path is not None:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{module_name}: no file at {path!r}")
        return os.fspath(path)
    if not download_ok:
        cached = data_home() / module_name / (urls if isinstance(urls, str) else urls[0]).rsplit("/", 1)[-1]
        if cached.is_file() and md5file(cached) == md5sum:
            return str(cached)
        raise FileNotFoundError(
            f"{module_name}: no file path given, {cached} is missing or has the wrong md5, and download=False"
        )
    return download(urls, module_name, md5sum)


def corrupt(path, why: str) -> SerializationError:
    return SerializationError(f"{os.fspath(path)!r} is not a valid dataset file: {why}")
