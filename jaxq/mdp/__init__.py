"""Markov decision processes: one fast and K slow servers (seed 002), value iteration in JAX."""
