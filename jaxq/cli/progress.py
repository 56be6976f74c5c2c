"""The progress bar of long commands: tqdm on stderr, in the simulator's own unit of work.

A simulator announces its expected work first (``start(total, unit)``: events, steps or path-steps,
estimated from the inputs) and then reports the work done after every call of its compiled program, so the
bar moves within seconds even inside one chunk (:mod:`jaxq.sim.replications`). The bar appears only on a
terminal and only for runs expected to take more than a moment.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager


class Bar:
    """A progress callback with ``start(total, unit)``; shows nothing until ``start`` is called."""

    def __init__(self, desc: str, enabled: bool | None = None, min_total: float = 0.0):
        self.desc, self.enabled, self.min_total = desc, enabled, min_total
        self._bar = None

    def start(self, total: float, unit: str) -> None:
        if self._bar is not None or total < self.min_total:
            return
        from tqdm.auto import tqdm

        disable = None if self.enabled is None else not self.enabled  # None: only on a terminal
        self._bar = tqdm(total=int(total), desc=self.desc, unit=f" {unit}", unit_scale=True, file=sys.stderr,
                         disable=disable, leave=False, dynamic_ncols=True)

    def __call__(self, done: int) -> None:
        if self._bar is not None:
            self._bar.update(int(done))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


@contextmanager
def progress(desc: str, enabled: bool | None = None, min_total: float = 1e8):
    """A :class:`Bar` for the duration of a command (closed on exit, errors included)."""
    bar = Bar(desc, enabled, min_total)
    try:
        yield bar
    finally:
        bar.close()
