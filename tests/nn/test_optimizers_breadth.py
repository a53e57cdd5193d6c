"""ASGD, NAdam, RAdam and Rprop: step by step against numpy re-implementations of Paddle's
update formulas (float64), and against trajectories recorded from Paddle 3.3.1."""

from __future__ import annotations

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.testing import TOLERANCES

START = [0.5, -1.0, 2.0]
# The gradient of each step (the loss is (g * p).sum()); signs flip, for Rprop.
GRADS = np.array([[0.3, -1.2, 2.0], [0.5, 0.7, -1.5], [-0.2, 0.9, 1.0], [0.4, -0.6, 0.8], [0.1, 0.2, -0.3]])
RTOL, ATOL = TOLERANCES["float64"]
# Paddle keeps beta1/beta2 as float32 attributes (0.999 -> 0.99900001287...), so its float64
# trajectories differ from the float64 formulas by a few 1e-8, relatively: float32's tolerance.
PADDLE_RTOL, PADDLE_ATOL = TOLERANCES["float32"]


def trajectory(make, grads=GRADS, dtype="float64"):
    p = oar.to_tensor(np.array(START), dtype=dtype, stop_gradient=False)
    opt = make([p])
    out = []
    for g in grads:
        (oar.to_tensor(g, dtype=dtype) * p).sum().backward()
        opt.step()
        opt.clear_grad()
        out.append(p.numpy().copy())
    return np.array(out), opt


def nadam_reference(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8, psi=0.004, decay=0.0):
    p, m, v, mu_product, out = np.array(START), np.zeros(3), np.zeros(3), 1.0, []
    for t, g in enumerate(GRADS, start=1):
        g = g + decay * p
        mu_t = beta1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        mu_product *= mu_t
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = mu_next * m / (1 - mu_product * mu_next) + (1 - mu_t) * g / (1 - mu_product)
        p = p - lr * m_hat / (np.sqrt(v / (1 - beta2 ** t)) + eps)
        out.append(p)
    return np.array(out)


def radam_reference(grads, lr=0.1, beta1=0.9, beta2=0.999, eps=1e-8):
    p, m, v, out = np.array(START), np.zeros(3), np.zeros(3), []
    rho_inf = 2 / (1 - beta2) - 1
    for t, g in enumerate(grads, start=1):
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        m_hat = m / (1 - beta1 ** t)
        rho_t = rho_inf - 2 * t * beta2 ** t / (1 - beta2 ** t)
        if rho_t > 5:
            l_t = np.sqrt(1 - beta2 ** t) / (np.sqrt(v) + eps)
            r_t = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p = p - lr * m_hat * r_t * l_t
        else:
            p = p - lr * m_hat
        out.append(p)
    return np.array(out)


def asgd_reference(lr, batch_num, decay=0.0):
    p, d, ys, out = np.array(START), np.zeros(3), np.zeros((batch_num, 3)), []
    for m, g in enumerate(GRADS):
        g = g + decay * p
        d = d - ys[m % batch_num] + g
        ys[m % batch_num] = g
        p = p - lr * d / min(m + 1, batch_num)
        out.append(p)
    return np.array(out)


def rprop_reference(lr, low, high, shrink=0.5, grow=1.2):
    p, prev, rates, out = np.array(START), np.zeros(3), np.full(3, lr), []
    for g in GRADS:
        g = g.copy()
        for i in range(3):
            if g[i] * prev[i] > 0:
                rates[i] = min(rates[i] * grow, high)
            elif g[i] * prev[i] < 0:
                rates[i] = max(rates[i] * shrink, low)
                g[i] = 0.0
            p[i] -= np.sign(g[i]) * rates[i]
        prev = g
        out.append(p.copy())
    return np.array(out)


# Paddle 3.3.1's parameters after each of the five steps (float64, recorded with the same script).
PADDLE = {
    "nadam": [[0.3943548245654688, -0.8943548219243395, 1.8943548215721888],
              [0.301492843127797, -0.9415807639850613, 1.9520289503832076],
              [0.328985823262134, -1.0013005475668784, 1.9092687013157483],
              [0.2560415957864905, -0.9617112685818893, 1.8702533737326505],
              [0.2273818170229116, -0.976492928020552, 1.8783474069877824]],
    "radam": [[0.47, -0.88, 1.8], [0.42947368407843844, -0.8600000012548347, 1.784210528627327],
              [0.41128180262645103, -0.8805904089505797, 1.7373470606857464],
              [0.38674850816523365, -0.8777465594152021, 1.6808480785656545],
              [0.3657641612634114, -0.8804810475562619, 1.6454716541907766]],
    "asgd": [[0.47, -0.88, 1.8], [0.42999999999999994, -0.855, 1.7750000000000001],
             [0.4149999999999999, -0.935, 1.8], [0.4049999999999999, -0.9500000000000001, 1.71],
             [0.3799999999999999, -0.93, 1.685]],
    "asgd_decay": [[0.465, -0.87, 1.78], [0.420175, -0.83565, 1.7361], [0.39555775000000004, -0.8399645, 1.667713],
                   [0.36795530750000005, -0.8648124516666666, 1.6404336233333334],
                   [0.3540096806416667, -0.8730110284944445, 1.5736194679222224]],
    "rprop": [[0.4, -0.9, 1.9], [0.28, -0.9, 1.9], [0.28, -0.9500000000000001, 1.8499999999999999],
              [0.22000000000000003, -0.9500000000000001, 1.7899999999999998],
              [0.14800000000000002, -0.9750000000000001, 1.7899999999999998]],
}

CASES = {
    "nadam": (lambda ps: oar.optimizer.NAdam(learning_rate=0.1, parameters=ps), nadam_reference),
    "radam": (lambda ps: oar.optimizer.RAdam(learning_rate=0.1, parameters=ps), lambda: radam_reference(GRADS)),
    "asgd": (lambda ps: oar.optimizer.ASGD(learning_rate=0.1, batch_num=2, parameters=ps),
             lambda: asgd_reference(0.1, 2)),
    "asgd_decay": (lambda ps: oar.optimizer.ASGD(learning_rate=0.1, batch_num=3, weight_decay=0.1, parameters=ps),
                   lambda: asgd_reference(0.1, 3, decay=0.1)),
    "rprop": (lambda ps: oar.optimizer.Rprop(learning_rate=0.1, learning_rate_range=(0.01, 0.15), parameters=ps),
              lambda: rprop_reference(0.1, 0.01, 0.15)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_steps_follow_the_formula_and_paddle(case):
    make, reference = CASES[case]
    got, _ = trajectory(make)
    np.testing.assert_allclose(got, reference(), rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(got, PADDLE[case], rtol=PADDLE_RTOL, atol=PADDLE_ATOL)


def test_nadam_with_decay_and_momentum_decay():
    got, _ = trajectory(lambda ps: oar.optimizer.NAdam(learning_rate=0.1, weight_decay=0.05, momentum_decay=0.01,
                                                       parameters=ps))
    np.testing.assert_allclose(got, nadam_reference(psi=0.01, decay=0.05), rtol=RTOL, atol=ATOL)
    # Paddle 3.3.1's last step.
    np.testing.assert_allclose(got[-1], [0.22182015927337892, -0.9604907239706828, 1.86081026725954],
                               rtol=PADDLE_RTOL, atol=PADDLE_ATOL)


def test_radam_rectifies_once_the_variance_is_tractable():
    grads = np.tile([0.3, -0.2, 0.1], (9, 1))  # rho_t passes 5 at step 6 (beta2=0.999)
    got, _ = trajectory(lambda ps: oar.optimizer.RAdam(learning_rate=0.1, parameters=ps), grads=grads)
    np.testing.assert_allclose(got, radam_reference(grads), rtol=RTOL, atol=ATOL)
    # Paddle 3.3.1, parameter 0 after steps 5 to 8 (the last plain step, then rectified ones).
    np.testing.assert_allclose(got[4:8, 0], [0.34999999999999987, 0.34741790645578413, 0.3441440474039707,
                                             0.3402702460961214], rtol=PADDLE_RTOL, atol=PADDLE_ATOL)


def test_accumulators_have_paddles_names_and_shapes():
    expected = {"nadam": {"momentum_decay_pow": [3], "beta2_pow": [3], "mu_product": [3], "moment1": [3],
                          "moment2": [3]},
                "radam": {"beta1_pow": [3], "beta2_pow": [3], "rho": [3], "moment1": [3], "moment2": [3]},
                "asgd": {"d": [3], "y": [2, 3], "m": [1]},
                "rprop": {"prevs": [3], "learning_rates": [3]}}
    for case, accumulators in expected.items():
        _, opt = trajectory(CASES[case][0])
        state = {k.rsplit("_", 1)[0]: list(v.shape) for k, v in opt.state_dict().items() if hasattr(v, "shape")}
        found = {name: shape for key, shape in state.items() for name in accumulators if key.endswith("_" + name)}
        assert found == accumulators, case
    _, opt = trajectory(CASES["rprop"][0])
    rates = [v for k, v in opt.state_dict().items() if k.endswith("learning_rates_0")][0]
    np.testing.assert_allclose(rates.numpy(), [0.072, 0.025, 0.03])  # Paddle 3.3.1's


def test_state_dict_round_trip_continues_the_same_trajectory():
    for case in ("nadam", "radam", "asgd", "rprop"):
        make = CASES[case][0]
        p = oar.to_tensor(np.array(START), dtype="float64", stop_gradient=False)
        opt = make([p])
        for g in GRADS[:3]:
            (oar.to_tensor(g) * p).sum().backward()
            opt.step()
            opt.clear_grad()
        q = oar.to_tensor(p.numpy(), stop_gradient=False)
        q.name = p.name
        resumed = make([q])
        resumed.set_state_dict(opt.state_dict())
        for g in GRADS[3:]:
            for param, optimizer in ((p, opt), (q, resumed)):
                (oar.to_tensor(g) * param).sum().backward()
                optimizer.step()
                optimizer.clear_grad()
        np.testing.assert_allclose(q.numpy(), p.numpy(), rtol=RTOL, atol=ATOL, err_msg=case)


def test_float32_and_a_layer_train():
    oar.seed(0)
    x, y = oar.randn([16, 3]), oar.randn([16, 1])
    for make in (oar.optimizer.NAdam, oar.optimizer.RAdam, oar.optimizer.ASGD):
        net = oar.nn.Linear(3, 1)
        opt = make(learning_rate=0.05, parameters=net.parameters())
        losses = []
        for _ in range(30):
            loss = ((net(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
        assert losses[-1] < losses[0], make.__name__
        assert net.weight.dtype == oar.float32


def test_bad_hyperparameters_are_refused():
    params = [oar.to_tensor([1.0], stop_gradient=False)]
    with pytest.raises(ArgumentError, match="batch_num"):
        oar.optimizer.ASGD(batch_num=0, parameters=params)
    with pytest.raises(ArgumentError, match="learning_rate_range"):
        oar.optimizer.Rprop(learning_rate=100.0, parameters=params)
    with pytest.raises(ArgumentError, match="etas"):
        oar.optimizer.Rprop(etas=(1.5, 1.2), parameters=params)
    with pytest.raises(ArgumentError, match="beta1"):
        oar.optimizer.NAdam(beta1=1.0, parameters=params)
    with pytest.raises(ArgumentError, match="momentum_decay"):
        oar.optimizer.NAdam(momentum_decay=-1.0, parameters=params)
    with pytest.raises(ArgumentError, match="beta2"):
        oar.optimizer.RAdam(beta2=-0.1, parameters=params)


def _rosenbrock_run(line_search_fn, steps=4):
    x = oar.to_tensor(np.array([-1.2, 1.0]), dtype="float64", stop_gradient=False)
    opt = oar.optimizer.LBFGS(learning_rate=1.0 if line_search_fn else 0.001, max_iter=10, history_size=5,
                              line_search_fn=line_search_fn, parameters=[x])

    def closure():
        opt.clear_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    trajectory = []
    for _ in range(steps):
        loss = opt.step(closure)
        trajectory.append([*x.tolist(), float(loss)])
    return np.array(trajectory), opt


# Paddle 3.3.1 on the Rosenbrock function from (-1.2, 1): (x0, x1, the first closure's loss) after
# each step(closure) of max_iter=10, history_size=5; then the state's func_evals and n_iter.
PADDLE_LBFGS = {
    None: ([[-1.198083595986277, 1.0010322298527043, 24.199999999999996],
            [-1.1969017032535785, 1.002286576243169, 23.69948128548805],
            [-1.1958898756590013, 1.003984389818329, 23.341076883732327],
            [-1.195056791561136, 1.0061327119338221, 22.983866231543793]], 40, 40),
    "strong_wolfe": ([[-0.6369761095844978, 0.44016713752996645, 24.199999999999996],
                      [0.41535421662382044, 0.1606325520896662, 2.7982234496321445],
                      [0.8828094122704152, 0.7742730457561341, 0.3559397542100037],
                      [0.9999898155509106, 0.9999781346171315, 0.016313677126200535]], 46, 35),
}


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_lbfgs_follows_paddle_on_rosenbrock(line_search_fn):
    got, opt = _rosenbrock_run(line_search_fn)
    expected, evaluations, iterations = PADDLE_LBFGS[line_search_fn]
    # The line search's cubic interpolation amplifies last-bit differences a little: float32's tolerance.
    np.testing.assert_allclose(got, expected, rtol=PADDLE_RTOL, atol=PADDLE_ATOL)
    state = opt.state_dict()["state"]
    assert (state["func_evals"], state["n_iter"]) == (evaluations, iterations)


def test_lbfgs_solves_a_quadratic_with_the_line_search():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 4))
    h, b = a @ a.T + 4 * np.eye(4), rng.normal(size=4)
    x = oar.to_tensor(np.zeros(4), stop_gradient=False)
    h_t, b_t = oar.to_tensor(h), oar.to_tensor(b)
    opt = oar.optimizer.LBFGS(parameters=[x], line_search_fn="strong_wolfe", tolerance_grad=1e-12)

    def closure():
        opt.clear_grad()
        loss = 0.5 * (x * oar.matmul(h_t, x)).sum() - (b_t * x).sum()
        loss.backward()
        return loss

    opt.step(closure)
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(h, b), rtol=1e-6, atol=1e-8)


def test_lbfgs_state_round_trip_and_errors():
    _, opt = _rosenbrock_run("strong_wolfe", steps=2)
    x = opt._lbfgs_params[0]
    resumed_x = oar.to_tensor(x.numpy(), stop_gradient=False)
    resumed = oar.optimizer.LBFGS(max_iter=10, history_size=5, line_search_fn="strong_wolfe", parameters=[resumed_x])
    resumed.set_state_dict(opt.state_dict())
    for param, optimizer in ((x, opt), (resumed_x, resumed)):
        def closure(param=param, optimizer=optimizer):
            optimizer.clear_grad()
            loss = (1 - param[0]) ** 2 + 100 * (param[1] - param[0] ** 2) ** 2
            loss.backward()
            return loss

        optimizer.step(closure)
    np.testing.assert_allclose(resumed_x.numpy(), x.numpy(), rtol=RTOL, atol=ATOL)
    with pytest.raises(ArgumentError, match="line_search_fn"):
        oar.optimizer.LBFGS(line_search_fn="backtracking", parameters=[x])
    with pytest.raises(ArgumentError, match="closure"):
        opt.step(None)
    with pytest.raises(NotImplementedError, match="step"):
        opt.minimize(oar.ones([1]))
