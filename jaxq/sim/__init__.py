"""Simulation of prelimit systems: a generic event-driven driver and one event rule per model."""

# The version of the numbers the simulators produce for given inputs (random streams, samplers, engines). Every
# chunk of an experiment run carries it in its digest (jaxq.studies.storage.chunk_digest), so a resumed run never
# mixes numbers of two versions. Bump it with every change that alters any simulator's output for the same inputs
# (tests/sim/test_stream_version.py pins it to the golden files' contents, which such a change regenerates).
# What each version changed: CHANGELOG.md ("stream version N").
STREAM_VERSION = 10

# The drivers a simulator runs on, for every simulator (the 2x2 system, networks, M/M/c, a user's MarkovModel):
# "event" (exact holding times, jaxq.sim.event), "uniformized" (a fixed rate, jaxq.sim.uniformized) and "auto",
# chosen by one rule (jaxq.sim.simulate_markov.choose_engine: uniformised when the model has a rate bound, for the
# 2x2 system exponential primitives, the run asks for nothing only the event driver gives, and its replications are
# not few and long: jaxq.sim.simulate_markov.slow_lockstep).
ENGINES = ("auto", "event", "uniformized")
"""The engines of a simulation: ``auto``, ``event`` (any primitives) and ``uniformized`` (exponential ones)."""
