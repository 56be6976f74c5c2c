"""Scheduling policies as pure functions from a simulator state to an action (seed 000: Definitions 2.7-2.10)."""
