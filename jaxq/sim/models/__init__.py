"""The models simulated by jaxq, one module each: typed parameters and state, and pure functions.

* :mod:`~jaxq.sim.models.pss2x2`: the 2x2 parallel server system of the switched-policies paper (renewal event rule for
  general primitives; a :class:`~jaxq.sim.markov.Markov` statement for exponential ones);
* :mod:`~jaxq.sim.models.network`: many-server networks of the uniform-stability and LAP-tightness papers (M/M/c is the
  network with one class and one pool), a Markov statement;
* :mod:`~jaxq.sim.models.fastslow`: one fast and K identical slow servers of the fast/slow-servers paper, a Markov
  statement.

Policies are pure functions of :mod:`jaxq.policies`, called by these models; the drivers
(:mod:`jaxq.sim.event`, :mod:`jaxq.sim.uniformized`) know nothing of any model.
"""
