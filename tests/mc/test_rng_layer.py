"""The one random-stream layer (jaxq.mc.rng): its vectorised form gives the same words as the per-event form, its
uniforms and normals have the right laws, and no simulator draws from any other layout."""

from __future__ import annotations

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from jaxq.mc import rng

ROOT = Path(__file__).parents[2] / "jaxq"


@pytest.mark.parametrize("counter", [jnp.uint32(0), jnp.uint32(12345), jnp.uint64(2**40 + 7),
                                     jnp.uint64(rng.PERTURB_DRAW)])
@pytest.mark.parametrize("count", [1, 2, 7, 64])
def test_block_is_the_words_of_the_draw(counter, count):
    key = jax.random.fold_in(jax.random.PRNGKey(3), 17)
    np.testing.assert_array_equal(np.asarray(rng.block(key, counter, count)), np.asarray(rng.words(key, counter, count)))


def test_uniforms_are_the_52_bit_uniforms_of_word_pairs():
    key = jax.random.PRNGKey(5)
    w = np.asarray(rng.words(key, jnp.uint32(9), 8))
    u = np.asarray(rng.uniforms(key, jnp.uint32(9), 4))
    np.testing.assert_array_equal(u, np.asarray(rng.uniform52(w[0::2], w[1::2])))
    assert np.all((u > 0) & (u < 1))


def test_uniforms_and_normals_have_their_laws():
    """Kolmogorov-Smirnov at level 1e-4 on 20000 draws across keys and counters (a true law fails 1 in 10^4)."""
    keys = jax.vmap(lambda r: jax.random.fold_in(jax.random.PRNGKey(0), r))(jnp.arange(200, dtype=jnp.uint32))
    u = jax.vmap(lambda k: jax.vmap(lambda c: rng.uniforms(k, c, 1))(jnp.arange(100, dtype=jnp.uint32)))(keys)
    z = jax.vmap(lambda k: rng.normals(k, jnp.uint32(1), 100))(keys)
    assert stats.kstest(np.asarray(u).ravel(), "uniform").pvalue > 1e-4
    assert stats.kstest(np.asarray(z).ravel(), "norm").pvalue > 1e-4
    # distinct draws of one key are independent: the lag-one correlation of a stream's normals is O(1/sqrt(N))
    zz = np.asarray(z).ravel()
    assert abs(np.corrcoef(zz[:-1], zz[1:])[0, 1]) < 4 / np.sqrt(zz.size)


def _random_calls(path: Path) -> list[str]:
    """The ``jax.random.<name>`` attributes a module uses."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "random" \
                and isinstance(node.value.value, ast.Name) and node.value.value.id == "jax":
            out.append(node.attr)
    return out


def test_no_simulator_draws_outside_the_layer():
    """The drivers and models of jaxq.sim and jaxq.sde draw only through jaxq.mc.rng: jax.random appears only for
    the typed-key check (the keys themselves are the core's: tests/test_layering.py)."""
    allowed = {"key_data"}
    found = {}
    for path in sorted([*(ROOT / "sim").rglob("*.py"), *(ROOT / "sde").rglob("*.py")]):
        bad = sorted(set(_random_calls(path)) - allowed)
        if bad:
            found[str(path.relative_to(ROOT))] = bad
    assert found == {}
