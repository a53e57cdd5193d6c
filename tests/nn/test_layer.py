"""oar.nn.Layer and the containers, against Paddle's behaviour: registration, traversal, parameter
creation with ParamAttr, modes, strict state dicts, dtype conversion, hooks, repr, gradients,
Sequential / LayerList / LayerDict / ParameterList, and a save/load round trip of a whole model."""

from __future__ import annotations

import collections
import doctest
import re

import numpy as np
import pytest

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.nn import ParamAttr, Parameter
from oar.nn.initializer import Constant, Normal


class Tanh(nn.Layer):
    def forward(self, x):
        return oar.tanh(x)


class Block(nn.Layer):
    """A parameter, a sublayer, a persistable and a non-persistable buffer."""

    def __init__(self, n=3):
        super().__init__()
        self.scale = self.create_parameter([n], default_initializer=Constant(2.0))
        self.fc = nn.Linear(n, n)
        self.register_buffer("running", oar.ones([n]))
        self.register_buffer("scratch", oar.zeros([n]), persistable=False)
        self.register_buffer("steps", oar.to_tensor([0]))  # an int64 buffer

    def forward(self, x):
        return self.fc(x) * self.scale + self.running


class Net(nn.Layer):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.act = Tanh()
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.act(self.block(x)))


# ------------------------------------------------------------------------------------------
# registration
# ------------------------------------------------------------------------------------------
def test_attributes_register_parameters_sublayers_and_buffers():
    layer = nn.Layer()
    w = Parameter(np.ones([2], np.float32))
    layer.w = w
    layer.sub = Tanh()
    layer.register_buffer("buf", oar.zeros([2]))
    layer.count = 3
    assert layer._parameters["w"] is w and layer.w is w
    assert layer._sub_layers["sub"] is layer.sub
    assert layer._buffers["buf"] is layer.buf
    assert layer.__dict__["count"] == 3 and "count" not in layer._parameters
    assert {"w", "sub", "buf", "count"} <= set(dir(layer))
    del layer.w, layer.sub, layer.buf
    assert not layer._parameters and not layer._sub_layers and not layer._buffers
    with pytest.raises(AttributeError, match="'Layer' object has no attribute 'w'"):
        _ = layer.w


def test_a_tensor_attribute_is_a_non_persistable_buffer_as_in_paddle():
    layer = nn.Layer()
    layer.mask = oar.ones([2])
    assert layer.buffers() == [layer.mask]
    assert "mask" not in layer.state_dict()
    layer.to(dtype="float64")
    assert layer.mask.dtype == oar.float64
    block = Block()
    block.running = oar.zeros([3])  # a registered persistable buffer stays persistable
    assert block.state_dict()["running"] is block.running


def test_reassigning_a_name_moves_it_between_kinds():
    layer = nn.Layer()
    layer.x = 1
    layer.x = Parameter(np.ones([1], np.float32))
    assert "x" not in layer.__dict__ and "x" in layer._parameters
    layer.x = Tanh()
    assert "x" not in layer._parameters and "x" in layer._sub_layers
    layer.x = None  # a registered sublayer slot takes None
    assert layer._sub_layers["x"] is None and layer.sublayers() == []
    with pytest.raises(TypeError, match="cannot assign int to sublayer 'x'"):
        layer.x = 3
    with pytest.raises(TypeError, match="cannot assign Tensor to sublayer 'x'"):
        layer.x = oar.ones([1])
    layer.p = Parameter(np.ones([1], np.float32))
    with pytest.raises(TypeError, match="cannot assign Tensor to parameter 'p'"):
        layer.p = oar.ones([1])
    layer.p = None
    assert layer.parameters() == []


def test_assigning_before_super_init_is_a_clear_error():
    class Early(nn.Layer):
        def __init__(self):
            self.w = Parameter(np.ones([1], np.float32))

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Early()


def test_add_parameter_and_add_sublayer():
    layer = nn.Layer()
    p = Parameter(np.zeros([2], np.float32))
    assert layer.add_parameter("p", p) is p and layer.p is p
    assert layer.add_parameter("reserved", None) is None and layer.parameters() == [p]
    sub = Tanh()
    assert layer.add_sublayer("act", sub) is sub and layer.act is sub
    for bad in ("a.b", ""):
        with pytest.raises(ArgumentError, match="without '.'"):
            layer.add_parameter(bad, Parameter(np.zeros([1], np.float32)))
    with pytest.raises(TypeError, match="expected a Parameter"):
        layer.add_parameter("t", oar.ones([1]))
    layer.plain = 1
    with pytest.raises(ArgumentError, match="already has an attribute 'plain'"):
        layer.add_parameter("plain", Parameter(np.zeros([1], np.float32)))
    with pytest.raises(TypeError, match="expected a Layer"):
        layer.add_sublayer("x", 3)


def test_register_buffer_checks_its_arguments():
    layer = Block()
    with pytest.raises(TypeError, match="expected a Tensor"):
        layer.register_buffer("b", np.ones(2))
    with pytest.raises(ArgumentError, match="already a parameter or sublayer"):
        layer.register_buffer("scale", oar.ones([3]))
    with pytest.raises(ArgumentError, match="without '.'"):
        layer.register_buffer("a.b", oar.ones([3]))


# ------------------------------------------------------------------------------------------
# traversal
# ------------------------------------------------------------------------------------------
def test_parameters_and_named_parameters():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["block.scale", "block.fc.weight", "block.fc.bias", "head.weight", "head.bias"]
    assert net.parameters() == [p for _, p in net.named_parameters()]
    assert [n for n, _ in net.named_parameters(prefix="model")][0] == "model.block.scale"
    assert net.block.parameters(include_sublayers=False) == [net.block.scale]
    assert all(isinstance(p, Parameter) and not p.stop_gradient for p in net.parameters())


def test_a_shared_parameter_or_sublayer_appears_once():
    class Tied(nn.Layer):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(3, 3)
            self.dec = nn.Linear(3, 3)
            self.dec.weight = self.enc.weight
            self.again = self.enc

    net = Tied()
    assert [n for n, _ in net.named_parameters()] == ["enc.weight", "enc.bias", "dec.bias"]
    assert [n for n, _ in net.named_sublayers()] == ["enc", "dec"]
    assert list(net.children()) == [net.enc, net.dec]
    assert list(net.state_dict()) == ["enc.weight", "enc.bias", "dec.bias"]


def test_sublayers_named_sublayers_and_children():
    net = Net()
    assert [n for n, _ in net.named_sublayers()] == ["block", "block.fc", "act", "head"]
    assert net.sublayers() == [net.block, net.block.fc, net.act, net.head]
    assert net.sublayers(include_self=True)[0] is net
    assert [n for n, _ in net.named_sublayers(prefix="m", include_self=True)] == ["m", "m.block", "m.block.fc", "m.act", "m.head"]
    assert list(net.children()) == [net.block, net.act, net.head]
    assert [n for n, _ in net.named_children()] == ["block", "act", "head"]


def test_buffers_and_persistability():
    net = Net()
    assert [n for n, _ in net.named_buffers()] == ["block.running", "block.scratch", "block.steps"]
    assert net.buffers() == [net.block.running, net.block.scratch, net.block.steps]
    assert net.block.running.persistable and not net.block.scratch.persistable
    assert "block.scratch" not in net.state_dict() and "block.running" in net.state_dict()
    assert net.buffers(include_sublayers=False) == []


# ------------------------------------------------------------------------------------------
# creating parameters
# ------------------------------------------------------------------------------------------
def test_create_parameter_with_param_attr():
    layer = nn.Layer()
    attr = ParamAttr(name="my_weight", initializer=Constant(0.5), learning_rate=0.1, trainable=False, need_clip=False,
                     regularizer="L2-stand-in")
    w = layer.create_parameter([2, 3], attr=attr)
    assert isinstance(w, Parameter) and w.shape == [2, 3] and w.dtype == oar.float32
    assert w.name == "my_weight"
    assert w.tolist() == [[0.5] * 3] * 2
    assert w.optimize_attr == {"learning_rate": 0.1}
    assert w.trainable is False and w.stop_gradient is True
    assert w.need_clip is False and w.regularizer == "L2-stand-in" and w.persistable
    w.trainable = True  # Paddle keeps trainable and stop_gradient in step
    assert w.stop_gradient is False
    assert layer.create_parameter([2], attr=False) is None
    assert layer.create_parameter([2], attr="named").name == "named"
    assert layer.create_parameter([2], attr=Normal(5.0, 0.0)).tolist() == [5.0, 5.0]
    assert layer.create_parameter([2], dtype="float64").dtype == oar.float64
    with pytest.raises(ArgumentError, match="learning_rate must be >= 0"):
        ParamAttr(learning_rate=-1.0)


def test_parameters_get_paddles_names():
    fc = nn.Linear(2, 2)
    index = int(fc.full_name().rsplit("_", 1)[1])
    assert fc.full_name() == f"linear_{index}"
    assert fc.weight.name == f"linear_{index}.w_0" and fc.bias.name == f"linear_{index}.b_0"
    assert nn.Linear(2, 2).full_name() == f"linear_{index + 1}"
    assert Block().full_name().startswith("block_")
    assert nn.Layer(name_scope="encoder").full_name().startswith("encoder_")

    class MultiHeadThing(nn.Layer):
        pass

    class LSTMish(nn.Layer):
        pass

    assert re.fullmatch(r"multi_head_thing_\d+", MultiHeadThing().full_name())
    assert re.fullmatch(r"lst_mish_\d+", LSTMish().full_name())  # Paddle's camel-to-snake rule


def test_weight_attr_false_and_bias_attr_false_drop_the_parameter():
    fc = nn.Linear(3, 2, bias_attr=False)
    assert fc.bias is None and [n for n, _ in fc.named_parameters()] == ["weight"]
    assert list(fc.state_dict()) == ["weight"]
    np.testing.assert_allclose(fc(oar.ones([1, 3])).numpy(), fc.weight.numpy().sum(0, keepdims=True), rtol=1e-6)
    layer = TwoParams(weight_attr=False)
    assert layer.weight is None and [n for n, _ in layer.named_parameters()] == ["bias"]


class TwoParams(nn.Layer):
    def __init__(self, weight_attr=None, bias_attr=None):
        super().__init__()
        self.weight = self.create_parameter([2, 2], attr=weight_attr)
        self.bias = self.create_parameter([2], attr=bias_attr, is_bias=True)


# ------------------------------------------------------------------------------------------
# modes, apply, hooks, repr, gradients
# ------------------------------------------------------------------------------------------
def test_train_and_eval_recurse():
    net = Net()
    assert all(layer.training for layer in net.sublayers(include_self=True))
    assert net.eval() is net
    assert not any(layer.training for layer in net.sublayers(include_self=True))
    net.train()
    assert all(layer.training for layer in net.sublayers(include_self=True))


def test_apply_visits_children_first_then_the_layer():
    net = Net()
    seen = []
    assert net.apply(lambda layer: seen.append(layer)) is net
    assert seen == [net.block.fc, net.block, net.act, net.head, net]

    def init_linear(layer):
        if isinstance(layer, nn.Linear):
            Constant(0.25)(layer.weight)

    net.apply(init_linear)
    assert set(net.head.weight.numpy().ravel()) == {0.25} and set(net.block.fc.weight.numpy().ravel()) == {0.25}


def test_forward_hooks_change_inputs_and_outputs_and_can_be_removed():
    layer = Tanh()
    calls = []

    def pre(layer_, inputs):
        calls.append(("pre", len(inputs)))
        return (inputs[0] * 0,)

    def pre_single(layer_, inputs):
        return inputs[0] + 1  # a non-tuple return becomes the one input

    def post(layer_, inputs, output):
        calls.append(("post", float(inputs[0].numpy()[0])))
        return output * 10

    x = oar.to_tensor([0.5])
    h1 = layer.register_forward_pre_hook(pre)
    h2 = layer.register_forward_pre_hook(pre_single)
    h3 = layer.register_forward_post_hook(post)
    np.testing.assert_allclose(layer(x).numpy(), [10 * np.tanh(1.0)], rtol=1e-6)
    assert calls == [("pre", 1), ("post", 1.0)]
    h1.remove()
    h2.remove()
    h3.remove()
    h3.remove()  # removing twice is harmless
    np.testing.assert_allclose(layer(x).numpy(), [np.tanh(0.5)], rtol=1e-6)
    assert len(calls) == 2


def test_repr_of_nested_layers_is_paddles():
    class Conf(nn.Layer):
        def __init__(self, n):
            super().__init__()
            self.n = n

        def extra_repr(self):
            return f"n={self.n}"

    class Multi(nn.Layer):
        def extra_repr(self):
            return "a=1\nb=2"

    outer = nn.Sequential(Conf(1), nn.Sequential(Conf(2), Tanh()))
    outer.add_sublayer("multi", Multi())
    assert repr(outer) == (
        "Sequential(\n"
        "  (0): Conf(n=1)\n"
        "  (1): Sequential(\n"
        "    (0): Conf(n=2)\n"
        "    (1): Tanh()\n"
        "  )\n"
        "  (multi): Multi(\n"
        "    a=1\n"
        "    b=2\n"
        "  )\n"
        ")"
    )
    assert repr(Tanh()) == "Tanh()"


def test_clear_gradients():
    net = Net()
    frozen = net.head.bias
    frozen.trainable = False
    net(oar.rand([4, 3])).sum().backward()
    assert net.head.weight.grad is not None and frozen.grad is None
    net.clear_gradients()
    assert all(np.all(p.grad.numpy() == 0) for p in net.parameters() if p.trainable)
    net(oar.rand([4, 3])).sum().backward()
    net.clear_gradients(set_to_zero=False)
    assert all(p.grad is None for p in net.parameters())


# ------------------------------------------------------------------------------------------
# state dicts
# ------------------------------------------------------------------------------------------
def test_state_dict_lists_each_layers_parameters_then_buffers_then_its_sublayers():
    net = Net()
    assert list(net.state_dict()) == ["block.scale", "block.running", "block.steps", "block.fc.weight",
                                      "block.fc.bias", "head.weight", "head.bias"]
    assert net.state_dict()["block.scale"] is net.block.scale  # the tensors themselves
    assert list(net.state_dict(structured_name_prefix="model."))[0] == "model.block.scale"
    assert list(net.block.state_dict(include_sublayers=False)) == ["scale", "running", "steps"]


def state_values(layer):
    return {k: v.numpy().copy() for k, v in layer.state_dict().items()}


def test_set_state_dict_copies_values_into_the_existing_tensors():
    src, dst = Net(), Net()
    Constant(3.0)(src.block.running)
    weight = dst.head.weight
    assert dst.set_state_dict(src.state_dict()) == ([], [])
    assert dst.head.weight is weight
    for key, value in state_values(src).items():
        np.testing.assert_array_equal(dst.state_dict()[key].numpy(), value)
    numpy_state = {k: v.numpy() * 2 for k, v in src.state_dict().items()}  # numpy values load too
    dst.set_state_dict(numpy_state)
    np.testing.assert_array_equal(dst.head.weight.numpy(), src.head.weight.numpy() * 2)


def test_a_strict_mismatch_reports_everything_and_changes_nothing():
    net = Net()
    before = state_values(net)
    bad = dict(Net().state_dict())
    del bad["head.bias"], bad["block.running"]
    bad["head.weight"] = oar.ones([4, 2])
    bad["extra.weight"] = oar.ones([1])
    with pytest.raises(ArgumentError) as info:
        net.set_state_dict(bad)
    message = str(info.value)
    assert "nothing was loaded" in message
    assert "missing keys (2): block.running, head.bias" in message
    assert "unexpected keys (1): extra.weight" in message
    assert "shape mismatches (1): head.weight: checkpoint [4, 2], model [3, 2]" in message
    for key, value in before.items():
        np.testing.assert_array_equal(net.state_dict()[key].numpy(), value)


def test_non_strict_loading_loads_what_matches():
    net, other = Net(), Net()
    partial = {"head.weight": other.head.weight, "block.scale": oar.ones([5]), "junk": oar.ones([1])}
    missing, unexpected = net.set_state_dict(partial, strict=False)
    assert unexpected == ["junk"]
    assert set(missing) == set(net.state_dict()) - {"head.weight", "block.scale"}
    np.testing.assert_array_equal(net.head.weight.numpy(), other.head.weight.numpy())
    assert net.block.scale.tolist() == [2.0, 2.0, 2.0]  # the mismatched shape was skipped


def test_a_shared_tensor_loads_from_any_of_its_names():
    class Tied(nn.Layer):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(2, 2)
            self.dec = nn.Linear(2, 2)
            self.dec.weight = self.enc.weight

    net = Tied()
    paddle_style = {"enc.weight": np.full([2, 2], 1.0), "enc.bias": np.zeros(2), "dec.weight": np.full([2, 2], 1.0),
                    "dec.bias": np.zeros(2)}  # Paddle lists a shared parameter under every name
    assert net.set_state_dict(paddle_style) == ([], [])
    only_alias = {"dec.weight": np.full([2, 2], 4.0), "enc.bias": np.zeros(2), "dec.bias": np.zeros(2)}
    net.set_state_dict(only_alias)
    assert net.enc.weight.tolist() == [[4.0, 4.0], [4.0, 4.0]]


def test_set_state_dict_by_tensor_names():
    src, dst = nn.Linear(2, 3), nn.Linear(2, 3)
    by_name = {src_t.name.replace(src.full_name(), dst.full_name()): src_t for src_t in src.state_dict().values()}
    dst.set_state_dict(by_name, use_structured_name=False)
    np.testing.assert_array_equal(dst.weight.numpy(), src.weight.numpy())
    with pytest.raises(ArgumentError, match="missing keys"):
        dst.set_state_dict(src.state_dict(), use_structured_name=False)


# ------------------------------------------------------------------------------------------
# dtype conversion
# ------------------------------------------------------------------------------------------
def test_to_float64_converts_floating_parameters_and_buffers():
    net = Net()
    x = oar.rand([2, 3])
    expected = net(x).numpy().astype(np.float64)
    assert net.to(dtype="float64") is net
    assert all(p.dtype == oar.float64 and isinstance(p, Parameter) for p in net.parameters())
    assert net.block.running.dtype == oar.float64 and net.block.scratch.dtype == oar.float64
    assert net.block.steps.dtype == oar.int64  # integer buffers keep their dtype
    out = net(x.astype("float64"))
    assert out.dtype == oar.float64
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)  # float32 vs float64 rounding near 0
    assert nn.Linear(2, 2).to(dtype="float64").create_parameter([1]).dtype == oar.float64
    assert net.float().head.weight.dtype == oar.float32
    assert net.double().head.weight.dtype == oar.float64
    assert net.astype("float32").head.weight.dtype == oar.float32


# ------------------------------------------------------------------------------------------
# containers
# ------------------------------------------------------------------------------------------
def test_sequential_indexing_slicing_and_forward():
    a, b, c = nn.Linear(3, 4), Tanh(), nn.Linear(4, 2)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c and seq["1"] is b
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and list(head) == [a, b]
    x = oar.rand([5, 3])
    np.testing.assert_allclose(seq(x).numpy(), c(b(a(x))).numpy(), rtol=1e-6)
    assert [n for n, _ in seq.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(IndexError):
        seq[3]
    d = nn.Linear(3, 4)
    seq[0] = d
    assert seq[0] is d
    del seq[1]
    assert list(seq) == [d, c]
    assert nn.Sequential()(x) is x  # an empty Sequential passes its input through


def test_sequential_named_construction():
    fc, act = nn.Linear(2, 2), Tanh()
    seq = nn.Sequential(("fc", fc), ("act", act))
    assert seq.fc is fc and seq["act"] is act and seq[1] is act
    assert list(seq.state_dict()) == ["fc.weight", "fc.bias"]
    ordered = nn.Sequential(collections.OrderedDict([("first", act), ("second", fc)]))
    assert [n for n, _ in ordered.named_children()] == ["first", "second"]


def test_layer_list():
    layers = nn.LayerList([nn.Linear(2, 2) for _ in range(3)])
    first, second, third = list(layers)
    assert len(layers) == 3 and layers[-1] is third and layers[-3] is first
    extra = nn.Linear(2, 2)
    assert layers.append(extra) is layers and layers[3] is extra
    inserted = Tanh()
    layers.insert(1, inserted)
    assert list(layers) == [first, inserted, second, third, extra]
    layers.insert(-1, Tanh())  # before the last, as list.insert
    assert isinstance(layers[-2], Tanh) and layers[-1] is extra
    layers.extend([nn.Linear(2, 2)])
    assert len(layers) == 7
    assert [n for n, _ in layers.named_children()] == [str(i) for i in range(7)]
    assert isinstance(layers[1:3], nn.LayerList) and list(layers[1:3]) == [inserted, second]
    del layers[0]
    assert layers[0] is inserted and [n for n, _ in layers.named_children()] == [str(i) for i in range(6)]
    replacement = nn.Linear(2, 2)
    layers[-1] = replacement
    assert layers[5] is replacement
    with pytest.raises(IndexError, match="out of range"):
        layers[6]
    assert len(layers.parameters()) == 2 * 4  # the four Linears registered, Tanh has none

    class Stack(nn.Layer):
        def __init__(self):
            super().__init__()
            self.layers = nn.LayerList([nn.Linear(2, 2), nn.Linear(2, 2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    stack = Stack()
    assert list(stack.state_dict()) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    assert stack(oar.ones([1, 2])).shape == [1, 2]


def test_layer_dict():
    a, b = nn.Linear(2, 2), Tanh()
    d = nn.LayerDict({"a": a, "b": b})
    assert len(d) == 2 and d["a"] is a and "b" in d and "c" not in d
    assert list(d) == ["a", "b"] and list(d.keys()) == ["a", "b"]
    assert list(d.values()) == [a, b] and list(d.items()) == [("a", a), ("b", b)]
    c = nn.Linear(2, 2)
    d["c"] = c
    d.update([("e", Tanh())])
    assert list(d) == ["a", "b", "c", "e"]
    assert d.pop("b") is b and "b" not in d
    del d["e"]
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    d.clear()
    assert len(d) == 0 and d.parameters() == []


def test_parameter_list():
    params = [Parameter(np.full([2], i, np.float32)) for i in range(3)]
    plist = nn.ParameterList(params[:2])
    assert plist.append(params[2]) is plist
    assert len(plist) == 3 and list(plist) == params and plist[-1] is params[2]
    assert [n for n, _ in plist.named_parameters()] == ["0", "1", "2"]
    replacement = Parameter(np.zeros([2], np.float32))
    plist[1] = replacement
    assert plist[1] is replacement and plist.parameters() == [params[0], replacement, params[2]]

    class Holder(nn.Layer):
        def __init__(self):
            super().__init__()
            self.weights = nn.ParameterList([Parameter(np.ones([2], np.float32))])

    assert list(Holder().state_dict()) == ["weights.0"]


# ------------------------------------------------------------------------------------------
# save and load a whole model
# ------------------------------------------------------------------------------------------
def test_save_load_round_trip_gives_identical_outputs(tmp_path):
    model = nn.Sequential(Block(), Tanh(), nn.LayerList([nn.Linear(3, 4)])[0], nn.Linear(4, 2, bias_attr=False))
    Constant(0.5)(model[0].running)
    path = tmp_path / "model.pdparams"
    oar.save(model.state_dict(), path)
    loaded = oar.load(path)
    assert list(loaded) == list(model.state_dict())
    assert all(type(v) is oar.Tensor for v in loaded.values())  # plain tensors, as Paddle's load
    assert loaded["0.scale"].name == model[0].scale.name

    fresh = nn.Sequential(Block(), Tanh(), nn.Linear(3, 4), nn.Linear(4, 2, bias_attr=False))
    x = oar.rand([6, 3])
    assert not np.array_equal(fresh(x).numpy(), model(x).numpy())
    assert fresh.set_state_dict(loaded) == ([], [])
    assert fresh(x).numpy().tobytes() == model(x).numpy().tobytes()
    assert isinstance(fresh[0].scale, Parameter) and not fresh[0].scale.stop_gradient


def test_docstring_examples_run():
    from oar.nn.layer import container, layers

    for module in (layers, container):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0 and result.failed == 0, module.__name__
