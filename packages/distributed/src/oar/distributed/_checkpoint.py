"""Distributed checkpoints, Paddle's ``save_state_dict`` / ``load_state_dict``: a directory that a
job of any size writes together and a job of any size -- one process included -- reads back.

``save_state_dict(state, path)`` flattens ``state`` (nested dicts, and lists holding tensors) into
keys (``model/fc.weight``, ``optimizer/fc.weight_moment1_0``) and the ranks agree on who writes
each key: a key that the coordinator holds -- a model's state, replicated on every rank -- is
written once, by the coordinator; a key that only some ranks hold -- the shard of a
``ShardingOptimizer`` -- is written by the lowest rank holding it. So each rank writes one file,
``<rank>_<id>.distcp`` (``oar.save``: safetensors + JSON, atomic, never pickle), with its part of
the tensors; plain values (an LR scheduler's epoch) go into the manifest. Last, once every rank
has written its file, the coordinator writes the manifest ``<id>.metadata``, JSON::

    {"format": "oar.distributed.checkpoint", "version": 1, "unique_id": 0, "world_size": 2,
     "coordinator_rank": 0, "files": ["0_0.distcp", "1_0.distcp"],
     "entries": {"model/fc.weight": {"path": ["model", "fc.weight"], "kind": "tensor",
                                     "file": "0_0.distcp", "shape": [4, 2], "dtype": "float32"},
                 "optimizer/LR_Scheduler/last_epoch": {"path": [...], "kind": "value", "value": 3}, ...}}

**A checkpoint is complete only once its manifest exists**: the manifest is written after every
data file (and atomically), so a job killed while saving leaves a directory without that
manifest -- which ``load_state_dict`` refuses, naming what is missing -- never a half-read one.

``load_state_dict(state, path)`` fills ``state`` in place: each tensor is overwritten (``set_value``)
with the saved one of the same key, each plain value replaced. Each rank reads only the files
that hold the keys it asks for, whatever the world size that wrote them, so a checkpoint of 2
ranks resumes in 1 process or in 4. A dict that is *empty* in ``state`` receives everything saved
under its key -- the way to load a plain optimizer, whose ``state_dict()`` is empty before its
first step (a ``ShardingOptimizer``'s names every key of its shard already).

The directory must be one that every rank sees (a shared file system on several machines).

When nothing is sharded, ``oar.save`` by rank 0 and ``oar.load`` everywhere is all it takes::

    import oar, oar.distributed as dist
    if dist.get_rank() == 0:
        oar.save(model.state_dict(), "ckpt/model.pdparams")
    dist.barrier()                                          # the file is complete for everyone
    model.set_state_dict(oar.load("ckpt/model.pdparams"))

>>> import oar, oar.distributed as dist, tempfile
>>> from oar.distributed._checkpoint import save_state_dict, load_state_dict
>>> path = tempfile.mkdtemp()
>>> save_state_dict({"w": oar.ones([2, 2]), "epoch": 3}, path)
>>> state = {"w": oar.zeros([2, 2]), "epoch": 0}
>>> load_state_dict(state, path)
>>> state["w"].tolist(), state["epoch"]
([[1.0, 1.0], [1.0, 1.0]], 3)
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

import oar
from oar.distributed import _collective as collective
from oar.errors import ArgumentError, SerializationError
from oar.utils import atomic_file

FORMAT = "oar.distributed.checkpoint"
VERSION = 1
_MANIFEST = re.compile(r"^(\d+)\.metadata$")
_PLAIN = (type(None), bool, int, float, str)


def _is_plain(value) -> bool:
    """A JSON value with no tensor inside: stored in the manifest as it is."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def _flatten(state, fn: str) -> list[tuple[tuple, object]]:
    """``(path, leaf)`` for every tensor, numpy array and plain value of ``state``, depth first."""
    leaves = []

    def walk(node, path):
        if isinstance(node, dict) and not (path and _is_plain(node) and node):
            if not node and path:
                leaves.append((path, node))  # an empty dict: a leaf to fill with what is saved under it
            for key, value in node.items():
                if not isinstance(key, str):
                    raise ArgumentError(f"{fn}: state dict keys must be strings, got {key!r} at "
                                        f"{'/'.join(map(str, path)) or 'the top'}")
                walk(value, (*path, key))
        elif isinstance(node, (list, tuple)) and not _is_plain(node):
            for i, value in enumerate(node):
                walk(value, (*path, i))
        elif isinstance(node, (oar.Tensor, np.ndarray)) or _is_plain(node):
            leaves.append((path, node))
        else:
            raise ArgumentError(f"{fn}: {'/'.join(map(str, path))} is a {type(node).__name__}; a state dict holds "
                                "tensors, numpy arrays, plain values (None, bool, int, float, str) and dicts and "
                                "lists of them")

    if not isinstance(state, dict):
        raise ArgumentError(f"{fn}: state_dict must be a dict, got {type(state).__name__}")
    walk(state, ())
    return leaves


def _key(path: tuple) -> str:
    return "/".join(map(str, path))


def _describe(path: tuple, value) -> dict:
    if isinstance(value, (oar.Tensor, np.ndarray)):
        array = value.numpy(copy=False) if isinstance(value, oar.Tensor) else value
        return {"path": list(path), "kind": "tensor", "shape": list(array.shape), "dtype": str(array.dtype)}
    return {"path": list(path), "kind": "value", "value": value}


def _group(process_group, fn: str):
    group = collective.init_parallel_env() if process_group is None else process_group
    if not isinstance(group, collective.Group):
        raise ArgumentError(f"{fn}: process_group must be a Group from oar.distributed.new_group, got "
                            f"{type(group).__name__}")
    return group


def _coordinator(group, coordinator_rank, fn: str) -> int:
    if isinstance(coordinator_rank, bool) or not isinstance(coordinator_rank, int) or \
            not 0 <= coordinator_rank < group.nranks:
        raise ArgumentError(f"{fn}: coordinator_rank must be a rank of the group, 0 to {group.nranks - 1}, got "
                            f"{coordinator_rank!r}")
    return coordinator_rank


def _manifest_ids(path: str) -> list[int]:
    if not os.path.isdir(path):
        return []
    return sorted(int(m.group(1)) for m in map(_MANIFEST.match, os.listdir(path)) if m)


def _agree(group, fn: str, error: str | None) -> None:
    """Every rank says whether its part succeeded; a failure anywhere raises on every rank,
    so no rank goes on to a collective the failed one never reaches."""
    if group.nranks == 1:
        if error:
            raise SerializationError(error)
        return
    reports: list = []
    collective.all_gather_object(reports, error, group=group)
    failed = [(rank, message) for rank, message in zip(group.ranks, reports) if message]
    if failed:
        raise SerializationError(f"{fn} failed on {len(failed)} rank(s): " +
                                 "; ".join(f"rank {rank}: {message}" for rank, message in failed))


def save_state_dict(state_dict: dict, path: str, process_group=None, coordinator_rank: int = 0,
                    unique_id: int | None = None, async_save: bool = False) -> None:
    """Save ``state_dict`` of every rank of the group into the directory ``path``, as
    ``paddle.distributed.save_state_dict``: replicated entries once (by ``coordinator_rank``),
    sharded ones (present on some ranks only) by a rank holding them, one ``oar.save`` file per
    rank, then the JSON manifest ``<unique_id>.metadata`` -- written last: the checkpoint is
    complete when it exists. Every rank of the group calls it.

    ``unique_id`` numbers checkpoints in one directory (default: one more than the newest there,
    0 for the first); the same id overwrites. ``async_save`` is accepted for Paddle's scripts: the
    save is complete when the call returns either way. A value present on several ranks must be
    the same on each (the coordinator's, or the lowest rank's, is written).

    >>> import oar, tempfile
    >>> from oar.distributed._checkpoint import save_state_dict
    >>> save_state_dict({"fc": oar.nn.Linear(2, 2).state_dict()}, tempfile.mkdtemp())
    """
    fn = "save_state_dict"
    group = _group(process_group, fn)
    coordinator = _coordinator(group, coordinator_rank, fn)
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"{fn}: path must be a directory name (str), got {type(path).__name__}")
    path = os.fspath(path)
    if unique_id is not None and (isinstance(unique_id, bool) or not isinstance(unique_id, int) or unique_id < 0):
        raise ArgumentError(f"{fn}: unique_id must be an int >= 0 or None, got {unique_id!r}")
    leaves = _flatten(state_dict, fn)
    local: dict[str, dict] = {}
    for p, value in leaves:
        key = _key(p)
        if key in local:
            raise ArgumentError(f"{fn}: two entries flatten to the key {key!r}; rename one (keys are joined with '/')")
        local[key] = _describe(p, value)
    me = group.rank
    # The coordinator chooses the id, so that every rank writes the same checkpoint.
    if me == coordinator:
        if unique_id is None:
            ids = _manifest_ids(path)
            unique_id = ids[-1] + 1 if ids else 0
        # Overwriting a checkpoint: its manifest goes first, so that no reader takes the old
        # manifest for a directory whose data files are being replaced. The gather below waits for it.
        try:
            os.remove(os.path.join(path, f"{unique_id}.metadata"))
        except FileNotFoundError:
            pass
    everyone: list = []
    if group.nranks > 1:
        collective.all_gather_object(everyone, {"id": unique_id, "entries": local}, group=group)
    else:
        everyone = [{"id": unique_id, "entries": local}]
    unique_id = everyone[coordinator]["id"]
    # The plan, computed alike on every rank: the coordinator writes what it holds, the lowest
    # holder the rest.
    entries: dict[str, dict] = {}
    holders: dict[str, list[int]] = {}
    for rank in [coordinator, *[r for r in range(group.nranks) if r != coordinator]]:
        for key, entry in everyone[rank]["entries"].items():
            holders.setdefault(key, []).append(rank)
            first = entries.get(key)
            if first is None:
                entries[key] = {**entry, "rank": rank}
            elif (first["kind"], first.get("shape"), first.get("dtype")) != \
                    (entry["kind"], entry.get("shape"), entry.get("dtype")):
                raise ArgumentError(f"{fn}: {key!r} differs between ranks {first['rank']} and {rank} "
                                    f"({first['kind']} {first.get('shape')} {first.get('dtype')} vs {entry['kind']} "
                                    f"{entry.get('shape')} {entry.get('dtype')}); a key held by several ranks must be "
                                    "the same entry on each")
    files = {}
    for key, entry in entries.items():
        if entry["kind"] == "tensor":
            entry["file"] = files.setdefault(entry["rank"], f"{entry['rank']}_{unique_id}.distcp")
        entry["ranks"] = sorted(holders[key])
        del entry["rank"]
    error = None
    try:
        os.makedirs(path, exist_ok=True)
        if me in files:
            mine = {_key(p): value for p, value in leaves if entries[_key(p)].get("file") == files[me]}
            oar.save(mine, os.path.join(path, files[me]))
    except OSError as exc:
        error = f"writing {os.path.join(path, files.get(me, '?'))}: {exc}"
    _agree(group, fn, error)
    if me == coordinator:
        manifest = {"format": FORMAT, "version": VERSION, "writer": f"oar {oar.__version__}", "unique_id": unique_id,
                    "world_size": group.nranks, "coordinator_rank": coordinator, "files": sorted(files.values()),
                    "entries": entries}
        error = None
        try:
            with atomic_file(os.path.join(path, f"{unique_id}.metadata"), "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=1)
        except OSError as exc:
            error = f"writing the manifest {unique_id}.metadata: {exc}"
    _agree(group, fn, error)  # no rank returns before the checkpoint is complete


def _read_manifest(path: str, unique_id, fn: str) -> dict:
    where = f"{fn}: {path!r}"
    if not os.path.isdir(path):
        raise FileNotFoundError(f"{where} is not a directory; a distributed checkpoint is the directory "
                                "save_state_dict wrote")
    if unique_id is None:
        ids = _manifest_ids(path)
        if not ids:
            data = sorted(name for name in os.listdir(path) if name.endswith(".distcp"))
            raise SerializationError(
                f"{where} holds no manifest (<id>.metadata)" +
                (f" but data files {data[:4]}: the save did not finish (the manifest is written last), or the "
                 "manifest was deleted; the checkpoint is incomplete" if data else ": it is not a checkpoint directory"))
        unique_id = ids[-1]
    name = os.path.join(path, f"{unique_id}.metadata")
    if not os.path.exists(name):
        raise SerializationError(f"{where}: there is no manifest {unique_id}.metadata (manifests here: "
                                 f"{[f'{i}.metadata' for i in _manifest_ids(path)]}); the checkpoint {unique_id} is "
                                 "incomplete or was never written")
    try:
        with open(name, encoding="utf-8") as f:
            manifest = json.load(f)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SerializationError(f"{fn}: the manifest {name!r} is not valid JSON ({exc}): it is corrupted") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or \
            not isinstance(manifest.get("entries"), dict):
        raise SerializationError(f"{fn}: {name!r} is not a manifest written by save_state_dict: it is corrupted")
    if not isinstance(manifest.get("version"), int) or manifest["version"] > VERSION:
        raise SerializationError(f"{fn}: {name!r} has format version {manifest.get('version')!r}, newer than this "
                                 f"oar reads ({VERSION}); upgrade oar")
    for key, entry in manifest["entries"].items():
        if not isinstance(entry, dict) or entry.get("kind") not in ("tensor", "value") or \
                (entry["kind"] == "tensor" and not isinstance(entry.get("file"), str)):
            raise SerializationError(f"{fn}: the manifest {name!r} has a damaged entry {key!r}: it is corrupted")
    return manifest


def load_state_dict(state_dict: dict, path: str, process_group=None, coordinator_rank: int = 0,
                    unique_id: int | None = None, offload: bool = False) -> None:
    """Fill ``state_dict`` in place from the checkpoint in the directory ``path`` (the newest, or
    ``unique_id``), as ``paddle.distributed.load_state_dict``: every tensor takes the saved values
    of its key, every plain value is replaced, and an empty dict receives everything saved under
    its key. Each rank reads the files holding the keys it asks for, so the job may have any
    world size, one process included. Then hand the parts to ``model.set_state_dict`` and
    ``optimizer.set_state_dict``. ``offload`` is accepted for Paddle's scripts (tensors are on the
    host here).

    A missing or damaged manifest (a save that did not finish), a key the checkpoint lacks or a
    shape that differs raise ``SerializationError`` / ``ArgumentError`` naming them; nothing is
    changed then on any rank.

    >>> import oar, tempfile
    >>> from oar.distributed._checkpoint import save_state_dict, load_state_dict
    >>> path = tempfile.mkdtemp()
    >>> save_state_dict({"opt": {"lr": 0.1, "m": oar.ones([2])}}, path)
    >>> state = {"opt": {}}
    >>> load_state_dict(state, path)
    >>> sorted(state["opt"])
    ['lr', 'm']
    """
    fn = "load_state_dict"
    group = _group(process_group, fn)
    _coordinator(group, coordinator_rank, fn)
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"{fn}: path must be a directory name (str), got {type(path).__name__}")
    path = os.fspath(path)
    leaves = _flatten(state_dict, fn)
    error, problem = None, None
    try:
        manifest = _read_manifest(path, unique_id, fn)
        plan = _plan(leaves, manifest, fn)
        arrays = _read(path, plan, fn)
    except (OSError, SerializationError, ArgumentError) as exc:
        error, problem = f"{type(exc).__name__}: {exc}", exc
    if group.nranks == 1 and problem is not None:
        raise problem
    _agree(group, fn, error)
    _fill(state_dict, plan, arrays)


def _plan(leaves, manifest: dict, fn: str) -> list[tuple[tuple, object, list[tuple[str, dict]]]]:
    """For each leaf of the caller's state: the manifest entries that fill it."""
    entries = manifest["entries"]
    plan, missing, mismatched = [], [], []
    for path, value in leaves:
        key = _key(path)
        if isinstance(value, dict) and not value:  # everything saved under it
            prefix = key + "/"
            found = [(k, e) for k, e in entries.items() if k.startswith(prefix)]
            if found:
                plan.append((path, value, found))
                continue
            if key not in entries:
                missing.append(key + "/*")
                continue
        entry = entries.get(key)
        if entry is None:
            missing.append(key)
            continue
        if isinstance(value, (oar.Tensor, np.ndarray)):
            shape = list(value.shape)
            if entry["kind"] != "tensor" or list(entry.get("shape", [])) != shape:
                mismatched.append(f"{key}: checkpoint {entry['kind']} {entry.get('shape')}, state {shape}")
                continue
        plan.append((path, value, [(key, entry)]))
    if missing or mismatched:
        lines = [f"{fn}: the checkpoint (written by {manifest.get('world_size')} rank(s)) does not match the state "
                 "dict (nothing was loaded)"]
        if missing:
            lines.append(f"  keys the checkpoint lacks ({len(missing)}): {', '.join(missing[:20])}")
        if mismatched:
            lines.append(f"  shape mismatches ({len(mismatched)}): {'; '.join(mismatched[:20])}")
        raise ArgumentError("\n".join(lines))
    return plan


def _read(path: str, plan, fn: str) -> dict[str, np.ndarray]:
    """The saved arrays the plan needs, each file read once."""
    by_file: dict[str, list[str]] = {}
    for _, _, found in plan:
        for key, entry in found:
            if entry["kind"] == "tensor":
                by_file.setdefault(entry["file"], []).append(key)
    arrays = {}
    for name, keys in by_file.items():
        file = os.path.join(path, name)
        if not os.path.exists(file):
            raise SerializationError(f"{fn}: {file!r}, which the manifest names, is missing: the checkpoint is "
                                     "incomplete")
        saved = oar.load(file, return_numpy=True)
        for key in keys:
            if key not in saved:
                raise SerializationError(f"{fn}: {file!r} lacks {key!r}, which the manifest places there: the "
                                         "checkpoint is corrupted")
            arrays[key] = saved[key]
    return arrays


def _set(container, path: tuple, value) -> None:
    for step in path[:-1]:
        container = container[step]
    container[path[-1]] = value


def _fill(state_dict: dict, plan, arrays: dict) -> None:
    for path, value, found in plan:
        if len(found) != 1 or found[0][0] != _key(path):  # an empty dict, filled with what is saved under it
            for key, entry in found:
                saved = oar.to_tensor(arrays[key]) if entry["kind"] == "tensor" else entry["value"]
                node = value
                rest = entry["path"][len(path):]
                for step in rest[:-1]:
                    node = node.setdefault(str(step), {})
                node[str(rest[-1])] = saved
            continue
        key, entry = found[0]
        if isinstance(value, oar.Tensor):
            with oar.no_grad():
                value.set_value(arrays[key].astype(value.numpy(copy=False).dtype, copy=False))
        elif isinstance(value, np.ndarray):
            value[...] = arrays[key]
        else:
            _set(state_dict, path, entry["value"] if entry["kind"] == "value" else oar.to_tensor(arrays[key]))


def load_merged_state_dict(path: str, prefix: str | None = None, unique_id: int | None = None, offload: bool = False,
                           aoa_config=None, safetensors: bool = False) -> dict:
    """Everything the checkpoint in the directory ``path`` holds (the newest, or ``unique_id``),
    merged into one state dict in this process, nested as it was saved, as
    ``paddle.distributed.load_merged_state_dict``: the way to take a sharded run's state into a
    single process without building the sharded optimizer first. ``prefix`` keeps only the keys
    that start with it (``"model"``). ``offload`` and ``safetensors`` are accepted for Paddle's
    scripts (tensors are on the host here, and every oar file is safetensors); ``aoa_config`` is not
    supported.

    >>> import oar, tempfile
    >>> from oar.distributed import save_state_dict, load_merged_state_dict
    >>> path = tempfile.mkdtemp()
    >>> save_state_dict({"model": {"w": oar.ones([2])}, "epoch": 3}, path)
    >>> merged = load_merged_state_dict(path)
    >>> merged["model"]["w"].tolist(), merged["epoch"]
    ([1.0, 1.0], 3)
    """
    fn = "load_merged_state_dict"
    if aoa_config is not None:
        raise ArgumentError(f"{fn}: aoa_config (Paddle's key-renaming rules) is not supported; rename the keys of "
                            "the returned dict instead")
    if not isinstance(path, (str, os.PathLike)):
        raise ArgumentError(f"{fn}: path must be a directory name (str), got {type(path).__name__}")
    path = os.fspath(path)
    manifest = _read_manifest(path, unique_id, fn)
    entries = [(k, e) for k, e in manifest["entries"].items() if prefix is None or k.startswith(prefix)]
    if not entries:
        raise ArgumentError(f"{fn}: the checkpoint in {path!r} has no key starting with {prefix!r}; its keys begin "
                            f"{sorted({k.split('/')[0] for k in manifest['entries']})}")
    arrays = _read(path, [((), {}, entries)], fn)
    merged: dict = {}
    for key, entry in entries:
        node = merged
        for step in entry["path"][:-1]:
            node = node.setdefault(str(step), {})
        node[str(entry["path"][-1])] = oar.to_tensor(arrays[key]) if entry["kind"] == "tensor" else entry["value"]
    return merged
