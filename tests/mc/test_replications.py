"""The replication layer and the event driver: an M/M/1 queue against its closed form; the same numbers
for any chunk, block, slice or device count (replication r always uses fold_in(PRNGKey(seed), r))."""

import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxq.examples import path
from jaxq.model import load
from jaxq.mc import replications, rng
from jaxq.sim import event, pss2x2

MM1_SRC = textwrap.dedent(
    """
    import jax, jax.numpy as jnp
    import jaxq
    from jaxq.sim.event import EventModel

    def init(key, p):
        return dict(key=key, t=jnp.float64(0), x=jnp.int64(0), area=jnp.float64(0), events=jnp.int64(0))

    def step(s, p):
        lam, mu, horizon = p
        key, k1, k2 = jax.random.split(s["key"], 3)
        rate = lam + jnp.where(s["x"] > 0, mu, 0.0)
        t_next = s["t"] + jax.random.exponential(k1) / rate
        inside = t_next < horizon
        arrival = jax.random.uniform(k2) * rate < lam
        x = jnp.where(inside, s["x"] + jnp.where(arrival, 1, -1), s["x"])
        area = s["area"] + s["x"] * (jnp.minimum(t_next, horizon) - s["t"])
        return dict(key=key, t=t_next, x=x, area=area, events=s["events"] + inside)

    def done(s, p):
        return s["t"] >= p[2]

    MM1 = EventModel(init, step, done, lambda s, p: {k: v for k, v in s.items() if k != "key"},
                     lambda s: s["events"])
    """
)
exec(MM1_SRC)  # defines MM1 (module level, so the EventModel is hashable and compiled once)
PARAMS = (jnp.float64(0.5), jnp.float64(1.0), jnp.float64(400.0))


def test_mm1_time_average_against_closed_form():
    out, timing = event.run(MM1, PARAMS, 200, 3, block=128, batching=replications.Batching(chunk=100))  # noqa: F821
    est = out["area"] / 400.0
    mean, se = est.mean(), est.std(ddof=1) / np.sqrt(len(est))
    # exact transient mean from empty over [0, 400]: rho/(1-rho) minus a start-up deficit of O(1/400)
    assert abs(mean - 1.0) <= 4 * se + 0.02
    assert np.all(out["t"] >= 400.0)
    again, timing = event.run(MM1, PARAMS, 200, 3, block=128, batching=replications.Batching(chunk=100))  # noqa: F821
    assert timing.compile_s == 0.0  # every shape compiled before in this process
    assert all(np.array_equal(again[k], out[k]) for k in out)


def test_results_do_not_depend_on_chunk_block_or_start():
    a, _ = event.run(MM1, PARAMS, 13, 7, block=64, batching=replications.Batching(chunk=13))  # noqa: F821
    b, _ = event.run(MM1, PARAMS, 13, 7, block=128, batching=replications.Batching(chunk=5))  # noqa: F821
    c, _ = event.run(MM1, PARAMS, 6, 7, block=64, batching=replications.Batching(start=7, chunk=6))  # noqa: F821
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])
        np.testing.assert_array_equal(a[k][7:], c[k])


def test_progress_reports_the_work_done():
    seen = []
    out, _ = event.run(MM1, PARAMS, 16, 1, batching=replications.Batching(chunk=8, progress=seen.append))  # noqa: F821
    assert len(seen) >= 2 and sum(seen) == int(out["events"].sum())


def test_replication_keys_are_fold_in():
    k = rng.keys(5, 10, 3)
    np.testing.assert_array_equal(k[1], jax.random.fold_in(jax.random.PRNGKey(5), 11))


def test_plan_whole_vectors_and_slices():
    p = replications.plan(1, None)
    assert p.chunk % replications.LANES == 0 and p.parts == 1
    p = replications.plan(100_000, None)
    assert p.size <= replications.MAX_SLICE and p.size % replications.LANES == 0 and p.parts * p.size == p.chunk
    # several devices: a slice on each, but no device gets only padding (one slice per vector of LANES at most)
    cpu = jax.devices("cpu")[0]
    four = [cpu] * 4  # the plan reads the count and the platform only
    assert replications.plan(1000, None, four)[:3] == (1024, 4, 256)
    assert replications.plan(20, None, four)[:3] == (24, 3, 8) and len(replications.plan(20, None, four).devices) == 3
    assert replications.plan(5, None, four)[:3] == (8, 1, 8)
    # one CPU device: slices only where a lockstep state would leave the cache (two slices on one device run one
    # after the other: jaxq.xla_flags)
    assert replications.plan(1000, None, [cpu])[:3] == (1000, 1, 1000)
    assert replications.plan(40_000, None, [cpu]).parts == 3
    assert replications.plan(40_000, None, [cpu], max_slice=None).parts == 1


def test_a_long_run_is_spread_over_the_cpus_devices(monkeypatch):
    """With several host devices (one per core: jaxq.xla_flags) a run of the default devices is spread over them
    from SPREAD_WORK on (each device compiles the program once), and stays on the first below or when its work is
    not known; devices named are used whatever the work."""
    cpu = jax.devices("cpu")[0]
    monkeypatch.setattr(replications.jax, "local_devices", lambda: [cpu, cpu])
    monkeypatch.setattr(replications.jax, "default_backend", lambda: "cpu")
    long = replications.plan(64, None, None, work=replications.SPREAD_WORK)
    assert (long.parts, long.size, long.devices) == (2, 32, (cpu, cpu))
    for work in (None, 0.5 * replications.SPREAD_WORK):
        assert replications.plan(64, None, None, work=work)[:4] == (64, 1, 64, None)
    assert replications.plan(64, None, [cpu, cpu], work=1.0).parts == 2
    assert replications.plan(64, None, None, work=float("nan")).parts == 1  # not a number: not long
    # cache-sized slices on each device: 65,536 over two devices are four slices of MAX_SLICE, two a device
    wide = replications.plan(100_000, None, None, work=1e12)
    assert (wide.chunk, wide.parts, wide.size, len(wide.devices)) == (65_536, 4, replications.MAX_SLICE, 2)


@pytest.mark.slow
def test_chunk_one_and_two_are_bit_identical():
    """Every batch is a whole number of vectors, so a replication's last bit does not depend on its batch
    (XLA:CPU computes a loop's ragged tail with scalar code)."""
    system = load(path("pss_T2T1"))
    a = pss2x2.simulate(system, 25, 10, seed=4, truncation=pss2x2.Truncation(engine="event"),
                        batching=pss2x2.Batching(chunk=1))
    b = pss2x2.simulate(system, 25, 10, seed=4, truncation=pss2x2.Truncation(engine="event"),
                        batching=pss2x2.Batching(chunk=2))
    c = pss2x2.simulate(system, 25, 10, seed=4, truncation=pss2x2.Truncation(engine="event"))
    np.testing.assert_array_equal(a.samples["J"], b.samples["J"])
    np.testing.assert_array_equal(a.samples["J"], c.samples["J"])


DEVICES_MM1 = textwrap.dedent(
    """
    import sys, numpy as np
    from jaxq.examples import path
    from jaxq.model import load
    from jaxq.mc import replications
    from jaxq.sim import event, network, pss2x2
    assert len(jax.local_devices()) == 4
    p = (jnp.float64(0.5), jnp.float64(1.0), jnp.float64(50.0))
    for d, c in ((2, 17), (4, 33)):  # every device gets a slice (at most one a vector of 8 replications)
        assert replications.plan(c, c, jax.local_devices()[:d]).parts == d
    outs = [event.run(MM1, p, 40, 1, batching=replications.Batching(chunk=c, devices=jax.local_devices()[:d]))[0]
            for d, c in ((1, 40), (2, 17), (4, 33))]
    for o in outs[1:]:
        for k in o:
            np.testing.assert_array_equal(outs[0][k], o[k])
    """
)
DEVICES_MODELS = textwrap.dedent(
    """
    net = load(path("network_N"))
    res = [network.simulate(net, 16, "priority", reps=40, window=network.Window(1.0, 6.0), seed=2,
                            outputs=network.NetworkOutputs(hist_bins=0),
                            batching=network.Batching(chunk=c, devices=jax.local_devices()[:d]))
           for d, c in ((1, 40), (4, 33))]
    for r in res[1:]:
        np.testing.assert_array_equal(res[0].samples["mean_queue"], r.samples["mean_queue"])
    sy = load(path("pss_P"))
    res = [pss2x2.simulate(sy, 16, 40, seed=2, batching=pss2x2.Batching(chunk=c, devices=jax.local_devices()[:d]))
           for d, c in ((1, 40), (4, 33))]
    np.testing.assert_array_equal(res[0].samples["J"], res[1].samples["J"])
    """
)


def _four_devices(script: str) -> None:
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4")
    r = subprocess.run([sys.executable, "-c", MM1_SRC + script + "\nprint('identical')\n"], env=env,
                       capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "identical" in r.stdout


@pytest.mark.slow
def test_one_two_four_devices_give_identical_results():
    """The replication layer on 1, 2 and 4 devices (a fresh process with 4 host devices): one engine."""
    _four_devices(DEVICES_MM1)


@pytest.mark.slow  # two more engines compiled for every device of a fresh process (about 25 s)
def test_one_and_four_devices_give_identical_network_and_2x2_results():
    _four_devices(DEVICES_MM1 + DEVICES_MODELS)


def test_small_single_runs_on_an_accelerator_go_to_the_host_cpu():
    """small_run_devices: with devices=None on an accelerator, a run of fewer than HOST_BELOW replications gets the
    host CPU; as many or more, named devices, or a CPU backend keep what they have (the backend is passed in, so
    this runs on any machine). A named CPU device is planned on the CPU."""
    from jaxq.mc import replications as R

    cpu = jax.devices("cpu")[0]
    assert R.small_run_devices(100, None, backend="gpu") == [cpu]
    assert R.small_run_devices(R.HOST_BELOW, None, backend="gpu") is None
    assert R.small_run_devices(100, [cpu], backend="gpu") == [cpu]
    assert R.small_run_devices(100, None, backend="cpu") is None
    host = R.plan(100, None, [cpu])
    assert host.devices == (cpu,) and host.parts == 1
    assert R.plan(100, None, None).parts == host.parts and R.plan(100, None, None).devices is None


def test_replications_run_ahead_beside_a_pilot_are_the_ones_a_run_computes():
    """Inside ``ahead``, the pilot's first run also runs replications 0 .. 15 of the run's seed in its batch; a run
    of that seed with the same program and arguments takes them and computes only the rest: its outputs are those
    of the plain run, for fewer, as many and more replications than were run ahead, in any chunk."""
    short = (PARAMS[0], PARAMS[1], jnp.float64(40.0))
    plain = {r: event.run(MM1, short, r, 5, block=32)[0] for r in (5, 16, 40)}  # noqa: F821
    pilot_plain = event.run(MM1, short, 16, 9, block=32)[0]  # noqa: F821
    for reps, chunk in ((5, None), (16, None), (40, None), (40, 8)):
        with replications.ahead(9, 5, 16) as early:
            pilot = event.run(MM1, short, 16, 9, block=32, batching=replications.Batching(chunk=chunk))[0]  # noqa: F821
            assert early.ran == 16 and early.used == 0
            got = event.run(MM1, short, reps, 5, block=32, batching=replications.Batching(chunk=chunk))[0]  # noqa: F821
            assert early.used == min(reps, 16)
        assert all(np.array_equal(pilot[k], pilot_plain[k]) for k in pilot)  # the pilot is its own
        assert all(np.array_equal(got[k], plain[reps][k]) for k in got), (reps, chunk)
    with replications.ahead(9, 5, 16) as early:  # other arguments (a longer horizon): computed, not taken
        event.run(MM1, short, 16, 9, block=32)  # noqa: F821
        got = event.run(MM1, PARAMS, 5, 5, block=32)[0]  # noqa: F821
        assert early.ran == 16 and early.used == 0
    want = event.run(MM1, PARAMS, 5, 5, block=32)[0]  # noqa: F821
    assert all(np.array_equal(got[k], want[k]) for k in got)
    assert replications._AHEAD.get() is None  # nothing outlives the block


def test_the_batch_time_is_shared_by_the_pilot_and_the_run_that_takes_its_replications():
    """The pilot's timing is its share of the batch, the run's the rest of it (plus what it still computes): their
    sum is the batch's time, and a run whose replications were all run ahead has a positive time."""
    import time

    short = (PARAMS[0], PARAMS[1], jnp.float64(40.0))
    with replications.ahead(9, 5, 16) as early:
        t0 = time.perf_counter()
        _, pilot = event.run(MM1, short, 16, 9, block=32)  # noqa: F821
        elapsed = time.perf_counter() - t0
        _, taken = event.run(MM1, short, 10, 5, block=32)  # noqa: F821
    assert early.charged and taken.wall_s == early.ahead_s > 0 and taken.compile_s == 0.0
    assert pilot.wall_s + taken.wall_s <= elapsed
    with replications.ahead(9, 5, 16) as early:  # not taken (other arguments): charged to nobody here
        event.run(MM1, short, 16, 9, block=32)  # noqa: F821
        event.run(MM1, PARAMS, 10, 5, block=32)  # noqa: F821
    assert not early.charged and early.ahead_s > 0


def test_progress_counts_the_replications_run_ahead():
    """The pilot's progress is told the work of its batch with the replications run ahead, the run's the work it
    still does."""
    short = (PARAMS[0], PARAMS[1], jnp.float64(40.0))

    class Bar:
        def __init__(self):
            self.total, self.done = [], 0

        def start(self, total, unit):
            self.total.append(total)

        def __call__(self, done):
            self.done += done

    with replications.ahead(9, 5, 16):
        bar = Bar()
        out, _ = event.run(MM1, short, 16, 9, block=32, batching=replications.Batching(progress=bar),  # noqa: F821
                           work=1000.0)
        assert bar.total[-1] == 2000.0
        bar = Bar()
        event.run(MM1, short, 24, 5, block=32, batching=replications.Batching(progress=bar), work=2400.0)  # noqa: F821
        assert bar.total[-1] == pytest.approx(800.0)


def test_a_timer_counts_the_batch_run_ahead_in_the_run_that_takes_it_not_in_the_pilot():
    """``jaxq.mc.result.timed`` around the pilot's call does not count the share of its batch kept for the run (0.15 s of
    its 0.2 s), and around the run's call adds it, even where the run's own work takes longer than its program."""
    import time

    from jaxq.mc.result import Estimate, SimResult, timed

    def result(wall):
        return SimResult(None, {"q": Estimate(np.array([1.0]), np.array([0.1]))}, 2, 2, wall, 0.0, "x")

    with replications.ahead(1, 2, 4) as early:
        @timed
        def pilot():
            time.sleep(0.2)
            early.keep(None, 0.15)
            return result(0.05)

        @timed
        def run():
            time.sleep(0.2)  # the run's setup and fit: longer than its program's own 0.01 s
            return result(0.01 + early.charge())

        p, r = pilot(), run()
    assert 0.05 <= p.wall_s < 0.15  # its own share (and the sleep's slack), not the whole batch
    assert r.wall_s >= 0.35  # its 0.2 s and the 0.15 s its replications took in the pilot's batch
    assert replications.ahead_seconds() == 0.0  # outside a run to a target
