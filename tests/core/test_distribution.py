"""oar.distribution against references that do not share its formulas: densities written out in
numpy (``math.lgamma``; scipy is not installed), moments and entropies by numerical integration or
summation of those densities, KL divergences by integrating ``p log(p / q)``, and sample
statistics within bounds that follow from the sample size."""

from __future__ import annotations

import math

import numpy as np
import pytest

import oar
from oar import distribution as D
from oar.distribution._special import digamma
from oar.distribution._special import lgamma as oar_lgamma
from oar.errors import ArgumentError
from oar.testing import TOLERANCES

RTOL64, ATOL64 = TOLERANCES["float64"]
# The integrals are trapezoid sums on 400k points over a truncated range: their error (grid and
# tail) stays below 1e-6 relative for the smooth, light-tailed densities used here.
QUAD_RTOL, QUAD_ATOL = 1e-6, 1e-7
N_SAMPLES = 200_000
lgamma = np.vectorize(math.lgamma)


def f64(x):
    return oar.to_tensor(np.asarray(x, dtype=np.float64))


def value(t) -> np.ndarray:
    return np.asarray(t.numpy(), dtype=np.float64)


# name -> (make the distribution, numpy log density, integration grid or integer support)
CONTINUOUS = {
    "Normal": (lambda: D.Normal(f64(0.7), f64(1.3)),
               lambda x: -((x - 0.7) ** 2) / (2 * 1.3 ** 2) - math.log(1.3 * math.sqrt(2 * math.pi)),
               np.linspace(-12, 13, 400_001)),
    "LogNormal": (lambda: D.LogNormal(f64(0.2), f64(0.5)),
                  lambda x: -((np.log(x) - 0.2) ** 2) / (2 * 0.25) - np.log(x * 0.5 * math.sqrt(2 * math.pi)),
                  np.linspace(1e-9, 60, 400_001)),
    "Uniform": (lambda: D.Uniform(f64(-1.0), f64(3.0)), lambda x: np.full_like(x, -math.log(4.0)),
                np.linspace(-1.0, 3.0 - 1e-12, 400_001)),
    "Exponential": (lambda: D.Exponential(f64(1.7)), lambda x: math.log(1.7) - 1.7 * x,
                    np.linspace(0, 30, 400_001)),
    "Gamma": (lambda: D.Gamma(f64(2.5), f64(1.5)),
              lambda x: 2.5 * math.log(1.5) + 1.5 * np.log(x) - 1.5 * x - math.lgamma(2.5),
              np.linspace(1e-12, 50, 400_001)),
    "Beta": (lambda: D.Beta(f64(2.0), f64(3.5)),
             lambda x: np.log(x) + 2.5 * np.log1p(-x) - (math.lgamma(2.0) + math.lgamma(3.5) - math.lgamma(5.5)),
             np.linspace(1e-12, 1 - 1e-12, 400_001)),
    "Laplace": (lambda: D.Laplace(f64(0.3), f64(0.8)), lambda x: -math.log(1.6) - np.abs(x - 0.3) / 0.8,
                np.linspace(-30, 30, 400_001)),
    "Gumbel": (lambda: D.Gumbel(f64(0.5), f64(2.0)),
               lambda x: -((x - 0.5) / 2 + np.exp(-(x - 0.5) / 2)) - math.log(2.0),
               np.linspace(-12, 90, 400_001)),
    "Chi2": (lambda: D.Chi2(f64(3.0)),
             lambda x: 0.5 * np.log(x) - x / 2 - 1.5 * math.log(2.0) - math.lgamma(1.5),
             np.linspace(1e-14, 80, 4_000_001)),
    # p = 0.2 uses the closed-form normalizer, p = 0.5004 (inside lims) its Taylor series
    "ContinuousBernoulli": (lambda: D.ContinuousBernoulli(f64(0.2)),
                            lambda x: (np.log(2 * np.arctanh(0.6) / 0.6) + x * math.log(0.2)
                                       + (1 - x) * math.log(0.8)), np.linspace(0, 1, 400_001)),
    "ContinuousBernoulliNearHalf": (lambda: D.ContinuousBernoulli(f64(0.5004)),
                                    lambda x: (np.log(2 * np.arctanh(-0.0008) / -0.0008) + x * math.log(0.5004)
                                               + (1 - x) * math.log(0.4996)), np.linspace(0, 1, 400_001)),
    "StudentT": (lambda: D.StudentT(f64(5.0), f64(1.0), f64(2.0)),
                 lambda x: (math.lgamma(3.0) - math.lgamma(2.5) - 0.5 * math.log(5 * math.pi) - math.log(2.0)
                            - 3.0 * np.log1p(((x - 1.0) / 2.0) ** 2 / 5.0)),
                 np.linspace(-4000, 4000, 4_000_001)),
}
DISCRETE = {
    "Bernoulli": (lambda: D.Bernoulli(f64(0.3)), lambda k: np.where(k == 1, math.log(0.3), math.log(0.7)),
                  np.arange(2.0)),
    "Poisson": (lambda: D.Poisson(f64(3.5)), lambda k: k * math.log(3.5) - 3.5 - lgamma(k + 1), np.arange(120.0)),
    "Binomial": (lambda: D.Binomial(12, f64(0.35)),
                 lambda k: (math.lgamma(13) - lgamma(k + 1) - lgamma(13 - k) + k * math.log(0.35)
                            + (12 - k) * math.log(0.65)), np.arange(13.0)),
    "Geometric": (lambda: D.Geometric(f64(0.3)), lambda k: k * math.log(0.7) + math.log(0.3), np.arange(400.0)),
}
ALL = {**CONTINUOUS, **DISCRETE}


def moments(log_density, support, discrete):
    p = np.exp(log_density(support))
    integrate = np.sum if discrete else (lambda y: np.trapezoid(y, support))
    logs = np.where(p > 0, log_density(support), 0.0)
    mean = integrate(support * p)
    return mean, integrate((support - mean) ** 2 * p), -integrate(p * logs)


@pytest.mark.parametrize("name", sorted(ALL))
def test_log_prob_matches_numpy_density(name):
    make, log_density, support = ALL[name]
    points = support[:: max(1, len(support) // 50)][1:-1] if name not in DISCRETE else support[:40]
    np.testing.assert_allclose(value(make().log_prob(f64(points))), log_density(points), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(value(make().prob(f64(points))), np.exp(log_density(points)), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ALL))
def test_mean_variance_entropy_match_integrals_of_the_density(name):
    make, log_density, support = ALL[name]
    mean, variance, entropy = moments(log_density, support, name in DISCRETE)
    dist = make()
    # StudentT's heavy tails leave more outside the grid: looser there (the tail beyond 4000 is ~1e-8)
    rtol = 2e-4 if name == "StudentT" else QUAD_RTOL
    np.testing.assert_allclose(value(dist.mean), mean, rtol=rtol, atol=QUAD_ATOL)
    np.testing.assert_allclose(value(dist.variance), variance, rtol=rtol if name != "StudentT" else 2e-2)
    np.testing.assert_allclose(value(dist.entropy()), entropy, rtol=rtol, atol=QUAD_ATOL)


@pytest.mark.parametrize("name", sorted(ALL))
def test_sample_statistics_follow_the_distribution(name):
    make, _, _ = ALL[name]
    dist = make()
    oar.seed(2024)
    draws = value(dist.sample([N_SAMPLES]))
    assert draws.shape == (N_SAMPLES,)
    mean, variance = float(value(dist.mean)), float(value(dist.variance))
    # the sample mean is within 6 standard errors (a false failure is a 1e-9 event)
    assert abs(draws.mean() - mean) < 6 * math.sqrt(variance / N_SAMPLES), (draws.mean(), mean)
    if name != "StudentT":  # its fourth moment is large (df 5): the sample variance converges slowly
        fourth = np.mean((draws - mean) ** 4)
        assert abs(draws.var() - variance) < 6 * math.sqrt(max(fourth - variance ** 2, 1e-12) / N_SAMPLES)


def test_sampling_follows_oar_seed():
    for make, _, _ in ALL.values():
        dist = make()
        oar.seed(7)
        first = value(dist.sample([5, 2]))
        oar.seed(7)
        np.testing.assert_array_equal(value(dist.sample([5, 2])), first)


def test_a_nonzero_seed_repeats_normal_and_uniform_draws():
    for dist in (D.Normal(f64(0.0), f64(1.0)), D.Uniform(f64(0.0), f64(1.0))):
        first = value(dist.sample([6], seed=5))
        np.testing.assert_array_equal(value(dist.sample([6], seed=5)), first)
        assert not np.array_equal(value(dist.sample([6], seed=6)), first)


def test_sample_shapes_are_sample_batch_event():
    normal = D.Normal(oar.zeros([3]), oar.ones([2, 1]))
    assert normal.batch_shape == (2, 3) and normal.sample([4]).shape == [4, 2, 3]
    dirichlet = D.Dirichlet(oar.ones([2, 5]))
    assert (dirichlet.batch_shape, dirichlet.event_shape) == ((2,), (5,))
    assert dirichlet.sample([3]).shape == [3, 2, 5]
    np.testing.assert_allclose(value(dirichlet.sample([3]).sum(-1)), np.ones((3, 2)), rtol=1e-6)
    assert D.Categorical(oar.ones([4, 6])).sample([7]).shape == [7, 4]
    assert D.Multinomial(5, oar.ones([2, 3])).sample([6]).shape == [6, 2, 3]


def test_rsample_is_differentiable_in_the_parameters():
    loc = oar.to_tensor(0.5, dtype="float64", stop_gradient=False)
    scale = oar.to_tensor(2.0, dtype="float64", stop_gradient=False)
    oar.seed(3)
    draws = D.Normal(loc, scale).rsample([1000])
    draws.mean().backward()
    # d mean(loc + scale * eps) / d loc = 1, / d scale = mean(eps)
    assert float(loc.grad) == pytest.approx(1.0, rel=RTOL64)
    eps = (value(draws) - 0.5) / 2.0
    assert float(scale.grad) == pytest.approx(eps.mean(), rel=1e-9, abs=1e-12)

    rate = oar.to_tensor(2.0, dtype="float64", stop_gradient=False)
    draws = D.Exponential(rate).rsample([N_SAMPLES])
    draws.mean().backward()
    # x = -log(u) / rate, so dx/drate = -x / rate exactly, and its mean approaches -1 / rate**2
    assert float(rate.grad) == pytest.approx(-value(draws).mean() / 2.0, rel=1e-9)
    assert abs(float(rate.grad) + 0.25) < 6 * 0.25 / math.sqrt(N_SAMPLES)

    low = oar.to_tensor(1.0, dtype="float64", stop_gradient=False)
    high = oar.to_tensor(3.0, dtype="float64", stop_gradient=False)
    D.Uniform(low, high).rsample([N_SAMPLES]).mean().backward()
    assert abs(float(low.grad) - 0.5) < 6 * math.sqrt(1 / 12 / N_SAMPLES)
    assert float(low.grad) + float(high.grad) == pytest.approx(1.0, rel=RTOL64)


def test_log_prob_gradient_needs_digamma():
    # d/da log Gamma(x; a, r) = log r + log x - digamma(a); digamma(1) = -Euler's gamma
    a = oar.to_tensor(1.0, dtype="float64", stop_gradient=False)
    D.Gamma(a, f64(1.0)).log_prob(f64(2.0)).backward()
    assert float(a.grad) == pytest.approx(math.log(2.0) + 0.5772156649015329, rel=1e-9)


def test_special_functions_match_math():
    x = np.array([1e-3, 0.1, 0.5, 1.0, 2.5, 7.0, 30.0, 1e4])
    np.testing.assert_allclose(value(oar_lgamma(f64(x))), lgamma(x), rtol=1e-10, atol=1e-10)
    h = 1e-5  # central difference of math.lgamma: error ~ h**2 * psi''(x) / 6
    np.testing.assert_allclose(value(digamma(f64(x[2:]))), (lgamma(x[2:] + h) - lgamma(x[2:] - h)) / (2 * h),
                               rtol=1e-7, atol=1e-7)


KL_PAIRS = {
    "Normal": (lambda: D.Normal(f64(0.3), f64(1.1)), lambda: D.Normal(f64(-0.4), f64(1.8))),
    "LogNormal": (lambda: D.LogNormal(f64(0.3), f64(0.5)), lambda: D.LogNormal(f64(0.1), f64(0.7))),
    "Uniform": (lambda: D.Uniform(f64(0.0), f64(1.0)), lambda: D.Uniform(f64(-1.0), f64(2.0))),
    "Exponential": (lambda: D.Exponential(f64(1.5)), lambda: D.Exponential(f64(0.6))),
    "Gamma": (lambda: D.Gamma(f64(2.5), f64(1.5)), lambda: D.Gamma(f64(1.7), f64(0.9))),
    "Beta": (lambda: D.Beta(f64(2.0), f64(3.5)), lambda: D.Beta(f64(1.5), f64(1.2))),
    "Laplace": (lambda: D.Laplace(f64(0.3), f64(0.8)), lambda: D.Laplace(f64(-0.5), f64(1.4))),
    "Cauchy": (lambda: D.Cauchy(f64(0.3), f64(0.8)), lambda: D.Cauchy(f64(-0.5), f64(1.4))),
    "Bernoulli": (lambda: D.Bernoulli(f64(0.3)), lambda: D.Bernoulli(f64(0.8))),
    "Poisson": (lambda: D.Poisson(f64(3.5)), lambda: D.Poisson(f64(2.0))),
    "Binomial": (lambda: D.Binomial(12, f64(0.35)), lambda: D.Binomial(12, f64(0.6))),
    "Geometric": (lambda: D.Geometric(f64(0.3)), lambda: D.Geometric(f64(0.5))),
}
KL_SUPPORT = {"Normal": np.linspace(-15, 15, 400_001), "LogNormal": np.linspace(1e-9, 40, 400_001),
              "Uniform": np.linspace(1e-12, 1 - 1e-12, 400_001), "Exponential": np.linspace(0, 40, 400_001),
              "Gamma": np.linspace(1e-12, 60, 400_001), "Beta": np.linspace(1e-9, 1 - 1e-9, 400_001),
              "Laplace": np.linspace(-30, 30, 600_001), "Cauchy": np.linspace(-2e5, 2e5, 4_000_001),
              "Bernoulli": np.arange(2.0), "Poisson": np.arange(100.0), "Binomial": np.arange(13.0),
              "Geometric": np.arange(400.0)}


@pytest.mark.parametrize("name", sorted(KL_PAIRS))
def test_kl_divergence_matches_the_integral_of_p_log_p_over_q(name):
    make_p, make_q = KL_PAIRS[name]
    p, q = make_p(), make_q()
    support = KL_SUPPORT[name]
    log_p, log_q = value(p.log_prob(f64(support))), value(q.log_prob(f64(support)))
    terms = np.exp(log_p) * (log_p - log_q)
    expected = terms.sum() if name in DISCRETE else np.trapezoid(terms, support)
    rtol = 1e-4 if name == "Cauchy" else QUAD_RTOL  # Cauchy's tail beyond 2e5 holds ~1e-6 of the mass
    np.testing.assert_allclose(value(D.kl_divergence(p, q)), expected, rtol=rtol, atol=QUAD_ATOL)
    np.testing.assert_allclose(value(p.kl_divergence(q)), value(D.kl_divergence(p, q)), rtol=0)


def test_kl_of_normals_closed_form_and_uniform_outside_support():
    kl = D.kl_divergence(D.Normal(f64(0.0), f64(1.0)), D.Normal(f64(1.0), f64(2.0)))
    assert float(kl) == pytest.approx(math.log(2.0) + (1 + 1) / 8 - 0.5, rel=RTOL64)
    assert float(D.kl_divergence(D.Uniform(-1.0, 2.0), D.Uniform(0.0, 1.0))) == math.inf


def test_dirichlet_against_beta_and_kl_against_monte_carlo():
    # a two-category Dirichlet is a Beta in its first coordinate
    dirichlet, beta = D.Dirichlet(f64([2.0, 3.5])), D.Beta(f64(2.0), f64(3.5))
    x = np.array([0.1, 0.4, 0.9])
    np.testing.assert_allclose(value(dirichlet.log_prob(f64(np.stack([x, 1 - x], -1)))), value(beta.log_prob(f64(x))),
                               rtol=1e-10)
    np.testing.assert_allclose(value(dirichlet.entropy()), value(beta.entropy()), rtol=1e-10)
    np.testing.assert_allclose(value(dirichlet.mean)[0], value(beta.mean), rtol=1e-12)
    other = D.Dirichlet(f64([1.0, 2.0, 0.5]))
    p = D.Dirichlet(f64([2.0, 3.5, 1.5]))
    np.testing.assert_allclose(value(D.kl_divergence(D.Dirichlet(f64([2.0, 3.5])), D.Dirichlet(f64([1.5, 1.2])))),
                               value(D.kl_divergence(beta, D.Beta(f64(1.5), f64(1.2)))), rtol=1e-10)
    oar.seed(11)
    draws = p.sample([N_SAMPLES])
    ratio = value(p.log_prob(draws)) - value(other.log_prob(draws))
    assert abs(ratio.mean() - float(value(D.kl_divergence(p, other)))) < 6 * ratio.std() / math.sqrt(N_SAMPLES)
    np.testing.assert_allclose(draws.numpy().mean(0), value(p.mean), atol=6 * 0.5 / math.sqrt(N_SAMPLES))


def test_multinomial_log_prob_entropy_and_moments():
    probs = np.array([0.2, 0.5, 0.3])
    dist = D.Multinomial(4, f64(probs))
    outcomes = np.array([(a, b, 4 - a - b) for a in range(5) for b in range(5 - a)], dtype=np.float64)
    log_pmf = (math.lgamma(5) - lgamma(outcomes + 1).sum(-1) + (outcomes * np.log(probs)).sum(-1))
    np.testing.assert_allclose(value(dist.log_prob(f64(outcomes))), log_pmf, rtol=1e-10)
    assert np.exp(log_pmf).sum() == pytest.approx(1.0, rel=1e-12)
    assert float(dist.entropy()) == pytest.approx(-(np.exp(log_pmf) * log_pmf).sum(), rel=1e-10)
    np.testing.assert_allclose(value(dist.mean), 4 * probs, rtol=1e-12)
    np.testing.assert_allclose(value(dist.variance), 4 * probs * (1 - probs), rtol=1e-12)
    oar.seed(5)
    counts = value(dist.sample([N_SAMPLES]))
    assert np.all(counts.sum(-1) == 4)
    assert np.all(np.abs(counts.mean(0) - 4 * probs) < 6 * np.sqrt(4 * probs * (1 - probs) / N_SAMPLES))


def test_categorical_matches_paddles_documented_values():
    # paddle.distribution.Categorical's docstring: probs/log_prob normalize the logits by their sum,
    # entropy and KL use their softmax
    x = oar.to_tensor([0.5535528, 0.20714243, 0.01162981, 0.51577556, 0.36369765, 0.2609165])
    y = oar.to_tensor([0.77663314, 0.90824795, 0.15685187, 0.04279523, 0.34468332, 0.7955718])
    cat = D.Categorical(x)
    index = oar.to_tensor([2, 1, 3])
    np.testing.assert_allclose(value(cat.probs(index)), [0.00608027, 0.108298, 0.269656], rtol=1e-5)
    np.testing.assert_allclose(value(cat.log_prob(index)), [-5.10271, -2.22287, -1.31061], rtol=1e-5)
    assert float(cat.entropy()) == pytest.approx(1.77528, rel=1e-5)
    assert float(cat.kl_divergence(D.Categorical(y))) == pytest.approx(0.071952, rel=1e-4)


def test_categorical_samples_follow_softmax_of_logits():
    logits = np.log(np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]]))
    oar.seed(9)
    draws = value(D.Categorical(f64(logits)).sample([N_SAMPLES]))
    for row, probs in enumerate(np.exp(logits)):
        frequencies = np.bincount(draws[:, row].astype(np.int64), minlength=3) / N_SAMPLES
        assert np.all(np.abs(frequencies - probs) < 6 * np.sqrt(probs * (1 - probs) / N_SAMPLES))


def test_normal_matches_paddles_documented_values():
    a, b = D.Normal([0.0], [1.0]), D.Normal([0.5], [2.0])
    value_tensor = oar.to_tensor([0.8])
    assert float(a.entropy()) == pytest.approx(1.4189385, rel=1e-6)
    assert float(a.log_prob(value_tensor)) == pytest.approx(-1.2389386, rel=1e-6)
    assert float(a.probs(value_tensor)) == pytest.approx(0.28969154, rel=1e-6)
    assert float(a.kl_divergence(b)) == pytest.approx(0.34939718, rel=1e-6)
    assert a.sample([2]).shape == [2, 1] and a.sample([2]).dtype == oar.float32


def test_bernoulli_relaxed_rsample_and_cdf():
    probs = oar.to_tensor(0.3, dtype="float64", stop_gradient=False)
    dist = D.Bernoulli(probs)
    oar.seed(1)
    relaxed = dist.rsample([N_SAMPLES], temperature=0.05)
    hard = value(relaxed) > 0.5  # P(relaxed > 1/2) = probs exactly, whatever the temperature
    assert abs(hard.mean() - 0.3) < 6 * math.sqrt(0.21 / N_SAMPLES)
    relaxed.mean().backward()
    assert float(probs.grad) > 0
    np.testing.assert_allclose(value(dist.cdf(f64([-1.0, 0.0, 0.5, 1.0]))), [0.0, 0.7, 0.7, 1.0], rtol=1e-12)


def test_register_kl_dispatches_to_the_closest_pair():
    class WideNormal(D.Normal):
        pass

    calls = []

    @D.register_kl(WideNormal, D.Normal)
    def _kl_wide(p, q):
        calls.append((type(p), type(q)))
        return oar.zeros([])

    try:
        D.kl_divergence(WideNormal(0.0, 1.0), D.Normal(0.0, 1.0))
        assert calls == [(WideNormal, D.Normal)]
        # the other way round only Normal-Normal matches
        assert float(D.kl_divergence(D.Normal(0.0, 1.0), WideNormal(1.0, 1.0))) == pytest.approx(0.5)
    finally:
        from oar.distribution._base import _KL_RULES
        _KL_RULES.pop((WideNormal, D.Normal))
    with pytest.raises(NotImplementedError, match="no rule for Normal and Gamma"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Gamma(1.0, 1.0))
    with pytest.raises(ArgumentError, match="Distribution subclasses"):
        D.register_kl(int, D.Normal)


def test_errors_name_the_distribution_and_argument():
    with pytest.raises(ArgumentError, match=r"Normal: the parameters' shapes do not broadcast: loc \[2\], scale \[3\]"):
        D.Normal(oar.zeros([2]), oar.ones([3]))
    with pytest.raises(ArgumentError, match="Bernoulli: probs must lie in"):
        D.Bernoulli(1.5)
    with pytest.raises(ArgumentError, match="Uniform: low must be a number"):
        D.Uniform("a", 1.0)
    with pytest.raises(ValueError, match="no mean"):
        _ = D.Cauchy(0.0, 1.0).mean
    with pytest.raises(NotImplementedError, match="Gamma has no reparameterized sample"):
        D.Gamma(1.0, 1.0).rsample([2])


def test_namespace_is_lazy_and_lists_paddles_names():
    assert oar.distribution is D
    assert set(D.__all__) <= set(dir(D))


def test_degenerate_distributions_have_zero_entropy():
    # lgamma(1) = 0 up to the 1e-11 error of the composed lgamma (oar.distribution._special)
    np.testing.assert_allclose(value(D.Poisson(f64([0.0])).entropy()), [0.0], atol=1e-10)
    np.testing.assert_allclose(value(D.Binomial(f64([3.0]), f64([0.0])).entropy()), [0.0], atol=1e-10)
    np.testing.assert_array_equal(value(D.Bernoulli(f64([1.0])).entropy()), [0.0])


ELEMENTWISE_TRANSFORMS = {
    "Exp": (D.ExpTransform(), np.linspace(-3, 3, 13)),
    "Affine": (D.AffineTransform(f64(1.5), f64(-2.0)), np.linspace(-3, 3, 13)),
    "Power": (D.PowerTransform(f64(2.5)), np.linspace(0.1, 3, 13)),
    "Sigmoid": (D.SigmoidTransform(), np.linspace(-6, 6, 13)),
    "Tanh": (D.TanhTransform(), np.linspace(-4, 4, 13)),
}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE_TRANSFORMS))
def test_elementwise_transforms_invert_and_give_log_derivative(name):
    transform, x = ELEMENTWISE_TRANSFORMS[name]
    y = transform(f64(x))
    np.testing.assert_allclose(value(transform.inverse(y)), x, rtol=1e-9, atol=1e-9)
    h = 1e-6
    derivative = (value(transform(f64(x + h))) - value(transform(f64(x - h)))) / (2 * h)
    np.testing.assert_allclose(value(transform.forward_log_det_jacobian(f64(x))), np.log(np.abs(derivative)),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(value(transform.inverse_log_det_jacobian(y)),
                               -value(transform.forward_log_det_jacobian(f64(x))), rtol=1e-9, atol=1e-9)


def test_chain_transform_composes_and_sums_log_determinants():
    affine, exp = D.AffineTransform(f64(0.5), f64(3.0)), D.ExpTransform()
    chain = D.ChainTransform([affine, exp])
    x = f64([-1.0, 0.0, 0.4])
    np.testing.assert_allclose(value(chain(x)), np.exp(0.5 + 3.0 * value(x)), rtol=1e-12)
    np.testing.assert_allclose(value(chain.forward_log_det_jacobian(x)), math.log(3.0) + 0.5 + 3.0 * value(x),
                               rtol=1e-12)
    np.testing.assert_allclose(value(chain.inverse(chain(x))), value(x), rtol=1e-12, atol=1e-15)
    assert isinstance(exp(affine), D.ChainTransform)  # exp after affine
    np.testing.assert_allclose(value(exp(affine)(x)), value(chain(x)), rtol=0)
    assert value(D.AbsTransform().inverse(f64(2.0))[0]) == -2.0


def test_transformed_distribution_changes_variables():
    normal = D.Normal(f64(0.2), f64(0.5))
    log_normal = D.TransformedDistribution(normal, [D.ExpTransform()])
    x = f64([0.3, 1.0, 2.5])
    np.testing.assert_allclose(value(log_normal.log_prob(x)), value(D.LogNormal(f64(0.2), f64(0.5)).log_prob(x)),
                               rtol=1e-12)
    shifted = D.ExpTransform()(D.Normal(f64(0.0), f64(1.0)))
    assert isinstance(shifted, D.TransformedDistribution)
    scaled = D.TransformedDistribution(D.Normal(f64(0.0), f64(1.0)), [D.AffineTransform(f64(0.2), f64(0.5))])
    np.testing.assert_allclose(value(scaled.log_prob(x)), value(normal.log_prob(x)), rtol=1e-12)
    oar.seed(4)
    draws = value(log_normal.sample([N_SAMPLES]))
    mean, variance = float(value(D.LogNormal(f64(0.2), f64(0.5)).mean)), float(
        value(D.LogNormal(f64(0.2), f64(0.5)).variance))
    assert abs(draws.mean() - mean) < 6 * math.sqrt(variance / N_SAMPLES)
    loc = oar.to_tensor(0.2, dtype="float64", stop_gradient=False)
    D.TransformedDistribution(D.Normal(loc, f64(0.5)), [D.ExpTransform()]).rsample([10]).sum().backward()
    assert loc.grad is not None and float(loc.grad) > 0


def test_transformed_distribution_with_event_transforms_and_independent():
    base = D.Normal(f64(np.zeros((4, 2, 3))), f64(1.0))
    reshaped = D.TransformedDistribution(base, [D.ReshapeTransform((2, 3), (6,))])
    assert (reshaped.batch_shape, reshaped.event_shape) == ((4,), (6,))
    y = f64(np.linspace(-1, 1, 24).reshape(4, 6))
    expected = value(base.log_prob(y.reshape([4, 2, 3]))).sum((-1, -2))
    np.testing.assert_allclose(value(reshaped.log_prob(y)), expected, rtol=1e-12)
    assert reshaped.sample([5]).shape == [5, 4, 6]

    independent = D.Independent(base, 2)
    assert (independent.batch_shape, independent.event_shape) == ((4,), (2, 3))
    np.testing.assert_allclose(value(independent.log_prob(y.reshape([4, 2, 3]))), expected, rtol=1e-12)
    np.testing.assert_allclose(value(independent.entropy()), 6 * value(D.Normal(0.0, 1.0).entropy()), rtol=1e-6)
    other = D.Independent(D.Normal(f64(np.ones((4, 2, 3))), f64(1.0)), 2)
    np.testing.assert_allclose(value(D.kl_divergence(independent, other)), np.full(4, 3.0), rtol=1e-12)
    with pytest.raises(ArgumentError, match=r"reinterpreted_batch_rank must be an int in \[1, 3\]"):
        D.Independent(base, 4)

    stacked = D.TransformedDistribution(base, [D.IndependentTransform(D.ExpTransform(), 1)])
    assert (stacked.batch_shape, stacked.event_shape) == ((4, 2), (3,))
    z = f64(np.exp(np.linspace(-1, 1, 24).reshape(4, 2, 3)))
    expected = (value(base.log_prob(oar.log(z))) - np.log(value(z))).sum(-1)
    np.testing.assert_allclose(value(stacked.log_prob(z)), expected, rtol=1e-12)


def test_multivariate_normal_against_numpy():
    rng = np.random.default_rng(0)
    factor = rng.normal(size=(3, 3))
    covariance = factor @ factor.T + 3 * np.eye(3)
    loc = np.array([0.5, -1.0, 2.0])
    dist = D.MultivariateNormal(f64(loc), covariance_matrix=f64(covariance))
    assert (dist.batch_shape, dist.event_shape) == ((), (3,))
    x = rng.normal(size=(5, 3))
    diff = x - loc
    expected = -0.5 * (3 * math.log(2 * math.pi) + np.linalg.slogdet(covariance)[1]
                       + np.einsum("ni,ij,nj->n", diff, np.linalg.inv(covariance), diff))
    np.testing.assert_allclose(value(dist.log_prob(f64(x))), expected, rtol=1e-10)
    entropy = 0.5 * np.linalg.slogdet(2 * math.pi * math.e * covariance)[1]
    assert float(dist.entropy()) == pytest.approx(entropy, rel=1e-10)
    np.testing.assert_allclose(value(dist.variance), np.diag(covariance), rtol=1e-10)
    np.testing.assert_allclose(value(dist.covariance_matrix), covariance, rtol=1e-10)
    by_precision = D.MultivariateNormal(f64(loc), precision_matrix=f64(np.linalg.inv(covariance)))
    np.testing.assert_allclose(value(by_precision.log_prob(f64(x))), expected, rtol=1e-9)

    other_cov, other_loc = np.diag([1.0, 2.0, 0.5]), np.zeros(3)
    other = D.MultivariateNormal(f64(other_loc), scale_tril=f64(np.linalg.cholesky(other_cov)))
    inv = np.linalg.inv(other_cov)
    kl = 0.5 * (np.trace(inv @ covariance) + (other_loc - loc) @ inv @ (other_loc - loc) - 3
                + np.linalg.slogdet(other_cov)[1] - np.linalg.slogdet(covariance)[1])
    assert float(D.kl_divergence(dist, other)) == pytest.approx(kl, rel=1e-10)

    oar.seed(8)
    draws = value(dist.sample([N_SAMPLES]))
    assert draws.shape == (N_SAMPLES, 3)
    assert np.all(np.abs(draws.mean(0) - loc) < 6 * np.sqrt(np.diag(covariance) / N_SAMPLES))
    # the sample covariance: each entry within 6 standard errors, var(x_i x_j) = S_ii S_jj + S_ij**2
    stderr = np.sqrt((np.outer(np.diag(covariance), np.diag(covariance)) + covariance ** 2) / N_SAMPLES)
    assert np.all(np.abs(np.cov(draws.T) - covariance) < 6 * stderr)

    loc_param = oar.to_tensor(loc, stop_gradient=False)
    D.MultivariateNormal(loc_param, covariance_matrix=f64(covariance)).rsample([4]).sum().backward()
    np.testing.assert_allclose(value(loc_param.grad), np.full(3, 4.0), rtol=RTOL64)
    batched = D.MultivariateNormal(f64(np.zeros((2, 3))), scale_tril=f64(np.eye(3)))
    assert batched.batch_shape == (2,) and batched.log_prob(f64(np.zeros((4, 2, 3)))).shape == [4, 2]
    with pytest.raises(ArgumentError, match="exactly one of"):
        D.MultivariateNormal(f64(loc))


def _numeric_log_det(function, x, h=1e-6):
    columns = [(function(x + h * e) - function(x - h * e)) / (2 * h) for e in np.eye(len(x))]
    return np.linalg.slogdet(np.stack(columns, -1))[1]


def test_stick_breaking_softmax_and_stack_transforms():
    stick = D.StickBreakingTransform()
    x = np.array([0.3, -1.2, 2.0])
    y = value(stick(f64(x)))
    assert y.shape == (4,) and y.sum() == pytest.approx(1.0, rel=1e-12) and np.all(y > 0)
    np.testing.assert_allclose(value(stick.inverse(f64(y))), x, rtol=1e-10, atol=1e-10)
    expected = _numeric_log_det(lambda v: value(stick(f64(v)))[:3], x)
    assert float(stick.forward_log_det_jacobian(f64(x))) == pytest.approx(expected, rel=1e-6)
    assert stick.forward_shape((2, 3)) == (2, 4) and stick.inverse_shape((2, 4)) == (2, 3)

    softmax = D.SoftmaxTransform()
    probs = value(softmax(f64(x)))
    np.testing.assert_allclose(probs, np.exp(x) / np.exp(x).sum(), rtol=1e-12)
    np.testing.assert_allclose(value(softmax(softmax.inverse(f64(probs)))), probs, rtol=1e-12)

    stack = D.StackTransform([D.ExpTransform(), D.AffineTransform(f64(1.0), f64(3.0))], axis=1)
    pairs = np.array([[0.0, 1.0], [1.0, -1.0]])
    np.testing.assert_allclose(value(stack(f64(pairs))), [[1.0, 4.0], [math.e, -2.0]], rtol=1e-12)
    np.testing.assert_allclose(value(stack.forward_log_det_jacobian(f64(pairs))),
                               [[0.0, math.log(3.0)], [1.0, math.log(3.0)]], rtol=1e-12)
    np.testing.assert_allclose(value(stack.inverse(stack(f64(pairs)))), pairs, rtol=1e-12, atol=1e-15)

    # a Dirichlet-like distribution on the simplex, from a Normal in R^2
    on_simplex = D.TransformedDistribution(D.Normal(f64(np.zeros(2)), f64(1.0)), [stick])
    assert (on_simplex.batch_shape, on_simplex.event_shape) == ((), (3,))
    point = value(stick(f64([0.1, 0.2])))
    expected = value(D.Normal(f64(0.0), f64(1.0)).log_prob(f64([0.1, 0.2]))).sum() - float(
        stick.forward_log_det_jacobian(f64([0.1, 0.2])))
    assert float(on_simplex.log_prob(f64(point))) == pytest.approx(expected, rel=1e-9)


def test_continuous_bernoulli_icdf_inverts_cdf_and_rsample_is_differentiable():
    for p in (0.2, 0.5004, 0.9):
        dist = D.ContinuousBernoulli(f64(p))
        u = f64([0.05, 0.5, 0.95])
        np.testing.assert_allclose(value(dist.cdf(dist.icdf(u))), value(u), rtol=1e-9)
    probs = oar.to_tensor(0.3, dtype="float64", stop_gradient=False)
    D.ContinuousBernoulli(probs).rsample([100]).mean().backward()
    assert float(probs.grad) > 0  # a larger p moves every quantile up


@pytest.mark.parametrize("method", ["onion", "cvine"])
def test_lkj_cholesky_density_integrates_to_one_and_samples_follow_it(method):
    eta = 2.5
    dist = D.LKJCholesky(2, f64(eta), sample_method=method)
    # for dim 2 the factor is [[1, 0], [r, sqrt(1 - r**2)]], r the correlation: its density over r
    r = np.linspace(-1 + 1e-9, 1 - 1e-9, 200_001)
    factors = np.zeros((len(r), 2, 2))
    factors[:, 0, 0], factors[:, 1, 0], factors[:, 1, 1] = 1.0, r, np.sqrt(1 - r ** 2)
    density = np.exp(value(dist.log_prob(f64(factors))))
    assert np.trapezoid(density, r) == pytest.approx(1.0, rel=1e-5)
    oar.seed(12)
    draws = value(dist.sample([N_SAMPLES]))
    # r = 2 b - 1 with b ~ Beta(eta, eta): mean 0, variance 1 / (2 eta + 1)
    variance = 1 / (2 * eta + 1)
    assert abs(draws[:, 1, 0].mean()) < 6 * math.sqrt(variance / N_SAMPLES)
    fourth = np.mean(draws[:, 1, 0] ** 4)
    assert abs(np.mean(draws[:, 1, 0] ** 2) - variance) < 6 * math.sqrt((fourth - variance ** 2) / N_SAMPLES)

    big = D.LKJCholesky(4, f64(1.5), sample_method=method).sample([500])
    rows = value(big)
    np.testing.assert_allclose((rows ** 2).sum(-1), np.ones((500, 4)), rtol=1e-10)
    assert np.all(np.triu(rows, 1) == 0) and np.all(np.diagonal(rows, axis1=-2, axis2=-1) > 0)
    # for dim 4 the off-diagonal correlations are 2 Beta(b, b) - 1 with b = eta + (dim - 2) / 2 = 2.5
    oar.seed(13)
    factors = value(D.LKJCholesky(4, f64(1.5), sample_method=method).sample([N_SAMPLES]))
    correlations = factors @ np.swapaxes(factors, -1, -2)
    off_diagonal = correlations[:, 3, 1]
    assert abs(np.mean(off_diagonal ** 2) - 1 / 6) < 6 * math.sqrt(np.var(off_diagonal ** 2) / N_SAMPLES)
