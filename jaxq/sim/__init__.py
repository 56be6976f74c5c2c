"""Simulation of prelimit systems: a generic event-driven driver and one event rule per model."""

# The version of the numbers the simulators produce for given inputs (random streams, samplers, engines). Every
# chunk of an experiment run carries it in its digest (jaxq.studies.storage.chunk_digest), so a resumed run never
# mixes numbers of two versions. Bump it with every change that alters any simulator's output for the same inputs
# (tests/sim/test_stream_version.py pins it to the golden files' contents, which such a change regenerates).
# 2: the gamma samplers' paired event form (2026-12).
# 3: mixed specs with gamma: the event form's acceptance uniform shares the slot's first word; specs with a normal
#    method but no lognormal: one normal word a slot (a Box-Muller block per pair of slots) (2026-12). The numbers
#    of every other spec (exponential, Erlang, hyperexponential and their mixtures, lognormal) are unchanged.
# 4: the uniformised driver's window is exactly the steps asked for (it was rounded to whole pages of 64 steps):
#    window functionals (network, M/M/c, fast/slow average cost) change; discounted runs and the event driver do not.
# 5: gamma-only specs (every stream gamma with a general shape): the event form is a tangent envelope instead of
#    Marsaglia-Tsang (jaxq.sim.sampling.tangent_envelope, power_envelope); every other spec, mixed ones with gamma
#    included, is unchanged.
# 6: every spec with gamma-method streams whose shapes are in sampling.STEP_SHAPES: the event form is a step envelope
#    (512 rectangles of equal area, jaxq.sim.sampling.step_envelope) instead of the tangent envelope (gamma-only
#    specs) or Marsaglia-Tsang's mixed form (mixed specs, which then take no normal word for gamma); every other
#    spec is unchanged.
# 7: one random-stream layer (jaxq.sim.rng: counter-based Threefry words of the replication key) for every driver:
#    the Markov event driver (two 52-bit uniforms an event), the uniformised driver (a page is a draw), the workload
#    SDE (a block is a draw; normals are quantiles of 52-bit uniforms), the network diffusion's Euler scheme (a step
#    is a draw) and the perturbation of perturbed 2x2 runs change; the 2x2 event engine's events do not. The SDE
#    cost is an observer (its last bits change) and the uniformised driver's observers get the unscaled weights.
# 8: the Markov drivers' estimates are observers (jaxq.sim.functionals): the uniformised driver's discounted and
#    window sums are accumulated with the functionals' own weights (the last bits of the CTMC and M/M/c outputs
#    change; the random streams do not), its controls come in the units of the estimates. The workload SDE's Ito-sum
#    control is an observer too (its last bits change), and so are the network diffusion's Euler averages and controls
#    (weighted by dt and divided by the window's length: their last bits change; the controls come per unit time).
STREAM_VERSION = 8
