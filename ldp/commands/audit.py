"""``ldp audit``: empirical lower bounds on a client's ε, through the real client or any encoder command."""

from __future__ import annotations

import math
import sys
import time

import click

from ldp.cli import OptionConflict, run_guarded
from ldp.errors import ParameterError

__all__ = ["EXIT_VIOLATION", "audit"]

#: Exit status when some lower bound exceeds its claim.
EXIT_VIOLATION = 1
#: Default samples per input value (half choose the events, half bound ε).
DEFAULT_SAMPLES = 40_000
#: Samples per input value of the pilot run that sizes a --seconds budget.
PILOT_SAMPLES = 200


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) and x > 0 else ("0" if x <= 0 else f"{x:.4f}")


@click.command("audit")
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False),
    required=True,
    help="The spec whose claim is audited.",
)
@click.option(
    "--samples",
    type=int,
    help=f"Samples per input value and claim (default {DEFAULT_SAMPLES:,}; half choose the events, half bound epsilon).",
)
@click.option(
    "--seconds", type=float, help="Size the samples to take about this long (instead of --samples)."
)
@click.option(
    "--confidence",
    type=float,
    default=0.95,
    show_default=True,
    help="1 - alpha: a correct encoder is flagged with probability at most 1 - confidence.",
)
@click.option(
    "--encoder-cmd",
    "encoder_cmd",
    help=(
        "Audit this command instead of the Python client: values one per line on stdin (or in the file "
        "named by {values} in CMD), report JSON lines on stdout."
    ),
)
@click.option(
    "--memo-reports",
    type=int,
    default=8,
    show_default=True,
    help=(
        "Memoized mechanisms: reports per client in the memoized (epsilon_inf) audit (the longitudinal ones "
        "take at least 50); 1 skips it."
    ),
)
def audit(spec_path, samples, seconds, confidence, encoder_cmd, memo_reports):
    """Bound a client's epsilon from below by running it on neighbouring inputs.

    For each pair of inputs (two domain values; a numeric range's ends) the
    encoder is run SAMPLES times per input; the events that best tell the
    inputs apart are chosen on one half of the reports and the other half
    bounds epsilon with Clopper-Pearson intervals, Bonferroni-corrected over
    every test. A lower bound above the claim is a VIOLATION (exit status 1).
    The false-alarm probability, a correct encoder flagged, is at most
    1 - confidence (5% by default); "consistent" is not a proof of privacy.

    \b
    Examples:
      ldp audit --spec spec.json
      ldp audit --spec spec.json --encoder-cmd "node js/dist/cli.js --spec spec.json /dev/stdin"
    """

    def body():
        from ldp.audit import audit_claims
        from ldp.audit_sources import command_sampler, python_client_sampler
        from ldp.specs import load_spec

        if samples is not None and seconds is not None:
            raise OptionConflict("give --samples or --seconds, not both")
        if seconds is not None and not seconds > 0:
            raise ParameterError(f"--seconds must be positive, got {seconds!r}")
        if memo_reports < 1:
            raise ParameterError(f"--memo-reports must be at least 1, got {memo_reports!r}")
        spec = load_spec(spec_path)
        claims = audit_claims(spec, memo_reports, memoized=encoder_cmd is None)
        if encoder_cmd is not None:
            runs = _audit_with(spec, command_sampler(spec, encoder_cmd), claims, samples, seconds, confidence)
        else:
            with python_client_sampler(spec) as sampler:
                runs = _audit_with(spec, sampler, claims, samples, seconds, confidence)
        result, elapsed = runs
        _print(result, elapsed, "encoder command" if encoder_cmd else "Python client")
        if result.violation:
            sys.exit(EXIT_VIOLATION)

    def _audit_with(spec, sampler, claims, samples, seconds, confidence):
        from ldp.audit import run_audit

        n = DEFAULT_SAMPLES if samples is None else samples
        start = time.perf_counter()
        if seconds is not None:  # a pilot run times one sample of every input and claim
            from ldp.audit import clopper_pearson

            clopper_pearson(0, 1, 0.5)  # imports scipy before the clock starts
            start = time.perf_counter()
            run_audit(spec, sampler, PILOT_SAMPLES, confidence=confidence, claims=claims)
            per_sample = (time.perf_counter() - start) / PILOT_SAMPLES
            n = max(PILOT_SAMPLES, int((seconds - (time.perf_counter() - start)) / per_sample))
            start = time.perf_counter()
        result = run_audit(spec, sampler, n, confidence=confidence, claims=claims)
        return result, time.perf_counter() - start

    run_guarded(body)


def _print(result, elapsed: float, source: str) -> None:
    half = result.samples // 2
    click.echo(
        f"audit of {result.mechanism} ({result.fingerprint}) through the {source}: "
        f"{result.samples:,} samples per input, {half:,} to choose events and {half:,} to bound epsilon, {elapsed:.1f} s"
    )
    click.echo(
        f"confidence {result.confidence:g}, Bonferroni over {result.tests} tests: "
        f"a correct encoder is flagged with probability <= {1 - result.confidence:.3g}"
    )
    header = ("claim", "x0", "x1", "event", "claimed eps", "lower bound", "ratio")
    table = [
        (
            r.claim.label,
            repr(r.x0),
            repr(r.x1),
            r.event,
            f"{r.claim.epsilon:.4f}",
            _fmt(r.lower_bound),
            f"{r.ratio:.2f}",
        )
        for r in result.rows
    ]
    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(header)]
    for line in (header, *table):
        click.echo(
            "  ".join(
                cell.ljust(w) if i < 4 else cell.rjust(w) for i, (cell, w) in enumerate(zip(line, widths))
            )
        )
    for claim, test in result.memo:
        click.echo(f"memoization ({claim.label}): {_memo_text(test)}")
    worst = result.worst
    if worst.violation:
        click.echo(
            f"verdict: VIOLATION: epsilon >= {worst.lower_bound:.4f} > claimed {worst.claim.epsilon:.4f} "
            f"({worst.claim.label}, {worst.x0!r} against {worst.x1!r}) at confidence {result.confidence:g}"
        )
    elif result.memo_rejected:
        claim, test = next((c, t) for c, t in result.memo if t.rejected)
        click.echo(
            f"verdict: VIOLATION: memoization rejected at alpha={test.alpha:.3g}, {_p_text(test.p_value)}: "
            f"one client's {test.reports} reports do not share one permanent randomized response, so the "
            f"claim of {claim.label} ({claim.epsilon:.4f}) does not hold"
        )
    else:
        memo = " and memoization is not rejected" if result.memo else ""
        click.echo(f"verdict: consistent: the largest lower bound is {worst.ratio:.2f} of its claim{memo}")


def _p_text(p: float) -> str:
    """A p-value; one below the smallest double is printed as a bound."""
    return f"p={p:.3g}" if p > 0 else "p<1e-300"


def _memo_text(test) -> str:
    """One memoization test: its decision, level and p-value, and the extreme counts it is based on."""
    decision = "rejected" if test.rejected else "not rejected"
    cells = sum(test.cells)
    return (
        f"{decision} at alpha={test.alpha:.3g}, {_p_text(test.p_value)} "
        f"({test.extreme:,} of {cells:,} client bits with an extreme count of ones, {test.expected:,.0f} expected)"
    )
