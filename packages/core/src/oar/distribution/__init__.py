"""``oar.distribution``: Paddle's ``paddle.distribution`` -- probability distributions with
``sample``, ``rsample`` (reparameterized, where the distribution has one), ``log_prob``, ``prob``,
``entropy``, ``mean``, ``variance`` and ``kl_divergence`` (closed forms, extended with
``register_kl``).

Everything is composed of oar ops, so ``log_prob``, ``entropy``, ``kl_divergence`` and ``rsample``
have gradients with respect to the parameters; draws come from oar's generator, so ``oar.seed``
makes them reproducible. The gamma-family draws (Gamma, Beta, Dirichlet, StudentT) and the
discrete ones have ``sample`` only, as in Paddle. ``lgamma``/``digamma`` are composed here
(``_special``) because core has no such ops yet.

>>> import oar
>>> loc = oar.to_tensor(0.5, stop_gradient=False)
>>> d = oar.distribution.Normal(loc, 2.0)
>>> d.rsample([1000]).mean().backward()
>>> round(float(loc.grad), 6)
1.0
"""

from oar.distribution._base import Distribution as Distribution
from oar.distribution._base import ExponentialFamily as ExponentialFamily
from oar.distribution._base import kl_divergence as kl_divergence
from oar.distribution._base import register_kl as register_kl
from oar.distribution._continuous import Beta as Beta
from oar.distribution._continuous import Cauchy as Cauchy
from oar.distribution._continuous import Chi2 as Chi2
from oar.distribution._continuous import ContinuousBernoulli as ContinuousBernoulli
from oar.distribution._continuous import Dirichlet as Dirichlet
from oar.distribution._continuous import Exponential as Exponential
from oar.distribution._continuous import Gamma as Gamma
from oar.distribution._continuous import Gumbel as Gumbel
from oar.distribution._continuous import Laplace as Laplace
from oar.distribution._continuous import LogNormal as LogNormal
from oar.distribution._continuous import Normal as Normal
from oar.distribution._continuous import StudentT as StudentT
from oar.distribution._continuous import Uniform as Uniform
from oar.distribution._discrete import Bernoulli as Bernoulli
from oar.distribution._discrete import Binomial as Binomial
from oar.distribution._discrete import Categorical as Categorical
from oar.distribution._discrete import Geometric as Geometric
from oar.distribution._discrete import Multinomial as Multinomial
from oar.distribution._discrete import Poisson as Poisson
from oar.distribution._multivariate import LKJCholesky as LKJCholesky
from oar.distribution._multivariate import MultivariateNormal as MultivariateNormal
from oar.distribution._transform import AbsTransform as AbsTransform
from oar.distribution._transform import AffineTransform as AffineTransform
from oar.distribution._transform import ChainTransform as ChainTransform
from oar.distribution._transform import ExpTransform as ExpTransform
from oar.distribution._transform import Independent as Independent
from oar.distribution._transform import IndependentTransform as IndependentTransform
from oar.distribution._transform import PowerTransform as PowerTransform
from oar.distribution._transform import ReshapeTransform as ReshapeTransform
from oar.distribution._transform import SigmoidTransform as SigmoidTransform
from oar.distribution._transform import SoftmaxTransform as SoftmaxTransform
from oar.distribution._transform import StackTransform as StackTransform
from oar.distribution._transform import StickBreakingTransform as StickBreakingTransform
from oar.distribution._transform import TanhTransform as TanhTransform
from oar.distribution._transform import Transform as Transform
from oar.distribution._transform import TransformedDistribution as TransformedDistribution

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "ChainTransform",
    "Chi2", "ContinuousBernoulli", "Dirichlet", "Distribution", "ExpTransform", "Exponential", "ExponentialFamily",
    "Gamma", "Geometric", "Gumbel", "Independent", "IndependentTransform", "LKJCholesky", "Laplace", "LogNormal", "Multinomial",
    "MultivariateNormal", "Normal", "Poisson", "PowerTransform", "ReshapeTransform", "SigmoidTransform",
    "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "StudentT", "TanhTransform", "Transform",
    "TransformedDistribution", "Uniform", "kl_divergence", "register_kl",
]
