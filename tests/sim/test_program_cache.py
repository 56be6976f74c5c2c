"""The drivers' cached program constructors keep a bounded number of programs: a process that runs many systems
(a study over hundreds of random systems) holds at most ``replications.PROGRAMS_KEPT`` programs and their
compiled code, and a program dropped from the cache is built again with the same numbers."""

import gc

import numpy as np
import pytest

from jaxq.examples import path
from jaxq.model import load
from jaxq.sde import driver as sde_driver
from jaxq.mc import replications
from jaxq.sim import event, pss2x2, uniformized
from jaxq.sim.models import network as network_model
from jaxq.sim.models import pss2x2 as pss_model

CONSTRUCTORS = [event.program, event.markov_event_model, pss_model.event_model, pss_model.markov, uniformized.program,
                network_model.markov, sde_driver.program]


@pytest.mark.parametrize("fn", CONSTRUCTORS, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_every_program_constructor_is_bounded(fn):
    assert fn.cache_info().maxsize == replications.PROGRAMS_KEPT


@pytest.mark.slow
def test_a_dropped_program_is_built_again_with_the_same_numbers():
    s = load(path("pss_PP"))
    a = pss2x2.simulate(s, 64, 16, seed=4, truncation=pss2x2.Truncation(horizon=5.0),
                        outputs=pss2x2.Outputs(diagnostics=False))
    for fn in CONSTRUCTORS:
        fn.cache_clear()
    replications._COMPILED.clear()
    gc.collect()
    b = pss2x2.simulate(s, 64, 16, seed=4, truncation=pss2x2.Truncation(horizon=5.0),
                        outputs=pss2x2.Outputs(diagnostics=False))
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])
    assert event.program.cache_info().currsize >= 1
