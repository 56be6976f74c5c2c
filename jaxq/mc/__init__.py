"""The Monte Carlo core every simulator runs on: nothing here knows what is simulated.

* :mod:`~jaxq.mc.rng`: the one random-stream layout: replication r's key ``fold_in(PRNGKey(seed), r)``
  (:func:`~jaxq.mc.rng.keys`), counter-based words of a key (draw c, word i), and the seeds derived from a user's
  seed for a purpose (:func:`~jaxq.mc.rng.derived_seed`: a tuner's search and evaluation, a pilot run);
* :mod:`~jaxq.mc.replications`: the replication layer (a :class:`~jaxq.mc.replications.Program` run in chunks,
  cache-sized slices and devices (one per core on a CPU), compiled once per shape, with progress);
* :mod:`~jaxq.mc.observer`: observers, pure functions of the path folded into per-replication accumulators;
* :mod:`~jaxq.mc.result`: estimates with their standard errors and the result of a run;
* :mod:`~jaxq.mc.target`: runs that stop at a precision target (a pilot, then an unbiased prefix of the stream).

The drivers build on it: the event and uniformised drivers of :mod:`jaxq.sim` and the SDE schemes of
:mod:`jaxq.sde`.
"""
