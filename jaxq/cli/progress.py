"""The progress of long commands: a measured estimate and a line a minute on any stderr, a tqdm bar on a terminal.

A simulator announces its expected work first (``start(total, unit)``: events, steps or path-steps,
estimated from the inputs) and then reports the work done after every call of its compiled program, so the
report moves within seconds even inside one chunk (:mod:`jaxq.mc.replications`). :class:`Bar` is a
:class:`jaxq.progress.Monitor`: once a rate is measured on this machine, a job expected to take more than 30 s
says so (its estimate) and then writes a progress line at least once a minute, terminal or not; on a terminal
(``JAXQ_PROGRESS=1`` forces it, ``0`` hides it: :func:`jaxq.cli.output.progress_enabled`) a tqdm bar replaces
the minute lines, drawn only for runs expected to take more than a moment, and only after half a second.
``--quiet`` silences all of it.

A job far too large to finish soon says so at once, before it starts, terminal or not: when the announced work
exceeds :data:`LONG_WORK` units (ten minutes even at :data:`FAST_RATE` units a second, faster than any machine
jaxq has measured), ``start`` writes one line ``jaxq: note: about 8.0e13 events (estimated): at least 9.3 days
at 1.0e8 events/s ...`` on stderr (not held back like warnings: it must come before the work, not after it);
the measured estimate follows once the first work is done.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from jaxq.api import Monitor, duration, quiet, sci

FAST_RATE = 1e8  # units of work (events, steps, path-steps) a second: generous for every engine on a CPU
LONG_WORK = FAST_RATE * 600.0  # work that takes more than ten minutes even at FAST_RATE gets a note at once


def long_work_note(total: float, unit: str) -> str | None:
    """The one-line note for ``total`` units of work, or None when it is not long (below :data:`LONG_WORK`).

    Args:
        total: The units of work announced.
        unit: What a unit is (events, steps, path-steps).

    Returns:
        The note, or None.
    """
    if not total > LONG_WORK:
        return None
    return (f"jaxq: note: about {sci(total)} {unit} (estimated): at least {duration(total / FAST_RATE)} even at "
            f"{sci(FAST_RATE)} {unit}/s, faster than any machine jaxq has measured; this will take a long time "
            "(interrupt with Ctrl-C; an estimate at this machine's rate follows)")


class Bar(Monitor):
    """A progress callback with ``start(total, unit)`` (:class:`jaxq.progress.Monitor`); shows nothing until
    ``start`` is called.

    ``enabled``: None draws the bar where :func:`jaxq.cli.output.progress_enabled` says (a terminal, or
    ``JAXQ_PROGRESS``); True or False force it. The notes and minute lines are written whatever ``enabled``
    says (``--quiet`` silences them).

    Args:
        desc: The name of the job.
        enabled: Draw the bar (None: where :func:`jaxq.cli.output.progress_enabled` says).
        min_total: No bar for a job of less work than this.
        **kw (typing.Any): Passed on to :class:`jaxq.progress.Monitor` (``bar``, ``stream``, ``clock``, ``thread``).
    """

    def __init__(self, desc: str, enabled: bool | None = None, min_total: float = 0.0, **kw):
        super().__init__(desc, **kw)
        self.enabled, self.min_total = enabled, min_total
        self._noted = False

    @property
    def _bar(self):
        return self.bar

    def start(self, total: float, unit: str) -> None:
        """The work expected (:meth:`jaxq.progress.Monitor.start`): writes the note of a job too large to finish
        soon (:func:`long_work_note`, once), then sets the bar's total or draws the bar.

        Args:
            total: The units of work expected.
            unit: What a unit is.
        """
        note = None if self._noted or quiet() else long_work_note(float(total), unit)
        if note is not None:
            self._noted = True
            sys.stderr.write(note + "\n")
            sys.stderr.flush()
        super().start(total, unit)
        if self.bar is not None:
            self.bar.total = int(self.total)
            self.bar.refresh()
            return
        if total < self.min_total:
            return
        from jaxq.cli.output import progress_enabled

        show = progress_enabled() if self.enabled is None else bool(self.enabled)
        if not show or quiet():
            return
        from tqdm.auto import tqdm

        self.bar = tqdm(total=int(total), desc=self.desc, unit=f" {unit}", unit_scale=True, file=sys.stderr,
                        leave=False, dynamic_ncols=True, delay=0.5)


@contextmanager
def progress(desc: str, enabled: bool | None = None, min_total: float = 1e8):
    """A :class:`Bar` for the duration of a command (closed on exit, errors included).

    Args:
        desc: The name of the job.
        enabled: Draw the bar (None: where :func:`jaxq.cli.output.progress_enabled` says).
        min_total: No bar for a job of less work than this.

    Yields:
        (Bar): The bar, the simulator's progress callback.
    """
    bar = Bar(desc, enabled, min_total)
    try:
        yield bar
    finally:
        bar.close()
