"""The models simulated by jaxq, one module each: typed parameters and state, and pure functions.

* :mod:`~jaxq.sim.models.pss2x2`: the 2x2 parallel server system of seed 000 (renewal event rule for
  general primitives; a :class:`~jaxq.sim.markov.Markov` statement for exponential ones);
* :mod:`~jaxq.sim.models.network`: many-server networks of seeds 001 and 003 (M/M/c is the network with
  one class and one pool), a Markov statement;
* :mod:`~jaxq.sim.models.fastslow`: one fast and K identical slow servers of seed 002, a Markov statement.

Policies are pure functions of :mod:`jaxq.policies`, called by these models; the drivers
(:mod:`jaxq.sim.event`, :mod:`jaxq.sim.uniformized`) know nothing of any model.
"""
