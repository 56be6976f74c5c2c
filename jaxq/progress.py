"""Progress of long jobs on stderr, terminal or not: an estimate from a rate measured on this machine, then a
line at least once a minute (a tqdm bar instead of the lines on a terminal).

A job reports through a :class:`Monitor`: ``start(total, unit)`` (the work expected: events, steps,
replications, iterations) and ``update(done)`` after every piece of work finished (every call of a compiled
program, every chunk). A background thread looks at it every second:

* once a rate is measured (the work done since the first piece, over the time since it: compilation does not
  count; the first piece's own rate, which includes it, is never the estimate's) and the whole job is expected to
  take more than :data:`LONG_JOB_S` seconds (``JAXQ_LONG_JOB_S``
  changes it), it writes one line
  ``jaxq: note: simulate: about 8.0e9 events, about 1.2 hours at 1.9e6 events/s measured on this machine``;
  a job with no piece finished after :data:`LONG_JOB_S` seconds says that instead;
* then, off the terminal, a line ``jaxq: progress: simulate: 40% (3.2e9 of 8.0e9 events), 1.9e6 events/s,
  about 42 minutes left`` every :data:`EVERY_S` seconds (on a terminal the bar shows it).

A short job prints nothing. ``jaxq --quiet`` (:data:`QUIET`, or ``JAXQ_QUIET=1``) silences all of it.
"""

from __future__ import annotations

import os
import sys
import threading
import time

LONG_JOB_S = 30.0  # a job expected to take longer says so, with its estimate (JAXQ_LONG_JOB_S: another threshold)
EVERY_S = 60.0  # ... and then writes a progress line at least this often (off the terminal)
POLL_S = 1.0  # how often the reporting thread looks
QUIET = False  # set by the command line (--quiet)


def long_job_s() -> float:
    """Seconds beyond which a job reports: ``JAXQ_LONG_JOB_S`` when set to a number, else :data:`LONG_JOB_S`."""
    try:
        return float(os.environ["JAXQ_LONG_JOB_S"])
    except (KeyError, ValueError):
        return LONG_JOB_S


def quiet() -> bool:
    """Whether progress reports are silenced: ``--quiet`` (:data:`QUIET`) or ``JAXQ_QUIET=1``."""
    return QUIET or os.environ.get("JAXQ_QUIET", "").strip().lower() in ("1", "on", "yes", "true")


def sci(x: float) -> str:
    """A count in one short form: ``3``, ``8.1``, ``250``, ``1.3e4``, ``8.0e13`` (powers of ten from 10^4 on).

    Args:
        x: The count.

    Returns:
        The text.
    """
    if abs(x) < 1e4:
        return f"{x:.0f}" if float(x).is_integer() or abs(x) >= 10 else f"{x:.2g}"
    return f"{x:.1e}".replace("e+0", "e").replace("e+", "e")


def duration(seconds: float) -> str:
    """``1.2 hours``, ``14 minutes``, ``40 seconds``.

    Args:
        seconds: The seconds.

    Returns:
        The text (days, hours, minutes or seconds).
    """
    for unit, size in (("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.2g} {unit}" if seconds / size < 10 else f"{seconds / size:.0f} {unit}"
    return f"{seconds:.0f} seconds"


class Monitor:
    """The progress of one job (see the module docstring).

    ``bar``: a tqdm instance to drive (or None); the lines go through ``bar.write`` when there is one, so they do
    not break it, and the minute lines are left to the bar. ``clock``: the time source (tests pass their own and
    call :meth:`tick`); ``thread``: run the reporting thread (False: the caller calls :meth:`tick`).

    Args:
        desc: The name of the job, in its lines.
        bar (tqdm.tqdm | None): A tqdm instance to drive.
        stream (typing.TextIO | None): Where the lines go (default: stderr).
        clock (typing.Callable): The time source.
        thread: Run the reporting thread.
    """

    def __init__(self, desc: str, *, bar=None, stream=None, clock=time.monotonic, thread: bool = True):
        self.desc, self.bar, self.clock = desc, bar, clock
        self.stream = stream
        self.total, self.unit = None, "units"
        self.done = 0.0
        self._t0 = None
        self._first = None  # (time, done) at the first piece of work finished
        self._estimated = False
        self._last_line = None
        self._thread = thread
        self._stop = threading.Event()
        self._worker = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ the job's side
    def start(self, total: float | None, unit: str) -> None:
        """The work expected (``total`` units; None when not known); starts the clock on the first call.

        Args:
            total: The units of work expected (None: not known); a later call adds its work to the job.
            unit: What a unit is.
        """
        with self._lock:
            if self._t0 is None:
                self._t0 = self.clock()
                self.total = None if total is None else float(total)
            else:  # a further piece of work (a rerun with a longer truncation): added to the job
                self.total = None if total is None else self.done + float(total)
            self.unit = unit
        if self._thread and self._worker is None and not quiet():
            self._worker = threading.Thread(target=self._run, name="jaxq-progress", daemon=True)
            self._worker.start()

    def update(self, done: float) -> None:
        """``done`` more units finished.

        Args:
            done: The units finished since the last call.
        """
        with self._lock:
            if self._t0 is None:
                self._t0 = self.clock()
            self.done += float(done)
            if self._first is None:  # the end of the first piece (its time includes compilation)
                self._first = (self.clock(), self.done)
        if self.bar is not None:
            self.bar.update(done)

    __call__ = update

    def close(self) -> None:
        self._stop.set()
        if self._worker is not None:
            self._worker.join(timeout=2 * POLL_S)
            self._worker = None
        if self.bar is not None:
            self.bar.close()

    # ------------------------------------------------------------------------------------------ reports
    def rate(self, now: float | None = None) -> float | None:
        """Units a second measured so far: since the first piece finished (compilation excluded) once a second
        has passed and more was done; before that the first piece's own rate (compilation included); None
        before any piece.

        Args:
            now: The time (default: the clock's).

        Returns:
            The rate, or None.
        """
        now = self.clock() if now is None else now
        if self._first is None:
            return None
        t1, d1 = self._first
        if now - t1 >= 1.0 and self.done > d1:
            return (self.done - d1) / (now - t1)
        return d1 / (t1 - self._t0) if t1 > self._t0 and d1 > 0 else None

    def tick(self) -> str | None:
        """Write the line due now, if any (the reporting thread calls this every :data:`POLL_S` seconds);
        returns it."""
        if quiet() or self._t0 is None:
            return None
        with self._lock:
            now = self.clock()
            elapsed = now - self._t0
            rate = self.rate(now)
            left = None
            if rate and self.total is not None:
                left = max(self.total - self.done, 0.0) / rate
            line = None
            long_s = long_job_s()
            free = None  # the rate since the first piece: no compilation in it
            if self._first is not None and now > self._first[0] and self.done > self._first[1]:
                free = (self.done - self._first[1]) / (now - self._first[0])
            if free and self.total is not None:
                rate, left = free, max(self.total - self.done, 0.0) / free
            if (not self._estimated and free and self.total is not None and elapsed + left > long_s
                    and self.done < self.total):  # the estimate from a rate without compilation in it
                line = (f"jaxq: note: {self.desc}: about {sci(self.total)} {self.unit}, about {duration(elapsed + left)} "
                        f"at {sci(rate)} {self.unit}/s measured on this machine ({duration(left)} left; progress "
                        f"every minute, --quiet hides it)")
                self._estimated = True
            elif self._last_line is None and self.total is None and elapsed >= long_s:  # work of unknown size
                line = (f"jaxq: note: {self.desc}: still at work after {duration(elapsed)}; a line every minute "
                        "follows, --quiet hides it")
            elif self._last_line is None and self._first is None and elapsed >= long_s:
                what = f"about {sci(self.total)} {self.unit}" if self.total is not None else "its work"
                line = (f"jaxq: note: {self.desc}: {what}; nothing finished after {duration(elapsed)} (compiling, or "
                        "a long first piece), so no rate measured yet; progress every minute, --quiet hides it")
            elif self._last_line is not None and self.bar is None and now - self._last_line >= EVERY_S:
                line = f"jaxq: progress: {self.desc}: {self._state(rate, left)}, running {duration(elapsed)}"
            if line is not None:
                self._last_line = now
        if line is not None:
            self._write(line)
        return line

    def _state(self, rate, left) -> str:
        if self.total:
            s = f"{100.0 * self.done / self.total:.0f}% ({sci(self.done)} of {sci(self.total)} {self.unit})"
        else:
            s = f"{sci(self.done)} {self.unit} done"
        if rate:
            s += f", {sci(rate)} {self.unit}/s"
        if left is not None:
            s += f", about {duration(left)} left"
        return s

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        try:
            if self.bar is not None and hasattr(self.bar, "write"):
                self.bar.write(line, file=stream)
            else:
                stream.write(line + "\n")
                stream.flush()
        except (OSError, ValueError):  # a closed stderr: nothing to report to
            pass

    def _run(self) -> None:
        while not self._stop.wait(POLL_S):
            self.tick()


def monitor(desc: str, total: float | None, unit: str, *, bar: bool, **tqdm_options) -> Monitor:
    """A started :class:`Monitor` of a job (``total`` units of work), driving a tqdm bar on stderr when ``bar``
    (and not :func:`quiet`); ``tqdm_options`` shape the bar (``leave``, ``dynamic_ncols``, ...). Close it when
    the job ends.

    Args:
        desc: The name of the job.
        total: The units of work expected (None: not known).
        unit: What a unit is.
        bar: Drive a tqdm bar.
        **tqdm_options (typing.Any): Passed on to ``tqdm``.

    Returns:
        The monitor.
    """
    shown = None
    if bar and not quiet():
        from tqdm.auto import tqdm

        shown = tqdm(total=total, desc=desc, file=sys.stderr, delay=0.5, **tqdm_options)
    mon = Monitor(desc, bar=shown)
    mon.start(total, unit)
    return mon
