"""``ldp privacy``: composition tables, GDP/(ε, δ) conversions, trade-off curves, shuffle amplification."""

from __future__ import annotations

import math

import click

from ldp.cli import check_outputs_distinct, check_plot_path, run_guarded
from ldp.errors import ParameterError

__all__ = ["privacy"]


def _fmt(x: float | None) -> str:
    """A figure for a table: ``-`` when not computed (the row's note says why), ``inf`` when none exists."""
    if x is None:
        return "-"
    if math.isnan(x):  # never printed as a figure: every NaN is a bug upstream
        raise ParameterError("internal error: a privacy figure came out NaN; please report it")
    return "inf" if math.isinf(x) else f"{x:.6g}"


def _echo_method_table(
    third: str, lines: list[tuple[str, str, str, str]], third_width: int | None = None
) -> None:
    """Print rows of (method, epsilon, ``third`` column, note): methods left-aligned, epsilons right-aligned."""
    width = max(len(m) for m, *_ in lines)
    third_width = third_width or max(len(third), *(len(t) for _, _, t, _ in lines))
    click.echo(f"{'method':<{width}}  {'epsilon':>10}  {third:<{third_width}}  note")
    for method, value, column, note in lines:
        click.echo(f"{method:<{width}}  {value:>10}  {column:<{third_width}}  {note}".rstrip())


@click.group("privacy")
def privacy():
    """Privacy accounting across reports: f-DP, Gaussian DP, exact composition, shuffling.

    \b
    Examples:
      ldp privacy compose --epsilon 0.5 --reports 365 --delta 1e-6
      ldp privacy convert --mu 1 --delta 1e-6
      ldp privacy tradeoff --spec rappor.json --reports 30 --plot curve.png
      ldp privacy shuffle --epsilon0 4 --users 100000 --delta 1e-6
      ldp privacy lifetime --spec lgrr.json -t 365 -c 0 -c 2
      ldp privacy plan --spec oue.json --budget 20 --delta 1e-6 --composition exact
      ldp privacy ledger states/CLIENT.ledger.json
    """


@privacy.command("compose")
@click.option("--epsilon", type=float, help="Per-report epsilon (default: the spec's).")
@click.option("--reports", "-k", type=int, required=True, help="Number of reports k.")
@click.option("--delta", type=float, default=1e-6, show_default=True, help="Target total delta.")
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False),
    help="Also compose this mechanism's exact curve (RAPPOR: k reports of one memoized value).",
)
def compose(epsilon, reports, delta, spec_path):
    """Total epsilon of k reports by every composition method.

    Shows how much tight accounting buys: the basic sum, advanced
    composition, the KOV bound and optimum, the exact f-DP curve, and the
    GDP/CLT summaries.

    \b
    Example:
      ldp privacy compose --epsilon 0.5 --reports 365 --delta 1e-6
    """

    def body():
        from ldp.privacy.composition import composition_table

        spec = None
        eps = epsilon
        if spec_path is not None:
            from ldp.specs import load_spec

            spec = load_spec(spec_path)
            if eps is None:
                eps = float(spec.epsilon)
        if eps is None:
            raise ParameterError("give --epsilon or --spec")
        rows = composition_table(eps, reports, delta)
        lines = [(r.method, _fmt(r.epsilon), r.guarantee, r.note) for r in rows]
        if spec is not None:
            from ldp.privacy.mechanisms import MAX_MECHANISM_REPORTS, curve_is_exact, mechanism_loss

            note = "reports of one memoized value" if spec.memoized else "fresh randomness per report"
            composed: float | None = None
            if reports > MAX_MECHANISM_REPORTS:
                note = f"not computed above {MAX_MECHANISM_REPORTS:.0e} reports (cost grows with k)"
            else:
                loss = mechanism_loss(spec, reports)
                composed = loss.epsilon(delta)
                if loss.tail > 0:
                    note += "; windows: within 1e-29 of delta"
            if curve_is_exact(spec):
                lines.append((f"exact {spec.mechanism} curve", _fmt(composed), "exact", note))
            else:
                lines.append(
                    (f"{spec.mechanism}: f_(eps,0) at its achieved epsilon", _fmt(composed), "bound", note)
                )
            if spec.memoized:
                lines.append(
                    (
                        f"{spec.mechanism} epsilon_inf (any number)",
                        _fmt(spec.epsilon_inf),
                        "bound",
                        "PRR alone",
                    )
                )
        click.echo(f"{reports} reports of epsilon = {eps:.6g}, total delta = {delta:.3g}")
        _echo_method_table("kind", lines, third_width=13)

    run_guarded(body)


@privacy.command("convert")
@click.option("--mu", type=float, help="Gaussian DP parameter mu.")
@click.option("--epsilon", type=float, help="epsilon.")
@click.option("--delta", type=float, help="delta.")
def convert(mu, epsilon, delta):
    """Convert between mu-GDP, (epsilon, delta)-DP and pure epsilon-DP.

    \b
    --mu M --delta D        epsilon of mu-GDP at delta
    --mu M --epsilon E      delta(epsilon) of mu-GDP
    --epsilon E --delta D   largest mu whose mu-GDP implies (E, D)-DP
    --epsilon E             mu_E, the GDP bound of pure E-DP (2 Phi^-1(e^E/(1+e^E)))

    \b
    Example:
      ldp privacy convert --mu 1 --delta 1e-6
    """

    def body():
        from ldp.privacy import conversions as conv

        if mu is not None and delta is not None and epsilon is None:
            eps = conv.gdp_epsilon(mu, delta)
            if math.isinf(eps) and delta == 0:
                click.echo(
                    f"mu = {mu:.6g}-GDP  =>  no finite epsilon at delta = 0 "
                    "(a Gaussian trade-off curve is not pure epsilon-DP for any epsilon)"
                )
            else:
                click.echo(f"mu = {mu:.6g}-GDP  =>  (epsilon = {_fmt(eps)}, delta = {delta:.3g})-DP")
        elif mu is not None and epsilon is not None and delta is None:
            click.echo(
                f"mu = {mu:.6g}-GDP  =>  (epsilon = {epsilon:.6g}, delta = {conv.gdp_delta(mu, epsilon):.6g})-DP"
            )
        elif mu is None and epsilon is not None and delta is not None:
            click.echo(
                f"(epsilon = {epsilon:.6g}, delta = {delta:.3g})-DP holds for every mu-GDP mechanism "
                f"with mu <= {_fmt(conv.gdp_mu(epsilon, delta))}"
            )
        elif mu is None and epsilon is not None and delta is None:
            click.echo(f"epsilon = {epsilon:.6g}-DP  =>  mu = {conv.dp_to_gdp_mu(epsilon):.6g}-GDP (tight)")
        else:
            raise ParameterError("give --mu with --delta or --epsilon, or --epsilon with or without --delta")

    run_guarded(body)


@privacy.command("tradeoff")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), required=True, help="Spec JSON file.")
@click.option(
    "--reports",
    "-k",
    type=int,
    default=1,
    show_default=True,
    help="Reports (RAPPOR: reports of one memoized value).",
)
@click.option("--delta", type=float, default=1e-6, show_default=True, help="delta for the epsilon column.")
@click.option(
    "--plot", "plot_path", type=click.Path(dir_okay=False), help="Draw the curves to this image file."
)
def tradeoff(spec_path, reports, delta, plot_path):
    """A mechanism's exact trade-off curve(s), with G_mu and f_(eps,delta) references.

    Prints, per curve, the epsilon at delta and the smallest GDP mu that
    bounds it; --plot draws them (needs matplotlib).

    \b
    Example:
      ldp privacy tradeoff --spec rappor.json --reports 30 --plot curve.png
    """

    def body():
        from ldp.privacy.mechanisms import mechanism_tradeoff
        from ldp.privacy.tradeoff import GaussianTradeoff, TradeoffFunction, dp_tradeoff
        from ldp.specs import load_spec

        spec = load_spec(spec_path)
        if plot_path is not None:
            check_plot_path(plot_path)  # before computing the curves
            check_outputs_distinct([("--spec", spec_path)], [("--plot", plot_path)])
        curves: dict[str, TradeoffFunction] = {}
        counts = [1] if reports == 1 else [1, reports]
        if spec.memoized and math.isfinite(spec.epsilon_inf):
            counts.append(math.inf)
        click.echo(f"{'curve':<40}  {'epsilon@delta':>13}  {'GDP mu':>9}")
        figures: dict[float, tuple[float, float]] = {}  # reports -> (epsilon at delta, GDP mu)
        for k in counts:
            curve = mechanism_tradeoff(spec, k)
            eps_k, mu_k = figures[k] = curve.epsilon(delta), curve.gdp_mu()
            click.echo(f"{curve.label:<40}  {_fmt(eps_k):>13}  {_fmt(mu_k):>9}")
            curves[curve.label] = curve
        if delta == 0:
            click.echo(
                "delta = 0: epsilon is the exact pure epsilon (the largest privacy loss); "
                "inf: no finite epsilon at delta = 0"
            )
        eps_k, mu_k = figures[reports]
        if math.isfinite(mu_k):
            curves[f"G_mu, mu = {mu_k:.3g} (GDP bound)"] = GaussianTradeoff(mu_k)
        if math.isfinite(eps_k):
            curves[f"f_(eps = {eps_k:.3g}, delta = {delta:.2g})"] = dp_tradeoff(eps_k, delta)
        if plot_path is not None:
            from ldp.privacy.plotting import plot_tradeoffs

            try:
                plot_tradeoffs(curves, path=plot_path, title=f"{spec.mechanism} ({spec.fingerprint})")
            except (
                OSError
            ) as exc:  # the place was checked above; it can still fail (disk full, removed meanwhile)
                raise ParameterError(f"cannot write --plot {plot_path!r}: {exc.strerror or exc}") from None
            click.echo(f"wrote {plot_path}")

    run_guarded(body)


@privacy.command("shuffle")
@click.option("--epsilon0", type=float, help="Local epsilon of each report (default: the spec's).")
@click.option("--users", "-n", type=int, required=True, help="Number of shuffled reports n (one per user).")
@click.option("--delta", type=float, default=1e-6, show_default=True, help="Central delta.")
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False),
    help="The reports' spec: its epsilon, and its own clone split where it has one (GRR, binary RR).",
)
@click.option(
    "--domain-size",
    type=int,
    help="The randomizer is randomized response over this many values (adds the k-RR bound).",
)
@click.option(
    "--target-epsilon",
    type=float,
    help="Instead: the largest local epsilon0 whose n shuffled reports are (target, delta)-DP.",
)
def shuffle(epsilon0, users, delta, spec_path, domain_size, target_epsilon):
    """Central epsilon of n shuffled epsilon0-LDP reports (amplification by shuffling).

    When the collector strips identifiers and shuffles a window's reports,
    n epsilon0-LDP reports are (epsilon, delta)-DP in the central model for
    a smaller epsilon: the closed form and the numerical bound of Feldman,
    McMillan and Talwar (2021), and a randomized-response bound for GRR. Each
    row names its theorem. One report per user in the window.

    \b
    Examples:
      ldp privacy shuffle --epsilon0 4 --users 100000 --delta 1e-6
      ldp privacy shuffle --spec spec.json --users 1000000
      ldp privacy shuffle --target-epsilon 0.5 --users 100000 --delta 1e-6
    """

    def body():
        from ldp.privacy.shuffle import local_epsilon_for, shuffle_bounds

        spec = None
        eps0 = epsilon0
        size = domain_size
        if spec_path is not None:
            from ldp.specs import load_spec

            spec = load_spec(spec_path)
            if eps0 is None:
                eps0 = float(spec.epsilon)
            elif eps0 != float(spec.epsilon):
                raise ParameterError(f"--epsilon0 {eps0:g} is not the spec's epsilon {float(spec.epsilon):g}")
        if target_epsilon is not None:
            if eps0 is not None:
                raise ParameterError(
                    "--target-epsilon asks for epsilon0: do not give --epsilon0 or --spec with it"
                )
            found = local_epsilon_for(target_epsilon, users, delta, domain_size=size)
            how = f" (randomized response over {size} values)" if size is not None else ""
            click.echo(
                f"epsilon0 = {found:.6g}{how}: {users:,} shuffled reports are "
                f"(epsilon = {target_epsilon:.6g}, delta = {delta:.3g})-DP (numerical bound)"
            )
            return
        if eps0 is None:
            raise ParameterError("give --epsilon0, --spec or --target-epsilon")
        rows = shuffle_bounds(eps0, users, delta, domain_size=size, spec=spec)
        click.echo(f"{users:,} shuffled reports of epsilon0 = {eps0:.6g}, central delta = {delta:.3g}")
        lines = [(r.method, "-" if r.epsilon is None else _fmt(r.epsilon), r.source, r.note) for r in rows]
        _echo_method_table("theorem", lines)

    run_guarded(body)


def _per_report_text(spec, charged: float) -> str:
    """The per-report charge of a memoized spec: ε₁, or the larger ε′ a chain's r reports need."""
    one = float(spec.epsilon_one)
    if charged > one * (1 + 1e-12):
        return f"epsilon_one = {one:.6g} per report (charged {charged:.6g})"
    return f"epsilon_one = {charged:.6g} per report"


def _memo_rule_text(spec) -> str:
    """How r reports of one memo key of ``spec`` are charged, in words."""
    from ldp.privacy.spending import memo_is_linear

    if memo_is_linear(spec):
        from ldp.privacy.spending import first_report_epsilon

        if first_report_epsilon(spec) is not None:  # ε′ > ε₁: the first report is still one report, ε₁
            return (
                "r reports of one memo key cost epsilon_one for r = 1, min(r * charged, epsilon_inf) "
                "from r = 2 (proved for this mechanism)"
            )
        return "r reports of one memo key cost min(r * epsilon_one, epsilon_inf) (proved for this mechanism)"
    return (
        "one report of a memo key costs epsilon_one, two or more epsilon_inf "
        "(no proof that r reports cost r * epsilon_one for this mechanism)"
    )


@privacy.command("lifetime")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), required=True, help="Spec JSON file.")
@click.option(
    "--collections",
    "-t",
    type=int,
    multiple=True,
    required=True,
    help="Number of reports tau (one per collection); repeat for several.",
)
@click.option(
    "--changes",
    "-c",
    type=int,
    multiple=True,
    help="At most this many changes of the value (memoized specs); repeat for several. Default: any number.",
)
def lifetime(spec_path, collections, changes):
    """Lifetime epsilon of tau reports of a spec, stated in advance.

    Fresh randomness: tau * epsilon. A memoized spec: the worst case over
    the values of the per-memo-key costs, over min(tau, c + 1, memo keys)
    keys for a client whose value changes at most c times; the first row
    (any changes) is what the ledger enforces (its committed epsilon).
    Proofs: docs/accounting.md#lifetime.

    \b
    Example:
      ldp privacy lifetime --spec lgrr.json -t 1 -t 10 -t 365 -c 0 -c 2
    """

    def body():
        from ldp.privacy.planning import lifetime_epsilon, memo_keys_used
        from ldp.privacy.spending import stream_parameters
        from ldp.specs import load_spec

        spec = load_spec(spec_path)
        epsilon, cap, memoized, domain = stream_parameters(spec)
        if not memoized:
            click.echo(
                f"{spec.mechanism} ({spec.fingerprint}): fresh randomness, epsilon = {epsilon:.6g} per report"
            )
            click.echo(f"{'collections':>11}  {'epsilon':>10}")
            for tau in collections:
                click.echo(f"{tau:>11}  {_fmt(lifetime_epsilon(spec, tau)):>10}")
            return
        keys_text = "unbounded" if domain is None else f"{domain}"
        click.echo(
            f"{spec.mechanism} ({spec.fingerprint}): memoized, {_per_report_text(spec, epsilon)}, "
            f"epsilon_inf = {_fmt(cap if cap is not None else math.inf)} per memo key, memo keys: {keys_text}"
        )
        click.echo(_memo_rule_text(spec))
        click.echo(f"{'collections':>11}  {'changes':>13}  {'memo keys':>9}  {'epsilon':>10}")
        for tau in collections:
            for c in (None, *changes):
                keys = memo_keys_used(spec, tau, c)
                what = "any (ledger)" if c is None else f"at most {c}"
                shown = "unbounded" if keys is None else str(keys)
                click.echo(f"{tau:>11}  {what:>13}  {shown:>9}  {_fmt(lifetime_epsilon(spec, tau, c)):>10}")

    run_guarded(body)


def _days(days: int | None) -> str:
    return "1 day" if days == 1 else f"{days} days"


@privacy.command("plan")
@click.option("--spec", "spec_path", type=click.Path(dir_okay=False), required=True, help="Spec JSON file.")
@click.option("--budget", "budget_epsilon", type=float, help="Budget epsilon (or --mu).")
@click.option("--mu", type=float, help="A mu-GDP budget instead of epsilon (exact composition).")
@click.option("--delta", type=float, default=0.0, show_default=True, help="Delta of an epsilon budget.")
@click.option(
    "--composition",
    type=click.Choice(["basic", "optimal", "exact"]),
    help="How reports compose (default: basic for epsilon, exact for --mu); docs/accounting.md#budgets.",
)
@click.option("--per-day", type=int, default=1, show_default=True, help="Reports a day.")
@click.option(
    "--changes", "-c", type=int, help="Also: for a client whose value changes at most this many times."
)
def plan(spec_path, budget_epsilon, mu, delta, composition, per_day, changes):
    """How many reports of a spec fit a budget, and for how many days.

    Exactly where the client's ledger refuses (whatever the values); with
    --changes, also how long the budget lasts for a client whose value
    changes at most that many times (the ledger itself cannot know that).

    \b
    Example:
      ldp privacy plan --spec oue.json --budget 20 --delta 1e-6 --composition exact
    """

    def body():
        from ldp.privacy.budget import Budget, budget_text
        from ldp.privacy.planning import plan_reports
        from ldp.specs import load_spec

        if (budget_epsilon is None) == (mu is None):
            raise ParameterError("give --budget E or --mu M")
        budget = Budget(epsilon=budget_epsilon, delta=delta, composition=composition, mu=mu)
        spec = load_spec(spec_path)
        result = plan_reports(spec, budget, per_day=per_day, changes=changes)
        click.echo(
            f"budget {budget_text(budget)}; {spec.mechanism} ({spec.fingerprint}), {per_day} report(s) a day"
        )
        measure = budget.measure
        if result.reports is None:
            click.echo(
                f"the ledger sends any number of reports: the committed {measure} never exceeds "
                f"{result.committed:.6g} (every memo key at epsilon_inf)"
            )
        else:
            click.echo(
                f"the ledger sends {result.reports} reports ({_days(result.days)}), committing "
                f"{measure} = {result.committed:.6g}; report {result.reports + 1} is refused"
            )
        if changes is not None:
            if result.reports_with_changes is None:
                click.echo(
                    f"a client whose value changes at most {changes} time(s): within the budget forever"
                )
            else:
                click.echo(
                    f"a client whose value changes at most {changes} time(s): within the budget for "
                    f"{result.reports_with_changes} reports ({_days(result.days_with_changes)})"
                )

    run_guarded(body)


@privacy.command("ledger")
@click.argument("path", type=click.Path(dir_okay=False))
def ledger(path):
    """What a client's privacy ledger has committed and spent, per spec.

    PATH is a ledger file (beside a client state: client.ledger.json). It
    is read only. committed is what the budget is enforced on (independent
    of the values); spent is what the values sent actually cost (a memo key
    reported again costs no more once at epsilon_inf).

    \b
    Example:
      ldp privacy ledger states/3f2a....ledger.json
    """

    def body():
        from ldp.privacy.budget import PrivacyLedger, budget_text

        opened = PrivacyLedger.load(path)
        measure = opened.budget.measure
        click.echo(f"budget {budget_text(opened.budget)}")
        click.echo(
            f"committed {measure} = {opened.committed:.6g}, spent {measure} = {opened.spent:.6g}, "
            f"remaining {opened.remaining:.6g}"
        )
        per_spec: dict[str, list] = {}
        for stream in opened.streams.values():
            per_spec.setdefault(stream.spec, []).append(stream)
        click.echo(f"{'spec':<16}  {'reports':>8}  {'memo keys':>9}")
        for fingerprint, streams in sorted(per_spec.items()):
            reports = sum(s.reports for s in streams)
            keys = str(len(streams)) if streams[0].memoized else "-"
            click.echo(f"{fingerprint:<16}  {reports:>8}  {keys:>9}")

    run_guarded(body)
