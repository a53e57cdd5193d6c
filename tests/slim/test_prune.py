"""oar.slim.prune: criteria against numpy, the dependency analysis on plain, residual, concat and
depthwise nets (checked by shapes and by equivalence with the unpruned model whose removed channels
are cut off by zeroed consumer weights), FLOPs, jit round trip, sensitivity, refusals."""

import copy
import doctest
import json
import os

import numpy as np
import pytest

import oar
import oar.nn as nn
import oar.nn.functional as F
import oar.slim.prune.filter_pruner
from oar.slim.prune import (
    FPGMFilterPruner,
    L1NormFilterPruner,
    L2NormFilterPruner,
    PruningError,
    fpgm,
    l1_norm,
    l2_norm,
    pruned_mask,
)
from oar.static import InputSpec
from oar.testing import sum_tolerance

from .conftest import accuracy


@pytest.fixture(autouse=True)
def _seed():
    oar.seed(0)
    np.random.seed(0)


def _flops(model, shape):
    return oar.flops(model, shape, print_detail=False)


def _np(t):
    return np.asarray(t.numpy())


def _zero_cut_channels(model, plan):
    """``model`` with the input weights of every consumer zeroed where the plan removes channels:
    then the removed channels cannot reach the output, and the pruned model must compute the same."""
    params = dict(model.named_parameters())
    for name, masks in plan.masks.items():
        if name not in params:
            continue
        p = params[name]
        for m in masks:
            conv_input = p.ndim == 4 and m.dims == 1
            linear_input = p.ndim == 2 and m.dims == 0
            if conv_input or linear_input:
                value = _np(p).copy()
                index = [slice(None)] * p.ndim
                index[m.dims] = ~m.mask
                value[tuple(index)] = 0.0
                p.set_value(value)
    return model


def _check_equivalent(model, shape, prune):
    """Prune ``model`` with ``prune(pruner)``; returns (plan, reference copy) after checking the
    pruned model computes what the reference does with the cut channels' consumers zeroed."""
    reference = copy.deepcopy(model)
    pruner = L1NormFilterPruner(model, shape)
    plan = prune(pruner)
    _zero_cut_channels(reference, plan)
    x = oar.randn(shape)
    expected, got = _np(reference(x)), _np(model(x))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    return plan, reference


# -- criteria ------------------------------------------------------------------------------------

def test_criteria_match_numpy():
    w = np.random.randn(6, 3, 3, 3).astype(np.float32)
    rows = w.reshape(6, -1).astype(np.float64)
    np.testing.assert_allclose(l1_norm(w), [np.abs(r).mean() for r in rows], rtol=1e-12)
    np.testing.assert_allclose(l2_norm(w), [np.sqrt((r * r).sum()) for r in rows], rtol=1e-12)
    dist = [sum(np.linalg.norm(r - o) for o in rows) for r in rows]
    np.testing.assert_allclose(fpgm(w), dist, rtol=1e-6)
    # along another axis: the linear layout [in, out] scored by output column
    v = np.random.randn(5, 4)
    np.testing.assert_allclose(l2_norm(v, axis=1), np.linalg.norm(v, axis=0), rtol=1e-12)


def test_pruned_mask_drops_the_lowest_and_keeps_one():
    scores = np.array([0.3, 0.1, 0.5, 0.2])
    assert pruned_mask(scores, 0.5).tolist() == [True, False, True, False]
    assert pruned_mask(scores, 0.99).sum() == 1
    assert pruned_mask(scores, 0.0).all()
    with pytest.raises(oar.errors.ArgumentError, match="ratio"):
        pruned_mask(scores, 1.0)


# -- a plain conv -> bn -> relu -> conv -> flatten -> linear net ----------------------------------

class Plain(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2D(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2D(8)
        self.conv2 = nn.Conv2D(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2D(2)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        return self.fc(oar.flatten(x, 1))


def _randomize_bn(model):
    for layer in model.sublayers():
        if isinstance(layer, nn.BatchNorm2D):
            n = layer._num_features
            layer._mean.set_value(np.random.randn(n).astype(np.float32))
            layer._variance.set_value(np.random.rand(n).astype(np.float32) + 0.5)
            layer.weight.set_value(np.random.randn(n).astype(np.float32))
    model.eval()
    return model


def test_plain_net_shapes_kept_channels_and_equivalence():
    model = _randomize_bn(Plain())
    w1, w2 = _np(model.conv1.weight), _np(model.conv2.weight)
    keep1 = np.sort(np.argsort(np.abs(w1).reshape(8, -1).mean(1), kind="stable")[4:])
    keep2 = np.sort(np.argsort(np.abs(w2).reshape(16, -1).mean(1), kind="stable")[8:])
    reference = copy.deepcopy(model)
    x = oar.randn([2, 3, 8, 8])
    before = _flops(model, [1, 3, 8, 8])
    pruner = L1NormFilterPruner(model, [1, 3, 8, 8])
    pruner.prune_vars({"conv1.weight": 0.5, "conv2.weight": 0.5}, axis=0)

    shapes = {n: p.shape for n, p in model.named_parameters()}
    assert shapes == {"conv1.weight": [4, 3, 3, 3], "conv1.bias": [4], "bn1.weight": [4], "bn1.bias": [4],
                      "conv2.weight": [8, 4, 3, 3], "conv2.bias": [8], "fc.weight": [8 * 16, 10], "fc.bias": [10]}
    assert model.bn1._mean.shape == [4] and model.bn1._variance.shape == [4]
    assert (model.conv1._out_channels, model.conv2._in_channels, model.conv2._out_channels) == (4, 4, 8)
    assert (model.bn1._num_features, model.fc.in_features) == (4, 128)
    # the kept filters are the originals' highest-L1 ones, with their inputs
    np.testing.assert_array_equal(_np(model.conv1.weight), w1[keep1])
    np.testing.assert_array_equal(_np(model.conv2.weight), w2[keep2][:, keep1])
    np.testing.assert_array_equal(_np(model.bn1._mean), _np(reference.bn1._mean)[keep1])
    rows = (keep2[:, None] * 16 + np.arange(16)).reshape(-1)  # flatten: a block of 4x4 features per channel
    np.testing.assert_array_equal(_np(model.fc.weight), _np(reference.fc.weight)[rows])

    # equivalence: the original with the removed channels' consumers zeroed, by hand
    cut = _np(reference.conv2.weight).copy()
    cut[:, np.setdiff1d(np.arange(8), keep1)] = 0.0
    reference.conv2.weight.set_value(cut)
    fc = _np(reference.fc.weight).copy()
    fc[np.setdiff1d(np.arange(256), rows)] = 0.0
    reference.fc.weight.set_value(fc)
    np.testing.assert_allclose(_np(model(x)), _np(reference(x)), rtol=1e-4, atol=1e-5)
    assert _flops(model, [1, 3, 8, 8]) < 0.5 * before
    assert pruner.status()["conv2.weight"] == {"original": [16, 8, 3, 3], "pruned": [8, 4, 3, 3]}


def test_restore_puts_everything_back():
    model = _randomize_bn(Plain())
    x = oar.randn([1, 3, 8, 8])
    expected = _np(model(x))
    pruner = L2NormFilterPruner(model, [1, 3, 8, 8])
    pruner.prune_vars({"conv1.weight": 0.5})
    assert model.conv1.weight.shape == [4, 3, 3, 3]
    pruner.restore()
    assert model.conv1.weight.shape == [8, 3, 3, 3] and model.conv2._in_channels == 8
    np.testing.assert_array_equal(_np(model(x)), expected)
    assert pruner.status() == {}


def test_jit_save_load_round_trips_the_pruned_model(tmp_path):
    model = _randomize_bn(Plain())
    L1NormFilterPruner(model, [1, 3, 8, 8]).prune_vars({"conv1.weight": 0.5, "conv2.weight": 0.75})
    prefix = str(tmp_path / "pruned")
    oar.jit.save(model, prefix, input_spec=[InputSpec([None, 3, 8, 8], "float32", "x")])
    loaded = oar.jit.load(prefix)
    x = oar.randn([3, 3, 8, 8])
    np.testing.assert_allclose(_np(loaded(x)), _np(model(x)), rtol=1e-5, atol=1e-6)
    program = loaded.program()
    assert list(program.param_tensors["conv2.weight"].shape) == [4, 4, 3, 3]
    assert list(program.param_tensors["fc.weight"].shape) == [64, 10]
    full = str(tmp_path / "full")
    oar.jit.save(_randomize_bn(Plain()), full, input_spec=[InputSpec([None, 3, 8, 8], "float32", "x")])
    assert os.path.getsize(prefix + ".pdiparams") < 0.5 * os.path.getsize(full + ".pdiparams")


def test_the_predictor_runs_the_pruned_model(tmp_path):
    inference = pytest.importorskip("oar.inference")
    model = _randomize_bn(Plain())
    L1NormFilterPruner(model, [1, 3, 8, 8]).prune_vars({"conv1.weight": 0.5, "conv2.weight": 0.75})
    prefix = str(tmp_path / "pruned")
    oar.jit.save(model, prefix, input_spec=[InputSpec([None, 3, 8, 8], "float32", "x")])
    x = np.random.default_rng(0).normal(size=(5, 3, 8, 8)).astype(np.float32)
    (out,) = inference.create_predictor(inference.Config(prefix)).run([x])
    with oar.no_grad():
        expected = _np(model(oar.to_tensor(x)))
    rtol, atol = sum_tolerance("float32", terms=4 * 9, scale=np.abs(expected).max())
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=atol)


def test_pruners_follow_their_criterion():
    for cls, score in ((L2NormFilterPruner, l2_norm), (FPGMFilterPruner, fpgm)):
        model = _randomize_bn(Plain())
        w = _np(model.conv2.weight)
        keep = np.sort(np.argsort(score(w), kind="stable")[4:])
        cls(model, [1, 3, 8, 8]).prune_vars({"conv2.weight": 0.25})
        np.testing.assert_array_equal(_np(model.conv2.weight), w[keep])


# -- residual ------------------------------------------------------------------------------------

def test_resnet18_residual_groups_shapes_flops_equivalence():
    model = _randomize_bn(oar.vision.models.resnet18(num_classes=10))
    shape = [1, 3, 32, 32]
    before = _flops(model, shape)
    group = L1NormFilterPruner(model, shape).group("conv1.weight")
    # the stem's channels run through layer1's residual adds: both convs closing a block move with it
    names = set(group.names())
    assert {"bn1._mean", "layer1.0.conv2.weight", "layer1.1.bn2.weight", "layer1.0.conv1.weight",
            "layer2.0.conv1.weight", "layer2.0.downsample.0.weight"} <= names
    assert "layer1.0.conv1.bias" not in names and "layer2.0.conv2.weight" not in names

    plan, _ = _check_equivalent(model, shape, lambda p: p.prune_vars(0.5))
    assert model.conv1.weight.shape == [32, 3, 7, 7]
    assert model.layer1[0].conv1.weight.shape == [32, 32, 3, 3]
    assert model.layer1[1].conv2.weight.shape == [32, 32, 3, 3]
    assert model.layer2[0].downsample[0].weight.shape == [64, 32, 1, 1]
    assert model.layer4[1].bn2._num_features == 256 and model.fc.weight.shape == [256, 10]
    # one shared set of channels on both sides of every add of layer1
    m = plan.masks
    np.testing.assert_array_equal(m["conv1.weight"][0].mask, m["layer1.1.conv2.weight"][0].mask)
    after = _flops(model, shape)
    assert after < 0.6 * before  # at least 40% fewer FLOPs for 50% of the filters


def test_custom_residual_block_with_prune_of_the_second_branch():
    class Block(nn.Layer):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2D(3, 8, 3, padding=1)
            self.a = nn.Conv2D(8, 8, 3, padding=1)
            self.b = nn.Conv2D(8, 8, 3, padding=1)
            self.head = nn.Conv2D(8, 4, 1)

        def forward(self, x):
            x = F.relu(self.stem(x))
            y = F.relu(self.a(x)) + x
            return oar.flatten(self.head(y + self.b(y)), 1).mean(axis=1, keepdim=True)

    model = Block().eval()
    # naming b (an inner conv of the chain) prunes the whole shared set, masters b's scores
    w = _np(model.b.weight)
    keep = np.sort(np.argsort(np.abs(w).reshape(8, -1).mean(1), kind="stable")[4:])
    plan, _ = _check_equivalent(model, [1, 3, 6, 6], lambda p: p.prune_vars({"b.weight": 0.5}))
    assert model.stem.weight.shape == [4, 3, 3, 3] and model.a.weight.shape == [4, 4, 3, 3]
    assert model.b.weight.shape == [4, 4, 3, 3] and model.head.weight.shape == [4, 4, 1, 1]
    np.testing.assert_array_equal(_np(model.b.weight), w[keep][:, keep])


# -- concat --------------------------------------------------------------------------------------

class Concat(nn.Layer):
    def __init__(self):
        super().__init__()
        self.a = nn.Conv2D(3, 4, 3, padding=1)
        self.b = nn.Conv2D(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2D(10)
        self.c = nn.Conv2D(10, 8, 3, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = F.relu(self.bn(oar.concat([self.a(x), self.b(x)], axis=1)))
        y = F.adaptive_avg_pool2d(self.c(y), 1)
        return self.fc(oar.flatten(y, 1))


def test_concat_places_channels_at_their_offset():
    model = _randomize_bn(Concat())
    keep_a = pruned_mask(l1_norm(_np(model.a.weight)), 0.5)
    keep_b = pruned_mask(l1_norm(_np(model.b.weight)), 0.5)
    c = _np(model.c.weight)
    plan, _ = _check_equivalent(model, [1, 3, 8, 8],
                                lambda p: p.prune_vars({"a.weight": 0.5, "b.weight": 0.5, "c.weight": 0.5}))
    assert model.a.weight.shape == [2, 3, 3, 3] and model.b.weight.shape == [3, 3, 3, 3]
    assert model.bn._num_features == 5 and model.c.weight.shape == [4, 5, 3, 3] and model.fc.weight.shape == [4, 5]
    np.testing.assert_array_equal(plan.masks["bn.weight"][0].mask, np.concatenate([keep_a, keep_b]))
    keep_c = pruned_mask(l1_norm(c), 0.5)
    np.testing.assert_array_equal(_np(model.c.weight), c[keep_c][:, np.concatenate([keep_a, keep_b])])


# -- depthwise separable -------------------------------------------------------------------------

class Separable(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2D(3, 8, 3, padding=1)
        self.bn0 = nn.BatchNorm2D(8)
        self.dw = nn.Conv2D(8, 8, 3, padding=1, groups=8)
        self.bn1 = nn.BatchNorm2D(8)
        self.pw = nn.Conv2D(8, 16, 1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.relu(self.bn0(self.conv0(x)))
        x = F.relu(self.bn1(self.dw(x)))
        x = F.relu(self.pw(x))
        return self.fc(oar.flatten(F.adaptive_avg_pool2d(x, 1), 1))


@pytest.mark.parametrize("master", ["conv0.weight", "dw.weight"])
def test_depthwise_conv_is_pruned_with_its_input(master):
    model = _randomize_bn(Separable())
    before = _flops(model, [1, 3, 8, 8])
    keep = pruned_mask(l1_norm(_np(getattr(model, master.split(".")[0]).weight)), 0.5)
    dw = _np(model.dw.weight)
    plan, _ = _check_equivalent(model, [1, 3, 8, 8], lambda p: p.prune_vars({master: 0.5, "pw.weight": 0.5}))
    assert model.conv0.weight.shape == [4, 3, 3, 3] and model.dw.weight.shape == [4, 1, 3, 3]
    assert (model.dw._groups, model.dw._in_channels, model.dw._out_channels) == (4, 4, 4)
    assert model.bn1._num_features == 4 and model.pw.weight.shape == [8, 4, 1, 1] and model.fc.weight.shape == [8, 10]
    np.testing.assert_array_equal(_np(model.dw.weight), dw[keep])
    assert _flops(model, [1, 3, 8, 8]) < 0.6 * before


def test_depthwise_with_channel_multiplier():
    class Net(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv0 = nn.Conv2D(3, 4, 3, padding=1)
            self.dw = nn.Conv2D(4, 8, 3, padding=1, groups=4)
            self.pw = nn.Conv2D(8, 2, 1)

        def forward(self, x):
            return oar.flatten(self.pw(self.dw(F.relu(self.conv0(x)))), 1).sum(axis=1, keepdim=True)

    model = Net().eval()
    _check_equivalent(model, [1, 3, 5, 5], lambda p: p.prune_vars({"conv0.weight": 0.5}))
    assert model.dw.weight.shape == [4, 1, 3, 3] and (model.dw._groups, model.dw._out_channels) == (2, 4)
    assert model.pw.weight.shape == [2, 4, 1, 1]


# -- refusals ------------------------------------------------------------------------------------

def test_refuses_channels_that_reach_the_output_and_skips_them_when_uniform():
    net = nn.Sequential(nn.Conv2D(3, 8, 3), nn.ReLU(), nn.Conv2D(8, 4, 3), nn.Flatten())
    pruner = L1NormFilterPruner(net, [1, 3, 8, 8])
    with pytest.raises(PruningError, match="program output"):
        pruner.prune_vars({"2.weight": 0.5})
    with pytest.warns(UserWarning, match="not pruned"):
        pruner.prune_vars(0.5)
    assert set(pruner.skipped) == {"2.weight"}
    assert net[0].weight.shape == [4, 3, 3, 3] and net[2].weight.shape == [4, 4, 3, 3]
    assert net(oar.ones([1, 3, 8, 8])).shape == [1, 64]


def test_refuses_an_op_it_does_not_understand_naming_it():
    class Odd(nn.Layer):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2D(3, 4, 3)
            self.fc = nn.Linear(6 * 4, 2)

        def forward(self, x):
            y = oar.transpose(self.conv(x), [0, 2, 1, 3])
            return self.fc(oar.flatten(y[:, :, :, 0], 1))

    with pytest.raises(PruningError, match="`transpose`"):
        L1NormFilterPruner(Odd(), [1, 3, 8, 8]).prune_vars({"conv.weight": 0.5})


def test_refuses_a_grouped_conv_and_an_unknown_name():
    net = nn.Sequential(nn.Conv2D(3, 8, 3), nn.Conv2D(8, 8, 3, groups=2), nn.AdaptiveAvgPool2D(1), nn.Flatten(),
                        nn.Linear(8, 2))
    pruner = L1NormFilterPruner(net, [1, 3, 8, 8])
    with pytest.raises(PruningError, match="groups=2"):
        pruner.prune_vars({"0.weight": 0.5})
    with pytest.raises(PruningError, match="not a parameter"):
        pruner.prune_vars({"nope.weight": 0.5})
    assert net[0].weight.shape == [8, 3, 3, 3]  # nothing was changed


# -- sensitivity ---------------------------------------------------------------------------------

def test_sensitive_returns_paddleslim_shape_and_restores(tmp_path):
    model = _randomize_bn(Plain())
    x = oar.randn([4, 3, 8, 8])
    base = _np(model(x))

    def eval_func():
        return float(1.0 / (1.0 + np.abs(_np(model(x)) - base).mean()))

    sen_file = str(tmp_path / "sen.json")
    pruner = L1NormFilterPruner(model, [1, 3, 8, 8])
    sens = pruner.sensitive(eval_func=eval_func, sen_file=sen_file, ratios=[0.25, 0.5])
    assert set(sens) == {"conv1.weight", "conv2.weight"}
    for losses in sens.values():
        assert list(losses) == [0.25, 0.5]
        assert 0.0 < losses[0.25] <= losses[0.5] < 1.0
    assert model.conv1.weight.shape == [8, 3, 3, 3]
    np.testing.assert_array_equal(_np(model(x)), base)
    with open(sen_file) as f:
        assert json.load(f)["sensitivities"]["conv1.weight"]["0.25"] == pytest.approx(sens["conv1.weight"][0.25])
    again = L1NormFilterPruner(model, [1, 3, 8, 8], sen_file=sen_file)
    assert again.sensitive() == sens


# -- pruning to a FLOPs target (sensitive_prune) -------------------------------------------------

PLAIN_SENS = {"conv1.weight": {0.25: 0.1, 0.5: 0.3, 0.75: 0.6}, "conv2.weight": {0.25: 0.05, 0.5: 0.2, 0.75: 0.5}}


def _pruner_with(model, shape, sens, cls=L1NormFilterPruner):
    pruner = cls(model, shape)
    pruner._status.sensitivities = copy.deepcopy(sens)
    return pruner


def _removed(model, shape, pruner, ratios):
    """The fraction of FLOPs, by oar.flops, that pruning by ``ratios`` removes (then undone)."""
    base = _flops(model, shape)
    plan = pruner.prune_vars(ratios, apply=None)
    plan.apply(model)
    try:
        return (base - _flops(model, shape)) / base
    finally:
        plan.restore(model)


def test_ratios_by_loss_interpolate_as_paddleslim():
    got = L1NormFilterPruner._get_ratios_by_loss(PLAIN_SENS, 0.25)
    # conv1: between (0.25, 0.1) and (0.5, 0.3); conv2: between (0.5, 0.2) and (0.75, 0.5)
    assert got == pytest.approx({"conv1.weight": 0.25 + 0.15 * 0.25 / 0.2, "conv2.weight": 0.5 + 0.05 * 0.25 / 0.3})
    assert L1NormFilterPruner._get_ratios_by_loss(PLAIN_SENS, 0.07) == pytest.approx({"conv2.weight": 0.25 + 0.02 / 0.6})
    assert L1NormFilterPruner._get_ratios_by_loss(PLAIN_SENS, 0.9) == {"conv1.weight": 0.75, "conv2.weight": 0.75}
    assert L1NormFilterPruner._get_ratios_by_loss(PLAIN_SENS, 0.9, skip_vars=["conv1.weight"]) == {"conv2.weight": 0.75}


@pytest.mark.parametrize("target", [0.3, 0.5, 0.7])
def test_sensitive_prune_reaches_the_target_with_the_smallest_loss_budget(target):
    model = _randomize_bn(Plain())
    shape = [1, 3, 8, 8]
    before = _flops(model, shape)
    pruner = _pruner_with(model, shape, PLAIN_SENS)
    ratios, reached = pruner.get_ratios_by_sensitivity(target)
    assert reached >= target and reached == pytest.approx(_removed(model, shape, pruner, ratios))
    # the loss budget the ratios stand for, read back from an interpolated one; a smaller budget misses the target
    name, ratio = next((n, r) for n, r in ratios.items() if r not in PLAIN_SENS[n])
    (r0, l0), (r1, l1) = [(r, v) for r, v in PLAIN_SENS[name].items() if r < ratio][-1:] + \
        [(r, v) for r, v in PLAIN_SENS[name].items() if r > ratio][:1]
    budget = l0 + (ratio - r0) * (l1 - l0) / (r1 - r0)
    assert pruner._get_ratios_by_loss(PLAIN_SENS, budget) == pytest.approx(ratios)
    assert _removed(model, shape, pruner, pruner._get_ratios_by_loss(PLAIN_SENS, budget - 2e-3)) < target

    x = oar.randn([2] + shape[1:])
    plan = pruner.sensitive_prune(target)
    assert plan.ratios == pytest.approx(ratios)
    after = _flops(model, shape)
    assert plan.pruned_flops == pytest.approx((before - after) / before) and plan.pruned_flops >= target
    assert model(x).shape == [2, 10] and model.conv2.weight.shape[0] < 16


def test_sensitive_prune_align_keeps_multiples_and_undoes_the_previous_pruning():
    model = _randomize_bn(Plain())
    shape = [1, 3, 8, 8]
    pruner = _pruner_with(model, shape, PLAIN_SENS)
    pruner.prune_vars({"conv1.weight": 0.5})
    plan = pruner.sensitive_prune(0.4, align=4)
    assert model.conv1.weight.shape[0] % 4 == 0 and model.conv2.weight.shape[0] % 4 == 0
    assert plan.pruned_flops >= 0.4
    pruner.restore()
    assert model.conv1.weight.shape == [8, 3, 3, 3] and model.conv2.weight.shape == [16, 8, 3, 3]


def test_sensitive_prune_skips_depthwise_convs_and_named_vars():
    model = _randomize_bn(Separable())
    shape = [1, 3, 8, 8]
    sens = {"conv0.weight": {0.25: 0.2, 0.5: 0.4}, "dw.weight": {0.25: 0.0, 0.5: 0.0},
            "pw.weight": {0.25: 0.1, 0.5: 0.3}}
    pruner = _pruner_with(model, shape, sens)
    plan = pruner.sensitive_prune(0.2)
    assert "dw.weight" not in plan.ratios and plan.pruned_flops >= 0.2
    assert model(oar.randn([1, 3, 8, 8])).shape == [1, 10]
    plan = pruner.sensitive_prune(0.1, skip_vars=["pw.weight"])
    assert list(plan.ratios) == ["conv0.weight"] and model.pw.weight.shape[0] == 16


def test_sensitive_prune_refuses_an_unreachable_target_and_an_empty_table():
    model = _randomize_bn(Plain())
    with pytest.raises(PruningError, match=r"removes .*% of the FLOPs, less than the 95.0%"):
        _pruner_with(model, [1, 3, 8, 8], PLAIN_SENS).sensitive_prune(0.95)
    with pytest.raises(oar.errors.ArgumentError, match="call sensitive"):
        L1NormFilterPruner(model, [1, 3, 8, 8]).sensitive_prune(0.3)
    with pytest.raises(oar.errors.ArgumentError, match="fraction"):
        _pruner_with(model, [1, 3, 8, 8], PLAIN_SENS).sensitive_prune(40)
    assert model.conv1.weight.shape == [8, 3, 3, 3]


def test_lenet_sensitive_prune_to_40_percent_fewer_flops(float_lenet, digits):
    model = copy.deepcopy(float_lenet)
    shape = [1, 1, 28, 28]
    before = _flops(model, shape)
    base = accuracy(model, digits["x_test"], digits["y_test"])
    pruner = L1NormFilterPruner(model, shape)
    sens = pruner.sensitive(eval_func=lambda: accuracy(model, digits["x_test"], digits["y_test"]))
    assert set(sens) == {"features.0.weight", "features.3.weight"}
    plan = pruner.sensitive_prune(0.4)
    after = _flops(model, shape)
    assert (before - after) / before >= 0.4 and plan.pruned_flops == pytest.approx((before - after) / before)
    pruned = accuracy(model, digits["x_test"], digits["y_test"])
    assert pruned > base - 0.1, (base, pruned)  # measured: 96.4% -> 92.6% at 50.4% fewer FLOPs, no fine-tuning
    assert model(oar.randn([2, 1, 28, 28])).shape == [2, 10]


@pytest.mark.parametrize("module", [oar.slim.prune, oar.slim.prune.filter_pruner, oar.slim.prune.plan,
                                    oar.slim.prune.criteria], ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    assert doctest.testmod(module, optionflags=doctest.ELLIPSIS).failed == 0
