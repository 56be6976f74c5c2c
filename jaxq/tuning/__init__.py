"""Tuning policy parameters by gradient descent (optax): switching levels and thresholds."""
