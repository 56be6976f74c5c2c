"""Fixed times at which a path is recorded: a network's ``snap_times``, a 2x2 system's ``record_times``.

A time the path never reaches (before 0, past the horizon, NaN) read 0 without a word; it is one InputError naming
the option and the entry, before any run, through the library and through ``jaxq.simulate``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import jaxq
from jaxq.errors import InputError
from jaxq.model import load
from jaxq.sim import network as C
from jaxq.sim import pss2x2 as PT

BAD = [
    ([0.5, 3.0], r"snap_times\[1\] = 3 is past the horizon 2: a path is recorded at times in \[0, horizon\] only"),
    ([-1.0], r"snap_times\[0\] must be >= 0, got -1"),
    ([1.0, math.nan], r"snap_times\[1\] must be a finite number, got nan"),
    (["1"], r"snap_times\[0\] must be a number, got '1'"),
]


@pytest.mark.parametrize("times,words", BAD, ids=["past-horizon", "negative", "nan", "string"])
def test_network_snapshot_times_never_reached_are_refused(times, words):
    with pytest.raises(InputError, match=r"^snap_times: " + words) as e:
        C.simulate(load("network_N"), 4.0, reps=2, window=C.Window(1.0, 2.0), engine="event",
                   outputs=C.NetworkOutputs(snap_times=times))
    assert e.value.key == "snap_times"


def test_network_snapshot_past_the_horizon_is_refused_through_jaxq_simulate():
    with pytest.raises(InputError, match=r"^snap_times: snap_times\[0\] = 2\.5 is past the horizon 2") as e:
        jaxq.simulate("network_N", 4, 2, snap_times=[2.5], warmup=1.0, horizon=2.0)
    assert e.value.key == "snap_times"


@pytest.mark.slow
def test_network_snapshot_times_in_any_order_and_at_the_horizon_are_recorded():
    """Times need no order, 0 and the horizon itself are reached: the same snapshots, permuted."""
    kw = dict(reps=4, seed=3, window=C.Window(0.0, 2.0), engine="event")
    a = C.simulate(load("network_N"), 4.0, outputs=C.NetworkOutputs(snap_times=[0.0, 1.0, 2.0]), **kw)
    b = C.simulate(load("network_N"), 4.0, outputs=C.NetworkOutputs(snap_times=[2.0, 0.0, 1.0]), **kw)
    np.testing.assert_array_equal(a.samples["snapshots"][:, [2, 0, 1]], b.samples["snapshots"])
    assert np.all(a.samples["snapshots"][:, 2].sum(axis=1) > 0)  # the state at the horizon, not 0


@pytest.mark.parametrize("times,words", [(t, w.replace("snap_times", "record_times")) for t, w in BAD],
                         ids=["past-horizon", "negative", "nan", "string"])
def test_pss2x2_record_times_never_reached_are_refused(times, words):
    """The 2x2 simulator's record times: the same rule (a NaN time passed and read 0; a string was a raw error)."""
    with pytest.raises(InputError, match=r"^record_times: " + words) as e:
        PT.plan(load("pss_PP"), 16.0, horizon=2.0, record_times=times)
    assert e.value.key == "record_times"


@pytest.mark.parametrize("times", [[0.5, 3.0], [-1.0], [1.0, math.nan], ["1"]],
                         ids=["past-horizon", "negative", "nan", "string"])
def test_network_sde_times_never_reached_are_refused(times):
    """The network diffusion's recorded times (the Euler scheme): a time past the horizon was clipped to the last
    step without a word; now the simulators' rule (the other bad entries were refused already)."""
    with pytest.raises(InputError, match=r"^times") as e:
        jaxq.simulate_network_sde("network_N", paths=2, dt=0.01, horizon=2.0, warmup=1.0, times=times)
    assert e.value.key.startswith("times")
    if times == [0.5, 3.0]:
        assert str(e.value) == ("times: times[1] = 3 is past the horizon 2: a path is recorded at times in "
                                "[0, horizon] only")
