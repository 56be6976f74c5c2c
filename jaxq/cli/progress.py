"""The progress bar of long commands: tqdm on stderr, in the simulator's own unit of work.

A simulator announces its expected work first (``start(total, unit)``: events, steps or path-steps,
estimated from the inputs) and then reports the work done after every call of its compiled program, so the
bar moves within seconds even inside one chunk (:mod:`jaxq.sim.replications`). The bar is drawn only when
stderr is a terminal (``JAXQ_PROGRESS=1`` forces it, ``0`` hides it: :func:`jaxq.cli.output.progress_enabled`),
only for runs expected to take more than a moment, and only after half a second.

A job too large to finish soon says so before it starts, terminal or not: when the announced work exceeds
:data:`LONG_WORK` units (ten minutes at :data:`FAST_RATE` units a second, faster than any machine jaxq has
measured), ``start`` writes one line ``jaxq: note: about 8.0e13 events (estimated): about 9.3 days at 1.0e8
events/s ...`` on stderr at once (not held back like warnings: it must come before the work, not after it).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

FAST_RATE = 1e8  # units of work (events, steps, path-steps) a second: generous for every engine on a CPU
LONG_WORK = FAST_RATE * 600.0  # work that takes more than ten minutes even at FAST_RATE gets a note


def _duration(seconds: float) -> str:
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}" if seconds / size < 10 else f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} seconds"


def long_work_note(total: float, unit: str) -> str | None:
    """The one-line note for ``total`` units of work, or None when it is not long (below :data:`LONG_WORK`)."""
    if not total > LONG_WORK:
        return None
    def sci(x: float) -> str:
        return f"{x:.1e}".replace("e+0", "e").replace("e+", "e")

    return (f"jaxq: note: about {sci(total)} {unit} (estimated): about {_duration(total / FAST_RATE)} at "
            f"{sci(FAST_RATE)} {unit}/s; this will take a long time (interrupt with Ctrl-C)")


class Bar:
    """A progress callback with ``start(total, unit)``; shows nothing until ``start`` is called.

    ``enabled``: None draws the bar where :func:`jaxq.cli.output.progress_enabled` says (a terminal, or
    ``JAXQ_PROGRESS``); True or False force it. The long-work note is written whatever ``enabled`` says.
    """

    def __init__(self, desc: str, enabled: bool | None = None, min_total: float = 0.0):
        self.desc, self.enabled, self.min_total = desc, enabled, min_total
        self._bar = None
        self._noted = False

    def start(self, total: float, unit: str) -> None:
        note = None if self._noted else long_work_note(float(total), unit)
        if note is not None:
            self._noted = True
            sys.stderr.write(note + "\n")
            sys.stderr.flush()
        if self._bar is not None or total < self.min_total:
            return
        from jaxq.cli.output import progress_enabled

        show = progress_enabled() if self.enabled is None else bool(self.enabled)
        if not show:
            return
        from tqdm.auto import tqdm

        self._bar = tqdm(total=int(total), desc=self.desc, unit=f" {unit}", unit_scale=True, file=sys.stderr,
                         leave=False, dynamic_ncols=True, delay=0.5)

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
