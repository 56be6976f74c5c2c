"""Baselines of ``jaxq bench``: the models of jaxq written again, independently, as a competent user would.

One module per section of :mod:`jaxq.bench` (``pss2x2``, ``mmc``, ``network``, ``sde``, ``fastslow``,
``optimal``): a sequential loop per replication compiled with numba (``prange`` over replications, all cores;
replication r seeds numpy's generator with ``seed * 1_000_003 + r``), and Ciw for the M/M/c queues; for the
optimum of the 2x2 system, policy iteration with scipy's sparse LU (SuperLU) as the policy evaluation, on jaxq's
own chain and improvement step (``optimal.py`` says why). The others re-implement
the models on purpose (a second implementation, not a copy of jaxq's), take plain numbers and numpy arrays
(the 2x2 system: jaxq's parsed system, for its rates, modes and sampler parameters), and return dicts with
their estimates, the work done (``events``: events, path-steps or state updates) and ``wall_s`` (the first
call of a kernel in a process also compiles it, or loads it from numba's cache: the kernels are compiled
with ``cache=True``, into ``__pycache__/`` beside this file, as the ``jaxq`` command keeps XLA's).

This folder is not part of the jaxq package (it is not in the wheel): ``jaxq.bench.baseline(name)`` imports
``benchmarks.baselines.<name>`` from the repository checkout (or the folder named by ``$JAXQ_BASELINES``)
and returns None when it, numba or Ciw is missing (``pip install -e ".[bench]"``).
"""
