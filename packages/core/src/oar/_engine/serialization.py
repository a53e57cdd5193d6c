"""``oar.save`` / ``oar.load``: nested containers of tensors and plain values, never pickle.

A file written by ``oar.save`` is a safetensors file. Every tensor (and numpy array) of the saved
object is one safetensors entry, named after where it sits: its path's keys and indices joined by
``/`` (``fc.weight``, ``state/fc.weight_moment1_0``; ``tensor`` for a bare tensor), with ``#1``,
``#2``, ... appended where that name is taken. So other safetensors readers can open a state dict
too. The nesting and the plain values are JSON in the safetensors ``__metadata__``:

    {"format": "oar.save", "version": "2", "writer": "oar <version>", "structure": "<JSON>", "crc32": "<JSON>"}

``structure`` is a tree whose leaves are JSON scalars (``None``, bools, ints, finite floats,
strings) and whose other nodes are one-key objects: ``{"dict": [[key, node], ...]}`` (and
``"odict"`` for an OrderedDict), ``{"list": [...]}``, ``{"tuple": [...]}``,
``{"tensor": entry, "name": ...}``, ``{"ndarray": entry}``, ``{"npscalar": entry}`` and
``{"float": "nan" | "inf" | "-inf"}``. ``entry`` is ``null`` for the entry named after the node's
own path (nearly all of them), else the entry's name: a tensor met a second time names the entry of
its first place, and one object is stored once. ``crc32`` is the list of the entries' CRC-32s in the
order the structure first names them (depth first), so a flipped bit in a tensor is an error
naming it rather than a silently different model.

Version 1 (read, no longer written) names every entry in its leaf and has ``crc32`` as an object
``{entry: crc}``; a version 2 file of a state dict has about half the metadata. A file of a newer
version is refused, naming the oar that wrote it.

Loading parses JSON and copies bytes into arrays: it cannot execute code. Containers nest at most
``MAX_DEPTH`` (128) levels: a deeper object is refused by ``oar.save``, and a file whose structure
nests deeper is refused by ``oar.load`` before json or the decoder recurse into it (a hostile file
cannot exhaust Python's recursion limit); both errors name the path where the limit is passed.

Writing goes to a temporary file in the target's directory, ``.<name>.<host>.<pid>-<random>.tmp``
(``.model.pdparams.node1-p4026531836.4242-9f3a01bc.tmp``; ``<host>`` is the machine's name and,
on Linux, its pid namespace), is flushed and fsynced, and replaces the target with
``os.replace``; the directory is then fsynced. A crash at any point leaves either the old file or
the new one -- and the temporary file of a writer that was killed. The next write of the same
path (``oar.save``, ``oar.jit.save``, any ``oar.utils.atomic_file``) removes those of its host's
writers that no longer run: their pid runs no process, or it is this process's pid and no write
of this process owns the file. A live writer's temporary file is never removed.

oar writes the safetensors layout itself, streaming each tensor to the file, and reads files back
through the safetensors library, which validates the layout; it is imported on first use, so
``import oar`` does not pay for it.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import re
import zlib

import numpy as np

from oar._engine import dtypes as _dt
from oar._engine.device import current_device
from oar._engine.tensor import Tensor, _from_numpy
from oar._version import __version__
from oar.errors import ArgumentError, SerializationError

FORMAT = "oar.save"
VERSION = 2  # the format version this oar writes, and the newest it reads (1 is read too)
# The most containers (dicts, lists, tuples) oar.save nests, and oar.load reads: far more than any
# state dict needs, few enough that saving and loading stay well inside Python's default recursion
# limit of 1000 (json recurses once per bracket, up to three per container) from a deep call stack.
MAX_DEPTH = 128
_MAX_JSON_DEPTH = 3 * MAX_DEPTH + 1  # ``{"dict":[[key, <node>`` opens 3 brackets, a leaf such as {"tensor":null} 1

# safetensors dtype codes oar reads and writes (what ``safetensors.numpy`` writes for these dtypes).
_CODE_TO_NP = {
    "BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
    "U16": np.dtype(np.uint16), "I16": np.dtype(np.int16), "U32": np.dtype(np.uint32),
    "I32": np.dtype(np.int32), "U64": np.dtype(np.uint64), "I64": np.dtype(np.int64),
    "F16": np.dtype(np.float16), "BF16": _dt.bfloat16.np, "F32": np.dtype(np.float32),
    "F64": np.dtype(np.float64),
}
_SAVABLE_NP = set(_CODE_TO_NP.values())
_NON_FINITE = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


# ------------------------------------------------------------------------------------------
# save
# ------------------------------------------------------------------------------------------
def _where(path: tuple) -> str:
    """``obj['state'][3]``: where a value sits in the saved object, for error messages (a long path
    shows its first 8 and last 4 steps)."""
    steps = [f"[{p!r}]" for p in path]
    if len(steps) > 12:
        steps[8:-4] = [f"...({len(steps) - 12} more)..."]
    return "obj" + "".join(steps)


def _path_entry(path: tuple) -> str:
    """The entry name a value's path gives it (``state/3``): what a ``null`` entry stands for."""
    return "/".join(str(p) for p in path) or "tensor"


class _Encoder:
    """Turns an object into the JSON structure and a dict of named arrays."""

    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}
        self.entry_of: dict[int, str] = {}  # id(tensor or array) -> entry: one object is stored once
        self.keep_alive: list = []  # the objects behind entry_of, so their ids stay unique
        self.active: set[int] = set()  # containers being encoded, to refuse an object that contains itself

    def entry_name(self, path: tuple) -> str:
        base = _path_entry(path)
        name, n = base, 0
        while name in self.arrays or name == "__metadata__":  # safetensors reserves __metadata__
            n += 1
            name = f"{base}#{n}"
        return name

    def add_array(self, obj, array: np.ndarray, path: tuple) -> str | None:
        """The leaf's entry: None when it is the one named after ``path`` (see the module's docstring)."""
        entry = self.entry_of.get(id(obj))
        if entry is not None:
            return None if entry == _path_entry(path) else entry
        if array.dtype.newbyteorder("=") not in _SAVABLE_NP:
            raise SerializationError(
                f"oar.save: {_where(path)} has dtype {array.dtype}, which oar.save cannot store; supported: "
                f"{sorted(str(d) for d in _SAVABLE_NP)}"
            )
        if not array.dtype.isnative:
            array = array.astype(array.dtype.newbyteorder("="))
        entry = self.entry_name(path)
        self.arrays[entry] = array if array.flags.c_contiguous else array.copy(order="C")
        self.entry_of[id(obj)] = entry
        self.keep_alive.append(obj)
        return None if entry == _path_entry(path) else entry

    def encode(self, obj, path: tuple):
        if isinstance(obj, np.generic):  # before float: numpy.float64 subclasses float
            return {"npscalar": self.add_array(obj, np.asarray(obj), path)}
        if obj is None or isinstance(obj, (bool, int, str)):
            return obj
        if isinstance(obj, float):
            if obj != obj or obj in (float("inf"), float("-inf")):
                return {"float": "nan" if obj != obj else ("inf" if obj > 0 else "-inf")}
            return obj
        if isinstance(obj, Tensor):
            node = {"tensor": self.add_array(obj, obj.numpy(copy=False), path)}
            if obj._name is not None:  # Paddle's load gives tensors their saved names back
                node["name"] = obj._name
            return node
        if isinstance(obj, np.ndarray):
            return {"ndarray": self.add_array(obj, obj, path)}
        if isinstance(obj, (dict, list, tuple)):
            if id(obj) in self.active:
                raise SerializationError(f"oar.save: {_where(path)} contains itself; a saved object must be a tree")
            if len(path) >= MAX_DEPTH:  # the container of ``path`` is one level below the last allowed
                raise SerializationError(f"oar.save: {_where(path)} is nested more than {MAX_DEPTH} levels deep "
                                         f"(dicts, lists and tuples), the most oar.save stores; flatten the "
                                         f"object (a dict of 'a/b/c' keys, say)")
            self.active.add(id(obj))
            try:
                if isinstance(obj, dict):
                    kind = "odict" if isinstance(obj, collections.OrderedDict) else "dict"
                    items = []
                    for key, value in obj.items():
                        if not (key is None or isinstance(key, (bool, int, str)) or
                                (isinstance(key, float) and key == key and abs(key) != float("inf"))):
                            raise SerializationError(
                                f"oar.save: {_where(path)} has a key of type {type(key).__name__} ({key!r}); "
                                f"dict keys must be str, int, finite float, bool or None"
                            )
                        items.append([key, self.encode(value, (*path, key))])
                    return {kind: items}
                kind = "list" if isinstance(obj, list) else "tuple"
                return {kind: [self.encode(v, (*path, i)) for i, v in enumerate(obj)]}
            finally:
                self.active.discard(id(obj))
        hint = ""
        if hasattr(obj, "state_dict"):
            hint = f"; save its state: oar.save(x.state_dict(), path), where x is the {type(obj).__name__}"
        raise SerializationError(
            f"oar.save: cannot save {_where(path)} of type {type(obj).__name__}: oar.save stores tensors, numpy "
            f"arrays, None, bool, int, float, str, and dicts, lists and tuples of these{hint}"
        )


def _metadata(obj) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    encoder = _Encoder()
    structure = encoder.encode(obj, ())
    # encoder.arrays is in the order the (depth-first) encoding first named each entry: the order
    # the reader meets them in, so the list needs no names.
    checksums = [zlib.crc32(array) for array in encoder.arrays.values()]
    metadata = {
        "format": FORMAT,
        "version": str(VERSION),
        "writer": f"oar {__version__}",
        "structure": json.dumps(structure, separators=(",", ":"), allow_nan=False),
        "crc32": json.dumps(checksums, separators=(",", ":")),
    }
    return encoder.arrays, metadata


_NP_TO_CODE = {v: k for k, v in _CODE_TO_NP.items()}


def _write_safetensors(f, arrays: dict[str, np.ndarray], metadata: dict[str, str]) -> None:
    """Write the safetensors layout, streaming each array (no copy of the whole state in memory).

    Arrays go in order of decreasing item size, so every tensor is aligned to its item size after
    the 8-byte-padded header, as the safetensors library lays them out; ``oar.load`` reads the
    file back through the safetensors library, which validates the layout.
    """
    order = sorted(arrays, key=lambda name: -arrays[name].dtype.itemsize)
    header: dict = {"__metadata__": metadata}
    offset = 0
    for name in order:
        array = arrays[name]
        header[name] = {"dtype": _NP_TO_CODE[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + array.nbytes]}
        offset += array.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    f.write(len(text).to_bytes(8, "little"))
    f.write(text)
    for name in order:
        array = arrays[name]
        if array.nbytes:
            f.write(array.reshape(-1).view(np.uint8))  # bytes as stored; bfloat16 has no buffer format


def _fsync_directory(directory: str) -> None:
    if os.name == "nt":  # Windows cannot open a directory to fsync it
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


_writing: set[str] = set()  # the temporary files that this process's atomic_file calls are writing now
_TEMP_TAIL = re.compile(r"(\d{1,10})-[0-9a-f]{8}\.tmp")  # after the prefix: the writer's pid, a random part


def _host_token() -> str:
    """This machine, and on Linux its pid namespace, as a file-name part: a writer's pid means
    something only where the writer ran."""
    name = os.uname().nodename if hasattr(os, "uname") else os.environ.get("COMPUTERNAME", "")
    token = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:40] or "host"
    with contextlib.suppress(OSError):  # containers sharing a directory may share a host name, not their pids
        token += "-p" + "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit())
    return token


def _temp_prefix(path, host: str | None = None) -> str:
    """``.<name>.<host>.``: how the temporary files of ``path`` written on ``host`` begin."""
    return f".{os.path.basename(path)[:150]}.{host or _host_token()}."  # 150: room left in a 255-byte name


def _writer_is_gone(pid: int, tmp: str) -> bool:
    if pid == os.getpid():  # a restarted container's job often gets the pid of the one that was killed
        return tmp not in _writing
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except (OSError, OverflowError):  # PermissionError: another user's live process
        pass
    return False


def _remove_stale_temporaries(directory: str, path: str) -> None:
    """Remove the temporary files of ``path`` that writers of this host left when they were killed;
    a live writer's (its pid runs, or an atomic_file of this process writes it) is kept."""
    if os.name == "nt":  # os.kill(pid, 0) sends CTRL_C_EVENT there
        return
    prefixes = (_temp_prefix(path), f".{os.path.basename(path)[:150]}.")  # the second: oar 0.1's names, no host
    with contextlib.suppress(OSError):
        for entry in os.listdir(directory):
            for prefix in prefixes:
                match = _TEMP_TAIL.fullmatch(entry, len(prefix)) if entry.startswith(prefix) else None
                tmp = os.path.join(directory, entry)
                if match and _writer_is_gone(int(match.group(1)), tmp):
                    with contextlib.suppress(OSError):  # another writer may be removing it too
                        os.unlink(tmp)
                    break


@contextlib.contextmanager
def atomic_file(path, mode: str = "wb", **open_kwargs):
    """``with atomic_file(path, "w", encoding="utf-8") as f:`` writes a temporary file beside
    ``path`` that, when the block ends without an error, is fsynced and renamed onto ``path``:
    readers (and a crash at any moment) see the old file or the new one, never half of one. On an
    error the temporary file is removed and ``path`` is untouched.

    The temporary file is ``.<name>.<host>.<pid>-<random>.tmp`` in ``path``'s directory; one left
    by a writer that was killed is removed by the next ``atomic_file`` of ``path`` (see the
    module's docstring)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    _remove_stale_temporaries(directory, path)
    tmp = os.path.join(directory, f"{_temp_prefix(path)}{os.getpid()}-{os.urandom(4).hex()}.tmp")
    _writing.add(tmp)
    try:
        with open(tmp, mode.replace("w", "x"), **open_kwargs) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    finally:
        _writing.discard(tmp)
    _fsync_directory(directory)


def _write_atomic(path: str, arrays: dict, metadata: dict) -> None:
    with atomic_file(path) as f:
        _write_safetensors(f, arrays, metadata)


def save(obj, path, protocol: int = 4, **configs) -> None:
    """Save ``obj`` -- a tensor, or dicts, lists and tuples of tensors, numpy arrays and plain values
    (None, bool, int, float, str) -- to one file, as ``paddle.save``.

    The file is a safetensors file with the nesting as JSON in its metadata; nothing is pickled,
    so ``oar.load`` cannot execute code. Containers may nest 128 levels deep (``MAX_DEPTH``). The
    write is atomic: a crash mid-save leaves the previous file intact, and a temporary file
    ``.<name>.<host>.<pid>-<random>.tmp`` beside it, which the next save of ``path`` removes.
    ``path`` may also be a binary file object (``io.BytesIO``). ``protocol`` is accepted for
    Paddle compatibility (2 to 4) and changes nothing.

    >>> import oar, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "model.pdparams")
    >>> oar.save({"w": oar.ones([2, 2]), "epoch": 3}, path)
    >>> state = oar.load(path)
    >>> state["w"].shape, state["epoch"]
    ([2, 2], 3)
    """
    if isinstance(protocol, bool) or not isinstance(protocol, int) or not 2 <= protocol <= 4:
        raise ArgumentError(f"oar.save: protocol must be an int from 2 to 4 (as in Paddle), got {protocol!r}")
    if configs:
        raise ArgumentError(f"oar.save: unsupported arguments {sorted(configs)}; oar.save has one file format")
    arrays, metadata = _metadata(obj)  # any unsupported value fails here, before a file is touched
    if hasattr(path, "write"):
        _write_safetensors(path, arrays, metadata)
        return
    path = _check_path(path, "oar.save")
    if os.path.isdir(path):
        raise ArgumentError(f"oar.save: {path!r} is a directory; give a file name (e.g. {os.path.join(path, 'model.pdparams')!r})")
    _write_atomic(path, arrays, metadata)


def _check_path(path, fn: str) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"{fn}: path must be a str, an os.PathLike or a binary file object, got {type(path).__name__}")
    path = os.fspath(path)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    if not os.path.basename(path):
        raise ArgumentError(f"{fn}: path must name a file (dirname/filename), got {path!r}")
    return path


# ------------------------------------------------------------------------------------------
# load
# ------------------------------------------------------------------------------------------
def _foreign_hint(data: bytes) -> str:
    if len(data) >= 2 and data[0] == 0x80 and 2 <= data[1] <= 5:
        return ("it is a pickle file (such as a checkpoint written by paddle.save or torch.save); oar never "
                "unpickles, because unpickling a file can run any code in it. Convert a paddle.save checkpoint "
                "with `python -m oar.utils.convert_paddle SRC DST`, which runs nothing from the file")
    if data[:4] == b"PK\x03\x04":
        return "it is a zip archive (such as a torch.save or numpy.savez file), not a file written by oar.save"
    return "it is not a safetensors file written by oar.save"


def _decode_header(data: bytes, where: str) -> dict:
    if len(data) < 9:
        raise SerializationError(f"{where}: the file has {len(data)} bytes, too short for a file written by oar.save "
                                 f"(truncated, or not an oar file)")
    size = int.from_bytes(data[:8], "little")
    if data[8:9] != b"{":
        raise SerializationError(f"{where}: {_foreign_hint(data)}")
    if size > len(data) - 8:
        raise SerializationError(
            f"{where}: the header says {size} bytes but the file has {len(data) - 8} after the length field: "
            f"the file is truncated"
        )
    try:
        header = json.loads(data[8:8 + size])
    except (ValueError, UnicodeDecodeError) as exc:
        raise SerializationError(f"{where}: the safetensors header is not valid JSON ({exc}): the file is corrupted") from None
    if not isinstance(header, dict):
        raise SerializationError(f"{where}: the safetensors header is not a JSON object: the file is corrupted")
    return header


def _read_metadata(header: dict, where: str) -> tuple[int, object, dict | list]:
    metadata = header.get("__metadata__")
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        raise SerializationError(
            f"{where}: a safetensors file without oar.save's metadata (it was not written by oar.save); "
            f"read its tensors with safetensors.numpy.load_file"
        )
    try:
        version = int(metadata.get("version", ""))
    except ValueError:
        raise SerializationError(f"{where}: the format version {metadata.get('version')!r} is not a number: the file is corrupted") from None
    if version > VERSION:
        raise SerializationError(
            f"{where}: written by a newer oar ({metadata.get('writer', 'unknown')}) in format version {version}; "
            f"this oar reads format version {VERSION} and older: upgrade oar"
        )
    try:
        structure = json.loads(_cut_too_deep(metadata["structure"]))
        checksums = json.loads(metadata["crc32"])
    except (KeyError, TypeError, ValueError) as exc:
        raise SerializationError(f"{where}: oar.save's metadata is damaged ({type(exc).__name__}: {exc}): the file is corrupted") from None
    if not isinstance(checksums, dict if version < 2 else list):
        raise SerializationError(f"{where}: oar.save's checksum table is damaged: the file is corrupted")
    return version, structure, checksums


# A JSON string (an unterminated one runs to the end, so nothing is scanned twice), or a bracket.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|$)')
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|$)|[\[\]{}]')
_CUT = '{"too deep":null}'  # what a value nested too deeply becomes; the decoder stops above it


def _cut_too_deep(text):
    """``text`` with each JSON value that opens past ``_MAX_JSON_DEPTH`` brackets replaced by
    ``_CUT``, so ``json.loads`` never recurses deeper than a structure of ``MAX_DEPTH``
    containers needs; the decoder then names the path where the file passes ``MAX_DEPTH``."""
    if not isinstance(text, str):
        return text  # json.loads raises TypeError: a damaged structure
    codes = np.frombuffer(_JSON_STRING.sub("", text).encode(), np.uint8)  # UTF-8: no bracket byte inside a character
    steps = ((codes == 91) | (codes == 123)).astype(np.int32) - ((codes == 93) | (codes == 125))
    if not len(steps) or np.cumsum(steps).max() <= _MAX_JSON_DEPTH:
        return text  # nearly every file: a regex and a cumulative sum, at C speed
    parts, depth, start, last = [], 0, None, 0
    for token in _JSON_TOKEN.finditer(text):
        bracket = token.group()
        if bracket[0] == '"':
            continue
        depth += 1 if bracket in "[{" else -1
        if depth == _MAX_JSON_DEPTH + 1 and bracket in "[{" and start is None:
            start = token.start()
        elif depth == _MAX_JSON_DEPTH and start is not None:  # the cut value's closing bracket
            parts += [text[last:start], _CUT]
            start, last = None, token.end()
    parts.append(text[last:] if start is None else text[last:start])  # an unclosed value: json says so
    return "".join(parts)


def _read_arrays(data: bytes, where: str) -> dict[str, np.ndarray]:
    from safetensors import deserialize  # deferred (import time): only a load reads the format

    try:
        entries = deserialize(data)
    except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types; all mean a bad file
        raise SerializationError(f"{where}: the safetensors data is invalid ({exc}): the file is truncated or corrupted") from None
    arrays = {}
    for name, entry in entries:
        np_dtype = _CODE_TO_NP.get(entry["dtype"])
        if np_dtype is None:
            raise SerializationError(f"{where}: tensor {name!r} has dtype {entry['dtype']}, which oar does not read")
        array = np.frombuffer(entry["data"], dtype=np_dtype).reshape(entry["shape"])
        arrays[name] = array if array.flags.writeable else array.copy()
    return arrays


class _Decoder:
    """Rebuilds the saved object; each entry's checksum is checked when the structure first names it."""

    def __init__(self, arrays: dict, version: int, checksums: dict | list, return_numpy: bool, where: str):
        self.arrays = arrays
        self.version = version
        self.checksums = checksums  # version 1: {entry: crc}; 2: [crc, ...] in the order entries are first named
        self.checked: dict[str, None] = {}  # the entries named so far, in that order
        self.return_numpy = return_numpy
        self.where = where
        self.tensors: dict[str, object] = {}  # one entry loads as one object, as it was saved

    def bad(self, what: str) -> SerializationError:
        return SerializationError(f"{self.where}: the saved structure is damaged ({what}): the file is corrupted")

    def entry(self, entry, path: tuple) -> str:
        if entry is None and self.version >= 2:
            entry = _path_entry(path)
        if not isinstance(entry, str) or entry not in self.arrays:
            raise self.bad(f"it refers to a tensor {entry!r} the file does not hold")
        if entry not in self.checked:
            n = len(self.checked)
            expected = self.checksums.get(entry) if isinstance(self.checksums, dict) else \
                (self.checksums[n] if n < len(self.checksums) else None)
            if zlib.crc32(self.arrays[entry]) != expected:
                raise SerializationError(f"{self.where}: tensor {entry!r} does not match its checksum: the file is corrupted")
            self.checked[entry] = None
        return entry

    def finish(self, obj):
        """``obj``, once every entry of the file and of the checksum table was accounted for."""
        unnamed = sorted(set(self.arrays) - set(self.checked))
        if unnamed:
            raise SerializationError(f"{self.where}: the file holds tensors its saved structure does not name "
                                     f"({unnamed[:5]}): the file is corrupted")
        if isinstance(self.checksums, list) and len(self.checksums) != len(self.checked):
            raise SerializationError(f"{self.where}: oar.save's checksum table has {len(self.checksums)} entries for "
                                     f"{len(self.checked)} tensors: the file is corrupted")
        return obj

    def decode(self, node, path: tuple = ()):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if not isinstance(node, dict) or not node:
            raise self.bad(f"unexpected {type(node).__name__} node")
        kind = next(iter(node))
        value = node[kind]
        if len(path) >= MAX_DEPTH and kind in ("dict", "odict", "list", "tuple"):
            raise SerializationError(f"{self.where}: the saved structure nests more than {MAX_DEPTH} levels deep at "
                                     f"{_where(path)}, deeper than oar.save writes: the file was not written by "
                                     f"oar.save, or is corrupted")
        if kind in ("dict", "odict"):
            if not isinstance(value, list) or not all(isinstance(kv, list) and len(kv) == 2 for kv in value):
                raise self.bad("a dict node is not a list of [key, value] pairs")
            out = collections.OrderedDict() if kind == "odict" else {}
            for key, item in value:
                if isinstance(key, (dict, list)):
                    raise self.bad(f"a dict key is a {type(key).__name__}")
                out[key] = self.decode(item, (*path, key))
            return out
        if kind in ("list", "tuple"):
            if not isinstance(value, list):
                raise self.bad(f"a {kind} node does not hold a list")
            items = [self.decode(v, (*path, i)) for i, v in enumerate(value)]
            return items if kind == "list" else tuple(items)
        if kind == "float":
            if value not in _NON_FINITE:
                raise self.bad(f"unknown float {value!r}")
            return _NON_FINITE[value]
        if kind in ("ndarray", "npscalar"):
            array = self.arrays[self.entry(value, path)]
            return array[()] if kind == "npscalar" else array
        if kind == "tensor":
            entry = self.entry(value, path)
            if entry in self.tensors:
                return self.tensors[entry]
            array = self.arrays[entry]
            if self.return_numpy:
                result = array
            else:
                result = _from_numpy(array, current_device())
                if "name" in node:
                    result.name = str(node["name"])
            self.tensors[entry] = result
            return result
        raise self.bad(f"unknown node kind {kind!r}")


def load(path, **configs):
    """Load what ``oar.save`` wrote, as ``paddle.load``: tensors come back as plain ``oar.Tensor``
    (``stop_gradient=True``, on the current device, with their saved names), numpy arrays as numpy
    arrays, containers and plain values as they were. ``return_numpy=True`` gives numpy arrays
    for tensors too.

    A truncated, corrupted or foreign file (a pickle checkpoint, a safetensors file from another
    tool, a file from a newer oar, one nested deeper than ``MAX_DEPTH``) raises
    ``oar.errors.SerializationError`` naming the path and the problem; nothing in the file is ever
    executed.
    """
    return_numpy = configs.pop("return_numpy", False)
    if configs:
        raise ArgumentError(f"oar.load: unsupported arguments {sorted(configs)}; oar.load takes return_numpy")
    if hasattr(path, "read"):
        where = f"oar.load: {getattr(path, 'name', type(path).__name__)}"
        data = path.read()
    else:
        path = _check_path(path, "oar.load")
        where = f"oar.load: {path!r}"
        if os.path.isdir(path):
            raise SerializationError(f"{where} is a directory; oar.load reads one file written by oar.save")
        if not os.path.exists(path):
            raise FileNotFoundError(f"{where}: no such file")
        with open(path, "rb") as f:
            data = f.read()
    header = _decode_header(data, where)
    version, structure, checksums = _read_metadata(header, where)
    decoder = _Decoder(_read_arrays(data, where), version, checksums, bool(return_numpy), where)
    return decoder.finish(decoder.decode(structure))


__all__ = ["save", "load"]
