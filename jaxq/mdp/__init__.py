"""Markov decision processes: one fast and K slow servers (the fast/slow-servers paper, value iteration in JAX), and
the optimum of the n-th 2x2 system (policy iteration with sparse solves: :mod:`jaxq.mdp.pss2x2`,
:mod:`jaxq.mdp.optimum`)."""
