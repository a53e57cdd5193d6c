"""Finding a text dataset's file: the path given, else the file placed in oar's cache folder at the
path Paddle caches it under. Nothing is downloaded (see the package docstring)."""

from __future__ import annotations

import hashlib
import os
import tarfile
from pathlib import Path

from oar.errors import ArgumentError, SerializationError


def data_home() -> Path:
    """``$OAR_DATA_HOME``, else ``~/.cache/oar/dataset``: the folder oar.vision.datasets caches into too."""
    return Path(os.environ.get("OAR_DATA_HOME") or Path.home() / ".cache" / "oar" / "dataset").expanduser()


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def locate(path, *, dataset: str, argument: str, url: str, md5: str, module_name: str, download: bool) -> str:
    """``path`` when given (any file in the format will do), else the cached file of ``url``: what
    Paddle's ``_check_exists_and_download`` returns, without the download."""
    if path is not None:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"{dataset}: {argument}={os.fspath(path)!r} is not a file")
        return os.fspath(path)
    # Paddle names the cached file after the URL's last part, '%2F' included.
    cached = data_home() / module_name / url.rsplit("/", 1)[-1]
    if cached.is_file():
        got = _md5(cached)
        if got != md5:
            raise corrupt(cached, f"it is not the {dataset} file published at {url} (md5 {got}, expected {md5}); "
                                  f"pass your own file as {argument}=... to read it anyway")
        return str(cached)
    why = "oar.text downloads nothing" if download else "download=False"
    raise FileNotFoundError(
        f"{dataset}: no {argument} given and {cached} does not exist ({why}). Download {url} and put it at "
        f"{cached} (or copy it from Paddle's cache, ~/.cache/paddle/dataset/{module_name}/), or pass its path "
        f"as {argument}=...")


def check_mode(dataset: str, mode, modes: tuple[str, ...]) -> str:
    """``mode`` lowercased, one of ``modes`` (Paddle asserts the same)."""
    if not isinstance(mode, str) or mode.lower() not in modes:
        raise ArgumentError(f"{dataset}: mode must be one of {', '.join(map(repr, modes))}, got {mode!r}")
    return mode.lower()


def corrupt(path, why: str) -> SerializationError:
    return SerializationError(f"{os.fspath(path)!r} is not a valid dataset file: {why}")


def tar_member(archive: tarfile.TarFile, path, name: str):
    """The file ``name`` of an open tar archive, read as a binary file object."""
    try:
        member = archive.extractfile(name)
    except KeyError:
        member = None
    if member is None:
        raise corrupt(path, f"the archive holds no file {name!r}")
    return member


def open_tar(path, dataset: str) -> tarfile.TarFile:
    try:
        return tarfile.open(path)
    except tarfile.TarError as exc:
        raise corrupt(path, f"{dataset} expects a tar archive ({exc})") from None
