"""oar.optimizer.lr: each scheduler's sequence against its published formula, jumps, state dicts."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import oar
from oar.errors import ArgumentError
from oar.optimizer import lr

EPOCHS = 25


def sequence(scheduler, epochs=EPOCHS, metrics=None):
    """The learning rate at epochs 0..epochs-1, stepping after each."""
    out = []
    for epoch in range(epochs):
        out.append(scheduler())
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[epoch])
    return out


def check(scheduler, formula, epochs=EPOCHS, rtol=1e-12):
    got = sequence(scheduler, epochs)
    want = [formula(e) for e in range(epochs)]
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-15)


def test_noam_decay():
    check(lr.NoamDecay(d_model=64, warmup_steps=5, learning_rate=2.0),
          lambda e: 2.0 * 64 ** -0.5 * min(1 if e == 0 else e ** -0.5, e * 5 ** -1.5))


def test_piecewise_decay():
    check(lr.PiecewiseDecay(boundaries=[3, 8], values=[1.0, 0.5, 0.1]),
          lambda e: 1.0 if e < 3 else 0.5 if e < 8 else 0.1)


def test_natural_exp_decay():
    check(lr.NaturalExpDecay(0.5, gamma=0.2), lambda e: 0.5 * math.exp(-0.2 * e))


def test_inverse_time_decay():
    check(lr.InverseTimeDecay(0.5, gamma=0.3), lambda e: 0.5 / (1 + 0.3 * e))


def test_polynomial_decay():
    check(lr.PolynomialDecay(0.5, decay_steps=10, end_lr=0.01, power=2.0),
          lambda e: (0.5 - 0.01) * (1 - min(e, 10) / 10) ** 2 + 0.01)


def test_polynomial_decay_cycle():
    def formula(e):
        steps = 10 * (1 if e == 0 else math.ceil(e / 10))
        return (0.5 - 0.01) * (1 - e / steps) ** 1.0 + 0.01
    check(lr.PolynomialDecay(0.5, decay_steps=10, end_lr=0.01, cycle=True), formula)
    rising = sequence(lr.PolynomialDecay(0.5, decay_steps=10, end_lr=0.01, cycle=True), 25)
    assert rising[11] > rising[10]  # the cycle restarts


def test_linear_warmup_to_a_float():
    check(lr.LinearWarmup(0.5, warmup_steps=4, start_lr=0.1, end_lr=0.5),
          lambda e: 0.1 + (0.5 - 0.1) * e / 4 if e < 4 else 0.5)


def test_linear_warmup_wrapping_a_scheduler():
    check(lr.LinearWarmup(lr.CosineAnnealingDecay(0.5, T_max=10), warmup_steps=4, start_lr=0.0, end_lr=0.5),
          lambda e: 0.5 * e / 4 if e < 4 else 0.5 * (1 + math.cos(math.pi * (e - 4) / 10)) / 2)


def test_exponential_decay():
    check(lr.ExponentialDecay(0.5, gamma=0.9), lambda e: 0.5 * 0.9 ** e)


def test_multi_step_decay():
    check(lr.MultiStepDecay(0.5, milestones=[4, 9, 15], gamma=0.5),
          lambda e: 0.5 * 0.5 ** sum(e >= m for m in (4, 9, 15)))


def test_step_decay():
    check(lr.StepDecay(0.5, step_size=4, gamma=0.3), lambda e: 0.5 * 0.3 ** (e // 4))


def test_lambda_decay():
    check(lr.LambdaDecay(0.5, lr_lambda=lambda e: 0.95 ** e), lambda e: 0.5 * 0.95 ** e)


def test_multiplicative_decay():
    check(lr.MultiplicativeDecay(0.5, lr_lambda=lambda e: 0.9 if e % 2 else 0.8),
          lambda e: 0.5 * math.prod(0.9 if k % 2 else 0.8 for k in range(1, e + 1)))


def test_cosine_annealing_decay_matches_the_closed_form():
    check(lr.CosineAnnealingDecay(0.5, T_max=6, eta_min=0.05),
          lambda e: 0.05 + (0.5 - 0.05) * (1 + math.cos(math.pi * e / 6)) / 2, epochs=30, rtol=1e-9)


def test_one_cycle_lr_two_phases():
    total, pct, top, div, end = 20, 0.3, 1.0, 25.0, 1e-4
    start = top / div
    up_end = pct * total - 1

    def cos(a, b, x):
        return b + (a - b) * (1 + math.cos(math.pi * x)) / 2

    def formula(e):
        if e <= up_end:
            return cos(start, top, e / up_end)
        return cos(top, end, (e - up_end) / (total - 1 - up_end))
    check(lr.OneCycleLR(top, total_steps=total), formula, epochs=total)
    seq = sequence(lr.OneCycleLR(top, total_steps=total), total)
    assert seq[0] == pytest.approx(start) and max(seq) == pytest.approx(top) and seq[-1] == pytest.approx(end)


def test_one_cycle_lr_three_phases_linear():
    total, pct, top, div, end = 20, 0.25, 0.8, 10.0, 1e-3
    start = top / div
    b1, b2 = pct * total - 1, 2 * pct * total - 2

    def lin(a, b, x):
        return a + (b - a) * x

    def formula(e):
        if e <= b1:
            return lin(start, top, e / b1)
        if e <= b2:
            return lin(top, start, (e - b1) / (b2 - b1))
        return lin(start, end, (e - b2) / (total - 1 - b2))
    check(lr.OneCycleLR(top, total, divide_factor=div, end_learning_rate=end, phase_pct=pct,
                        anneal_strategy="linear", three_phase=True), formula, epochs=total)


def test_one_cycle_lr_refuses_to_step_past_the_end():
    s = lr.OneCycleLR(1.0, total_steps=3)
    for _ in range(3):
        s.step()
    with pytest.raises(ArgumentError, match="total_steps is 3"):
        s.step()


def test_cyclic_lr_triangular_is_the_papers_formula():
    base, top, step = 0.1, 0.5, 4

    def formula(e):  # Smith (2017): the triangular policy
        cycle = math.floor(1 + e / (2 * step))
        x = abs(e / step - 2 * cycle + 1)
        return base + (top - base) * max(0.0, 1 - x)
    check(lr.CyclicLR(base, top, step_size_up=step), formula, epochs=30)


def test_cyclic_lr_triangular2_and_exp_range_scale_the_amplitude():
    base, top, up, down = 0.1, 0.5, 3, 5

    def shape(e):
        pct = (e % (up + down)) / (up + down)
        split = up / (up + down)
        return pct / split if pct <= split else (1 - pct) / (1 - split)

    def cycle(e):
        return 1 + e // (up + down)
    check(lr.CyclicLR(base, top, up, down, mode="triangular2"),
          lambda e: base + (top - base) * shape(e) / 2 ** (cycle(e) - 1), epochs=30)
    check(lr.CyclicLR(base, top, up, down, mode="exp_range", exp_gamma=0.9),
          lambda e: base + (top - base) * shape(e) * 0.9 ** e, epochs=30)
    check(lr.CyclicLR(base, top, up, down, scale_fn=lambda x: 1 / x, scale_mode="cycle"),
          lambda e: base + (top - base) * shape(e) / cycle(e), epochs=30)


def test_linear_lr():
    check(lr.LinearLR(0.5, total_steps=8, start_factor=0.25, end_factor=1.0),
          lambda e: 0.5 * (0.25 + 0.75 * min(e, 8) / 8), rtol=1e-9)


def test_cosine_annealing_warm_restarts():
    def formula(e):
        t_i, t_cur = 3, e
        while t_cur >= t_i:
            t_cur -= t_i
            t_i *= 2
        return 0.01 + (0.5 - 0.01) * (1 + math.cos(math.pi * t_cur / t_i)) / 2
    check(lr.CosineAnnealingWarmRestarts(0.5, T_0=3, T_mult=2, eta_min=0.01), formula, epochs=30)


# -- ReduceOnPlateau ----------------------------------------------------------------------------
def test_reduce_on_plateau_min_rel():
    s = lr.ReduceOnPlateau(1.0, factor=0.5, patience=2, threshold=0.1)
    losses = [1.0, 0.95, 0.94, 0.93, 0.5, 0.5, 0.5, 0.5]
    # 0.95 is not 10% better than 1.0: bad epochs 1, 2, 3 -> reduce after the third
    assert sequence(s, len(losses), losses) == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.5]
    assert s() == 0.25 and s.best == 0.5 and s.last_epoch == len(losses)


def test_reduce_on_plateau_max_abs_cooldown_and_min_lr():
    s = lr.ReduceOnPlateau(1.0, mode="max", factor=0.1, patience=0, threshold=0.05, threshold_mode="abs",
                           cooldown=1, min_lr=0.005)
    accs = [0.5, 0.52, 0.6, 0.6, 0.6, 0.6, 0.6]
    got = sequence(s, len(accs), accs)
    # 0.52 is no 0.05 better: reduce; cooldown skips 0.6; 0.6 then plateaus; the floor is min_lr
    assert got == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.1, 0.01, 0.01])
    assert s() == pytest.approx(0.005)


def test_reduce_on_plateau_takes_tensors_and_arrays():
    s = lr.ReduceOnPlateau(1.0, patience=0)
    s.step(oar.to_tensor(2.0))
    s.step(np.array([3.0]))
    assert s.best == 2.0 and s() == pytest.approx(0.1)
    with pytest.raises(ArgumentError, match="one element"):
        s.step(oar.to_tensor([1.0, 2.0]))
    with pytest.raises(ArgumentError, match="must be a number"):
        s.step("loss")


def test_reduce_on_plateau_state_round_trip():
    a = lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=2)
    metrics = [1.0, 1.0, 1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9]
    full = sequence(a, len(metrics), metrics)
    b = lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=2)
    first = sequence(b, 4, metrics)
    state = b.state_dict()
    assert set(state) == {"cooldown_counter", "best", "num_bad_epochs", "last_epoch", "last_lr"}
    c = lr.ReduceOnPlateau(1.0, factor=0.5, patience=1, cooldown=2)
    c.set_state_dict(state)
    assert first + sequence(c, len(metrics) - 4, metrics[4:]) == full


# -- stepping to an epoch, state dicts, messages --------------------------------------------------
def test_step_to_an_epoch_uses_the_closed_form():
    s = lr.StepDecay(0.5, step_size=3, gamma=0.5)
    s.step(7)
    assert s.last_epoch == 7 and s() == 0.5 * 0.5 ** 2
    c = lr.CosineAnnealingDecay(0.5, T_max=10)
    c.step(4)
    assert c() == pytest.approx(0.5 * (1 + math.cos(math.pi * 4 / 10)) / 2, rel=1e-12)


MAKERS = {
    "noam": lambda: lr.NoamDecay(32, 4),
    "piecewise": lambda: lr.PiecewiseDecay([2, 5], [0.3, 0.2, 0.1]),
    "natural_exp": lambda: lr.NaturalExpDecay(0.5, 0.1),
    "inverse_time": lambda: lr.InverseTimeDecay(0.5, 0.1),
    "polynomial": lambda: lr.PolynomialDecay(0.5, 4, cycle=True),
    "warmup": lambda: lr.LinearWarmup(lr.CosineAnnealingDecay(0.5, 5), 3, 0.0, 0.5),
    "exponential": lambda: lr.ExponentialDecay(0.5, 0.8),
    "multi_step": lambda: lr.MultiStepDecay(0.5, [2, 6]),
    "step": lambda: lr.StepDecay(0.5, 3),
    "lambda": lambda: lr.LambdaDecay(0.5, lambda e: 1 / (e + 1)),
    "multiplicative": lambda: lr.MultiplicativeDecay(0.5, lambda e: 0.9),
    "cosine": lambda: lr.CosineAnnealingDecay(0.5, 4, 0.01),
    "one_cycle": lambda: lr.OneCycleLR(1.0, 20),
    "cyclic": lambda: lr.CyclicLR(0.1, 0.5, 3, mode="triangular2"),
    "linear": lambda: lr.LinearLR(0.5, 6),
    "warm_restarts": lambda: lr.CosineAnnealingWarmRestarts(0.5, 2, 2),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_state_dict_round_trip_continues_the_sequence(name):
    full = sequence(MAKERS[name](), 16)
    first = MAKERS[name]()
    head = sequence(first, 7)
    state = first.state_dict()
    assert all(isinstance(v, (int, float, dict)) for v in state.values()), state
    resumed = MAKERS[name]()
    resumed.set_state_dict(state)
    np.testing.assert_allclose(head + sequence(resumed, 9), full, rtol=1e-12)


def test_linear_warmup_state_holds_the_inner_scheduler():
    s = lr.LinearWarmup(lr.StepDecay(0.5, 2), 3, 0.0, 0.5)
    for _ in range(6):
        s.step()
    state = s.state_dict()
    assert state["LinearWarmup_LR"] == {"last_epoch": 3, "last_lr": 0.05}
    with pytest.raises(ArgumentError, match="LinearWarmup_LR"):
        lr.LinearWarmup(lr.StepDecay(0.5, 2), 3, 0.0, 0.5).set_state_dict({"last_epoch": 1, "last_lr": 0.1})


def test_set_state_dict_errors_and_warnings():
    s = lr.StepDecay(0.5, 2)
    with pytest.raises(ArgumentError, match="lacks"):
        s.set_state_dict({"last_epoch": 3})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.set_state_dict({"last_epoch": 3, "last_lr": 0.05, "extra": 1})
    assert any("unused entries ['extra']" in str(w.message) for w in caught)
    assert s.last_epoch == 3 and s() == 0.05


def test_verbose_prints_each_step(capsys):
    s = lr.ExponentialDecay(1.0, 0.5, verbose=True)
    s.step()
    out = capsys.readouterr().out.splitlines()
    assert out == ["Epoch 0: ExponentialDecay set learning rate to 1.0.",
                   "Epoch 1: ExponentialDecay set learning rate to 0.5."]


def test_custom_scheduler_subclass():
    class Halving(lr.LRScheduler):
        def get_lr(self):
            return self.base_lr * 0.5 ** self.last_epoch

    check(Halving(0.8), lambda e: 0.8 * 0.5 ** e)
    with pytest.raises(NotImplementedError):
        lr.LRScheduler(0.1)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: lr.StepDecay(0.5, step_size=2.0), "step_size must be a positive int"),
    (lambda: lr.StepDecay(0.5, step_size=2, gamma=1.5), "gamma must be < 1.0"),
    (lambda: lr.MultiStepDecay(0.5, [5, 3]), "milestones must increase"),
    (lambda: lr.ExponentialDecay(0.5, gamma=1.0), r"gamma must be in \(0, 1\)"),
    (lambda: lr.PiecewiseDecay([1, 2], [0.1, 0.2]), "one more element"),
    (lambda: lr.LinearWarmup(0.5, 2, start_lr=0.5, end_lr=0.1), "greater than start_lr"),
    (lambda: lr.CosineAnnealingDecay(0.5, T_max=0), "T_max must be a positive int"),
    (lambda: lr.OneCycleLR(1.0, 10, phase_pct=0.6, three_phase=True), "phase_pct must be < 0.5"),
    (lambda: lr.OneCycleLR(1.0, 10, anneal_strategy="exp"), "anneal_strategy"),
    (lambda: lr.CyclicLR(0.1, 0.5, 3, mode="sine"), "mode must be"),
    (lambda: lr.ReduceOnPlateau(0.1, mode="lowest"), "mode must be 'min' or 'max'"),
    (lambda: lr.ReduceOnPlateau(0.1, factor=2.0), "factor must be < 1.0"),
    (lambda: lr.LambdaDecay(0.5, lr_lambda=0.9), "lr_lambda must be a function"),
    (lambda: lr.StepDecay(-0.5, 2), "learning_rate must be >= 0"),
    (lambda: lr.StepDecay("0.5", 2), "learning_rate must be a float"),
])
def test_bad_arguments_are_reported(make, message):
    with pytest.raises(ArgumentError, match=message):
        make()
