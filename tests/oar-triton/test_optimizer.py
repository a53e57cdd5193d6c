"""The gpu's fused optimizer updates (oar_triton.optimizer) against oar-nn's cpu rules.

Each test runs one optimizer on the cpu and on the gpu from the same initial weights with the
same gradients, and compares the parameters and the optimizer state after a few steps. A
parameter of 2800 elements takes three programs of the kernels (and Adam's powers must still
advance once per step); a zero-size one takes none (or one, for Adam's powers).
"""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest
from oar_triton import optimizer as rules
from oar_triton.backend import BACKEND
from oar_triton.kernels import optimizer as kernels

import oar
from oar.errors import ArgumentError, DTypeError, ShapeError
from oar.optimizer.optimizer import UPDATE_RULES
from oar.testing import TOLERANCES

SHAPES = {"w": (40, 70), "b": (5,), "empty": (0, 3)}
STEPS = 3


def _problem(dtype: str = "float32", seed: int = 0):
    rng = np.random.default_rng(seed)
    np_dtype = oar.ops.get_dtype(dtype).np
    weights = {k: rng.standard_normal(s).astype(np_dtype) for k, s in SHAPES.items()}
    grads = [{k: rng.standard_normal(s).astype(np_dtype) for k, s in SHAPES.items()} for _ in range(STEPS)]
    return weights, grads


def _train(place: str, make, dtype: str = "float32", scheduler=None):
    """The parameters and the optimizer's state (numpy) after STEPS updates on ``place``."""
    weights, grads = _problem(dtype)
    params = {}
    for key, w in weights.items():
        params[key] = oar.to_tensor(w, place=place, stop_gradient=False)
        params[key].name = key  # the state's keys and apply_decay_param_fun see these names
    lr = scheduler() if scheduler is not None else 0.05
    opt = make(lr, list(params.values()))
    for step_grads in grads:
        for key, g in step_grads.items():
            params[key].grad = oar.to_tensor(g, place=place)
        opt.step()
        if scheduler is not None:
            lr.step()
    for p in params.values():
        assert p.place.backend == place
    state = {}
    for key, value in opt.state_dict().items():
        if isinstance(value, oar.Tensor):
            assert value.place.backend == place, f"{key} is on {value.place}"
            state[key] = value.numpy()
        elif key == "master_weights":
            state.update({f"master/{k}": v.numpy() for k, v in value.items()})
    return {k: p.numpy() for k, p in params.items()}, state


def _assert_close(got: dict, expected: dict, rtol: float, atol: float) -> None:
    assert sorted(got) == sorted(expected)
    for key in expected:
        assert got[key].dtype == expected[key].dtype and got[key].shape == expected[key].shape, key
        np.testing.assert_allclose(got[key].astype(np.float64), expected[key].astype(np.float64),
                                   rtol=rtol, atol=atol, err_msg=key)


# name -> make(learning_rate, parameters, **more keyword arguments of the optimizer)
OPTIMIZERS = {
    "sgd": lambda lr, p, **kw: oar.optimizer.SGD(lr, parameters=p, **kw),
    "sgd-l2": lambda lr, p, **kw: oar.optimizer.SGD(lr, parameters=p, weight_decay=0.1, **kw),
    "momentum": lambda lr, p, **kw: oar.optimizer.Momentum(lr, momentum=0.9, parameters=p, **kw),
    "momentum-nesterov-l2-rescale": lambda lr, p, **kw: oar.optimizer.Momentum(
        lr, momentum=0.8, parameters=p, use_nesterov=True, weight_decay=0.05, rescale_grad=0.5, **kw),
    "adam": lambda lr, p, **kw: oar.optimizer.Adam(lr, parameters=p, **kw),
    "adam-l2-lazy": lambda lr, p, **kw: oar.optimizer.Adam(lr, beta1=0.8, beta2=0.95, epsilon=1e-6, parameters=p,
                                                           weight_decay=0.01, lazy_mode=True, **kw),
    "adam-amsgrad": lambda lr, p, **kw: oar.optimizer.Adam(lr, parameters=p, amsgrad=True, **kw),
    "adamw": lambda lr, p, **kw: oar.optimizer.AdamW(lr, parameters=p, weight_decay=0.1,
                                                     apply_decay_param_fun=lambda name: name != "b",
                                                     lr_ratio=lambda param: 0.5 if param.name == "w" else 1.0, **kw),
    "adamw-clip-by-value": lambda lr, p, **kw: oar.optimizer.AdamW(lr, parameters=p, weight_decay=0.01,
                                                                   grad_clip=oar.nn.ClipGradByValue(max=1.0), **kw),
    "momentum-clip-by-global-norm": lambda lr, p, **kw: oar.optimizer.Momentum(
        lr, parameters=p, grad_clip=oar.nn.ClipGradByGlobalNorm(clip_norm=1.0), **kw),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_update_matches_cpu(name):
    expected = _train("cpu", OPTIMIZERS[name])
    got = _train("gpu", OPTIMIZERS[name])
    rtol, atol = TOLERANCES["float32"]
    for g, e in zip(got, expected):
        _assert_close(g, e, rtol, atol)


@pytest.mark.parametrize("name", ["momentum", "adam"])
def test_learning_rate_scheduler_drives_the_gpu_update(name):
    def scheduler():
        return oar.optimizer.lr.ExponentialDecay(learning_rate=0.1, gamma=0.5)

    expected = _train("cpu", OPTIMIZERS[name], scheduler=scheduler)
    got = _train("gpu", OPTIMIZERS[name], scheduler=scheduler)
    rtol, atol = TOLERANCES["float32"]
    for g, e in zip(got, expected):
        _assert_close(g, e, rtol, atol)


@pytest.mark.parametrize("multi_precision", [False, True])
@pytest.mark.parametrize("name,dtype", [("adamw", "float16"), ("adamw", "bfloat16"), ("momentum", "bfloat16"),
                                        ("sgd", "float16")])
def test_low_precision_parameters_update_in_float32(name, dtype, multi_precision):
    def make(lr, params):
        return OPTIMIZERS[name](lr, params, multi_precision=multi_precision)

    (cpu_params, cpu_state), (gpu_params, gpu_state) = _train("cpu", make, dtype), _train("gpu", make, dtype)
    if multi_precision:
        assert {k for k in gpu_state if k.startswith("master/")} == {f"master/{k}" for k in SHAPES}
    # the master weights and the accumulators in float32; the parameters rounded once more at most
    rtol, atol = TOLERANCES["float32"]
    _assert_close(gpu_state, cpu_state, rtol, atol)
    rtol, atol = TOLERANCES[dtype]
    _assert_close(gpu_params, cpu_params, rtol, atol)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["adam", "momentum", "sgd"])
def test_the_update_writes_the_parameters_buffer(name, dtype):
    weights, grads = _problem(dtype)
    w = oar.to_tensor(weights["w"], place="gpu", stop_gradient=False)
    alias = w.detach()  # shares w's buffer: it sees an update made in place, not a rebound buffer
    opt = OPTIMIZERS[name](0.05, [w])
    w.grad = oar.to_tensor(grads[0]["w"], place="gpu")
    opt.step()
    assert not np.array_equal(w.numpy(), weights["w"])
    np.testing.assert_array_equal(alias.numpy(), w.numpy())


def test_a_transposed_gradient_updates_each_element_by_its_own():
    rng = np.random.default_rng(2)
    w0, g = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    w = oar.to_tensor(w0, place="gpu", stop_gradient=False)
    w.grad = oar.to_tensor(g, place="gpu").T
    oar.optimizer.Momentum(0.5, momentum=0.9, parameters=[w]).step()
    np.testing.assert_allclose(w.numpy(), w0 - np.float32(0.5) * g.T, rtol=1e-6)


def test_adam_powers_advance_once_per_step_over_many_programs():
    w = oar.to_tensor(np.ones(3 * kernels.BLOCK + 1, np.float32), place="gpu", stop_gradient=False)
    w.name = "w"
    opt = oar.optimizer.Adam(0.1, beta1=0.5, beta2=0.25, parameters=[w])
    for step in range(1, 4):
        w.grad = oar.to_tensor(np.full(w.shape, 1.0, np.float32), place="gpu")
        opt.step()
        state = opt.state_dict()
        assert state["w_beta1_pow_acc_0"].numpy().tolist() == [0.5 ** (step + 1)]
        assert state["w_beta2_pow_acc_0"].numpy().tolist() == [0.25 ** (step + 1)]
        # every program used this step's powers: with a gradient of ones m_hat = v_hat = 1
        np.testing.assert_allclose(w.numpy(), 1.0 - 0.1 * step, rtol=1e-5)


def test_two_layer_mlp_training_step_matches_cpu():
    """Forward, backward and an Adam step of a small MLP, on the gpu and on the cpu."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((8, 6)).astype(np.float32), rng.standard_normal((8, 3)).astype(np.float32)
    init = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(6, 16), (16,), (16, 3), (3,)]]

    def train(place):
        net = oar.nn.Sequential(oar.nn.Linear(6, 16), oar.nn.ReLU(), oar.nn.Linear(16, 3))
        for p, value in zip(net.parameters(), init):
            p.set_value(value)
        net.to(place)  # (layers create their parameters on the cpu)
        opt = oar.optimizer.Adam(0.01, parameters=net.parameters())
        for _ in range(2):
            loss = ((net(oar.to_tensor(x, place=place)) - oar.to_tensor(y, place=place)) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
        assert all(p.place.backend == place for p in net.parameters())
        return [p.numpy() for p in net.parameters()]

    expected, got = train("cpu"), train("gpu")
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


# -- what the kernels refuse --------------------------------------------------------------------
def test_float64_parameters_are_refused_with_the_dtype():
    w = oar.to_tensor(np.ones(4), place="gpu", stop_gradient=False)
    opt = oar.optimizer.SGD(0.1, parameters=[w])
    w.grad = oar.to_tensor(np.ones(4), place="gpu")
    with pytest.raises(DTypeError, match="sgd .gpu.*float64"):
        opt.step()


def test_non_contiguous_parameter_and_wrong_gradient_shape_are_refused():
    base = BACKEND.from_numpy(np.ones((4, 6), np.float32))
    transposed = base.view((6, 4), (1, 6))
    grad = BACKEND.from_numpy(np.ones((6, 4), np.float32))
    with pytest.raises(ArgumentError, match=r"momentum \(gpu\): the parameter .*not contiguous"):
        kernels.momentum_update(transposed, grad, 0.1, {"velocity": BACKEND.zeros((6, 4), np.float32)},
                                momentum=0.9, use_nesterov=False, rescale_grad=1.0, l2_coeff=0.0)
    with pytest.raises(ShapeError, match=r"sgd \(gpu\): the gradient has shape \[6, 4\] but the parameter"):
        kernels.sgd_update(base, grad, 0.1, {})


def test_registering_the_rules_imports_no_triton(monkeypatch):
    monkeypatch.setitem(sys.modules, "triton", None)  # any import of triton now raises ImportError
    monkeypatch.delitem(sys.modules, kernels.__name__)
    importlib.reload(rules)
    rules.register_update_rules()
    assert kernels.__name__ not in sys.modules
    for optimizer_type in ("sgd", "momentum", "adam", "adamw"):
        rule = UPDATE_RULES[(optimizer_type, "gpu")]
        assert rule.__name__ == f"{optimizer_type}_update@gpu" and rule.updates_low_precision
