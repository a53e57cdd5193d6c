"""oar.optimizer: every optimizer against a numpy implementation of its published update rule,
parameter groups, weight decay, per-parameter learning rates, state dicts and real training."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.nn import Parameter
from oar.optimizer import lr as lr_sched

RNG = np.random.default_rng(0)
W0 = RNG.normal(size=(3, 2))
B0 = RNG.normal(size=(2,))
TW = RNG.normal(size=(3, 2))
AW = RNG.uniform(0.5, 2.0, size=(3, 2))
AB = RNG.uniform(0.5, 2.0, size=(2,))
STEPS = 6


def make_params(dtype="float64", w_kwargs=None, b_kwargs=None):
    w = Parameter(W0.astype(dtype), name="w", **(w_kwargs or {}))
    b = Parameter(B0.astype(dtype), name="b", **(b_kwargs or {}))
    return w, b


def loss_of(w, b):
    dt = w.dtype
    diff = w - oar.to_tensor(TW).astype(dt)
    return (oar.to_tensor(AW).astype(dt) * diff * diff).sum() * 0.5 + (oar.to_tensor(AB).astype(dt) * b * b).sum() * 0.5


def grads_np(values):
    return {"w": AW * (values["w"] - TW), "b": AB * values["b"]}


def run_oar(make_opt, steps=STEPS, dtype="float64", w_kwargs=None, b_kwargs=None, scheduler=None):
    w, b = make_params(dtype, w_kwargs, b_kwargs)
    opt = make_opt([w, b])
    for _ in range(steps):
        loss_of(w, b).backward()
        opt.step()
        opt.clear_grad()
        if scheduler is not None:
            scheduler.step()
    return {"w": w.numpy().astype(np.float64), "b": b.numpy().astype(np.float64)}


def run_ref(rules, steps=STEPS):
    """``rules[name](p, g, t, state) -> new p``: the published update rule, per parameter."""
    values = {"w": W0.copy(), "b": B0.copy()}
    states = {"w": {}, "b": {}}
    for t in range(1, steps + 1):
        grads = grads_np(values)
        for name in values:
            values[name] = rules[name](values[name], grads[name], t, states[name])
    return values


def same(name_rule):
    return {"w": name_rule, "b": name_rule}


def assert_close(got, want, rtol=1e-10, atol=1e-12):
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=rtol, atol=atol, err_msg=name)


# -- the published rules, written independently of oar ---------------------------------------
def sgd_ref(lr, l2=0.0):
    def rule(p, g, t, s):
        return p - lr * (g + l2 * p)
    return rule


def momentum_ref(lr, mu, nesterov=False, l2=0.0, rescale=1.0):
    def rule(p, g, t, s):
        g = rescale * g + l2 * p
        s["v"] = mu * s.get("v", 0.0) + g
        return p - lr * (g + mu * s["v"]) if nesterov else p - lr * s["v"]
    return rule


def adam_ref(lr, b1=0.9, b2=0.999, eps=1e-8, l2=0.0, decoupled=0.0, amsgrad=False):
    def rule(p, g, t, s):
        p = p - lr * decoupled * p
        g = g + l2 * p
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        v = s["v"]
        if amsgrad:
            s["vmax"] = np.maximum(s.get("vmax", 0.0), s["v"])
            v = s["vmax"]
        m_hat, v_hat = s["m"] / (1 - b1 ** t), v / (1 - b2 ** t)
        return p - lr * m_hat / (np.sqrt(v_hat) + eps)
    return rule


def adamax_ref(lr, b1=0.9, b2=0.999, eps=1e-8, l2=0.0):
    def rule(p, g, t, s):
        g = g + l2 * p
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["u"] = np.maximum(b2 * s.get("u", 0.0) + eps, np.abs(g))
        return p - lr / (1 - b1 ** t) * s["m"] / s["u"]
    return rule


def adagrad_ref(lr, eps=1e-6, init=0.0, l2=0.0):
    def rule(p, g, t, s):
        g = g + l2 * p
        s["G"] = s.get("G", init) + g * g
        return p - lr * g / (np.sqrt(s["G"]) + eps)
    return rule


def adadelta_ref(lr, rho=0.95, eps=1e-6, l2=0.0):
    def rule(p, g, t, s):
        g = g + l2 * p
        s["Eg"] = rho * s.get("Eg", 0.0) + (1 - rho) * g * g
        dx = np.sqrt(s.get("Ed", 0.0) + eps) / np.sqrt(s["Eg"] + eps) * g
        s["Ed"] = rho * s.get("Ed", 0.0) + (1 - rho) * dx * dx
        return p - lr * dx
    return rule


def rmsprop_ref(lr, rho=0.95, eps=1e-6, momentum=0.0, centered=False, l2=0.0):
    def rule(p, g, t, s):
        g = g + l2 * p
        s["ms"] = rho * s.get("ms", 0.0) + (1 - rho) * g * g
        if centered:
            s["mg"] = rho * s.get("mg", 0.0) + (1 - rho) * g
            denom = np.sqrt(s["ms"] - s["mg"] ** 2 + eps)
        else:
            denom = np.sqrt(s["ms"] + eps)
        s["M"] = momentum * s.get("M", 0.0) + lr * g / denom
        return p - s["M"]
    return rule


def lamb_ref(lr, wd=0.01, b1=0.9, b2=0.999, eps=1e-6, always_adapt=False):
    def rule(p, g, t, s):
        s["m"] = b1 * s.get("m", 0.0) + (1 - b1) * g
        s["v"] = b2 * s.get("v", 0.0) + (1 - b2) * g * g
        r = (s["m"] / (1 - b1 ** t)) / (np.sqrt(s["v"] / (1 - b2 ** t)) + eps) + wd * p
        ratio = 1.0
        if wd > 0 or always_adapt:
            pn, rn = np.linalg.norm(p), np.linalg.norm(r)
            ratio = pn / rn if pn > 0 and rn > 0 else 1.0
        return p - lr * ratio * r
    return rule


OPT = oar.optimizer
CASES = {
    "sgd": (lambda ps: OPT.SGD(0.1, parameters=ps), same(sgd_ref(0.1))),
    "sgd_l2": (lambda ps: OPT.SGD(0.1, parameters=ps, weight_decay=0.05), same(sgd_ref(0.1, l2=0.05))),
    "momentum": (lambda ps: OPT.Momentum(0.05, momentum=0.9, parameters=ps), same(momentum_ref(0.05, 0.9))),
    "momentum_nesterov_l2_rescale": (
        lambda ps: OPT.Momentum(0.05, 0.8, parameters=ps, use_nesterov=True, weight_decay=oar.regularizer.L2Decay(0.1),
                              rescale_grad=0.5),
        same(momentum_ref(0.05, 0.8, nesterov=True, l2=0.1, rescale=0.5))),
    "adam": (lambda ps: OPT.Adam(0.05, parameters=ps), same(adam_ref(0.05))),
    "adam_l2_betas": (lambda ps: OPT.Adam(0.05, beta1=0.8, beta2=0.99, epsilon=1e-6, parameters=ps, weight_decay=0.1),
                      same(adam_ref(0.05, 0.8, 0.99, 1e-6, l2=0.1))),
    "adam_amsgrad": (lambda ps: OPT.Adam(0.05, parameters=ps, amsgrad=True), same(adam_ref(0.05, amsgrad=True))),
    "adamw": (lambda ps: OPT.AdamW(0.05, parameters=ps), same(adam_ref(0.05, decoupled=0.01))),
    "adamw_decay_fun": (
        lambda ps: OPT.AdamW(0.05, parameters=ps, weight_decay=0.2, apply_decay_param_fun=lambda n: n != "b"),
        {"w": adam_ref(0.05, decoupled=0.2), "b": adam_ref(0.05)}),
    "adamw_lr_ratio": (
        lambda ps: OPT.AdamW(0.05, parameters=ps, weight_decay=0.2, lr_ratio=lambda p: 0.5 if p.name == "b" else 1.0),
        {"w": adam_ref(0.05, decoupled=0.2), "b": adam_ref(0.025, decoupled=0.2)}),
    "adamw_amsgrad": (lambda ps: OPT.AdamW(0.05, parameters=ps, weight_decay=0.1, amsgrad=True),
                      same(adam_ref(0.05, decoupled=0.1, amsgrad=True))),
    "adamax": (lambda ps: OPT.Adamax(0.05, parameters=ps), same(adamax_ref(0.05))),
    "adamax_l2": (lambda ps: OPT.Adamax(0.05, beta1=0.8, parameters=ps, weight_decay=0.1),
                  same(adamax_ref(0.05, b1=0.8, l2=0.1))),
    "adagrad": (lambda ps: OPT.Adagrad(0.1, parameters=ps), same(adagrad_ref(0.1))),
    "adagrad_init_l2": (lambda ps: OPT.Adagrad(0.1, epsilon=1e-4, parameters=ps, weight_decay=0.05,
                                             initial_accumulator_value=0.3),
                        same(adagrad_ref(0.1, eps=1e-4, init=0.3, l2=0.05))),
    "adadelta": (lambda ps: OPT.Adadelta(1.0, parameters=ps), same(adadelta_ref(1.0))),
    "adadelta_l2": (lambda ps: OPT.Adadelta(0.5, epsilon=1e-4, rho=0.9, parameters=ps, weight_decay=0.1),
                    same(adadelta_ref(0.5, rho=0.9, eps=1e-4, l2=0.1))),
    "rmsprop": (lambda ps: OPT.RMSProp(0.01, parameters=ps), same(rmsprop_ref(0.01))),
    "rmsprop_centered_momentum_l2": (
        lambda ps: OPT.RMSProp(0.01, rho=0.9, epsilon=1e-4, momentum=0.5, centered=True, parameters=ps, weight_decay=0.1),
        same(rmsprop_ref(0.01, rho=0.9, eps=1e-4, momentum=0.5, centered=True, l2=0.1))),
    "lamb": (lambda ps: OPT.Lamb(0.05, parameters=ps), same(lamb_ref(0.05))),
    "lamb_exclude": (
        lambda ps: OPT.Lamb(0.05, lamb_weight_decay=0.1, parameters=ps, exclude_from_weight_decay_fn=lambda p: p.ndim == 1),
        {"w": lamb_ref(0.05, wd=0.1), "b": lamb_ref(0.05, wd=0.0)}),
    "lamb_no_decay_always_adapt": (
        lambda ps: OPT.Lamb(0.05, lamb_weight_decay=0.0, parameters=ps, always_adapt=True),
        same(lamb_ref(0.05, wd=0.0, always_adapt=True))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_update_rule_matches_the_published_formula(case):
    make_opt, rules = CASES[case]
    assert_close(run_oar(make_opt), run_ref(rules))


@pytest.mark.parametrize("case", ["sgd", "momentum", "adam", "adamw", "rmsprop", "lamb"])
def test_float32_parameters_follow_the_float64_reference(case):
    make_opt, rules = CASES[case]
    got = run_oar(make_opt, dtype="float32")
    assert_close(got, run_ref(rules), rtol=2e-5, atol=2e-6)


def test_defaults_are_paddles():
    w, b = make_params()
    adam = OPT.Adam(parameters=[w, b])
    assert adam.get_lr() == 0.001 and adam._defaults["beta1"] == 0.9 and adam._defaults["beta2"] == 0.999
    assert adam._defaults["epsilon"] == 1e-8
    assert OPT.AdamW(parameters=[w, b])._defaults["weight_decay"] == 0.01
    assert OPT.Momentum(parameters=[w, b])._defaults["momentum"] == 0.9
    assert OPT.SGD(parameters=[w, b]).get_lr() == 0.001
    assert OPT.Adagrad(0.1, parameters=[w, b])._defaults["epsilon"] == 1e-6
    assert OPT.Adadelta(parameters=[w, b])._defaults == {"epsilon": 1e-6, "rho": 0.95}
    rms = OPT.RMSProp(0.1, parameters=[w, b])._defaults
    assert (rms["rho"], rms["epsilon"], rms["momentum"], rms["centered"]) == (0.95, 1e-6, 0.0, False)
    lamb = OPT.Lamb(parameters=[w, b])._defaults
    assert (lamb["lamb_weight_decay"], lamb["epsilon"]) == (0.01, 1e-6)


def test_beta_given_as_tensor():
    got = run_oar(lambda ps: OPT.Adam(0.05, beta1=oar.to_tensor([0.8]), parameters=ps))
    assert_close(got, run_ref(same(adam_ref(0.05, b1=float(np.float32(0.8))))))  # the tensor's float32 value


# -- parameter groups, learning-rate scales, regularizers ------------------------------------
def test_param_groups_with_their_own_lr_weight_decay_and_hyperparameters():
    def make(ps):
        w, b = ps
        return OPT.Adam(0.05, weight_decay=0.01, parameters=[
            {"params": [w]},
            {"params": [b], "learning_rate": 0.5, "weight_decay": 0.1, "beta1": 0.8},
        ])
    want = run_ref({"w": adam_ref(0.05, l2=0.01), "b": adam_ref(0.025, b1=0.8, l2=0.1)})
    assert_close(run_oar(make), want)


def test_momentum_param_group_overrides_momentum_and_decay():
    def make(ps):
        w, b = ps
        return OPT.Momentum(0.05, 0.9, parameters=[{"params": [w], "weight_decay": 0.2},
                                                  {"params": [b], "momentum": 0.5, "use_nesterov": True}])
    want = run_ref({"w": momentum_ref(0.05, 0.9, l2=0.2), "b": momentum_ref(0.05, 0.5, nesterov=True)})
    assert_close(run_oar(make), want)


def test_adamw_param_group_weight_decay_is_its_coefficient():
    def make(ps):
        w, b = ps
        return OPT.AdamW(0.05, parameters=[{"params": [w]}, {"params": [b], "weight_decay": 0.0}], weight_decay=0.3)
    assert_close(run_oar(make), run_ref({"w": adam_ref(0.05, decoupled=0.3), "b": adam_ref(0.05)}))


def test_param_attr_learning_rate_multiplies_the_group_scale():
    def make(ps):
        w, b = ps
        return OPT.SGD(0.1, parameters=[{"params": [w], "learning_rate": 3.0}, {"params": [b]}])
    got = run_oar(make, w_kwargs={"learning_rate": 0.5}, b_kwargs={"learning_rate": 0.2})
    assert_close(got, run_ref({"w": sgd_ref(0.15), "b": sgd_ref(0.02)}))


def test_param_regularizer_wins_over_optimizer_weight_decay():
    got = run_oar(lambda ps: OPT.SGD(0.1, parameters=ps, weight_decay=0.05),
                  b_kwargs={"regularizer": oar.regularizer.L1Decay(0.2)})

    def l1(p, g, t, s):
        return p - 0.1 * (g + 0.2 * np.sign(p))
    assert_close(got, run_ref({"w": sgd_ref(0.1, l2=0.05), "b": l1}))


def test_l1_decay_as_weight_decay():
    got = run_oar(lambda ps: OPT.Adam(0.05, parameters=ps, weight_decay=oar.regularizer.L1Decay(0.1)))

    def rule():
        adam = adam_ref(0.05)

        def step(p, g, t, s):
            return adam(p, g + 0.1 * np.sign(p), t, s)
        return step
    assert_close(got, run_ref({"w": rule(), "b": rule()}))


def test_parameters_without_grad_or_frozen_are_untouched():
    w, b = make_params()
    frozen = Parameter(np.ones((2,)), name="frozen", trainable=False)
    unused = Parameter(np.ones((2,)), name="unused")
    opt = OPT.Adam(0.1, parameters=[w, b, frozen, unused])
    (loss_of(w, b) + (frozen * 2.0).sum()).backward()
    opt.step()
    np.testing.assert_array_equal(frozen.numpy(), np.ones(2))
    np.testing.assert_array_equal(unused.numpy(), np.ones(2))
    assert not any(key.startswith(("frozen", "unused")) for key in opt.state_dict())


def test_step_bumps_the_version_and_keeps_grads():
    w, b = make_params()
    opt = OPT.SGD(0.1, parameters=[w, b])
    loss_of(w, b).backward()
    grad_before = w.grad.numpy().copy()
    version = w.inplace_version
    opt.step()
    assert w.inplace_version == version + 1
    np.testing.assert_array_equal(w.grad.numpy(), grad_before)
    assert w.stop_gradient is False and w.is_leaf


def test_clear_grad_zeroes_or_drops():
    w, b = make_params()
    opt = OPT.SGD(0.1, parameters=[w, b])
    loss_of(w, b).backward()
    opt.clear_grad()
    np.testing.assert_array_equal(w.grad.numpy(), np.zeros_like(W0))
    opt.clear_gradients(set_to_zero=False)
    assert w.grad is None and b.grad is None


def test_minimize_runs_backward_once():
    w, b = make_params()
    opt = OPT.SGD(0.1, parameters=[w, b])
    ops, params_grads = opt.minimize(loss_of(w, b))
    assert ops == [] and [p.name for p, _ in params_grads] == ["w", "b"]
    want = run_ref(same(sgd_ref(0.1)), steps=1)
    assert_close({"w": w.numpy(), "b": b.numpy()}, want)
    # Paddle style, backward first: minimize must not run it a second time.
    w2, b2 = make_params()
    opt2 = OPT.SGD(0.1, parameters=[w2, b2])
    loss = loss_of(w2, b2)
    loss.backward()
    opt2.minimize(loss)
    assert_close({"w": w2.numpy(), "b": b2.numpy()}, want)


def test_minimize_parameters_and_no_grad_set():
    w, b = make_params()
    opt = OPT.SGD(0.1, parameters=[w, b])
    opt.minimize(loss_of(w, b), no_grad_set={"b"})
    np.testing.assert_array_equal(b.numpy(), B0)
    assert not np.array_equal(w.numpy(), W0)
    w, b = make_params()
    opt = OPT.SGD(0.1, parameters=[w, b])
    opt.minimize(loss_of(w, b), parameters=[b])
    np.testing.assert_array_equal(w.numpy(), W0)


# -- learning rate --------------------------------------------------------------------------
def test_get_set_lr():
    w, b = make_params()
    opt = OPT.Adam(0.1, parameters=[w, b])
    opt.set_lr(0.02)
    assert opt.get_lr() == 0.02
    with pytest.raises(ArgumentError, match="must be a float"):
        opt.set_lr("0.1")
    sched = lr_sched.StepDecay(0.5, step_size=1, gamma=0.5)
    opt.set_lr_scheduler(sched)
    assert opt.get_lr() == 0.5
    sched.step()
    assert opt.get_lr() == 0.25
    with pytest.raises(ArgumentError, match="LRScheduler"):
        opt.set_lr(0.1)
    with pytest.raises(ArgumentError, match="LRScheduler"):
        opt.set_lr_scheduler(0.1)


def test_scheduler_drives_the_update():
    sched = lr_sched.ExponentialDecay(0.1, gamma=0.5)
    got = run_oar(lambda ps: OPT.SGD(sched, parameters=ps), scheduler=sched)

    def rule(p, g, t, s):
        return p - 0.1 * 0.5 ** (t - 1) * g
    assert_close(got, run_ref(same(rule)))


# -- construction errors ---------------------------------------------------------------------
def test_construction_errors_say_what_is_wrong():
    w, b = make_params()
    with pytest.raises(ArgumentError, match="parameters is required"):
        OPT.SGD(0.1)
    with pytest.raises(ArgumentError, match="one Tensor"):
        OPT.SGD(0.1, parameters=w)
    with pytest.raises(ArgumentError, match="empty parameter list"):
        OPT.SGD(0.1, parameters=[])
    with pytest.raises(ArgumentError, match="learning_rate"):
        OPT.SGD("fast", parameters=[w])
    with pytest.raises(ArgumentError, match=r"unknown parameter-group keys \['lr'\]"):
        OPT.SGD(0.1, parameters=[{"params": [w], "lr": 0.1}])
    with pytest.raises(ArgumentError, match="more than one parameter group"):
        OPT.SGD(0.1, parameters=[{"params": [w]}, {"params": [w, b]}])
    with pytest.raises(ArgumentError, match="grad_clip"):
        OPT.SGD(0.1, parameters=[w], grad_clip=1.0)
    with pytest.raises(ArgumentError, match="a group's grad_clip"):
        OPT.SGD(0.1, parameters=[{"params": [w], "grad_clip": 5.0}])
    with pytest.raises(ArgumentError, match="weight_decay"):
        OPT.SGD(0.1, parameters=[w], weight_decay="l2")
    with pytest.raises(ArgumentError, match="decoupled decay coefficient"):
        OPT.AdamW(0.1, parameters=[w], weight_decay=oar.regularizer.L2Decay(0.1))


# -- state dicts -----------------------------------------------------------------------------
ROUND_TRIP = {
    "sgd": lambda ps, lr: OPT.SGD(lr, parameters=ps, weight_decay=0.01),
    "momentum": lambda ps, lr: OPT.Momentum(lr, 0.9, parameters=ps, use_nesterov=True, weight_decay=0.01),
    "adam": lambda ps, lr: OPT.Adam(lr, parameters=ps, amsgrad=True),
    "adamw": lambda ps, lr: OPT.AdamW(lr, parameters=ps),
    "adamax": lambda ps, lr: OPT.Adamax(lr, parameters=ps),
    "adagrad": lambda ps, lr: OPT.Adagrad(lr, parameters=ps, initial_accumulator_value=0.1),
    "adadelta": lambda ps, lr: OPT.Adadelta(lr, parameters=ps),
    "rmsprop": lambda ps, lr: OPT.RMSProp(lr, parameters=ps, momentum=0.5, centered=True),
    "lamb": lambda ps, lr: OPT.Lamb(lr, parameters=ps),
}


def _train(opt, sched, w, b, steps):
    for _ in range(steps):
        loss_of(w, b).backward()
        opt.step()
        opt.clear_grad()
        sched.step()


def _is_plain(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(_is_plain(v) for v in value)
    return value is None or isinstance(value, (oar.Tensor, bool, int, float, str))


@pytest.mark.parametrize("name", sorted(ROUND_TRIP))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_state_dict_round_trip_continues_the_same_trajectory(name, dtype):
    make = ROUND_TRIP[name]
    n = 8
    w, b = make_params(dtype)
    sched = lr_sched.MultiStepDecay(0.05, milestones=[3, 6], gamma=0.5)
    _train(make([w, b], sched), sched, w, b, n)

    w1, b1 = make_params(dtype)
    sched1 = lr_sched.MultiStepDecay(0.05, milestones=[3, 6], gamma=0.5)
    opt1 = make([w1, b1], sched1)
    _train(opt1, sched1, w1, b1, n // 2)
    saved = opt1.state_dict()
    assert _is_plain(saved)
    assert saved["LR_Scheduler"] == {"last_epoch": n // 2, "last_lr": sched1()}
    values = {"w": w1.numpy().copy(), "b": b1.numpy().copy()}
    _train(opt1, sched1, w1, b1, 1)  # the saved state is a snapshot: later steps do not change it
    assert opt1.state_dict()["LR_Scheduler"]["last_epoch"] == n // 2 + 1

    w2, b2 = make_params(dtype)  # a "new process": same names, values restored
    w2._data[...] = values["w"]
    b2._data[...] = values["b"]
    sched2 = lr_sched.MultiStepDecay(0.05, milestones=[3, 6], gamma=0.5)
    opt2 = make([w2, b2], sched2)
    opt2.set_state_dict(saved)
    assert sched2.last_epoch == n // 2
    _train(opt2, sched2, w2, b2, n - n // 2)
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_array_equal(b2.numpy(), b.numpy())


def test_resume_through_oar_save_and_load(tmp_path):
    w, b = make_params("float32")
    sched = lr_sched.LinearWarmup(lr_sched.StepDecay(0.05, 2), 2, 0.0, 0.05)
    _train(OPT.AdamW(sched, parameters=[w, b]), sched, w, b, 6)

    w1, b1 = make_params("float32")
    sched1 = lr_sched.LinearWarmup(lr_sched.StepDecay(0.05, 2), 2, 0.0, 0.05)
    opt1 = OPT.AdamW(sched1, parameters=[w1, b1])
    _train(opt1, sched1, w1, b1, 3)
    oar.save(opt1.state_dict(), str(tmp_path / "adamw.pdopt"))
    oar.save({"w": w1, "b": b1}, str(tmp_path / "params.pdparams"))

    params = oar.load(str(tmp_path / "params.pdparams"))
    w2, b2 = make_params("float32")
    w2._data[...] = params["w"].numpy()
    b2._data[...] = params["b"].numpy()
    sched2 = lr_sched.LinearWarmup(lr_sched.StepDecay(0.05, 2), 2, 0.0, 0.05)
    opt2 = OPT.AdamW(sched2, parameters=[w2, b2])
    opt2.set_state_dict(oar.load(str(tmp_path / "adamw.pdopt")))
    _train(opt2, sched2, w2, b2, 3)
    np.testing.assert_array_equal(w2.numpy(), w.numpy())
    np.testing.assert_array_equal(b2.numpy(), b.numpy())


def test_state_dict_uses_paddles_accumulator_names():
    w, b = make_params()
    opt = OPT.Adam(0.1, parameters=[w, b])
    assert opt.state_dict() == {}
    loss_of(w, b).backward()
    opt.step()
    sd = opt.state_dict()
    assert sorted(sd) == sorted(f"{p}_{acc}_0" for p in "wb" for acc in
                                ("moment1", "moment2", "beta1_pow_acc", "beta2_pow_acc"))
    assert sd["w_moment1_0"].shape == [3, 2] and sd["w_beta1_pow_acc_0"].shape == [1]
    np.testing.assert_allclose(sd["w_beta1_pow_acc_0"].numpy(), [0.9 ** 2])
    named = OPT.Momentum(0.1, parameters=[w, b], name="opt")
    loss_of(w, b).backward()
    named.step()
    assert sorted(named.state_dict()) == ["b_opt_velocity_0", "w_opt_velocity_0"]


def test_loaded_state_waits_for_the_first_step_and_is_kept_by_state_dict():
    w, b = make_params()
    opt = OPT.Adam(0.1, parameters=[w, b])
    loss_of(w, b).backward()
    opt.step()
    saved = opt.state_dict()
    w2, b2 = make_params()
    fresh = OPT.Adam(0.1, parameters=[w2, b2])
    fresh.set_state_dict(saved)
    again = fresh.state_dict()
    assert sorted(again) == sorted(saved)
    np.testing.assert_array_equal(again["w_moment2_0"].numpy(), saved["w_moment2_0"].numpy())


def test_set_state_dict_reports_every_mismatch_and_changes_nothing():
    w, b = make_params()
    opt = OPT.Adam(0.1, parameters=[w, b])
    loss_of(w, b).backward()
    opt.step()
    good = opt.state_dict()
    before = opt.state_dict()
    bad = dict(good)
    del bad["w_moment1_0"]
    bad["b_moment2_0"] = oar.zeros([5])
    bad["z_moment1_0"] = oar.zeros([1])
    bad["w_moment2_0"] = oar.ones([3, 2], dtype="float64")
    with pytest.raises(ArgumentError) as info:
        opt.set_state_dict(bad)
    text = str(info.value)
    assert "nothing was loaded" in text and "w_moment1_0" in text and "z_moment1_0" in text
    assert "b_moment2_0: checkpoint [5], optimizer [2]" in text
    after = opt.state_dict()
    for key in before:
        np.testing.assert_array_equal(after[key].numpy(), before[key].numpy())
    sched_opt = OPT.SGD(lr_sched.StepDecay(0.1, 2), parameters=[w, b])
    with pytest.raises(ArgumentError, match="LR_Scheduler"):
        sched_opt.set_state_dict({})


def test_state_dict_refuses_duplicate_parameter_names():
    w = Parameter(np.ones(2), name="same")
    v = Parameter(np.ones(2), name="same")
    opt = OPT.Momentum(0.1, parameters=[w, v])
    (w * v).sum().backward()
    opt.step()
    with pytest.raises(ArgumentError, match="two parameters are named 'same'"):
        opt.state_dict()


def test_multi_precision_keeps_float32_master_weights():
    w, b = make_params("float16")
    opt = OPT.Adam(0.05, parameters=[w, b], multi_precision=True)
    for _ in range(3):
        loss_of(w, b).backward()
        opt.step()
        opt.clear_grad()
    sd = opt.state_dict()
    master = sd["master_weights"]
    assert sorted(master) == ["b", "w"] and master["w"].dtype == oar.float32
    assert sd["w_moment1_0"].dtype == oar.float32  # low-precision parameters accumulate in float32
    np.testing.assert_array_equal(w.numpy(), master["w"].numpy().astype(np.float16))
    # Restored master weights continue the float32 trajectory exactly.
    w2, b2 = make_params("float16")
    w2._data[...] = w.numpy()
    b2._data[...] = b.numpy()
    opt2 = OPT.Adam(0.05, parameters=[w2, b2], multi_precision=True)
    opt2.set_state_dict(sd)
    for p, q, o in ((w, b, opt), (w2, b2, opt2)):
        loss_of(p, q).backward()
        o.step()
    np.testing.assert_array_equal(opt.state_dict()["master_weights"]["w"].numpy(),
                                  opt2.state_dict()["master_weights"]["w"].numpy())


def test_float16_without_master_weights_still_trains():
    w, b = make_params("float16")
    opt = OPT.Momentum(0.05, parameters=[w, b])
    first = float(loss_of(w, b))
    for _ in range(20):
        loss_of(w, b).backward()
        opt.step()
        opt.clear_grad()
    assert w.dtype == oar.float16 and float(loss_of(w, b)) < first
    assert "master_weights" not in opt.state_dict()


# -- a real training loop ---------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda ps: OPT.SGD(0.1, parameters=ps),
    lambda ps: OPT.Momentum(0.05, momentum=0.9, parameters=ps),
    lambda ps: OPT.Adam(0.05, parameters=ps),
    lambda ps: OPT.AdamW(0.05, parameters=ps, weight_decay=0.01),
], ids=["SGD", "Momentum", "Adam", "AdamW"])
def test_linear_regression_loss_falls_tenfold(make):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    true_w = rng.normal(size=(4, 1)).astype(np.float32)
    y = x @ true_w + 0.5
    oar.seed(3)
    net = oar.nn.Linear(4, 1)
    opt = make(net.parameters())
    xs, ys = oar.to_tensor(x), oar.to_tensor(y)
    losses = []
    for _ in range(100):
        loss = ((net(xs) - ys) ** 2).mean()
        loss.backward()
        opt.step()
        opt.clear_grad()
        losses.append(float(loss))
    assert losses[-1] < losses[0] / 10, (losses[0], losses[-1])
