"""Exact sampling of the mean-1 renewal primitives: mean, SCV (4 stderr) and the law (KS test)."""

import math

import jax
import numpy as np
import pytest
from scipy import stats

import jaxq  # noqa: F401  (float64)
from jaxq.model.distributions import Dist
from jaxq.sim import sampling

COUNT = 40_000
DISTS = [
    Dist("exponential", 1.0),
    Dist("erlang", 0.25),
    Dist("gamma", 0.3),
    Dist("gamma", 2.5),
    Dist("lognormal", 0.5),
    Dist("hyperexponential", 4.0),
    Dist("deterministic", 0.0),
]


def _law(d: Dist):
    """The scipy distribution with mean 1 and SCV d.scv (independent of the sampler's formulas)."""
    c = d.scv
    if d.name == "exponential":
        return stats.expon()
    if d.name in ("erlang", "gamma"):
        return stats.gamma(1.0 / c, scale=c)
    if d.name == "lognormal":
        s = math.sqrt(math.log1p(c))
        return stats.lognorm(s, scale=math.exp(-s * s / 2))
    return None


def _mean_scv_stderr(x):
    """Sample mean and SCV with their delta-method standard errors."""
    m, m2 = x.mean(), (x * x).mean()
    scv = m2 / m**2 - 1
    psi = x * x / m**2 - 2 * m2 * x / m**3  # influence function of m2/m^2
    return m, x.std(ddof=1) / math.sqrt(x.size), scv, psi.std(ddof=1) / math.sqrt(x.size)


@pytest.mark.parametrize("d", DISTS, ids=str)
def test_mean_and_scv(d):
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(11), d, COUNT))
    assert np.all(x > 0)
    m, m_se, scv, scv_se = _mean_scv_stderr(x)
    if d.name == "deterministic":
        assert np.all(x == 1.0)
        return
    assert abs(m - 1.0) <= 4 * m_se
    assert abs(scv - d.scv) <= 4 * scv_se
    law = _law(d)
    if law is not None:
        assert stats.kstest(x, law.cdf).pvalue > 1e-4


def test_hyperexponential_balanced_means():
    """Balanced means: the two phases contribute equally to the mean; P(X > t) has the 2-phase form."""
    c = 4.0
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(2), Dist("hyperexponential", c), COUNT))
    p1 = 0.5 * (1 + math.sqrt((c - 1) / (c + 1)))
    cdf = lambda t: 1 - p1 * np.exp(-2 * p1 * t) - (1 - p1) * np.exp(-2 * (1 - p1) * t)  # noqa: E731
    assert stats.kstest(x, cdf).pvalue > 1e-4


def test_mixed_streams_use_their_own_law():
    """One sampler over several families: each stream index gets its own distribution."""
    dists = [Dist("exponential", 1.0), Dist("erlang", 0.5), Dist("hyperexponential", 3.0), Dist("lognormal", 2.0)]
    spec = sampling.spec_of(dists)
    table = jax.tree_util.tree_map(jax.numpy.asarray, sampling.param_table(dists))
    idx = jax.numpy.arange(4)
    keys = jax.random.split(jax.random.PRNGKey(5), COUNT)
    x = np.asarray(jax.vmap(lambda k: sampling.sample(k, spec, table, idx))(keys))
    for j, d in enumerate(dists):
        m, m_se, scv, scv_se = _mean_scv_stderr(x[:, j])
        assert abs(m - 1.0) <= 4 * m_se, d
        assert abs(scv - d.scv) <= 4 * scv_se, d
    assert abs(np.corrcoef(x[:, 0], x[:, 2])[0, 1]) <= 4 / math.sqrt(COUNT)  # streams are independent
