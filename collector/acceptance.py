"""Which report times a collector accepts (docs/collector.md#acceptance).

Every report is counted in the window of its time ``t``, and each window
holding reports costs memory until the server stops. So ``t`` is accepted
only in a bounded range, whatever the task's own ``[not_before, not_after)``:

- not later than the collector's clock plus the clock skew
  (:func:`ldp.collector.envelopes.clock_skew`: one time precision, at least
  5 minutes), as before;
- not earlier than the task's start (``not_before``, else its creation
  time), truncated to the time precision, less the clock skew: a client
  stamps an envelope when it makes it, after it read the task;
- not older than :attr:`Acceptance.max_age` (default 30 days);
- not earlier than the start of the window :attr:`Acceptance.max_windows`
  − 1 windows before the current one (default 1,000): at most that many
  windows up to now's (plus those the clock skew reaches ahead) can
  receive reports at any time;
- for a task with a retention, not in a window that ended more than the
  retention ago: its raw reports are (or are about to be) deleted, its
  aggregate kept (:mod:`ldp.collector.retention`).

Envelopes outside are rejected with reason ``t_out_of_range``.
"""

from __future__ import annotations

import dataclasses

from ldp.collector.tasks import Task, format_duration
from ldp.errors import ParameterError

__all__ = [
    "DEFAULT_ACCEPTANCE",
    "DEFAULT_MAX_AGE",
    "DEFAULT_MAX_WINDOWS",
    "MIN_CLOCK_SKEW",
    "Acceptance",
    "clock_skew",
]

#: How old a report's ``t`` may be by default, seconds (30 days).
DEFAULT_MAX_AGE = 30 * 86_400
#: How many windows up to the current one may receive reports by default.
DEFAULT_MAX_WINDOWS = 1_000
#: The least clock skew allowed to a client's ``t``, seconds (more when the time precision is coarser).
MIN_CLOCK_SKEW = 300


def clock_skew(task: Task) -> int:
    """How far a report's ``t`` may pass the collector's clock: one time precision, at least 5 minutes."""
    return max(MIN_CLOCK_SKEW, task.time_precision)


@dataclasses.dataclass(frozen=True)
class Acceptance:
    """A collector's bounds on report times (server-wide: ``ldp serve --max-report-age/--max-windows``).

    Parameters
    ----------
    max_age : int
        Seconds: a report with ``t`` older than the collector's clock less
        this is rejected (``t_out_of_range``).
    max_windows : int
        At most this many windows, up to the current one, receive reports.
    """

    max_age: int = DEFAULT_MAX_AGE
    max_windows: int = DEFAULT_MAX_WINDOWS

    def __post_init__(self) -> None:
        for name in ("max_age", "max_windows"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(f"{name} must be a positive integer, got {value!r}")

    def earliest(self, task: Task, now: float) -> tuple[int, str]:
        """The earliest ``t`` ``task`` accepts at collector time ``now``, and the bound that sets it (for messages)."""
        current = int(now)
        bounds = [
            (current - self.max_age, f"more than {format_duration(self.max_age)} old"),
            (
                task.window_start(current) - (self.max_windows - 1) * task.window,
                f"more than {self.max_windows} windows back",
            ),
        ]
        expired = task.expired_before(current)
        if expired is not None and task.retain is not None:
            bounds.append(
                (
                    expired,
                    f"in a window that ended more than the task's retention ({format_duration(task.retain)}) ago",
                )
            )
        start = task.start
        if start is not None:
            bounds.append(
                (
                    start - start % task.time_precision - clock_skew(task),
                    f"before the task's start ({start}) less the clock skew ({clock_skew(task)} s)",
                )
            )
        return max(bounds, key=lambda bound: bound[0])


#: The bounds ``ldp serve`` applies without options.
DEFAULT_ACCEPTANCE = Acceptance()
