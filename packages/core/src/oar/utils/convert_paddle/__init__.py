"""``python -m oar.utils.convert_paddle SRC.pdparams DST.pdparams``: turn a checkpoint written by
``paddle.save`` (a pickle) into a file of ``oar.save``'s format, without running anything in it.

Unpickling runs whatever callables a file names, so ``oar.load`` never unpickles. Paddle's
checkpoints name only numpy's array rebuilding: ``paddle.save(layer.state_dict(), path)`` pickles
(protocol 2 to 4, ``_legacy_save``) a dict of name -> ``numpy.ndarray`` plus
``"StructuredToParameterName@@"`` (key -> tensor name), and other objects (``_pickle_save``) reduce
each tensor to ``builtins.tuple((name, ndarray))``. Protocol 2 stores the arrays' bytes through
``_codecs.encode(text, "latin1")``. The converter's unpickler admits those globals and plain
containers, nothing else; any other global is refused by name (``posix.system``, ``builtins.eval``)
before it is looked up, so a hostile file cannot run code. ``_codecs.encode`` is admitted as a
stand-in that encodes a str to latin-1 only.

The unpickling runs in a child process with an address-space limit (``RLIMIT_AS``, the memory the
file may take beyond the child's start-up) and a time limit enforced by the parent, which kills
the child: a file that allocates a huge array, or that takes too long, costs the parent nothing.
The child also refuses a structure that shares a container between two places (a state dict is a
tree; a file of lists that each hold the previous one twice would take 2**depth steps to walk).

Then Paddle's ``paddle.load`` semantics: parameters split by ``_unpack_saved_dict``
(``"UnpackBigParamInfor@@"``, protocol 2 and 3 files of a parameter over 1 GiB) are joined again;
arrays named in ``"StructuredToParameterName@@"`` become tensors with those names (the table is
dropped), and in other files ``(name, ndarray)`` tuples, or else all arrays, become tensors, as
``paddle.load`` gives them. The result is written with ``oar.save`` (atomic), so
``oar.load(DST)`` and ``layer.set_state_dict`` read it like any oar checkpoint.

Refused, with a ``SerializationError`` naming the problem: other pickled globals (a Layer, a
``DenseTensor`` saved through ``builtins.eval``), object arrays, files that are not a pickle or are
truncated, and files over the limits. Static-graph ``.pdmodel`` programs and
``paddle.save(..., safetensors=True)`` files are not pickles and are not read here.

>>> import pickle, os, tempfile, numpy as np, oar
>>> folder = tempfile.mkdtemp()
>>> src, dst = os.path.join(folder, "paddle.pdparams"), os.path.join(folder, "oar.pdparams")
>>> with open(src, "wb") as f:  # what paddle.save(linear.state_dict(), src) writes
...     pickle.dump({"weight": np.ones((2, 3), "float32"), "StructuredToParameterName@@": {"weight": "linear_0.w_0"}}, f)
>>> oar.utils.convert_paddle(src, dst)
1
>>> state = oar.load(dst)
>>> state["weight"].shape, state["weight"].name
([2, 3], 'linear_0.w_0')
"""

from __future__ import annotations

import _codecs
import argparse
import builtins
import collections
import json
import os
import pickle
import subprocess
import sys

import numpy as np

try:
    import resource  # POSIX: the child's memory limit
except ImportError:  # Windows: no RLIMIT_AS; the time limit still holds
    resource = None

from oar._engine.device import current_device
from oar._engine.serialization import _where, save  # _where: paths in errors, as oar.save writes them
from oar._engine.tensor import _from_numpy
from oar.errors import ArgumentError, SerializationError

_NAME_TABLE = "StructuredToParameterName@@"
_SPLIT_TABLE = "UnpackBigParamInfor@@"  # sic: Paddle's key  # typos: disable-line
_RECONSTRUCT = np.ndarray((0,)).__reduce__()[0]  # numpy's _reconstruct, under this numpy's module name
_SCALAR = np.float32(0).__reduce__()[0]  # numpy's multiarray.scalar: a numpy scalar in an optimizer's state
_ERROR_PREFIX = "oar.convert_paddle error: "
_MiB = 1 << 20


def _latin1_encode(text, encoding="utf-8"):
    """``_codecs.encode`` as protocol 2 pickles use it for bytes (``encode(text, "latin1")``), and no
    other codec: some codecs (``zlib_codec``, ``bz2_codec``) would let a small file inflate."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise SerializationError(f"the file calls _codecs.encode({type(text).__name__}, {encoding!r}); only "
                                 f"_codecs.encode(str, 'latin1') is admitted, as protocol 2 pickles write bytes")
    return _codecs.encode(text, "latin1")


# (module, name) -> what it loads as: numpy's array rebuilding, under numpy 1's and 2's module names, and
# plain containers. Nothing here imports a module or calls anything beyond building the value.
_ADMITTED = {
    **{(module, "_reconstruct"): _RECONSTRUCT for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
    **{(module, "scalar"): _SCALAR for module in ("numpy.core.multiarray", "numpy._core.multiarray")},
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
    ("collections", "OrderedDict"): collections.OrderedDict,
    **{(module, name): getattr(builtins, name) for module in ("builtins", "__builtin__") for name in ("dict", "list", "tuple")},
}


class _ArrayUnpickler(pickle.Unpickler):
    """An unpickler that can rebuild numpy arrays and containers, and refuses every other global."""

    def find_class(self, module: str, name: str):
        admitted = _ADMITTED.get((module, name))
        if admitted is None:
            raise SerializationError(
                f"the file references {module}.{name}, which the converter refuses: it admits only numpy array "
                f"reconstruction and plain containers, so nothing in the file can run"
            )
        return admitted

    def persistent_load(self, pid):
        raise SerializationError("the file uses pickle persistent ids, which Paddle checkpoints do not; refused")


# ------------------------------------------------------------------------------------------
# the child: unpickle under limits, apply paddle.load's conventions, oar.save
# ------------------------------------------------------------------------------------------
def _check_tree(obj, path: tuple = (), seen: set | None = None) -> None:
    """Refuse anything that is not a tree of containers, arrays and plain values."""
    seen = set() if seen is None else seen
    if isinstance(obj, np.ndarray):
        if obj.dtype.hasobject:
            raise SerializationError(f"{_where(path)} is a numpy array of dtype object, which oar cannot store")
        return
    if obj is None or isinstance(obj, (bool, int, float, str, bytes, np.generic)):
        return
    if not isinstance(obj, (dict, list, tuple)):
        raise SerializationError(f"{_where(path)} is a {type(obj).__name__}, which a Paddle checkpoint does not hold")
    if id(obj) in seen:
        raise SerializationError(f"{_where(path)} is a container that appears twice in the file; a Paddle "
                                 f"checkpoint is a tree, so the file was crafted or is not a checkpoint")
    seen.add(id(obj))
    if len(path) > 128:
        raise SerializationError(f"{_where(path)} nests more than 128 levels deep; not a Paddle checkpoint")
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for key, value in items:
        _check_tree(value, (*path, key), seen)


def _join_split_parameters(state: dict) -> dict:
    """Undo Paddle's ``_unpack_saved_dict``: ``state[_SPLIT_TABLE]`` maps a key to its original shape and
    the keys of its flat slices (``key@@.0``, ``key@@.1``, ...)."""
    table = state.pop(_SPLIT_TABLE)
    if not isinstance(table, dict):
        raise SerializationError(f"{_SPLIT_TABLE!r} is a {type(table).__name__}, not Paddle's table of split parameters")
    for key, info in table.items():
        slices = info.get("slices") if isinstance(info, dict) else None
        shape = info.get("OriginShape") if isinstance(info, dict) else None
        if (not isinstance(slices, list) or not isinstance(shape, (tuple, list))
                or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)):
            raise SerializationError(f"{_SPLIT_TABLE!r}[{key!r}] is not Paddle's record of a split parameter "
                                     f"(OriginShape and slices)")
        parts = []
        for part in slices:
            value = state.get(part) if isinstance(part, str) else None
            if not isinstance(value, np.ndarray) or value.ndim != 1:
                raise SerializationError(f"the split parameter {key!r} names a slice {part!r} that the file does "
                                         f"not hold as a flat array")
            parts.append(value)
        if len({p.dtype for p in parts}) > 1 or sum(p.size for p in parts) != int(np.prod(shape, dtype=np.int64)):
            raise SerializationError(f"the slices of the split parameter {key!r} do not make one array of shape "
                                     f"{tuple(shape)}")
        state[key] = np.concatenate(parts).reshape(shape)
        for part in slices:
            del state[part]
    return state


def _tensor(array: np.ndarray, name):
    tensor = _from_numpy(np.ascontiguousarray(array), current_device())
    if isinstance(name, str) and name:
        tensor.name = name
    return tensor


def _is_named_array(obj) -> bool:
    """Paddle's ``_transformed_from_varbase``: how ``_pickle_save`` stores a tensor."""
    return isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], str) and isinstance(obj[1], np.ndarray)


def _map(obj, is_leaf, convert):
    if is_leaf(obj):
        return convert(obj)
    if isinstance(obj, dict):
        out = collections.OrderedDict() if isinstance(obj, collections.OrderedDict) else {}
        for key, value in obj.items():
            out[key] = _map(value, is_leaf, convert)
        return out
    if isinstance(obj, (list, tuple)):
        items = [_map(v, is_leaf, convert) for v in obj]
        return items if isinstance(obj, list) else tuple(items)
    return obj


def _contains(obj, is_leaf) -> bool:
    if is_leaf(obj):
        return True
    values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    return any(_contains(v, is_leaf) for v in values)


def _as_paddle_loads(obj):
    """What ``paddle.load`` returns for the unpickled ``obj``, with oar tensors for Paddle's."""
    if isinstance(obj, dict) and _SPLIT_TABLE in obj:
        obj = _join_split_parameters(obj)
    if isinstance(obj, dict) and _NAME_TABLE in obj:
        names = obj.pop(_NAME_TABLE)
        if not isinstance(names, dict):
            raise SerializationError(f"{_NAME_TABLE!r} is a {type(names).__name__}, not Paddle's table of names")
        return type(obj)((key, _tensor(value, names.get(key)) if key in names and isinstance(value, np.ndarray)
                          else value) for key, value in obj.items())
    if _contains(obj, _is_named_array):
        return _map(obj, _is_named_array, lambda pair: _tensor(pair[1], pair[0]))
    return _map(obj, lambda v: isinstance(v, np.ndarray), lambda array: _tensor(array, None))


def _count_tensors(obj) -> int:
    if isinstance(obj, dict):
        return sum(_count_tensors(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_count_tensors(v) for v in obj)
    return int(not isinstance(obj, (type(None), bool, int, float, str, bytes)))


def _address_space_in_use() -> int:
    """This process's mapped bytes (Linux), so the limit counts what the file takes, not numpy's start-up."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 30


def _limit_memory(memory_limit: int) -> None:
    if resource is None:
        return
    limit = _address_space_in_use() + memory_limit
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _convert_in_this_process(src: str, dst: str, memory_limit: int) -> int:
    _limit_memory(memory_limit)
    try:
        obj = _unpickle(src)
        _check_tree(obj)
        obj = _as_paddle_loads(obj)
        save(obj, dst)
    except MemoryError:
        raise SerializationError(f"converting it needed more than the memory limit of {memory_limit // _MiB} MiB "
                                 f"(the file declares an array too large for it, or it was crafted to exhaust "
                                 f"memory); pass a larger memory_limit if the checkpoint is real") from None
    return _count_tensors(obj)


def _unpickle(src: str):
    try:
        with open(src, "rb") as f:
            head = f.read(2)
            if len(head) < 2 or head[0] != 0x80 or not 2 <= head[1] <= 5:
                raise SerializationError("it is not a pickle file written by paddle.save (it does not start with a "
                                         "pickle protocol 2-5 header)")
            f.seek(0)
            obj = _ArrayUnpickler(f, encoding="latin1").load()
            if f.read(1):
                raise SerializationError("the file has bytes after the end of its pickle; it is corrupted")
            return obj
    except (SerializationError, MemoryError):
        raise
    except RecursionError:
        raise SerializationError("its pickle nests too deeply to read; not a Paddle checkpoint") from None
    except (EOFError, pickle.UnpicklingError) as exc:
        raise SerializationError(f"the pickle is truncated or corrupted ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a crafted pickle's opcodes means a bad file
        raise SerializationError(f"the pickle is invalid ({type(exc).__name__}: {exc}): corrupted, or not written "
                                 f"by paddle.save") from None


# ------------------------------------------------------------------------------------------
# the parent: run the child under a time limit
# ------------------------------------------------------------------------------------------
def _default_memory_limit(size: int) -> int:
    # the file's bytes read, the arrays rebuilt, the tensors made for oar.save, and room to spare
    return 4 * size + 512 * _MiB


def _default_timeout(size: int) -> float:
    return 60.0 + size / (20 * _MiB)  # a minute, plus a second per 20 MiB: unpickling runs far faster


def convert_paddle(src, dst, *, timeout: float | None = None, memory_limit: int | None = None) -> int:
    """Convert ``src``, a checkpoint written by ``paddle.save`` (a pickle), to ``dst`` in ``oar.save``'s
    format, and return how many tensors and arrays it holds. Nothing in ``src`` is executed: it is
    unpickled in a child process that admits numpy array reconstruction and plain containers only,
    under ``memory_limit`` bytes (default 4 x the file's size + 512 MiB) and ``timeout`` seconds
    (default 60 + 1 per 20 MiB). A refused global, a truncated or foreign file, or a file over a
    limit raises ``oar.errors.SerializationError`` and leaves ``dst`` as it was.

    >>> import pickle, os, tempfile, numpy as np, oar
    >>> folder = tempfile.mkdtemp()
    >>> src, dst = os.path.join(folder, "paddle.pdparams"), os.path.join(folder, "oar.pdparams")
    >>> with open(src, "wb") as f:
    ...     pickle.dump({"bias": np.zeros(3, "float32")}, f, protocol=2)
    >>> oar.utils.convert_paddle(src, dst)
    1
    >>> oar.load(dst)["bias"].numpy()
    array([0., 0., 0.], dtype=float32)
    """
    if not isinstance(src, (str, os.PathLike)) or not isinstance(dst, (str, os.PathLike)):
        raise ArgumentError(f"convert_paddle: src and dst must be paths, got {type(src).__name__} and "
                            f"{type(dst).__name__}")
    src, dst = os.fsdecode(src), os.fsdecode(dst)
    if not os.path.isfile(src):
        raise FileNotFoundError(f"convert_paddle: {src!r}: no such file")
    if os.path.isdir(dst):
        raise ArgumentError(f"convert_paddle: {dst!r} is a directory; give a file name")
    size = os.path.getsize(src)
    timeout = _default_timeout(size) if timeout is None else timeout
    memory_limit = _default_memory_limit(size) if memory_limit is None else memory_limit
    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit <= 0:
        raise ArgumentError(f"convert_paddle: memory_limit must be a positive int of bytes, got {memory_limit!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ArgumentError(f"convert_paddle: timeout must be a positive number of seconds, got {timeout!r}")
    where = f"convert_paddle: {src!r}"
    # one BLAS thread: the child does no linear algebra, and each thread would reserve address space
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    core_src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (core_src, env.get("PYTHONPATH")) if p)
    command = [sys.executable, "-m", "oar.utils.convert_paddle", "--worker", "--memory-limit", str(memory_limit),
               "--", src, dst]
    try:
        child = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env,
                               stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # subprocess.run has killed the child
        raise SerializationError(f"{where}: converting it took longer than the time limit of {timeout:g} s; a "
                                 f"crafted file can make unpickling slow. Pass a larger timeout if the checkpoint "
                                 f"is real") from None
    if child.returncode == 0:
        return int(child.stdout.strip().splitlines()[-1])
    for line in reversed(child.stderr.splitlines()):
        if line.startswith(_ERROR_PREFIX):
            raise SerializationError(f"{where}: {line[len(_ERROR_PREFIX):]}")
    if child.returncode < 0:
        raise SerializationError(f"{where}: the converter process was killed by signal {-child.returncode} (it "
                                 f"may have passed the memory limit of {memory_limit // _MiB} MiB)")
    tail = child.stderr.strip().splitlines()[-1:] or ["no output"]
    raise SerializationError(f"{where}: the converter process failed (exit status {child.returncode}): {tail[0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m oar.utils.convert_paddle",
        description="Convert a paddle.save checkpoint (a pickle) to oar.save's format without executing it.")
    parser.add_argument("src", help="the .pdparams / .pdopt file written by paddle.save")
    parser.add_argument("dst", help="the file to write, in oar.save's format")
    parser.add_argument("--timeout", type=float, default=None, help="seconds (default: 60 + 1 per 20 MiB)")
    parser.add_argument("--memory-limit", type=int, default=None, help="bytes (default: 4 x the file + 512 MiB)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # the child's entry
    args = parser.parse_args(argv)
    if args.worker:
        try:
            memory_limit = args.memory_limit or _default_memory_limit(os.path.getsize(args.src))
            count = _convert_in_this_process(args.src, args.dst, memory_limit)
        except SerializationError as exc:
            print(_ERROR_PREFIX + " ".join(str(exc).splitlines()), file=sys.stderr)
            return 2
        print(count)
        return 0
    try:
        count = convert_paddle(args.src, args.dst, timeout=args.timeout, memory_limit=args.memory_limit)
    except (SerializationError, ArgumentError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.dst} ({count} tensors and arrays); read it with oar.load")
    return 0


__all__ = ["convert_paddle", "main"]
