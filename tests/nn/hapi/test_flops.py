"""oar.flops counts by paddle.flops's rules (paddle/hapi/dynamic_flops.py): Paddle's documented
LeNet table, ResNet18 counted by hand, one hand count per layer type, custom_ops, the printed
table, and a network left as it was."""

from __future__ import annotations

import doctest
import importlib

import pytest

import oar
from oar import nn
from oar.errors import ArgumentError
from oar.vision.models import LeNet, resnet18

# The example of paddle.flops's docstring (python/paddle/hapi/dynamic_flops.py), also at
# https://www.paddlepaddle.org.cn/documentation/docs/en/api/paddle/flops_en.html: LeNet at
# [1, 1, 28, 28], rows of (input shape, output shape, params, flops), then
# "Total Flops: 347560     Total Params: 61610".
PADDLE_LENET_ROWS = [
    ([1, 1, 28, 28], [1, 6, 28, 28], 60, 47040),
    ([1, 6, 28, 28], [1, 6, 28, 28], 0, 0),
    ([1, 6, 28, 28], [1, 6, 14, 14], 0, 0),
    ([1, 6, 14, 14], [1, 16, 10, 10], 2416, 241600),
    ([1, 16, 10, 10], [1, 16, 10, 10], 0, 0),
    ([1, 16, 10, 10], [1, 16, 5, 5], 0, 0),
    ([1, 400], [1, 120], 48120, 48000),
    ([1, 120], [1, 84], 10164, 10080),
    ([1, 84], [1, 10], 850, 840),
]


def _table_rows(out: str) -> list[list[str]]:
    """The cells of the printed table's body (between its second and third shelf)."""
    lines = [line for line in out.splitlines() if line.startswith(("|", "+"))]
    shelves = [i for i, line in enumerate(lines) if line.startswith("+")]
    assert len(shelves) == 3, out
    return [[c.strip() for c in line.split("|")[1:-1]] for line in lines[shelves[1] + 1:shelves[2]]]


def test_lenet_matches_paddles_documented_table(capsys):
    net = LeNet()
    assert oar.flops(net, [1, 1, 28, 28], print_detail=True) == 347560
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "Total Flops: 347560     Total Params: 61610"
    rows = _table_rows(out)
    leaves = [layer for layer in net.sublayers() if not layer.sublayers()]
    assert [r[0] for r in rows] == [layer.full_name() for layer in leaves]
    assert [(r[1], r[2], int(r[3]), int(r[4])) for r in rows] == [
        (str(i), str(o), p, f) for i, o, p, f in PADDLE_LENET_ROWS]
    # Paddle's table layout: every cell centred in its column's widest text plus two spaces.
    width = max(len(layer.full_name()) for layer in leaves)
    header = next(line for line in out.splitlines() if "Layer Name" in line)
    assert header == "|" + "Layer Name".center(width + 2) + "|   Input Shape   |   Output Shape  | Params | Flops  |"
    shelf = "+" + "-" * (width + 2) + "+-----------------+-----------------+--------+--------+"
    assert out.count(shelf + "\n") == 3


def _resnet18_by_hand() -> tuple[int, int]:
    """ResNet18 at 224x224 by Paddle's rules from its layer shapes alone: a conv is
    hw^2 * cout * cin * k^2 (no bias), a batch norm 2 * c * hw^2, ReLU and max pool 0, the
    adaptive average pool (7*7 + 1) * 512, the fc 512 * 1000."""
    ops, params = 0, 0

    def conv(cin, cout, k, hw):
        nonlocal ops, params
        ops += hw * hw * cout * cin * k * k
        params += cout * cin * k * k

    def bn(c, hw):
        nonlocal ops, params
        ops += 2 * c * hw * hw
        params += 2 * c  # scale and shift; the running statistics are buffers

    conv(3, 64, 7, 112)
    bn(64, 112)
    cin = 64
    for cout, hw, stride in [(64, 56, 1), (128, 28, 2), (256, 14, 2), (512, 7, 2)]:
        for block in range(2):
            conv(cin, cout, 3, hw)
            bn(cout, hw)
            conv(cout, cout, 3, hw)
            bn(cout, hw)
            if block == 0 and (stride != 1 or cin != cout):
                conv(cin, cout, 1, hw)  # the downsample branch
                bn(cout, hw)
            cin = cout
    ops += (7 * 7 + 1) * 512 + 512 * 1000
    params += 512 * 1000 + 1000
    return ops, params


def test_resnet18_counted_by_hand(capsys):
    ops, params = _resnet18_by_hand()
    # The same rules (they come from pytorch-OpCounter) give 1819066368 and 11689512 for
    # torchvision's resnet18; 11689512 is ResNet18's well-known parameter count.
    assert (ops, params) == (1_819_066_368, 11_689_512)
    assert oar.flops(resnet18(), [1, 3, 224, 224]) == ops
    assert capsys.readouterr().out.splitlines()[-1] == f"Total Flops: {ops}     Total Params: {params}"


# (layer, input shape, flops by hand): each wrapped in a Sequential, so that Paddle, which counts
# the sublayers of the network it is given, counts the same.
LAYER_CASES = {
    "conv2d": (lambda: nn.Conv2D(3, 8, 3, padding=1), [1, 3, 8, 8], 8 * 8 * 8 * (3 * 9 + 1)),
    "conv2d_no_bias": (lambda: nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), [1, 3, 8, 8], 8 * 8 * 8 * 3 * 9),
    "conv2d_groups": (lambda: nn.Conv2D(4, 8, 3, padding=1, groups=2), [1, 4, 6, 6], 8 * 6 * 6 * (2 * 9 + 1)),
    "conv2d_stride": (lambda: nn.Conv2D(3, 4, 3, stride=2), [1, 3, 9, 9], 4 * 4 * 4 * (3 * 9 + 1)),
    "conv2d_nhwc": (lambda: nn.Conv2D(3, 8, 3, padding=1, data_format="NHWC"), [1, 8, 8, 3], 8 * 8 * 8 * (3 * 9 + 1)),
    "conv1d": (lambda: nn.Conv1D(2, 4, 3), [1, 2, 10], 4 * 8 * (2 * 3 + 1)),
    "conv2d_transpose": (lambda: nn.Conv2DTranspose(4, 2, 3), [1, 4, 5, 5], 2 * 7 * 7 * (4 * 9 + 1)),
    "linear": (lambda: nn.Linear(5, 7), [2, 5], 5 * 2 * 7),
    "linear_3d": (lambda: nn.Linear(5, 7), [1, 3, 5], 5 * 3 * 7),
    "batch_norm2d": (lambda: nn.BatchNorm2D(3), [1, 3, 4, 4], 2 * 3 * 4 * 4),
    "batch_norm": (lambda: nn.BatchNorm(3), [1, 3, 4, 4], 2 * 3 * 4 * 4),
    "batch_norm1d": (lambda: nn.BatchNorm1D(3), [2, 3], 0),  # not in Paddle's table
    "relu": (nn.ReLU, [1, 3, 4, 4], 0),
    "relu6": (nn.ReLU6, [1, 3, 4, 4], 0),
    "leaky_relu": (nn.LeakyReLU, [1, 3, 4, 4], 3 * 4 * 4),
    "sigmoid": (nn.Sigmoid, [1, 3, 4, 4], 0),
    "dropout": (lambda: nn.Dropout(0.5), [1, 3, 4, 4], 0),
    "avg_pool2d": (lambda: nn.AvgPool2D(2), [1, 3, 4, 4], 3 * 2 * 2),
    "avg_pool1d": (lambda: nn.AvgPool1D(2), [1, 3, 8], 3 * 4),
    "max_pool2d": (lambda: nn.MaxPool2D(2), [1, 3, 4, 4], 0),
    "adaptive_avg_pool2d": (lambda: nn.AdaptiveAvgPool2D(2), [1, 3, 8, 8], (4 * 4 + 1) * 3 * 2 * 2),
    "adaptive_avg_pool2d_nhwc": (lambda: nn.AdaptiveAvgPool2D(2, data_format="NHWC"), [1, 8, 8, 3],
                                 (4 * 4 + 1) * 3 * 2 * 2),
    "adaptive_avg_pool1d": (lambda: nn.AdaptiveAvgPool1D(1), [1, 3, 8], (8 + 1) * 3),
    "upsample": (lambda: nn.Upsample(scale_factor=2), [1, 3, 4, 4], 0),
}


@pytest.mark.parametrize("case", LAYER_CASES.values(), ids=LAYER_CASES.keys())
def test_each_layer_type_counted_by_hand(case, capsys):
    make, shape, expected = case
    layer = make()
    assert oar.flops(nn.Sequential(layer), shape) == expected
    params = sum(p.size for p in layer.parameters())
    assert capsys.readouterr().out.splitlines()[-1] == f"Total Flops: {expected}     Total Params: {params}"


def test_messages_say_which_types_are_counted(capsys):
    oar.flops(nn.Sequential(nn.Conv2D(1, 2, 3), nn.Conv2D(2, 2, 3), nn.MaxPool2D(2)), [1, 1, 8, 8])
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{nn.Conv2D}'s flops has been counted",  # once per type
        f"Cannot find suitable count function for {nn.MaxPool2D}. Treat it as zero FLOPs.",
        f"Total Flops: {2 * 6 * 6 * (1 * 9 + 1) + 2 * 4 * 4 * (2 * 9 + 1)}     Total Params: {20 + 38}",
    ]


def test_a_network_that_is_a_leaf_is_counted(capsys):
    # Paddle counts only the sublayers of the network it is given, and so 0 here.
    assert oar.flops(nn.Linear(4, 3), [1, 4]) == 12
    assert capsys.readouterr().out.splitlines()[-1] == "Total Flops: 12     Total Params: 15"


def test_a_layer_called_twice_counts_twice_and_its_params_once(capsys):
    class Twice(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.fc(self.act(self.fc(x)))

    assert oar.flops(Twice(), [1, 4]) == 2 * 16
    assert capsys.readouterr().out.splitlines()[-1] == "Total Flops: 32     Total Params: 20"


class Scale(nn.Layer):
    """A leaf layer of the user's, which oar has no rule for."""

    def __init__(self, channels):
        super().__init__()
        self.weight = self.create_parameter([channels])

    def forward(self, x):
        return x * self.weight.reshape([1, -1, 1, 1])


def test_custom_ops_count_a_users_layer_and_override_a_built_in(capsys):
    def count_scale(layer, inputs, output):
        layer.total_ops += int(inputs[0].numel())  # the Paddle docstring's protocol

    def count_conv_as_one(layer, inputs, output):
        layer.total_ops += 1

    net = nn.Sequential(nn.Conv2D(3, 4, 3), Scale(4), nn.Linear(6, 2))
    conv_ops = 4 * 6 * 6 * (3 * 9 + 1)
    linear_ops = 6 * 4 * 6 * 2
    assert oar.flops(net, [1, 3, 8, 8]) == conv_ops + linear_ops
    assert f"Cannot find suitable count function for {Scale}. Treat it as zero FLOPs." in capsys.readouterr().out

    total = oar.flops(net, [1, 3, 8, 8], custom_ops={Scale: count_scale, nn.Conv2D: count_conv_as_one})
    out = capsys.readouterr().out
    assert total == 1 + 4 * 6 * 6 + linear_ops
    assert f"Customize Function has been applied to {Scale}" in out
    assert f"Customize Function has been applied to {nn.Conv2D}" in out
    assert out.splitlines()[-1] == f"Total Flops: {total}     Total Params: {4 * 3 * 9 + 4 + 4 + 6 * 2 + 2}"


def test_print_detail_prints_a_row_per_leaf_that_ran(capsys):
    class SkipsOne(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(1, 2, 3, bias_attr=False)
            self.unused = nn.Linear(3, 3)
            self.pool = nn.AdaptiveAvgPool2D(1)

        def forward(self, x):
            return self.pool(self.conv(x))

    net = SkipsOne()
    assert oar.flops(net, [1, 1, 5, 5], print_detail=True) == 2 * 3 * 3 * 9 + (9 + 1) * 2
    rows = _table_rows(capsys.readouterr().out)
    assert rows == [
        [net.conv.full_name(), "[1, 1, 5, 5]", "[1, 2, 3, 3]", "18", str(2 * 3 * 3 * 9)],
        [net.pool.full_name(), "[1, 2, 3, 3]", "[1, 2, 1, 1]", "0", "20"],
    ]

    oar.flops(net, [1, 1, 5, 5])
    assert "Layer Name" not in capsys.readouterr().out


def test_list_of_input_sizes_for_a_network_of_several_inputs(capsys):
    class TwoInputs(nn.Layer):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(4, 8)
            self.b = nn.Linear(6, 8)

        def forward(self, x, y):
            return self.a(x) + self.b(y)

    assert oar.flops(TwoInputs(), [[1, 4], [1, 6]], print_detail=True) == 4 * 8 + 6 * 8
    rows = _table_rows(capsys.readouterr().out)
    assert [r[1] for r in rows] == ["[1, 4]", "[1, 6]"]
    assert oar.flops(TwoInputs(), ((2, 4), (2, 6))) == 2 * (4 * 8 + 6 * 8)


def test_modes_hooks_buffers_and_the_random_stream_are_left_as_they_were(capsys):
    net = LeNet()
    net.train()
    net.fc.eval()  # mixed modes: Paddle would put every layer back in train mode
    modes = {name: layer.training for name, layer in net.named_sublayers(include_self=True)}
    calls = []
    net.features[0].register_forward_post_hook(lambda layer, inputs, output: calls.append(1))
    hooks = {name: (list(layer._forward_pre_hooks), list(layer._forward_post_hooks))
             for name, layer in net.named_sublayers(include_self=True)}
    buffers = [name for name, _ in net.named_buffers()]

    oar.seed(7)
    expected_draw = oar.randn([3]).tolist()
    oar.seed(7)
    oar.flops(net, [1, 1, 28, 28])
    assert oar.randn([3]).tolist() == expected_draw

    assert {name: layer.training for name, layer in net.named_sublayers(include_self=True)} == modes
    assert {name: (list(layer._forward_pre_hooks), list(layer._forward_post_hooks))
            for name, layer in net.named_sublayers(include_self=True)} == hooks
    assert [name for name, _ in net.named_buffers()] == buffers
    assert not any(hasattr(layer, "total_ops") for layer in net.sublayers())
    assert calls == [1]  # the user's hook ran in the count, and stays


def test_a_failing_forward_leaves_the_network_as_it_was():
    class Fails(nn.Layer):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            self.fc(x)
            raise RuntimeError("boom")

    net = Fails()
    with pytest.raises(RuntimeError, match="boom"):
        oar.flops(net, [1, 4])
    assert net.training and net.fc.training
    assert not net.fc._forward_post_hooks and not hasattr(net.fc, "total_ops")


def test_a_to_static_network_is_counted_and_stays_converted(capsys):
    net = oar.jit.to_static(LeNet())
    net.eval()
    with oar.no_grad():  # captured as flops calls it: replaying the program would run no hook
        net(oar.randn([1, 1, 28, 28]))
    net.train()
    assert oar.flops(net, [1, 1, 28, 28]) == 347560
    assert isinstance(net.forward, oar.jit.StaticFunction) and "forward" in net.__dict__
    assert net.training


@pytest.mark.parametrize("input_size", [None, 5, "1,3", [], [1, 0, 3], [1, -1], [1, 2.5], [True, 3], [[1, 4], 3],
                                        [[1, 4], []], {"x": [1, 4]}],
                         ids=repr)
def test_a_bad_input_size_is_a_clear_error(input_size):
    with pytest.raises(ArgumentError, match="flops: .*input_size"):
        oar.flops(nn.Sequential(nn.Linear(4, 2)), input_size)


def test_bad_net_and_custom_ops_are_clear_errors():
    with pytest.raises(ArgumentError, match="net must be an oar.nn.Layer"):
        oar.flops(lambda x: x, [1, 4])
    with pytest.raises(ArgumentError, match="custom_ops must map layer classes"):
        oar.flops(nn.Linear(4, 2), [1, 4], custom_ops={"Linear": print})
    with pytest.raises(ArgumentError, match="custom_ops must map layer classes"):
        oar.flops(nn.Linear(4, 2), [1, 4], custom_ops=[nn.Linear])


def test_oar_flops_is_the_hapi_function_and_its_example_runs():
    assert oar.flops is oar.hapi.flops
    module = importlib.import_module("oar.hapi.flops")  # the attribute oar.hapi.flops is the function
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
