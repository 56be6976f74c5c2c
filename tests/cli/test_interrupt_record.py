"""A Ctrl-C that a finalizer swallows is raised again by the replication loop (jaxq.interrupt)."""

import os
import signal

import pytest

from jaxq import interrupt
from jaxq.examples import path
from jaxq.model import load
from jaxq.sim import pss2x2


def test_a_swallowed_interrupt_is_raised_by_the_replication_loop():
    s = load(path("pss_P"))
    with interrupt.catching():
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)  # the handler raises here; the record stays
        # as if the KeyboardInterrupt had been raised inside a finalizer and swallowed there: the record is set
        assert interrupt._requested
        with pytest.raises(KeyboardInterrupt):
            pss2x2.simulate(s, 16, 8, seed=1, truncation=pss2x2.Truncation(horizon=2.0),
                            outputs=pss2x2.Outputs(diagnostics=False))
        assert not interrupt._requested
        pss2x2.simulate(s, 16, 8, seed=1, truncation=pss2x2.Truncation(horizon=2.0),
                        outputs=pss2x2.Outputs(diagnostics=False))  # raised once, then runs
    assert signal.getsignal(signal.SIGINT) is not interrupt._handler and not interrupt._requested


def test_without_the_command_nothing_is_recorded():
    interrupt.check()  # no record: nothing raised
    assert signal.getsignal(signal.SIGINT) is not interrupt._handler
