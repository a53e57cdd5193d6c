"""oar.save / oar.load on hostile and degenerate input: nesting past ``MAX_DEPTH`` is a
SerializationError naming where (a deeply nested file is refused before anything recurses into
it), and the temporary files of writers killed mid-save are removed by the next save to the path."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import zlib

import pytest

import oar
from oar._engine import serialization
from oar._engine.serialization import MAX_DEPTH
from oar.errors import SerializationError


def nested_list(depth: int, leaf=1):
    """``[[...[leaf]...]]``: ``depth`` lists, one inside the other."""
    obj = leaf
    for _ in range(depth):
        obj = [obj]
    return obj


def file_with_structure(structure: str, arrays: dict | None = None) -> io.BytesIO:
    """An oar.save file whose structure is the JSON text ``structure`` (written by hand: a deep
    structure cannot go through json.dumps)."""
    arrays = arrays or {}
    crc = [zlib.crc32(a) for a in arrays.values()]
    metadata = {"format": "oar.save", "version": "2", "writer": "a hostile writer", "structure": structure,
                "crc32": json.dumps(crc)}
    buffer = io.BytesIO()
    serialization._write_safetensors(buffer, arrays, metadata)
    buffer.seek(0)
    return buffer


# ------------------------------------------------------------------------------------------
# nesting depth
# ------------------------------------------------------------------------------------------
def test_max_depth_leaves_python_s_default_recursion_limit_a_wide_margin():
    assert 32 <= MAX_DEPTH <= sys.getrecursionlimit() // 4


def test_the_deepest_allowed_nesting_round_trips(tmp_path):
    obj = {"state": nested_list(MAX_DEPTH - 1, oar.ones([2]))}  # MAX_DEPTH containers, the dict included
    oar.save(obj, tmp_path / "deep")
    inner = oar.load(tmp_path / "deep")["state"]
    for _ in range(MAX_DEPTH - 1):
        inner = inner[0]
    assert inner.tolist() == [1.0, 1.0]


def test_dicts_nested_as_deeply_as_allowed_round_trip():
    """Dicts take the most JSON brackets per level: the load-side guard must let them through."""
    obj = leaf = {}
    for _ in range(MAX_DEPTH - 1):
        leaf["k"] = {}
        leaf = leaf["k"]
    leaf.update(t=oar.ones([1]), f=float("inf"))
    buffer = io.BytesIO()
    oar.save(obj, buffer)
    buffer.seek(0)
    leaf = oar.load(buffer)
    for _ in range(MAX_DEPTH - 1):
        leaf = leaf["k"]
    assert leaf["t"].tolist() == [1.0] and leaf["f"] == float("inf")


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 500, 5000])
def test_saving_an_object_nested_too_deeply_names_the_limit_and_where(tmp_path, depth):
    path = tmp_path / "ckpt"
    oar.save({"ok": 1}, path)
    with pytest.raises(SerializationError) as info:
        oar.save({"state": nested_list(depth - 1)}, path)
    message = str(info.value)
    assert f"more than {MAX_DEPTH} levels" in message
    assert "obj['state'][0][0]" in message  # where the nesting goes too deep, from the top
    assert len(message) < 1000  # the path is abbreviated, not 5000 "[0]"s
    assert oar.load(path) == {"ok": 1} and os.listdir(tmp_path) == ["ckpt"]  # refused before the file is touched


def test_a_deep_dict_names_its_keys():
    obj = leaf = {}
    for i in range(MAX_DEPTH + 5):
        leaf[f"k{i}"] = {}
        leaf = leaf[f"k{i}"]
    with pytest.raises(SerializationError, match=r"obj\['k0'\]\['k1'\]\['k2'\].*\['k127'\]"):
        oar.save(obj, io.BytesIO())


@pytest.mark.parametrize("depth", [900, 100_000])
def test_loading_a_file_nested_900_levels_is_a_serialization_error(depth):
    structure = '{"list":[' * depth + "1" + "]}" * depth
    with pytest.raises(SerializationError) as info:
        oar.load(file_with_structure(structure))
    message = str(info.value)
    assert f"more than {MAX_DEPTH} levels" in message
    assert "obj[0][0][0]" in message


def stack_depth() -> int:
    frame, depth = sys._getframe(1), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    return depth


def test_a_deep_file_is_refused_before_json_or_the_decoder_recurse():
    """Neither json.loads nor the decoder sees more nesting than MAX_DEPTH containers can hold: under
    a recursion limit a little above what that takes, a file 50,000 levels deep is refused."""
    buffer = file_with_structure('{"dict":[["a",' * 50_000 + "1" + "]]}" * 50_000)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(stack_depth() + 3 * MAX_DEPTH + 100)
    try:
        with pytest.raises(SerializationError, match=r"obj\['a'\]\['a'\]"):
            oar.load(buffer)
    finally:
        sys.setrecursionlimit(old)


def test_a_file_nested_a_little_too_deeply_names_the_path():
    """Past MAX_DEPTH but shallow enough for json: the decoder's own check names the path."""
    depth = MAX_DEPTH + 3
    structure = '{"list":[' * depth + "null" + "]}" * depth
    with pytest.raises(SerializationError, match=rf"more than {MAX_DEPTH} levels.*obj\[0\]\[0\]"):
        oar.load(file_with_structure(structure))


def test_brackets_inside_strings_do_not_count_as_nesting():
    key = "[" * 5000 + "{" * 5000
    structure = json.dumps({"dict": [[key, {"list": [1, "]]]}}}"]}]]})
    assert oar.load(file_with_structure(structure)) == {key: [1, "]]]}}}"]}


def test_an_unbalanced_deep_structure_is_a_corrupted_file():
    structure = '{"list":[' * 5000  # never closed
    with pytest.raises(SerializationError, match="levels|corrupted"):
        oar.load(file_with_structure(structure))


# ------------------------------------------------------------------------------------------
# temporary files of writers that died
# ------------------------------------------------------------------------------------------
def temporaries(directory) -> list[str]:
    return sorted(n for n in os.listdir(directory) if n.endswith(".tmp"))


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def temp_name(target: str, pid: int, host: str | None = None) -> str:
    return serialization._temp_prefix(target, host) + f"{pid}-0123abcd.tmp"


def test_the_temporary_file_names_its_host_and_pid(tmp_path):
    seen = []
    original = serialization._write_safetensors

    def spy(f, arrays, metadata):
        seen.append(os.path.basename(f.name))
        original(f, arrays, metadata)

    serialization._write_safetensors = spy
    try:
        oar.save({"v": 1}, tmp_path / "ckpt.pdparams")
    finally:
        serialization._write_safetensors = original
    (name,) = seen
    host = serialization._host_token()
    assert name.startswith(f".ckpt.pdparams.{host}.{os.getpid()}-") and name.endswith(".tmp")
    assert host and all(c.isalnum() or c in "-_" for c in host)


def test_the_next_save_removes_temporaries_of_dead_writers_only(tmp_path):
    target = str(tmp_path / "ckpt.pdparams")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = [temp_name(target, dead_pid()), temp_name(target, dead_pid()),
                 f".ckpt.pdparams.{dead_pid()}-89abcdef.tmp"]  # the name oar 0.1 gave its temporaries
        kept = [temp_name(target, sleeper.pid),  # a live writer: its rename is still to come
                temp_name(target, dead_pid(), host="another-host"),  # a pid of another machine means nothing here
                temp_name(str(tmp_path / "other.pdparams"), dead_pid()),  # another target's
                ".ckpt.pdparams.notes.tmp"]  # not oar's
        for name in stale + kept:
            (tmp_path / name).write_bytes(b"x" * 1000)
        oar.save({"v": 2}, target)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert temporaries(tmp_path) == sorted(kept)
    assert oar.load(target) == {"v": 2}


def test_a_temporary_of_this_pid_that_no_save_is_writing_is_stale(tmp_path):
    """In a container, a restarted job often gets its dead predecessor's pid."""
    target = str(tmp_path / "ckpt.pdparams")
    (tmp_path / temp_name(target, os.getpid())).write_bytes(b"x")
    oar.save({"v": 1}, target)
    assert temporaries(tmp_path) == []


def test_a_concurrent_save_in_this_process_keeps_its_temporary(tmp_path):
    target = str(tmp_path / "ckpt.pdparams")
    with serialization.atomic_file(target) as f:
        f.write(b"first writer, still writing")
        oar.save({"v": 1}, target)  # a second writer of the same path, in the same process
        assert len(temporaries(tmp_path)) == 1
    assert temporaries(tmp_path) == []


CHILD_SAVES_200MB = """
import sys
import numpy as np
import oar
state = {f"layer{i}.weight": oar.to_tensor(np.full((1024, 1024), i, np.float32)) for i in range(50)}
oar.save(state, sys.argv[1])
"""


def kill_mid_save(path) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD_SAVES_200MB, str(path)])
    try:
        deadline = time.monotonic() + 120
        while not [n for n in temporaries(path.parent) if str(child.pid) in n]:
            assert child.poll() is None, "the child finished or failed before it began writing"
            assert time.monotonic() < deadline, "the child never began writing"
            time.sleep(0.0005)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kills a writer with SIGKILL")
def test_temporaries_of_writers_killed_mid_save_are_removed_by_the_next_save(tmp_path):
    path = tmp_path / "ckpt.pdparams"
    oar.save({"epoch": 1}, path)
    kill_mid_save(path)
    assert len(temporaries(tmp_path)) == 1, "the kill came after the rename: no write was interrupted"
    oar.save({"epoch": 2}, path)
    assert temporaries(tmp_path) == [] and oar.load(path) == {"epoch": 2}


def test_the_host_part_of_a_temporary_name_is_safe_in_a_file_name(monkeypatch):
    class Uname:
        nodename = "we.ird/host name:1"

    monkeypatch.setattr(serialization.os, "uname", lambda: Uname, raising=False)
    token = serialization._host_token()
    assert token and "." not in token and all(c.isalnum() or c in "-_" for c in token)

