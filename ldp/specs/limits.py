"""The limits every spec enforces when it is validated, before anything is allocated.

Epsilon
    A spec's ε is checked against its exact probabilities both ways: they
    must honour it (the exact worst-case ratio is at most e^ε, certified) and
    match it: where a spec stores both ε and its probabilities, the stated
    e^ε may exceed that ratio by a relative :data:`CLAIM_TOLERANCE` at most.
    Each mechanism holds its probabilities with finite precision, which caps
    the ε it can represent faithfully; a larger ε is refused with a message
    naming the mechanism, the value and the limit. A spec class states its
    limit as ``max_epsilon`` with ``max_epsilon_reason`` (and overrides
    ``_epsilon_limit`` when the limit depends on its parameters); the table
    of every registered mechanism is generated from them
    (docs/api/mechanisms.md#epsilon-limits). The limits a mechanism picks from:

    ===================================  =====  ===============================================================
    constant                             ε      why
    ===================================  =====  ===============================================================
    :data:`RR64_MAX_EPSILON`             23     the small probability ~1/(e^ε + 1) is a multiple of 2^-64:
                                                its rounding, ~e^ε·2^-64 relative, passes the 1e-9
                                                tolerance at ε ≈ 23.6 (subset selection: 1 − p)
    :data:`SUE_MAX_EPSILON`              45     1 − p ~ 1/(e^{ε/2} + 1) on the same grid, squared: ε ≈ 45.9
    :data:`OLH_MAX_EPSILON`              21     the hash range g ≈ e^ε + 1 must stay below the hash prime
                                                2^31 − 1 (ε < 21.49)
    :data:`PM_MAX_EPSILON`               22     the band weight e^ε·2^30 and each row total must stay below
                                                2^62 (int64 sampling; ε < 22.18)
    per grid                             —      a 62-bit noise table must reach across the whole range with
                                                weights ≥ 2^24 (:func:`ldp.numeric_math.laplace_epsilon_range`,
                                                :func:`ldp.numeric_math.gaussian_max_epsilon`)
    :data:`REPRESENTABLE_MAX_EPSILON`    700    e^ε must be a finite double so that the rounded-up claim can
                                                be certified (ε < 709.78; RAPPOR's ε₁ and ε∞)
    ===================================  =====  ===============================================================

Sizes
    Tables an aggregator allocates are bounded here, at the spec, so a
    parameter that would need absurd memory is refused before anything is
    allocated. The limits are generous for real deployments:

    - :data:`MAX_DOMAIN_SIZE` (2^20 = 1,048,576 values) for GRR, binary RR,
      OLH, BLH and basic RAPPOR: one int64 count per value, and the spec's
      own value index (HR: one count per output, fewer than 2(d + B) ≤ 6d);
    - :data:`MAX_UNARY_DOMAIN_SIZE` (2^18 = 262,144 values) for SUE, OUE and SS:
      a report is d bits (32 KiB at the limit) and the aggregator counts
      bytes in a table of 32 counters per value (64 MiB);
    - :data:`MAX_TABLE_COUNTERS` (2^24 = 16,777,216) for RAPPOR's
      num_cohorts × num_bits table of int64 counts (128 MiB);
    - :data:`MAX_NUMERIC_OUTPUTS` (2^22 = 4,194,304) entries for the noise
      tables of the numeric grid mechanisms (laplace, gaussian), which are
      as long as the noise is wide in grid steps (32 MiB per array).

Numeric ranges
    Every quantity derived from a numeric range must be finite for any
    number of reports an int64 can count (:data:`REPORT_HEADROOM`): the
    width high − low and the grid resolution (positive normal doubles), and
    the largest unbiased estimate of one report in value units, whose sum
    and squared sum over 2^63 reports must not overflow.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

from ldp.errors import SpecError
from ldp.numeric_math import MAX_TABLE_ENTRIES

__all__ = [
    "CLAIM_TOLERANCE",
    "MAX_DOMAIN_SIZE",
    "MAX_NUMERIC_OUTPUTS",
    "MAX_TABLE_COUNTERS",
    "MAX_UNARY_DOMAIN_SIZE",
    "OLH_MAX_EPSILON",
    "PM_MAX_EPSILON",
    "REPORT_HEADROOM",
    "REPRESENTABLE_MAX_EPSILON",
    "RR64_MAX_EPSILON",
    "SMALLEST_NORMAL",
    "SUE_MAX_EPSILON",
    "check_domain_length",
    "check_epsilon_limit",
    "check_size_limit",
    "round_down",
    "round_up",
]

#: A stated e^ε may exceed the exact probability ratio by this relative amount at most.
CLAIM_TOLERANCE = 1e-9

#: Randomized-response-like mechanisms whose smallest probability is a multiple of 2^-64.
RR64_MAX_EPSILON = 23.0
#: SUE: 1 − p ~ e^{−ε/2} on the 2^-64 grid.
SUE_MAX_EPSILON = 45.0
#: OLH: the default hash range g ≈ e^ε + 1 stays below 2^31 − 1.
OLH_MAX_EPSILON = 21.0
#: Piecewise and hybrid: weights e^ε·2^30 and row totals below 2^62.
PM_MAX_EPSILON = 22.0
#: e^ε is a finite double (with room for the certification's rounding).
REPRESENTABLE_MAX_EPSILON = 700.0

MAX_DOMAIN_SIZE = 1 << 20
MAX_UNARY_DOMAIN_SIZE = 1 << 18
MAX_TABLE_COUNTERS = 1 << 24
#: The table builders of :mod:`ldp.numeric_math` enforce it too.
MAX_NUMERIC_OUTPUTS = MAX_TABLE_ENTRIES

#: Reports an int64 count can hold: numeric sums and variances stay finite up to this many.
REPORT_HEADROOM = 2.0**63
#: Smallest positive normal double: a width or resolution below it has lost its precision.
SMALLEST_NORMAL = sys.float_info.min


def check_epsilon_limit(
    epsilon: float, limit: float, mechanism: str, why: str, *, name: str = "epsilon", where: str = ""
) -> None:
    """Refuse ``epsilon`` above ``limit``: a one-line error naming the mechanism, the value, the limit and why.

    ``where`` qualifies the limit when it depends on other parameters (" on grid=256").
    """
    if not epsilon <= limit:
        raise SpecError(
            f"{mechanism}: {name}={epsilon:.10g} is above {limit:g}, the largest epsilon {mechanism} supports"
            f"{where} ({why})"
        )


def check_size_limit(size: int, limit: int, mechanism: str, what: str, why: str) -> None:
    """Refuse a table ``size`` above ``limit``; ``what`` names the parameter(s) and value ("a domain of 5 values")."""
    if size > limit:
        raise SpecError(f"{mechanism}: {what} is above the limit of {limit:,} ({why})")


def check_domain_length(domain: object, limit: int, mechanism: str, why: str) -> None:
    """Refuse a domain longer than ``limit`` before it is copied (``range(10**9)`` is never materialized)."""
    try:
        size = len(domain)  # type: ignore[arg-type]  # any object: one without a length raises TypeError
    except TypeError:  # an iterator: its length is checked once it is a tuple
        return
    check_size_limit(size, limit, mechanism, f"a domain of {size:,} values", why)


def round_down(x: float, digits: int = 4) -> float:
    """A short decimal (``digits`` significant) that is at most ``x``, for limits printed in messages."""
    return _round(x, digits, math.floor)


def round_up(x: float, digits: int = 4) -> float:
    """A short decimal (``digits`` significant) that is at least ``x``."""
    return _round(x, digits, math.ceil)


def _round(x: float, digits: int, direction: Callable[[float], int]) -> float:
    if not math.isfinite(x) or x == 0:
        return x
    scale = 10.0 ** (digits - 1 - math.floor(math.log10(abs(x))))
    out = direction(x * scale) / scale
    # the division can land a hair on the wrong side of x
    if direction is math.floor and out > x:
        out = math.nextafter(out, -math.inf)
    if direction is math.ceil and out < x:
        out = math.nextafter(out, math.inf)
    return out
