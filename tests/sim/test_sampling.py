"""Exact sampling of the mean-1 renewal primitives: mean, SCV (4 stderr) and the law (KS test) of every
method; the counter-based generator (known answers, determinism); the written-out logarithm; the exact
gamma fallback and the void protocol (also slot by slot, as the event engine uses it)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

import jaxq  # noqa: F401  (float64)
from jaxq.model.distributions import Dist
from jaxq.mc import rng
from jaxq.sim import sampling

COUNT = 40_000
DISTS = [
    Dist("exponential", 1.0),
    Dist("erlang", 0.25),
    Dist("erlang", 0.5),
    Dist("gamma", 0.3),  # shape 3.33: Marsaglia-Tsang
    Dist("gamma", 3.0),  # shape 1/3: Marsaglia-Tsang with the shape + 1 boost (the event form: the step envelope)
    Dist("gamma", 2.5),  # shape 0.4: the boost
    Dist("gamma", 0.7),  # shape 1.43
    Dist("gamma", 0.5),  # shape 2: the erlang method
    Dist("gamma", 2.0),  # shape 1/2: Z^2/2
    Dist("gamma", 0.4),  # shape 5/2: Erlang-2 + Z^2/2
    Dist("lognormal", 0.5),
    Dist("lognormal", 2.0),
    Dist("hyperexponential", 3.0),
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


def _hyper_cdf(c):
    """CDF of the balanced-means hyperexponential with SCV c (written from its definition)."""
    p1 = 0.5 * (1 + math.sqrt((c - 1) / (c + 1)))
    return lambda t: 1 - p1 * np.exp(-2 * p1 * t) - (1 - p1) * np.exp(-2 * (1 - p1) * t)


def _cdf(d: Dist):
    return _hyper_cdf(d.scv) if d.name == "hyperexponential" else _law(d).cdf


def _mean_scv_stderr(x):
    """Sample mean and SCV with their delta-method standard errors."""
    m, m2 = x.mean(), (x * x).mean()
    scv = m2 / m**2 - 1
    psi = x * x / m**2 - 2 * m2 * x / m**3  # influence function of m2/m^2
    return m, x.std(ddof=1) / math.sqrt(x.size), scv, psi.std(ddof=1) / math.sqrt(x.size)


def _check_law(x, d: Dist):
    m, m_se, scv, scv_se = _mean_scv_stderr(x)
    assert abs(m - 1.0) <= 4 * m_se, (d, m, m_se)
    assert abs(scv - d.scv) <= 4 * scv_se, (d, scv, scv_se)
    assert stats.kstest(x, _cdf(d)).pvalue > 1e-4, d


def _mt_acceptance(shape):
    """Probability that one Marsaglia-Tsang proposal is accepted (shape >= 1), by quadrature."""
    d = shape - 1 / 3
    c = 1 / math.sqrt(9 * d)

    def f(z):
        t = 1 + c * z
        return stats.norm.pdf(z) * math.exp(0.5 * z * z + d - d * t**3 + 3 * d * math.log(t))

    # the mass is within |z| < 40 (the normal's); the whole range (-1/c, inf) makes quad miss it for large shapes
    return integrate.quad(f, max(-1 / c, -40.0), 40.0, points=[0.0], limit=200)[0]


def _step_pdf(shape):
    """``(to_y, log_pdf_y)``: the step envelope's variable as a function of the unit-mean value, and its log density
    from scipy's law of ``log X`` (``loggamma``, X = a value ~ Gamma(a); y = X / a for q = 1, X^(1/q) otherwise)."""
    q = sampling.step_scale(shape)[0]
    law = stats.loggamma(shape)
    if q == 1:
        return (lambda v: v), (lambda y: law.logpdf(np.log(shape * y)) - np.log(y))
    return (lambda v: (shape * v) ** (1.0 / q)), (lambda y: law.logpdf(q * np.log(y)) + math.log(q) - np.log(y))


def _step_test(env, y):
    """The acceptance probability of a proposal y as the sampler's test states it: ``exp(c log y - e y^q + B_k)``."""
    k = np.clip(np.searchsorted(env.left, y, side="right") - 1, 0, len(env.left) - 1)
    return np.exp(env.c * np.log(y) - env.e * y**env.q + env.B[k]), k


def _step_acceptance(shape):
    """Probability that one proposal of the event form's step envelope is accepted, from the law: the test is
    ``kappa pdf_y(y) width_k`` on step k (checked by :func:`test_step_envelope_is_an_envelope_of_the_law`), so a
    proposal (a uniform step, uniform in it) is accepted with probability ``kappa P(lo <= y <= hi) / N``."""
    env = sampling.step_envelope(shape)
    to_y, pdf = _step_pdf(shape)
    mid = env.left + env.width / 2
    kappa = np.exp(np.log(_step_test(env, mid)[0]) - pdf(mid) - np.log(env.width))
    q = env.q
    law = stats.gamma(shape)
    x_lo, x_hi = (shape * env.lo, shape * env.hi) if q == 1 else (env.lo**q, env.hi**q)
    return float(np.median(kappa) * (law.cdf(x_hi) - law.cdf(x_lo)) / len(env.left))


def _table(dists):
    return {k: jnp.asarray(v) for k, v in sampling.param_table(dists).items()}


# --------------------------------------------------------------------------------- every family
@pytest.mark.parametrize("d", DISTS, ids=str)
def test_mean_scv_and_law(d):
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(11), d, COUNT))
    assert np.all(x > 0) and np.all(np.isfinite(x))
    if d.name == "deterministic":
        assert np.all(x == 1.0)
        return
    _check_law(x, d)


def _capped_moment_of_law(d: Dist, cap: float) -> float:
    """``E[(min(v, cap) - 1)^2]`` by numerical integration of the law (scipy; the hyperexponential from its CDF with
    the sampler's rounded phase probability): independent of ``capped_variance``'s incomplete-gamma formulas."""
    if d.name == "hyperexponential":
        p1 = float(sampling.param_table([d])["thr"][0]) * 2.0**-32
        laws = [(p, stats.expon(scale=0.5 / p)) for p in (p1, 1.0 - p1)]
    else:
        laws = [(1.0, _law(d))]
    if not math.isfinite(cap):
        return sum(p * law.expect(lambda v: (v - 1.0) ** 2) for p, law in laws)
    return sum(p * (law.expect(lambda v: (v - 1.0) ** 2, lb=0.0, ub=cap, conditional=False)
                    + (cap - 1.0) ** 2 * law.sf(cap)) for p, law in laws)


# besides DISTS: an Erlang sampled as gamma(20) and a gamma whose shape snaps to the integer 3 (the erlang method)
CAPPED_EXTRA = [Dist("erlang", 0.05), Dist("gamma", 1.0 / 3.0 * (1.0 + 1e-11))]


@pytest.mark.parametrize("d", DISTS + CAPPED_EXTRA, ids=str)
def test_capped_variance_is_the_moment_drawn(d):
    """``capped_variance`` (what the second-order controls subtract) is the law's ``E[(min(v, cap) - 1)^2]`` by
    numerical integration, its variance without a cap, and the draws' mean is within 4 standard errors of it."""
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(13), d, COUNT))
    for cap in (math.inf, 10.0, 3.0, 1.2, 0.5):
        v = sampling.capped_variance(d, cap)
        if d.name == "deterministic":
            assert v == (min(1.0, cap) - 1.0) ** 2
            continue
        assert v == pytest.approx(_capped_moment_of_law(d, cap), rel=1e-8, abs=1e-12), cap
        sq = (np.minimum(x, cap) - 1.0) ** 2
        assert abs(sq.mean() - v) <= 4 * sq.std(ddof=1) / math.sqrt(COUNT) + 1e-15, (cap, sq.mean(), v)
    assert sampling.capped_variance(d, math.inf) == pytest.approx(d.scv, rel=1e-9)


def test_hyperexponential_balanced_means():
    """Balanced means: the two phases contribute equally to the mean; P(X > t) has the 2-phase form."""
    c = 4.0
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(2), Dist("hyperexponential", c), COUNT))
    assert stats.kstest(x, _hyper_cdf(c)).pvalue > 1e-4
    t = sampling.param_table([Dist("hyperexponential", c)])
    p1 = float(t["thr"][0]) * 2.0**-32
    assert float(t["c0"][0]) * p1 == pytest.approx(0.5, rel=1e-15)  # phase 1's share of the mean
    assert float(t["c1"][0]) * (1 - p1) == pytest.approx(0.5, rel=1e-15)


def test_large_erlang_is_sampled_as_gamma():
    """Erlang-k with k > ERLANG_DIRECT_MAX goes through the gamma method: same law, fewer words."""
    d = Dist("erlang", 0.05)  # k = 20
    spec = sampling.spec_of([d])
    assert spec.methods == ("gamma",) and sampling.words_needed(spec) == 4 * spec.proposals + 1
    _check_law(np.asarray(sampling.sample_dist(jax.random.PRNGKey(4), d, COUNT)), d)


def test_words_needed():
    """Whole Threefry blocks for every value that is materialised once; the normals of a spec without lognormal
    take one word a slot (a block per pair of slots, after the slots' own words), a spec with lognormal a normal
    block at the end of each slot (a Box-Muller pair's 52-bit uniform or angle)."""
    wn = lambda *ds: sampling.words_needed(sampling.spec_of(list(ds)))  # noqa: E731
    assert wn(Dist("exponential", 1.0)) == 2  # U, one spare
    assert wn(Dist("erlang", 0.25)) == 4
    assert wn(Dist("erlang", 1 / 3)) == 4  # three words, rounded up to a block
    assert wn(Dist("hyperexponential", 3.0)) == 2  # the phase word, U
    assert wn(Dist("lognormal", 2.0)) == 2  # the normal block
    assert wn(Dist("deterministic", 0.0)) == 0
    assert wn(Dist("gamma", 0.7)) == 4 * sampling.DEFAULT_PROPOSALS + 1  # shape 1.43: no boost words; the normal word
    assert wn(Dist("gamma", 3.0)) == 4 * sampling.DEFAULT_PROPOSALS + 1  # shape 1/3: the boost recycles the acceptance uniform
    one = lambda *ds: sampling.words_needed(sampling.spec_of(list(ds), proposals=1))  # noqa: E731
    assert one(Dist("gamma", 3.0)) == one(Dist("gamma", 0.7)) == 2  # the event form: one block a slot (steps)
    assert one(Dist("gamma", 0.7), Dist("exponential", 1.0)) == 2  # mixed event form: U (shared), the step word
    assert one(Dist("gamma", 0.7), Dist("erlang", 0.25)) == 4  # U_1 .. U_4 (U_1 shared, U_2 the step word)
    assert one(Dist("gamma", 0.99e-4), Dist("exponential", 1.0)) == 3  # off the step range: U, the normal word
    assert one(Dist("gamma", 0.7), Dist("lognormal", 2.0)) == 4  # U, the normal block (lognormal: 52-bit radius)
    assert wn(Dist("gamma", 0.5)) == 2  # shape 2: Erlang-2
    assert wn(Dist("gamma", 2.0)) == 1  # shape 1/2: the normal word
    assert wn(Dist("gamma", 2 / 7)) == 5  # shape 3.5: U_1 .. U_3 (a block and a half), the normal word
    assert wn(Dist("exponential", 1.0), Dist("erlang", 0.2)) == 6
    assert wn(Dist("exponential", 1.0), Dist("lognormal", 2.0)) == 4


def test_gamma_with_an_integer_or_half_integer_shape_takes_the_exact_shortcut():
    """Gamma(k) is Erlang-k and Gamma(k + 1/2) is Erlang-k plus Z^2/2: the same laws, no rejection."""
    method = lambda scv: sampling.spec_of([Dist("gamma", scv)]).methods  # noqa: E731
    assert method(0.5) == method(1.0) == method(1 / 12) == ("erlang",)
    assert method(2.0) == method(0.4) == method(2 / 3) == method(1 / 11.5) == ("gammahalf",)
    assert method(0.7) == method(3.0) == method(1 / 13) == method(1 / 12.5) == ("gamma",)
    assert method(1 / (2 + 1e-12)) == ("erlang",) and method(1 / (2 + 1e-6)) == ("gamma",)
    for d in (Dist("gamma", 2.0), Dist("gamma", 2 / 7), Dist("gamma", 1.0)):
        _check_law(np.asarray(sampling.sample_dist(jax.random.PRNGKey(31), d, COUNT)), d)


@pytest.mark.parametrize("compact", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_mixed_streams_use_their_own_law_and_are_independent(compact):
    """One sampler over every family (the self-contained form, with its exact fallback): each slot gets its
    stream's law; slots are independent; with and without lognormal (the two normal layouts)."""
    dists = [Dist("exponential", 1.0), Dist("erlang", 0.5), Dist("hyperexponential", 3.0),
             Dist("gamma", 2.0) if compact else Dist("lognormal", 2.0),
             Dist("gamma", 3.0), Dist("gamma", 0.4), Dist("deterministic", 0.0), Dist("gamma", 0.7)]
    spec = sampling.spec_of(dists, proposals=2)  # two proposals: the fallback runs in a mixed spec too
    assert sampling._compact_normals(spec) is compact
    table = _table(dists)
    key = jax.random.PRNGKey(5)
    pairs = [(0, 2), (1, 3), (4, 5), (6, 4), (7, 5)]

    @jax.jit
    def run(idx):
        return jax.vmap(lambda c: sampling.draw(key, c, spec, table, idx))(jnp.arange(COUNT, dtype=jnp.uint32))

    for a, b in pairs:
        x = np.asarray(run(jnp.array([a, b], jnp.int32)))
        for j, s in enumerate((a, b)):
            if dists[s].name == "deterministic":
                assert np.all(x[:, j] == 1.0)
            else:
                _check_law(x[:, j], dists[s])
        if "deterministic" not in (dists[a].name, dists[b].name):
            assert abs(np.corrcoef(x[:, 0], x[:, 1])[0, 1]) <= 4 / math.sqrt(COUNT), (a, b)


def _words_alone(w, mixed, single):
    """The words a stream's single-family spec reads where the mixed spec reads them (one slot): the method words,
    then the normal (the last block with lognormal in the spec, else the word after the slot's own words)."""
    Ws = sampling.words_needed(single)
    if not set(single.methods) & sampling.NORMAL_METHODS:
        return w[:Ws]
    if sampling._compact_normals(single):
        own = sampling._own_words(mixed)
        return jnp.concatenate([w[:Ws - 1], w[own:own + 1]])
    return jnp.concatenate([w[:Ws - 2], w[sampling.words_needed(mixed) - 2:]])


@pytest.mark.parametrize("with_lognormal", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_mixed_spec_gives_each_stream_what_it_gets_alone(with_lognormal):
    """The shared-transcendental path of mixed specs: the same words give the same variate as the
    stream's single-family spec (and the same accept/void decision), with each normal layout."""
    dists = [Dist("exponential", 1.0), Dist("erlang", 0.25), Dist("hyperexponential", 3.0), Dist("gamma", 3.0),
             Dist("gamma", 0.7), Dist("deterministic", 0.0), Dist("gamma", 2 / 7), Dist("gamma", 2.0)]
    dists += [Dist("lognormal", 2.0)] if with_lognormal else []
    mixed, mtab = sampling.spec_of(dists, proposals=2), _table(dists)
    assert sampling._compact_normals(mixed) is not with_lognormal
    key = jax.random.PRNGKey(17)
    W = sampling.words_needed(mixed)
    counters = jnp.arange(2000, dtype=jnp.uint32)
    for s, d in enumerate(dists):
        single, stab = sampling.spec_of([d], proposals=2), _table([d])
        if set(single.methods) & sampling.NORMAL_METHODS and sampling._compact_normals(single) is with_lognormal:
            continue  # its normal comes with the other layout (a stream alone is never mixed with lognormal)

        def both(c, s=s, single=single, stab=stab):
            w = rng.words(key, c, W)
            a = sampling.sample_or_void(w, mixed, mtab, jnp.array([s]))
            b = sampling.sample_or_void(_words_alone(w, mixed, single), single, stab, jnp.zeros(1, jnp.int32))
            return a, b

        (va, oka), (vb, okb) = jax.jit(jax.vmap(both))(counters)
        assert np.array_equal(np.asarray(oka), np.asarray(okb)), d
        ok = np.asarray(oka)
        np.testing.assert_allclose(np.asarray(va)[ok], np.asarray(vb)[ok], rtol=1e-13, err_msg=str(d))


@pytest.mark.parametrize("with_lognormal,off_range", [pytest.param(True, False, marks=pytest.mark.slow), (False, False),
                                                     (False, True)], ids=["lognormal", "steps", "marsaglia_tsang"])
def test_mixed_event_form_gives_every_stream_its_law(with_lognormal, off_range):
    """The mixed spec in the event engines' form (one proposal, its acceptance uniform shared with the other
    methods' word, ``slot_values``): the step envelope (the proposal from the slot's second word), or with a gamma
    shape off the step range (shape 1.01e4) Marsaglia-Tsang's mixed form (its normal, the boost) for every gamma
    stream. Each slot of a pair has its stream's law, a gamma slot is void with the probability that its proposal
    is rejected, and the two slots are independent."""
    dists = [Dist("exponential", 1.0), Dist("erlang", 0.25), Dist("hyperexponential", 3.0), Dist("gamma", 3.0),
             Dist("gamma", 0.7), Dist("gamma", 2.0), Dist("deterministic", 0.0)]
    dists += [Dist("lognormal", 2.0)] if with_lognormal else []
    dists += [Dist("gamma", 0.99e-4)] if off_range else []
    spec, table, key = sampling.spec_of(dists, proposals=1), _table(dists), jax.random.PRNGKey(29)
    assert spec.proposals == 1 and spec.boost and sampling._compact_normals(spec) is not with_lognormal
    assert (spec.steps == 0) is off_range and sampling._step_gamma(spec) is not off_range
    W = 2 * sampling.words_needed(spec)
    pairs = [(3, 4), (0, 3), (4, 1), (2, 5), (5, 3)] + ([(7, 4), (3, 7)] if with_lognormal or off_range else [])

    @jax.jit
    def run(idx):
        return jax.vmap(lambda c: jnp.stack(sampling.slot_values(rng.words(key, c, W), spec, table, idx,
                                                                 lambda x: x / 1.0)))(jnp.arange(COUNT, dtype=jnp.uint32))

    for a, b in pairs:
        v = np.asarray(run(jnp.array([a, b], jnp.int32)))
        kept = ~np.isnan(v).any(axis=1)  # the events an engine keeps when it uses both slots
        for j, s in enumerate((a, b)):
            void = np.isnan(v[:, j])
            if dists[s].name == "gamma" and sampling._method(dists[s]) == "gamma":
                shape = 1 / dists[s].scv
                q = _mt_acceptance(shape + 1 if shape < 1 else shape) if off_range else _step_acceptance(shape)
                assert abs(void.mean() - (1 - q)) <= 4 * math.sqrt(q * (1 - q) / COUNT), (dists[s], void.mean(), q)
            else:
                assert not void.any(), dists[s]
            _check_law(v[~void, j], dists[s])
            _check_law(v[kept, j], dists[s])  # the law given that the whole event is kept
        assert abs(np.corrcoef(v[kept, 0], v[kept, 1])[0, 1]) <= 4 / math.sqrt(kept.sum()), (a, b)


@pytest.mark.parametrize("names", [("exponential",), ("hyperexponential",), ("exponential", "hyperexponential")])
def test_two_slots_have_their_laws_and_are_independent(names):
    """Two slots of one draw: each slot has its law, the two are independent (correlation, and the law of
    their maximum), and a single slot gives the same law."""
    dists = [Dist(n, 4.0 if n == "hyperexponential" else 1.0) for n in names]
    spec = sampling.spec_of(dists)
    table = _table(dists)
    key = jax.random.PRNGKey(21)
    idx = jnp.array([0, len(dists) - 1], jnp.int32)
    x = np.asarray(jax.jit(jax.vmap(lambda c: sampling.draw(key, c, spec, table, idx)))(
        jnp.arange(COUNT, dtype=jnp.uint32)))
    for j in range(2):
        _check_law(x[:, j], dists[idx[j]])
    assert abs(np.corrcoef(x[:, 0], x[:, 1])[0, 1]) <= 4 / math.sqrt(COUNT)
    F0, F1 = _cdf(dists[idx[0]]), _cdf(dists[idx[1]])
    assert stats.kstest(np.maximum(x[:, 0], x[:, 1]), lambda t: F0(t) * F1(t)).pvalue > 1e-4
    one = np.asarray(jax.jit(jax.vmap(lambda c: sampling.draw(key, c, spec, table, idx[:1])))(
        jnp.arange(COUNT, dtype=jnp.uint32)))
    _check_law(one[:, 0], dists[idx[0]])


# ----------------------------------------------------------------------- gamma: exact completion
@pytest.mark.parametrize("d", [Dist("gamma", 0.9), Dist("gamma", 2.5), Dist("gamma", 3.0), Dist("gamma", 7.0)], ids=str)
def test_gamma_fallback_is_exercised_and_exact(d):
    """With P = 1 (the event form: the step envelope; for gamma:3 and gamma:7 without log y) the Marsaglia-Tsang
    fallback completes the 0.7-1.3% of the draws whose proposal was rejected; those alone are exactly gamma too, and
    so are all the draws (an engine's draw 0 takes this form)."""
    spec = sampling.spec_of([d], proposals=1)
    table = _table([d])
    key = jax.random.PRNGKey(9)
    W = sampling.words_needed(spec)
    zero = jnp.zeros(1, jnp.int32)

    @jax.jit
    def run(c):
        w = rng.words(key, c, W)
        v, ok = sampling.sample_or_void(w, spec, table, zero)
        return sampling.sample(w, spec, table, zero, key, c)[0], v[0], ok

    x, first, ok = (np.asarray(a) for a in jax.vmap(run)(jnp.arange(COUNT, dtype=jnp.uint32)))
    fell_back = ~ok
    q = _step_acceptance(1.0 / d.scv)
    assert abs(fell_back.mean() - (1 - q)) <= 4 * math.sqrt(q * (1 - q) / COUNT)  # the envelope's acceptance
    np.testing.assert_allclose(x[ok], first[ok], rtol=1e-14)  # the fallback only touches the rejected draws
    _check_law(x, d)
    assert stats.kstest(x[fell_back], _law(d).cdf).pvalue > 1e-4  # the completed draws alone: exact


def test_sample_or_void_accepted_values_are_exact():
    """The void protocol: values of the calls that are not voided follow the law exactly."""
    dists = [Dist("gamma", 3.0), Dist("exponential", 1.0)]  # shape 1/3: the step envelope in a mixed spec
    spec = sampling.spec_of(dists, proposals=1)
    table = _table(dists)
    key = jax.random.PRNGKey(13)
    W = 2 * sampling.words_needed(spec)
    idx = jnp.array([0, 1], jnp.int32)
    v, ok = jax.jit(jax.vmap(lambda c: sampling.sample_or_void(rng.words(key, c, W), spec, table, idx)))(
        jnp.arange(COUNT, dtype=jnp.uint32))
    v, ok = np.asarray(v)[np.asarray(ok)], np.asarray(ok)
    q = _step_acceptance(1 / 3)
    assert abs(ok.mean() - q) <= 4 * math.sqrt(q * (1 - q) / COUNT)  # only the gamma slot voids
    _check_law(v[:, 0], dists[0])
    _check_law(v[:, 1], dists[1])


@pytest.mark.parametrize("shape", [0.02, *(pytest.param(a, marks=pytest.mark.slow) for a in (0.2, 0.7, 1.43)), 1 / 3, 3.3,
                                   40.0], ids=lambda a: f"shape{a:.3g}")
def test_general_gamma_shapes_are_exact_in_both_forms(shape):
    """A general shape in both forms: the self-contained sampler (Marsaglia-Tsang, for a < 1 at a + 1 boosted by
    the recycled acceptance uniform, P = 4 and the exact fallback) and the engine's form (the step envelope, one
    proposal a slot (shapes 1/5 and 1/3 without log y), two slots of one draw materialised as the engine does,
    rejected slots NaN) both follow
    ``scipy.stats.gamma(a, scale=1/a)`` (mean, SCV, KS); each slot is rejected at the envelope's rate (by
    quadrature), and the two slots' accepted values are independent."""
    d = Dist("gamma", 1.0 / shape)
    law = stats.gamma(shape, scale=1.0 / shape)
    x = np.asarray(sampling.sample_dist(jax.random.PRNGKey(31), d, COUNT))
    assert np.all(x > 0) and np.all(np.isfinite(x))
    _check_law(x, d)
    assert stats.kstest(x, law.cdf).pvalue > 1e-4
    spec, table, key = sampling.spec_of([d], proposals=1), _table([d]), jax.random.PRNGKey(37)
    assert spec.boost == (shape < 1) and spec.shared
    W = 2 * sampling.words_needed(spec)
    v = np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(
        rng.words(key, c, W), spec, table, jnp.zeros(2, jnp.int32), lambda y: y / 1.0))))(
        jnp.arange(COUNT, dtype=jnp.uint32)))
    q = _step_acceptance(shape)
    assert abs(q - sampling.step_envelope(shape).acceptance) < 1e-6
    for j in range(2):
        acc = ~np.isnan(v[:, j])
        assert abs(acc.mean() - q) <= 4 * math.sqrt(q * (1 - q) / COUNT)
        assert np.all(v[acc, j] > 0) and np.all(np.isfinite(v[acc, j]))
        _check_law(v[acc, j], d)
        assert stats.kstest(v[acc, j], law.cdf).pvalue > 1e-4
    both = ~np.isnan(v).any(axis=1)
    for f in (lambda y: y, np.log):
        assert abs(np.corrcoef(f(v[both, 0]), f(v[both, 1]))[0, 1]) <= 4 / math.sqrt(both.sum())


@pytest.mark.parametrize("shape", [0.01, 0.05, 0.2, 1 / 3, 0.4, 0.5 + 1e-6, 0.7, 1.43, 3.3, 40.0, 1e4],
                         ids=lambda a: f"shape{a:.3g}")
def test_step_envelope_is_an_envelope_of_the_law(shape):
    """The step envelope against scipy's law: the steps tile [lo, hi] (2^-40 quantiles: the mass left out is at
    most 2^-40 a side); the sampler's test ``exp(c log y - e y^q + B_k)`` is ``kappa pdf_y(y) width_k`` with ONE
    constant kappa on every step (so an accepted proposal has exactly the law's density), and it is at most 1 on
    a fine grid of every step and at the mode (the steps lie above the density; up to the rounding of the test's
    terms, of size a); the acceptance it implies is the envelope's (over the range at least 0.9839, near a = 2000)."""
    env = sampling.step_envelope(shape)
    q, c, e, v = sampling.step_scale(shape)
    assert (env.q, env.c, env.e, env.v) == (q, c, e, v) and len(env.left) == sampling.STEP_PIECES
    assert q == 1 if shape >= 1 else (q == math.ceil(1 / shape - 1e-9) and 0 <= c < shape)
    law = stats.gamma(shape)
    to_x = (lambda y: shape * y) if q == 1 else (lambda y: y**q)  # noqa: E731
    assert env.left[0] == env.lo and (env.lo == 0.0) == (q > 1)
    np.testing.assert_allclose(env.left[1:], env.left[:-1] + env.width[:-1], rtol=1e-12, atol=0)
    assert env.left[-1] + env.width[-1] == pytest.approx(env.hi, rel=1e-12)
    assert law.cdf(to_x(env.lo)) <= 1.01 * 2.0**-40 and law.sf(to_x(env.hi)) <= 1.01 * 2.0**-40
    assert law.sf(to_x(env.hi)) >= 0.99 * 2.0**-40
    _, pdf = _step_pdf(shape)
    grid = env.left[:, None] + env.width[:, None] * np.linspace(1e-9, 1.0 - 1e-9, 65)[None, :]
    p = np.exp(env.c * np.log(grid) - env.e * grid**q + env.B[:, None])
    log_kappa = env.c * np.log(grid) - env.e * grid**q + env.B[:, None] - pdf(grid) - np.log(env.width[:, None])
    np.testing.assert_allclose(log_kappa, np.median(log_kappa), rtol=0, atol=1e-8)
    tol = 128 * np.finfo(float).eps * max(1.0, float(np.abs(env.B).max()))  # the test's terms are of size a
    assert p.max() <= 1.0 + tol
    mode = (c / (e * q)) ** (1 / q) if c > 0 else 1e-300
    assert _step_test(env, np.array([mode]))[0][0] <= 1.0 + tol
    assert _step_acceptance(shape) == pytest.approx(env.acceptance, rel=1e-9) and env.acceptance >= 0.983


@pytest.mark.parametrize("shape", [1 / 3, 0.4, 1.43, 40.0], ids=lambda a: f"shape{a:.3g}")
def test_step_envelope_proposals_and_acceptance(shape):
    """The event form's proposals, accepted or not, follow the envelope: the step is uniform over the 512 (chi-square)
    and the position uniform within it (KS); a proposal is accepted with probability ``kappa pdf_y(y) width_k``
    from the law (binned acceptance rates within 4 standard errors); and slot j reads words 2j and 2j+1 only (one
    Threefry block a slot). Shape 1/3 takes no log y."""
    d = Dist("gamma", 1.0 / shape)
    spec, table, key = sampling.spec_of([d], proposals=1), _table([d]), jax.random.PRNGKey(41)
    env = sampling.step_envelope(shape)
    assert sampling.words_needed(spec) == 2 and spec.steps == env.q and spec.steps_log == (env.c > 0)
    n = 4 * COUNT

    def one(c):
        w = rng.words(key, c, 4)
        y, ok = sampling._step_slot(w[0], w[1], table, None, spec, lambda n: table[n][0])
        other = jnp.stack(sampling.slot_values(jnp.stack([w[2], w[3], w[0], w[1]]), spec, table, jnp.zeros(2, jnp.int32)))
        mine = jnp.stack(sampling.slot_values(w, spec, table, jnp.zeros(2, jnp.int32)))
        return y, ok, mine, other

    value, ok, mine, other = (np.asarray(a) for a in jax.jit(jax.vmap(one))(jnp.arange(n, dtype=jnp.uint32)))
    np.testing.assert_array_equal(np.where(ok, value, np.nan), mine[:, 0])  # slot 0: words 0 and 1
    np.testing.assert_array_equal(mine[:, 0], other[:, 1])  # the same two words in slot 1
    to_y, pdf = _step_pdf(shape)
    y = to_y(value)
    k = np.clip(np.searchsorted(env.left, y, side="right") - 1, 0, len(env.left) - 1)
    counts = np.bincount(k, minlength=len(env.left))
    assert stats.chisquare(counts).pvalue > 1e-4
    assert stats.kstest((y - env.left[k]) / env.width[k], "uniform").pvalue > 1e-4
    mid = env.left + env.width / 2
    log_kappa = np.median(np.log(_step_test(env, mid)[0]) - pdf(mid) - np.log(env.width))
    p = np.minimum(np.exp(log_kappa + pdf(y) + np.log(env.width[k])), 1.0)
    bins = np.quantile(p, np.linspace(0, 1, 11))
    for lo_b, hi_b in zip(bins[:-1], bins[1:]):
        sel = (p >= lo_b) & (p <= hi_b)
        pm = p[sel].mean()
        se = math.sqrt(max(pm * (1 - pm), 1e-4) / sel.sum())
        assert abs(ok[sel].mean() - pm) <= 4 * se + 1e-6, (lo_b, hi_b)


def test_step_scale_and_the_spec_of_the_step_form():
    """``q = ceil(1/a)`` below shape 1 (c = aq - 1 in [0, a); within SHAPE_TOL of 1/q it is 1/q: no log y), q = 1
    above; the spec carries the largest q and whether any stream needs log y; the tables are per stream."""
    assert sampling.step_scale(1 / 3)[:2] == (3, 0.0) and sampling.step_scale(1 / 3 * (1 + 1e-12))[:2] == (3, 0.0)
    assert sampling.step_scale(0.4)[0] == 3 and sampling.step_scale(0.4)[1] == pytest.approx(0.2)
    assert sampling.step_scale(1.43) == (1, pytest.approx(0.43), 1.43, 1.0)
    spec = lambda *scvs: sampling.spec_of([Dist("gamma", c) for c in scvs], proposals=1)  # noqa: E731
    assert (spec(3.0).steps, spec(3.0).steps_log) == (3, False)
    assert (spec(3.0, 5.0).steps, spec(3.0, 5.0).steps_log) == (5, False)
    assert (spec(3.0, 2.5).steps, spec(3.0, 2.5).steps_log) == (3, True)
    assert (spec(0.7, 3.0).steps, spec(0.7, 3.0).steps_log) == (3, True)
    assert spec(3.0, 0.7).proposals == 1 and not spec(3.0, 0.7).shared
    table = sampling.param_table([Dist("gamma", 3.0), Dist("gamma", 0.7)])
    assert table["sL"].shape == (2, sampling.STEP_PIECES) and list(table["sq"]) == [3, 1]
    assert list(table["sv"]) == [3.0, 1.0] and list(table["se"]) == [1.0, pytest.approx(1 / 0.7)]


def test_two_step_streams_with_different_scales_keep_their_laws():
    """A gamma-only spec with two laws of different q (gamma:3, q = 3 without log y; gamma:0.7, q = 1 with it):
    each slot reads its stream's table and its own power of y (masked products), and has its law."""
    dists = [Dist("gamma", 3.0), Dist("gamma", 0.7), Dist("gamma", 12.0)]
    spec, table, key = sampling.spec_of(dists, proposals=1), _table(dists), jax.random.PRNGKey(59)
    assert spec.steps == 12 and spec.steps_log and not spec.shared
    for idx in ([0, 1], [1, 2]):
        v = np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(  # noqa: B023
            rng.words(key, c, 4), spec, table, jnp.array(idx, jnp.int32)))))(jnp.arange(COUNT, dtype=jnp.uint32)))
        for j in range(2):
            acc = ~np.isnan(v[:, j])
            q = sampling.step_envelope(1.0 / dists[idx[j]].scv).acceptance
            assert abs(acc.mean() - q) <= 4 * math.sqrt(q * (1 - q) / COUNT)
            _check_law(v[acc, j], dists[idx[j]])


def test_event_gamma_materialises_each_block_once_and_keeps_the_words():
    """The event form's blocks are materialised as one uint64 each (an opaque integer division by 1): same
    words, hence the same values with or without the materialisation."""
    d = Dist("gamma", 3.0)
    spec, table, key = sampling.spec_of([d], proposals=1), _table([d]), jax.random.PRNGKey(43)
    idx = jnp.zeros(2, jnp.int32)
    f = lambda keep: jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(  # noqa: E731
        rng.words(key, c, 4), spec, table, idx, keep))))(jnp.arange(4096, dtype=jnp.uint32))
    a, b = np.asarray(f(sampling._identity)), np.asarray(f(lambda y: y / 1.0))
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_array_equal(a[~np.isnan(a)], b[~np.isnan(b)])


def test_log_pair_is_within_an_ulp_of_numpy():
    """:func:`sampling.log_pair` (one division for two logarithms)."""
    g = np.random.default_rng(5)
    w = g.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    u = np.asarray(rng.uniform(jnp.asarray(w)))
    t = np.concatenate([g.uniform(1e-3, 4.0, 100_000), 1 + g.uniform(-1e-6, 1e-6, 100_000)])
    lt, lu = (np.asarray(a) for a in jax.jit(sampling.log_pair)(jnp.asarray(t), jnp.asarray(u)))
    for got, x in ((lt, t), (lu, u)):
        ref = np.log(x)
        assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref)))


def test_too_few_words_fail_loudly():
    """The previous call ``sample(key, spec, table, idx)`` must not run on a key's two words."""
    dists = [Dist("exponential", 1.0)]
    with pytest.raises(ValueError, match="need 4 words"):
        sampling.sample(jax.random.PRNGKey(0), sampling.spec_of(dists), _table(dists), jnp.arange(2))


def test_gamma_spec_needs_key_and_counter_for_the_fallback():
    spec = sampling.spec_of([Dist("gamma", 0.7)])
    with pytest.raises(ValueError, match="key and counter"):
        sampling.sample(jnp.zeros(16, jnp.uint32), spec, _table([Dist("gamma", 0.7)]), jnp.zeros(1, jnp.int32))


# ------------------------------------------------------------------------------------ generator
def test_threefry_known_answers():
    """Random123's known-answer vectors for threefry2x32 (20 rounds), and JAX's own function."""
    kat = [((0, 0), (0, 0), (0x6B200159, 0x99BA4EFE)),
           ((0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF), (0x1CB996FC, 0xBB002BE7)),
           ((0x13198A2E, 0x03707344), (0x243F6A88, 0x85A308D3), (0xC4923A9C, 0x483DF7A0))]
    for key, ctr, out in kat:
        y = rng.threefry2x32(*(np.uint32(v) for v in key + ctr))
        assert tuple(int(v) for v in y) == out
    import jax.extend.random as jr

    r = np.random.default_rng(0).integers(0, 2**32, (4, 256), dtype=np.uint64).astype(np.uint32)
    y = np.stack(jax.jit(rng.threefry2x32)(*r), axis=1)
    ref = jax.vmap(lambda a, b, c, d: jr.threefry_2x32(jnp.stack([a, b]), jnp.stack([c, d])))(*r)
    assert np.array_equal(y, np.asarray(ref))


def test_words_are_deterministic_and_addressed_by_counter():
    key = jax.random.fold_in(jax.random.PRNGKey(3), 7)
    words = jax.jit(rng.words, static_argnums=(2, 3))
    w = np.asarray(words(key, 5, 8))
    assert np.array_equal(w, np.asarray(words(key, 5, 8)))  # same key and counter, same words
    assert np.array_equal(w[:3], np.asarray(words(key, 5, 3)))  # a prefix
    assert np.array_equal(w[3:], np.asarray(words(key, 5, 5, 3)))  # continued at an offset
    assert np.array_equal(w[:2], np.asarray(rng.threefry2x32(*rng.key_words(key), np.uint32(5), np.uint32(0))))
    assert np.array_equal(w, np.asarray(words(key, jnp.uint64(5), 8)))  # uint64 counters agree below 2^32
    other = [np.asarray(words(key, 6, 8)), np.asarray(words(key, jnp.uint64(5 + 2**32), 8)),
             np.asarray(words(jax.random.fold_in(jax.random.PRNGKey(3), 8), 5, 8))]
    for o in other:
        assert not np.any(o == w)  # another draw, counter high word or replication: other words
    typed = jax.random.fold_in(jax.random.key(3), 7)
    assert np.array_equal(w, np.asarray(words(typed, 5, 8)))  # typed keys give the same stream
    with pytest.raises(ValueError):
        rng.words(key, 0, 4, offset=rng.MAX_WORD - 2)


def test_words_are_uniform():
    key = jax.random.PRNGKey(0)
    w = np.asarray(jax.vmap(lambda c: rng.words(key, c, 4))(jnp.arange(50_000, dtype=jnp.uint32))).ravel()
    counts = np.bincount((w >> 24).astype(np.int64), minlength=256)  # top byte: chi-square, 255 dof
    assert stats.chisquare(counts).pvalue > 1e-4
    assert stats.kstest(np.asarray(rng.uniform(w)), "uniform").pvalue > 1e-4


def test_uniforms_are_exact_midpoints_in_the_open_interval():
    w = jnp.array([0, 1, 12345, 2**31, 2**32 - 1], jnp.uint32)
    assert np.array_equal(np.asarray(rng.uniform(w)), (np.asarray(w, np.float64) + 0.5) * 2.0**-32)
    lo, hi = jnp.uint32(0), jnp.uint32(2**32 - 1)
    assert float(rng.uniform52(lo, lo)) == 2.0**-53
    assert float(rng.uniform52(hi, hi)) == 1 - 2.0**-53
    b = (0xDEADBEEF << 20) | (0x12345678 >> 12)
    assert float(rng.uniform52(jnp.uint32(0xDEADBEEF), jnp.uint32(0x12345678))) == (b + 0.5) * 2.0**-52


def test_log_is_within_an_ulp_of_numpy():
    """The written-out logarithm (fdlibm's) on positive normal numbers: the uniforms' grid, its ends,
    products of uniforms, values near 1 and powers of two."""
    r = np.random.default_rng(1)
    x = np.concatenate([(r.integers(0, 2**32, 200_000) + 0.5) * 2.0**-32, [2.0**-33, 1 - 2.0**-33, 2.0**-53],
                        np.prod((r.integers(0, 2**32, (100_000, 12)) + 0.5) * 2.0**-32, axis=1),
                        1 + (r.random(100_000) - 0.5) * 1e-6, r.random(100_000) * 30, 2.0 ** np.arange(-1022, 1024)])
    got, ref = np.asarray(jax.jit(sampling.log)(jnp.asarray(x))), np.log(x)
    assert np.all(np.abs(got - ref) <= np.spacing(np.abs(ref)) + 1e-300)
    assert np.array_equal(np.asarray(jax.jit(sampling.log)(jnp.asarray([1.0, 2.0, 0.5]))), np.log([1.0, 2.0, 0.5]))


def test_slot_values_void_only_rejected_gamma_slots_and_keep_their_law():
    """The engine's form of the void protocol: NaN marks a rejected gamma slot; the others keep their law."""
    dists = [Dist("gamma", 0.7), Dist("lognormal", 2.0)]
    spec, table, key = sampling.spec_of(dists, proposals=1), _table(dists), jax.random.PRNGKey(19)
    W = 2 * sampling.words_needed(spec)
    v = np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(
        rng.words(key, c, W), spec, table, jnp.array([0, 1]), lambda x: x / 1.0))))(jnp.arange(COUNT, dtype=jnp.uint32)))
    rejected = np.isnan(v[:, 0])
    q = _step_acceptance(1 / 0.7)
    assert abs(rejected.mean() - (1 - q)) <= 4 * math.sqrt(q * (1 - q) / COUNT)
    assert not np.any(np.isnan(v[:, 1]))
    _check_law(v[~rejected, 0], dists[0])
    _check_law(v[:, 1], dists[1])


@pytest.mark.parametrize("d", [Dist("lognormal", 2.0), Dist("gamma", 2.0),
                               pytest.param(Dist("gamma", 0.99e-4), marks=pytest.mark.slow)], ids=str)
def test_box_muller_pairs_give_each_slot_its_law_independently(d):  # gamma shape 1.01e4: Marsaglia-Tsang's normals
    """Two slots of a method that takes a normal share a Box-Muller pair: both have the law, and the
    pair's normals are independent (correlation of the variates and of their logarithms)."""
    spec, table, key = sampling.spec_of([d], proposals=1), _table([d]), jax.random.PRNGKey(23)
    W = 2 * sampling.words_needed(spec)
    v = np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(
        rng.words(key, c, W), spec, table, jnp.zeros(2, jnp.int32)))))(jnp.arange(COUNT, dtype=jnp.uint32)))
    ok = ~np.isnan(v).any(axis=1)
    for j in range(2):
        _check_law(v[~np.isnan(v[:, j]), j], d)
    for f in (lambda x: x, np.log):
        assert abs(np.corrcoef(f(v[ok, 0]), f(v[ok, 1]))[0, 1]) <= 4 / math.sqrt(ok.sum())


def test_sincos_is_within_a_few_units_in_the_last_place():
    w = jnp.asarray(np.random.default_rng(2).integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32))
    u = rng.uniform(w)
    s, c = (np.asarray(a) for a in jax.jit(sampling.sincos2pi)(u))
    ref = 2 * np.pi * np.asarray(u)
    assert np.max(np.abs(s - np.sin(ref))) < 1e-15 and np.max(np.abs(c - np.cos(ref))) < 1e-15
    assert np.allclose(s * s + c * c, 1.0, rtol=0, atol=1e-15)


def test_normal_quantile_matches_scipy():
    p = np.concatenate([np.linspace(1e-6, 1 - 1e-6, 10_001), 2.0 ** -np.arange(2.0, 54.0),
                        1 - 2.0 ** -np.arange(2.0, 53.0)])
    ndtri = jax.jit(sampling.ndtri, static_argnames="far")
    z = np.asarray(ndtri(jnp.asarray(p)))
    assert np.allclose(z, special.ndtri(p), rtol=1e-14, atol=1e-14)
    p32 = (np.arange(0, 2**32, 2**20 + 7, dtype=np.float64) + 0.5) * 2.0**-32
    assert np.allclose(np.asarray(ndtri(jnp.asarray(p32), far=False)), special.ndtri(p32), rtol=1e-14, atol=1e-14)


def test_sample_with_key_keeps_the_previous_outputs():
    """The previous sampler (one key per event) still gives what it gave before this rewrite."""
    dists = [Dist("exponential", 1.0), Dist("erlang", 0.25), Dist("hyperexponential", 3.0), Dist("lognormal", 2.0),
             Dist("gamma", 0.5), Dist("deterministic", 0.0)]
    spec, table, key = sampling.spec_of(dists), _table(dists), jax.random.PRNGKey(7)
    expected = {(0, 1): (0.1694760802306077, 1.3351266610745789), (2, 3): (1.8112317524549264, 0.054086915518976715),
                (4, 5): (0.6220225158708842, 1.0)}
    import importlib.util
    from pathlib import Path

    where = Path(__file__).resolve().parents[2] / "benchmarks" / "reference_sampler.py"
    spec_ = importlib.util.spec_from_file_location("reference_sampler", where)
    reference = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(reference)
    run = jax.jit(lambda idx: reference.sample_with_key(key, spec, table, idx))
    for idx, want in expected.items():
        got = np.asarray(run(jnp.array(idx)))
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("name", ["exponential", "hyperexponential:3", "gamma:3", "lognormal:2"])
def test_a_shared_law_reads_row_zero_and_changes_no_value(name):
    """``Spec.shared`` (every stream has the same law) reads a slot's parameters from row 0 instead of selecting
    the stream's row: bit-identical values; a spec with two laws is not shared."""
    fam, _, scv = name.partition(":")
    dists = [Dist(fam, float(scv or 1.0))] * 6
    spec, table, key = sampling.spec_of(dists, proposals=1), _table(dists), jax.random.PRNGKey(47)
    assert spec.shared and not sampling.spec_of(dists[:5] + [Dist("erlang", 0.5)]).shared
    assert not sampling.spec_of([Dist("gamma", 3.0), Dist("gamma", 2.9)]).shared
    W = 2 * sampling.words_needed(spec)
    idx = jnp.array([4, 1], jnp.int32)
    f = lambda sp: np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(  # noqa: E731
        rng.words(key, c, W), sp, table, idx))))(jnp.arange(4096, dtype=jnp.uint32)))
    np.testing.assert_array_equal(f(spec), f(spec._replace(shared=False)))


@pytest.mark.parametrize("names", [("gamma:3", "gamma:3"), pytest.param(("gamma:3", "gamma:5"), marks=pytest.mark.slow),
                                   pytest.param(("gamma:0.7", "gamma:2.5"), marks=pytest.mark.slow),
                                   pytest.param(("gamma:4", "lognormal:2"), marks=pytest.mark.slow),
                                   ("hyperexponential:3", "erlang:0.5")], ids=str)
def test_event_engine_draw_zero_has_the_interarrival_laws(names):
    """The 2x2 event engine's draw 0 (the initial interarrival times, by the self-contained sampler on the event
    form: the step envelopes' first proposal, Marsaglia-Tsang's fallback) follows the two interarrival laws:
    ``lambda_i ta_i`` of the initial state, over replications (mean, SCV, KS). A wrong scale of the accepted
    first proposal (a unit-mean value taken as a Gamma(a) part) once shifted J_n by 5 standard errors."""
    import tomllib
    from pathlib import Path

    from jaxq.examples import path
    from jaxq.model.pss2x2 import from_dict
    from jaxq.sim import pss2x2 as S
    from jaxq.mc import replications
    from jaxq.sim.models import pss2x2 as model

    data = tomllib.loads(Path(path("pss_P")).read_text())
    data["system"]["interarrival"] = list(names)
    data["system"]["service"] = [list(names), list(names[::-1])]  # gamma-only pairs stay gamma-only specs
    system = from_dict(data)
    fams = list(system.interarrival)
    st = S.setup(system, 16, policy="P", horizon=5.0)
    assert (st.spec.steps > 0) == names[0].startswith("gamma") and st.spec.steps_log == ("gamma:0.7" in names)
    em = model.event_model(st.spec, False, False)
    s = jax.jit(jax.vmap(lambda k: em.init(k, st.params)))(rng.keys(5, 0, COUNT))
    lam = np.asarray(st.params.lam)
    for j, (ta, d) in enumerate(((s.ta0, fams[0]), (s.ta1, fams[1]))):
        _check_law(np.asarray(ta) * lam[j], d)


def test_shapes_outside_the_step_range_keep_marsaglia_tsang_in_the_event_form():
    """A gamma-only spec takes the step envelope only for shapes in STEP_SHAPES (SCV 1e-4 to 100): below, y^q would
    take over 100 products; above, the ends' quantiles lose their precision. Outside, the event form keeps
    Marsaglia-Tsang with its P proposals (exact; voided only when all are rejected), the tables carry no steps,
    and mixed specs never build them (one raised ZeroDivisionError for gamma:1e30 in a mixed spec once)."""
    from jaxq.sim.models.pss2x2 import event_spec

    lo, hi = sampling.STEP_SHAPES
    assert sampling.spec_of([Dist("gamma", 1 / lo)]).steps and sampling.spec_of([Dist("gamma", 1 / hi)]).steps
    for d in (Dist("gamma", 1.01 / lo), Dist("gamma", 1e30), Dist("gamma", 0.99 / hi)):
        spec = sampling.spec_of([d])
        assert spec.steps == 0 and not spec.steps_log
        assert event_spec(spec).proposals == sampling.DEFAULT_PROPOSALS and not sampling._event_gamma(event_spec(spec))
        assert sampling.spec_of([d], proposals=1).proposals == sampling.DEFAULT_PROPOSALS  # no one-proposal layout
        assert "sL" not in sampling.param_table([d])
    mixed = [Dist("gamma", 1e30), Dist("exponential", 1.0)]
    assert not sampling.spec_of(mixed).steps and event_spec(sampling.spec_of(mixed)).proposals == 1
    assert "sL" not in sampling.param_table(mixed)
    d = Dist("gamma", 0.99 / hi)  # shape 1.01e4: Marsaglia-Tsang, four proposals, in the engine's form
    spec, table, key = event_spec(sampling.spec_of([d])), _table([d]), jax.random.PRNGKey(53)
    W = 2 * sampling.words_needed(spec)
    v = np.asarray(jax.jit(jax.vmap(lambda c: jnp.stack(sampling.slot_values(
        rng.words(key, c, W), spec, table, jnp.zeros(2, jnp.int32), lambda y: y / 1.0))))(jnp.arange(COUNT, dtype=jnp.uint32)))
    assert np.isnan(v).mean() < 1e-3
    for j in range(2):
        _check_law(v[~np.isnan(v[:, j]), j], d)
