"""The Program IR: JSON round trip without loss, versioned schema, missing ops, damaged data."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import oar
from oar._graph.program import SCHEMA_VERSION, Program, ValueRef
from oar.errors import RegistryError, SerializationError
from oar.jit import to_static
from oar.jit.api import program_signature
from oar.static import InputSpec


def captured(fn, *args, spec=None):
    f = to_static(fn, input_spec=spec)
    if args:
        f(*args)
        return f.concrete_program
    return f.get_concrete_program()


def roundtrip(program: Program) -> Program:
    text = json.dumps(program.to_json(), allow_nan=False)
    return Program.from_json(json.loads(text), params=program.param_tensors)


def rich_program() -> Program:
    w = oar.to_tensor([[1.0, 2.0], [3.0, 4.0]], stop_gradient=False)
    w.name = "w"

    def f(x, idx):
        y = oar.clip(x, min=-math.inf, max=2.5)  # a non-finite float attribute
        z = y[1:, ::-1] + oar.gather(x, idx)[:1]  # getitem's items: nested dicts with None
        s = oar.matmul(z, w).sum(axis=(0,), keepdim=True)  # a tuple attribute
        return {"out": s, "pair": (z, 3, None), "tag": "ok", "inputs": [x]}

    return captured(f, oar.rand([3, 2]), oar.to_tensor([2, 0]))


def test_json_round_trip_is_lossless():
    program = rich_program()
    back = roundtrip(program)
    assert program_signature(back) == program_signature(program)
    assert str(back) == str(program)
    assert back.to_json() == program.to_json()
    clip = next(n for n in back.nodes if n.op == "clip")
    assert clip.attrs["min"] == -math.inf
    assert isinstance(back.outputs["pair"], tuple) and back.outputs["pair"][1:] == (3, None)
    assert isinstance(back.outputs["out"], ValueRef)


def test_each_node_records_the_users_source_line_and_keeps_it_through_clone_and_json():
    program = rich_program()
    clip_line = next(i for i, line in enumerate(open(__file__, encoding="utf-8"), 1) if "y = oar.clip(x" in line)
    clip = next(n for n in program.nodes if n.op == "clip")
    assert clip.where == f"test_program.py:{clip_line}"  # the user's line, not oar's own frames
    assert all(n.where and n.where.startswith("test_program.py:") for n in program.nodes)
    assert [n.where for n in roundtrip(program).nodes] == [n.where for n in program.nodes]
    assert [n.where for n in program.clone().nodes] == [n.where for n in program.nodes]


def test_round_tripped_program_runs_like_the_original():
    from oar._graph.executor import Executor

    program = rich_program()
    back = roundtrip(program)
    x, idx = oar.rand([3, 2]), oar.to_tensor([1, 2])
    a = Executor(program).run([x, idx])
    b = Executor(back).run([x, idx])
    np.testing.assert_array_equal(a["out"].numpy(), b["out"].numpy())
    np.testing.assert_array_equal(a["pair"][0].numpy(), b["pair"][0].numpy())


def test_constants_can_live_outside_the_json():
    program = captured(lambda x: x + oar.to_tensor([1.0, 2.0]), oar.ones([2]))
    data = program.to_json(inline_constants=False)
    assert all("data" not in c for c in data["constants"])
    back = Program.from_json(data, constants=program.constant_data)
    assert program_signature(back) == program_signature(program)
    with pytest.raises(SerializationError, match="constant 'const_0' is missing"):
        Program.from_json(data)
    bad = {name: np.zeros([3], np.float32) for name in program.constant_data}
    with pytest.raises(SerializationError, match="holds float32\\[3\\]"):
        Program.from_json(data, constants=bad)


def test_a_newer_schema_says_so():
    data = captured(lambda x: x * 2.0, oar.ones([2])).to_json()
    data["version"] = SCHEMA_VERSION + 1
    with pytest.raises(SerializationError, match="newer than this oar reads.*upgrade oar"):
        Program.from_json(data)


def test_an_unknown_op_names_the_package_that_provides_it():
    data = captured(lambda x: oar.exp(x), oar.ones([2])).to_json()
    data["nodes"][0]["op"] = "fancy_op"
    with pytest.raises(RegistryError, match="'fancy_op' \\(from oar-fancy: pip install oar-fancy\\)"):
        Program.from_json(data, op_sources={"fancy_op": "oar-fancy"})
    with pytest.raises(RegistryError, match="'fancy_op' \\(from the plugin that registered it"):
        Program.from_json(data)
    with pytest.raises(RegistryError, match="ops 'fancy_op' .*, 'other_op'"):
        data["nodes"].append(dict(data["nodes"][0], op="other_op", outputs=[99]))
        data["values"].append([99, [2], "float32", None])
        Program.from_json(data)


@pytest.mark.parametrize("damage", [
    lambda d: d.pop("nodes"),
    lambda d: d["nodes"][0].update(inputs=[999]),
    lambda d: d["values"].append(d["values"][0]),
    lambda d: d.update(schema="other"),
    lambda d: d.update(version="1"),
    lambda d: d["constants"][0].update(data={"dtype": "float32", "shape": [1], "base64": "!!"}),
    lambda d: d.update(outputs={"weird": 1}),
    lambda d: d["nodes"].reverse(),
], ids=["no-nodes", "undeclared-value", "repeated-value", "schema", "version-type", "constant-data",
        "outputs", "order"])
def test_damaged_programs_are_serialization_errors(damage):
    data = captured(lambda x: oar.exp(x) + 1.0, oar.ones([2])).to_json()
    damage(data)
    with pytest.raises(SerializationError):
        Program.from_json(data)


def test_unserializable_attributes_are_named():
    program = captured(lambda x: x * 2.0, oar.ones([2]))
    program.nodes[0].attrs["callback"] = print
    with pytest.raises(SerializationError, match="op 'multiply' attribute 'callback'"):
        program.to_json()


def test_validate_finds_use_before_definition():
    program = captured(lambda x: oar.exp(x) * 2.0, oar.ones([2]))
    program.nodes.reverse()
    with pytest.raises(ValueError, match="before it is defined"):
        program.validate()


def test_clone_is_independent():
    program = captured(lambda x: oar.exp(x) * 2.0, oar.ones([2]))
    copy = program.clone()
    copy.nodes.pop()
    copy.nodes[0].attrs["extra"] = 1
    assert len(program.nodes) == 2 and "extra" not in program.nodes[0].attrs


def test_spec_shapes_print_with_question_marks():
    program = captured(lambda x: x.sum(axis=0), spec=[InputSpec([None, None, 4], name="x")])
    assert str(program).splitlines()[0] == "program(%x: float32[?, ?, 4]) {"
    assert "float32[?, 4] = sum(%x)" in str(program)


def test_an_op_whose_size_depends_on_the_data_records_a_dynamic_dim_even_on_static_inputs():
    # Recording the example's size would tell every later reader of the program (an exporter, a
    # pass planning buffers) a size that the next input does not have.
    f = to_static(lambda x: oar.masked_select(x, x > 0) * 2.0, input_spec=[InputSpec([4], "float32", "x")])
    assert f(oar.to_tensor([1.0, -1.0, 2.0, 3.0])).tolist() == [2.0, 4.0, 6.0]
    selected = next(n for n in f.concrete_program.nodes if n.op == "masked_select")
    assert f.concrete_program.values[selected.outputs[0]].shape == (None,)
    assert f(oar.to_tensor([1.0, -1.0, -2.0, -3.0])).tolist() == [2.0]
