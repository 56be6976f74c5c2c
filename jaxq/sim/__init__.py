"""Simulation of prelimit systems: a generic event-driven driver and one event rule per model."""
