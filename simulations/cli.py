"""``ldp simulate``: accuracy versus ε for your domain, measured against theory.

The command only parses options, calls :func:`ldp.simulations.run` (or a
preset) and prints; everything else lives in the library.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import click

from ldp.cli import OptionConflict, check_outputs_distinct, check_plot_path, run_guarded
from ldp.errors import ParameterError
from ldp.flags import Flags
from ldp.progress import stderr_is_terminal

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

__all__ = ["simulate"]

_EXAMPLE = """
\b
Examples:
  ldp simulate                                   # default sweep: 5 mechanisms x 5 epsilons, D=64, 100k users
  ldp simulate -m grr,oue,olh -e 0.5,1,2 -n 10000,100000 -d 1024 -o results.csv --plot accuracy.png
  ldp simulate --data visits.parquet --column country -e 1,2 --seed 7
  ldp simulate --preset rappor-regtest --small
  ldp simulate -m duchi,piecewise,hybrid,laplace -e 0.1,1,8 --distribution beta:2,5 --low 0 --high 100
  ldp simulate -m hybrid,gaussian --data sessions.csv --column minutes --low 0 --high 120
  ldp simulate --rounds 30 --change-prob 0.1 --budget 4 -o rounds.csv --plot rounds.png
  ldp simulate --panel visits.parquet --panel-columns device,day,country --budget 8 -m oue,l-osue
  ldp simulate --spec records.json --data records.csv -e 0.5,1,2,4   # multi-attribute: SMP, SPL, RS+FD
"""


#: The Python parameter each option of ``ldp simulate`` sets, where the names differ.
_PARAMETER_OF = {
    "mechanism": "mechanisms",
    "epsilon": "epsilons",
    "rappor_bits": "rappor.num_bits",
    "rappor_hashes": "rappor.num_hashes",
    "rappor_cohorts": "rappor.num_cohorts",
    "rappor_f": "rappor.f",
}
#: How ``ldp simulate`` names the parameters of library errors.
FLAGS = Flags(
    names={parameter: "--" + option.replace("_", "-") for option, parameter in _PARAMETER_OF.items()},
    choices=frozenset({"mode", "preset"}),
)


class _Progress:
    """A stderr progress bar, shown only when stderr is a terminal."""

    def __init__(self, label: str):
        self.label = label
        self.bar: ProgressBar[int] | None = None
        self.done = 0
        self.enabled = stderr_is_terminal()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            bar = click.progressbar(length=total, label=self.label, file=sys.stderr)
            bar.__enter__()
            self.bar = bar
        self.bar.update(done - self.done)
        self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


def _explicit(ctx: click.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")


#: Options of the longitudinal simulation (``--rounds``/``--panel``) only.
_ROUNDS_ONLY = ("change_prob", "budget", "epsilon_ratio", "panel_columns", "rejects")
#: Options the longitudinal simulation does not read.
_NOT_ROUNDS = (
    "repeats",
    "data",
    "column",
    "as_users",
    "low",
    "high",
    "delta",
    "grid",
    "preset",
    "small",
    "cases",
    "shuffle_delta",
)


#: Options a multi-attribute sweep (``--spec``) reads.
_RECORDS = ("spec", "data", "epsilon", "repeats", "seed", "output", "mode")


def _simulate_records(ctx: click.Context, options: dict[str, Any]) -> None:
    """``--spec RECORDS.json --data FILE``: :func:`ldp.simulations.multiattr.records_sweep`, its table and -o."""
    from ldp.simulations.multiattr import records_sweep
    from ldp.specs import load_spec
    from ldp.specs.multiattr import MultiAttribute

    ignored = [name for name in ctx.params if name not in _RECORDS and _explicit(ctx, name)]
    if ignored:
        verb = "does" if len(ignored) == 1 else "do"
        raise OptionConflict(
            f"{_flags(ignored)} {verb} not apply to a multi-attribute sweep (--spec): its attributes are "
            "the spec's, its records the columns of --data"
        )
    spec = load_spec(options["spec"])
    if not isinstance(spec, MultiAttribute):
        raise ParameterError(f"--spec must be a multi-attribute spec, got {spec.mechanism}")
    if options["data"] is None:
        raise ParameterError("--spec needs --data FILE: a table with one column per attribute")
    if options["output"]:
        from ldp.aggregator.cli import check_estimates_output

        check_estimates_output(options["output"])
    progress = _Progress("simulating records")
    try:
        results, text = records_sweep(
            spec,
            options["data"],
            options["epsilon"],
            repeats=options["repeats"],
            seed=options["seed"],
            progress=progress,
            mode=options["mode"],
        )
    finally:
        progress.close()
    click.echo(text)
    click.echo(f"seed: {int(results['seed'].iloc[0])} (pass --seed to reproduce)")
    if options["output"]:
        from ldp.aggregator.writers import write_estimates

        write_estimates(results, options["output"])
        click.echo(f"wrote {len(results)} rows to {options['output']}", err=True)


def _simulate(ctx: click.Context, options: dict[str, Any]) -> None:
    if options["spec"] is not None:
        _simulate_records(ctx, options)
        return
    if options["rounds"] is not None or options["panel"] is not None:
        _simulate_rounds(ctx, options)
        return
    given = [name for name in _ROUNDS_ONLY if _explicit(ctx, name)]
    if given:
        raise OptionConflict(
            f"{_flags(given)} {_verb(given)} to longitudinal simulations only: add --rounds T (or --panel FILE)"
        )
    _simulate_sweep(ctx, options)


def _flags(names: list[str]) -> str:
    return ", ".join("--" + name.replace("_", "-") for name in names)


def _verb(names: list[str]) -> str:
    return "applies" if len(names) == 1 else "apply"


def _single_int(text: str | None, option: str) -> int | None:
    """One integer >= 1 from an option that takes a list in the ε sweep."""
    if text is None:
        return None
    cleaned = str(text).replace("_", "").strip()
    try:
        number = float(cleaned)
    except ValueError:
        raise ParameterError(f"{option} must be one integer >= 1 with --rounds, got {text!r}") from None
    if not number.is_integer() or number < 1:
        raise ParameterError(f"{option} must be one integer >= 1 with --rounds, got {text!r}")
    return int(number)


def _simulate_rounds(ctx: click.Context, options: dict[str, Any]) -> None:
    """``--rounds T`` / ``--panel FILE``: :func:`ldp.simulations.run_rounds`, its table, -o and --plot."""
    from ldp.aggregator.rejects import RejectsWriter
    from ldp.simulations.mechanisms import RapporSettings
    from ldp.simulations.rounds import format_rounds_report, run_rounds

    ignored = [name for name in _NOT_ROUNDS if _explicit(ctx, name)]
    if ignored:
        verb = "does" if len(ignored) == 1 else "do"
        raise OptionConflict(
            f"{_flags(ignored)} {verb} not apply to longitudinal simulations (--rounds/--panel)"
        )
    if options["rounds"] is not None and options["panel"] is not None:
        raise OptionConflict("--rounds draws a synthetic panel; --panel FILE gives its own rounds: give one")
    if options["panel"] is not None and _explicit(ctx, "change_prob"):
        raise OptionConflict("--change-prob applies to synthetic panels (--rounds), not to --panel FILE")
    if _explicit(ctx, "epsilon") and _explicit(ctx, "budget"):
        raise OptionConflict("give --budget (lifetime epsilon) or --epsilon (per report), not both")
    epsilon = None
    if options["epsilon"] is not None:
        parts = [part for part in str(options["epsilon"]).split(",") if part.strip()]
        if len(parts) != 1:
            raise ParameterError("--epsilon takes one value with --rounds (the epsilon of one report)")
        epsilon = float(parts[0])
    if options["plot"]:
        check_plot_path(options["plot"])
    if options["output"]:
        from ldp.aggregator.cli import check_estimates_output

        check_estimates_output(options["output"])
    check_outputs_distinct(
        [("--panel", options["panel"])],
        [("-o", options["output"]), ("--plot", options["plot"]), ("--rejects", options["rejects"])],
    )
    columns = [part.strip() for part in str(options["panel_columns"]).split(",")]
    progress = _Progress("simulating rounds")
    try:
        with RejectsWriter(options["rejects"]) as rejects:
            results = run_rounds(
                options["mechanism"],
                rounds=options["rounds"],
                users=_single_int(options["users"], "--users"),
                domain_size=_single_int(options["domain_size"], "--domain-size"),
                distribution=options["distribution"] or "zipf",
                change_prob=options["change_prob"],
                budget=options["budget"],
                epsilon=epsilon,
                epsilon_ratio=options["epsilon_ratio"],
                panel=options["panel"],
                panel_columns=columns if options["panel"] is not None else None,
                rejects=rejects,
                seed=options["seed"],
                mode=options["mode"],
                top_k=options["top_k"],
                rappor=RapporSettings(
                    num_bits=options["rappor_bits"],
                    num_hashes=options["rappor_hashes"],
                    num_cohorts=options["rappor_cohorts"],
                    f=_fraction(options["rappor_f"]),
                ),
                client_sample=options["client_sample"],
                progress=progress,
            )
    finally:
        progress.close()
    if rejects.total:
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(rejects.counts.items()))
        click.echo(f"rejected {rejects.total} panel row(s): {reasons}", err=True)
        if options["rejects"] is None:
            for reject in rejects.examples:
                click.echo(f"  {reject.file}:{reject.line}: {reject.reason}: {reject.detail}", err=True)
            click.echo("  (use --rejects FILE to keep every rejected row)", err=True)
    click.echo(format_rounds_report(results))
    click.echo(f"seed: {int(results['seed'].iloc[0])} (pass --seed to reproduce)")
    if options["output"]:
        from ldp.aggregator.writers import write_estimates

        write_estimates(results, options["output"])
        click.echo(f"wrote {len(results)} rows to {options['output']}", err=True)
    if options["plot"]:
        from ldp.simulations.plot import plot_rounds

        plot_rounds(results, options["plot"])
        click.echo(f"wrote plot {options['plot']}", err=True)


def _simulate_sweep(ctx: click.Context, options: dict[str, Any]) -> None:
    from ldp.simulations.mechanisms import RapporSettings
    from ldp.simulations.presets import PRESETS, format_regtest, run_rappor_regtest, wang2017
    from ldp.simulations.runner import run
    from ldp.simulations.summary import format_report, summarize
    from ldp.simulations.sweep import (
        FREQUENCY_DEFAULT,
        KEY_VALUE,
        NUMERIC,
        RANGE,
        check_sweep_options,
        sweep_kind,
    )

    preset = options["preset"]
    _check_options(options)
    kind = sweep_kind(
        options["mechanism"],
        options["distribution"],
        data=options["data"] is not None,
        numeric_range=options["low"] is not None or options["high"] is not None,
    )
    check_sweep_options(kind, [_PARAMETER_OF.get(name, name) for name in options if _explicit(ctx, name)])
    if options["plot"] and kind in (KEY_VALUE, RANGE):
        raise OptionConflict(
            f"--plot draws frequency and numeric sweeps, not a {kind} sweep: use -o for its table"
        )
    progress = _Progress("simulating")
    numeric = kind == NUMERIC
    try:
        if kind == KEY_VALUE:
            from ldp.simulations.key_value import key_value_sweep

            results, text = key_value_sweep(
                options["mechanism"],
                options["epsilon"],
                options["users"],
                options["distribution"],
                options["domain_size"],
                repeats=options["repeats"],
                seed=options["seed"],
                progress=progress,
                mode=options["mode"],
            )
        elif kind == RANGE:
            from ldp.simulations.range_sweep import range_sweep

            results, text = range_sweep(
                options["mechanism"],
                options["epsilon"],
                options["users"],
                options["distribution"],
                options["domain_size"],
                repeats=options["repeats"],
                seed=options["seed"],
                progress=progress,
            )
        elif numeric:
            from ldp.simulations.numeric import numeric_sweep

            results, text = numeric_sweep(
                options["mechanism"],
                options["epsilon"],
                options["users"],
                options["distribution"],
                low=options["low"],
                high=options["high"],
                data=options["data"],
                column=options["column"],
                as_users=options["as_users"],
                repeats=options["repeats"],
                seed=options["seed"],
                delta=options["delta"],
                grid=options["grid"],
                progress=progress,
            )
        elif preset is not None and PRESETS[preset] == "regtest":
            if options["shuffle_delta"] is not None:
                raise ParameterError(
                    "--shuffle-delta adds a column to the sweep table; rappor-regtest has none"
                )
            results = run_rappor_regtest(
                small=options["small"],
                num_clients=int(options["users"]) if options["users"] else None,
                repeats=options["repeats"] if _explicit(ctx, "repeats") else 1,
                seed=options["seed"],
                mode=options["mode"],
                cases=options["cases"],
                progress=progress,
            )
            text = format_regtest(results)
        else:
            arguments: dict[str, Any] = {
                "mechanisms": options["mechanism"],
                "epsilons": options["epsilon"],
                "users": options["users"],
                "domain_size": options["domain_size"],
                "distribution": options["distribution"] or FREQUENCY_DEFAULT,
                "data": options["data"],
                "column": options["column"],
                "as_users": options["as_users"],
                "repeats": options["repeats"],
            }
            if preset is not None:
                grid = wang2017(small=options["small"])
                cli_names = {"mechanisms": "mechanism", "epsilons": "epsilon"}
                for key, value in grid.items():
                    if not _explicit(ctx, cli_names.get(key, key)):
                        arguments[key] = value
            elif options["small"]:
                raise ParameterError("--small applies to --preset only")
            results = run(
                **arguments,
                seed=options["seed"],
                mode=options["mode"],
                top_k=options["top_k"],
                rappor=RapporSettings(
                    num_bits=options["rappor_bits"],
                    num_hashes=options["rappor_hashes"],
                    num_cohorts=options["rappor_cohorts"],
                    f=_fraction(options["rappor_f"]),
                ),
                client_sample=options["client_sample"],
                progress=progress,
            )
            summary = summarize(results)
            if options["shuffle_delta"] is not None:
                from ldp.simulations.summary import with_central_epsilon

                summary = with_central_epsilon(summary, options["shuffle_delta"])
            text = format_report(summary)
    finally:
        progress.close()
    click.echo(text)
    click.echo(f"seed: {int(results['seed'].iloc[0])} (pass --seed to reproduce)")
    if options["output"]:
        from ldp.aggregator.writers import write_estimates

        write_estimates(results, options["output"])
        click.echo(f"wrote {len(results)} rows to {options['output']}", err=True)
    if options["plot"]:
        if numeric:
            from ldp.simulations.numeric import plot_numeric as plot
        else:
            from ldp.simulations.plot import plot_results as plot
        plot(results, options["plot"])
        click.echo(f"wrote plot {options['plot']}", err=True)


def _check_options(options: dict[str, Any]) -> None:
    """Refuse bad options before the sweep runs: outputs that could not be written, --column without --data, epsilons <= 0."""
    from ldp.simulations.presets import PRESETS

    if options["column"] is not None and options["data"] is None:
        raise OptionConflict("--column names a column of --data FILE; give --data too (or drop --column)")
    if options["epsilon"] is not None:
        for item in (part.strip() for part in str(options["epsilon"]).split(",") if part.strip()):
            try:
                value = float(item)
            except ValueError:
                raise ParameterError(
                    f"--epsilon must be numbers > 0 separated by commas, got {item!r}"
                ) from None
            if not 0 < value < float("inf"):
                raise ParameterError(f"--epsilon must be > 0 (and finite), got {item}")
    if options["plot"]:
        if options["preset"] is not None and PRESETS[options["preset"]] == "regtest":
            raise ParameterError(
                "--plot draws error versus epsilon; the rappor-regtest preset has a single epsilon per case"
            )
        check_plot_path(options["plot"])
    if options["output"]:
        from ldp.aggregator.cli import check_estimates_output

        check_estimates_output(options["output"])
    check_outputs_distinct(
        [("--data", options["data"])], [("-o", options["output"]), ("--plot", options["plot"])]
    )


def _fraction(text: str) -> Fraction:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise ParameterError(f"--rappor-f must be a number or fraction in [0, 1), got {text!r}") from None


def _mechanism_help() -> str:
    """The --mechanism help, listing every registered mechanism (ldp.registry) by kind."""
    from ldp.simulations.mechanisms import DEFAULT_MECHANISMS, MECHANISM_KINDS
    from ldp.specs import NUMERIC_MECHANISMS

    return (
        f"Comma-separated: {', '.join(MECHANISM_KINDS)}; or numeric: {', '.join(NUMERIC_MECHANISMS)}. "
        f"[default: {','.join(DEFAULT_MECHANISMS)}]"
    )


_MECHANISM_HELP = _mechanism_help()


@click.command("simulate", epilog=_EXAMPLE)
@click.option(
    "-m",
    "--mechanism",
    default=None,
    metavar="LIST",
    help=_MECHANISM_HELP,
)
@click.option(
    "-e", "--epsilon", default=None, metavar="LIST", help="Comma-separated epsilons. [default: 0.5,1,2,4,8]"
)
@click.option(
    "-n",
    "--users",
    default=None,
    metavar="LIST",
    help="Comma-separated user counts. [default: 100000; with --as-users every row]",
)
@click.option(
    "-d",
    "--domain-size",
    default=None,
    metavar="LIST",
    help="Comma-separated domain sizes D of synthetic populations. [default: 64]",
)
@click.option(
    "--distribution",
    default=None,
    metavar="NAME[:PARAM]",
    help="zipf, uniform, exponential, gaussian or geometric; e.g. zipf:1.5 [default: zipf]. "
    "Numeric: uniform, gaussian[:sd], exponential[:mean], beta[:a,b] [default: beta].",
)
@click.option(
    "--data",
    default=None,
    type=click.Path(dir_okay=False),
    help="Real data: a CSV, JSON Lines, JSON or Parquet file (its column's empirical distribution).",
)
@click.option("--column", default=None, help="Column of --data holding one value per row.")
@click.option(
    "--spec",
    default=None,
    type=click.Path(dir_okay=False),
    help="A multi-attribute spec: compare SMP, SPL and RS+FD on the records of --data (a column per attribute).",
)
@click.option("--as-users", is_flag=True, help="With --data: every row is a user (no resampling).")
@click.option(
    "-r", "--repeats", default=5, show_default=True, type=click.IntRange(min=1), help="Collections per cell."
)
@click.option("--seed", default=None, type=click.IntRange(min=0), help="Seed; same seed, same numbers.")
@click.option(
    "--mode",
    default="fast",
    show_default=True,
    type=click.Choice(["fast", "faithful"]),
    help="fast: exact sampling of aggregated counts; faithful: real client and aggregator.",
)
@click.option(
    "--top-k", default=10, show_default=True, type=click.IntRange(min=1), help="k of the top-k metrics."
)
@click.option(
    "--client-sample",
    default=0,
    show_default=True,
    type=click.IntRange(min=0),
    help="Faithful mode: users encoded one by one by the CSPRNG client.",
)
@click.option("--rappor-bits", default=32, show_default=True, type=int, help="rappor: Bloom filter bits k.")
@click.option("--rappor-hashes", default=2, show_default=True, type=int, help="rappor: hashes h.")
@click.option("--rappor-cohorts", default=64, show_default=True, type=int, help="rappor: cohorts m.")
@click.option("--rappor-f", default="0", show_default=True, help="rappor: permanent randomized response f.")
@click.option(
    "--low",
    default=None,
    type=float,
    help="Numeric: value range low (selects the numeric sweep; default: the population's).",
)
@click.option("--high", default=None, type=float, help="Numeric: value range high.")
@click.option("--delta", default=1e-5, show_default=True, type=float, help="Numeric: gaussian delta.")
@click.option("--grid", default=None, type=int, help="Numeric: input grid steps of the grid mechanisms.")
@click.option(
    "--preset",
    default=None,
    type=click.Choice(["wang2017", "rappor-regtest"]),
    help="A published setup (explicit options override its grid).",
)
@click.option("--small", is_flag=True, help="With --preset: CI-sized run.")
@click.option("--cases", default=None, metavar="REGEX", help="rappor-regtest: run only the matching cases.")
@click.option(
    "-o", "--output", default=None, metavar="FILE", help="Every repeat to .csv, .json, .jsonl or .parquet."
)
@click.option("--plot", default=None, metavar="FILE.png", help="Error versus epsilon (needs matplotlib).")
@click.option(
    "--shuffle-delta",
    default=None,
    type=float,
    metavar="DELTA",
    help="Add each row's central epsilon at DELTA when its users' reports are shuffled (ldp privacy shuffle).",
)
@click.option(
    "--rounds",
    default=None,
    type=click.IntRange(min=1),
    metavar="T",
    help="Longitudinal: T rounds of an evolving panel; per-round error and lifetime epsilon per user.",
)
@click.option(
    "--change-prob",
    default=0.1,
    show_default=True,
    type=click.FloatRange(0, 1),
    help="--rounds: probability that a user redraws its value from the population before each round.",
)
@click.option(
    "--budget",
    default=None,
    type=float,
    metavar="B",
    help="--rounds/--panel: lifetime epsilon every mechanism is calibrated to (worst user of the panel). [default: 4]",
)
@click.option(
    "--epsilon-ratio",
    default=0.5,
    show_default=True,
    type=float,
    help="--rounds/--panel: epsilon_one/epsilon_inf of memoizing mechanisms whose epsilon_inf can be set.",
)
@click.option(
    "--panel",
    default=None,
    type=click.Path(dir_okay=False),
    help="Longitudinal: a real panel, a CSV, JSON Lines, JSON or Parquet file with user, round and value columns.",
)
@click.option(
    "--panel-columns",
    default="user,round,value",
    show_default=True,
    metavar="USER,ROUND,VALUE",
    help="--panel: the user, round and value columns.",
)
@click.option(
    "--rejects",
    default=None,
    metavar="FILE",
    help="--panel: every rejected row, with its reason, to .jsonl or .csv.",
)
@click.pass_context
def simulate(ctx: click.Context, **options: Any) -> None:
    """Accuracy versus epsilon: which mechanism and epsilon for my domain?

    Simulates collections from a population, estimates the frequencies and
    prints, per mechanism and epsilon, the measured error next to the theory
    and the LDP lower bound, then the best mechanism per epsilon.

    With --rounds T (or --panel FILE): a longitudinal simulation. Users keep
    a value over T rounds (each redraws it with --change-prob); every
    mechanism is calibrated to the same lifetime --budget and the table
    shows, per mechanism, the per-round error against theory and the
    lifetime epsilon per user (median and maximum, by the ledger's
    accounting).
    """
    run_guarded(_translated, ctx, options)


def _translated(ctx: click.Context, options: dict[str, Any]) -> None:
    """:func:`_simulate` with library errors worded in this command's flags."""
    with FLAGS.translating():
        _simulate(ctx, options)
