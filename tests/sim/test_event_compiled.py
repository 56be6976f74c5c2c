"""The compiled event step of the 2x2 engine draws each Threefry block once (a structural property of the
program XLA builds, checked on its optimised HLO; the speed itself is measured by ``jaxq bench``).

XLA:CPU compiles a step into one loop per array it produces and fuses cheap operations into every loop that
reads them; a random word read outside the value that materialises it makes XLA compute its Threefry block
again in another loop (a 20-round block costs about as much as a logarithm). This happened to the
hyperexponential phase of the mixed sampler (every dual-mode example system: 4 blocks computed per step where
2 were needed) until the phase travelled with the materialised uniform as its sign.
"""

import re

import jax
import pytest

from jaxq.bench.pss2x2 import family_system
from jaxq.examples import path
from jaxq.model import load
from jaxq.mc import replications, rng
from jaxq.sim import event, pss2x2, sampling
from jaxq.sim.models import pss2x2 as model

ROUNDS = 20  # xor operations of one Threefry-2x32 block (20 rounds, one xor each)


def threefry_blocks(system) -> tuple[float, int]:
    """``(blocks computed per step, blocks needed per step)``: the xor operations of the optimised step over
    20, and the words of the event's draw over 2."""
    st = pss2x2.setup(system, 100, policy="P", horizon=1e6)
    prog = event.program(model.event_model(st.spec, False, False), 128, 1)
    states = prog.start(rng.keys(0, 0, 64), st.params)
    hlo = jax.jit(prog.advance).lower(states, st.params).compile().as_text()
    xor = len(re.findall(r"= \S+ xor\(", hlo))
    return xor / ROUNDS, sampling.words_needed(model.event_spec(st.spec))  # 2 slots x W words / 2 words a block


SLOW = ("pss_P", "pss_PP", "pss_PP_gamma", "gamma:3")


@pytest.mark.parametrize("name", ["pss_T2T2", "pss_PP_lognormal", *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_each_threefry_block_of_an_event_is_computed_once(name):
    system = load(path(name)) if name.startswith("pss") else family_system(name)
    computed, needed = threefry_blocks(system)
    assert needed <= computed < needed + 0.75, (computed, needed)  # a block computed twice adds a whole 1
