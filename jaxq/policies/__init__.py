"""Scheduling policies as pure functions from a simulator state to an action (the switched-policies paper,
Definitions 2.7-2.10)."""
