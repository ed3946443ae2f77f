"""``ldp aggregate``: report files (or a collector store's reports) in, estimates with error bars out.

Exit status
-----------
0  every report was valid
2  user error, or nothing could be read (one-line message on stderr, no traceback)
3  estimates were written, but some reports were rejected (see the summary and
   the ``--rejects`` file)
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ldp.aggregator.candidates import read_candidates
from ldp.cli import OptionConflict, check_outputs_distinct, check_writable, run_guarded
from ldp.errors import ParameterError
from ldp.flags import Flags
from ldp.progress import CountProgress
from ldp.specs import Spec

if TYPE_CHECKING:
    from ldp.collector.cli import StoreSelection

__all__ = ["CONSISTENCY_METHODS", "EXIT_REJECTS", "accumulate_reports", "aggregate", "check_estimates_output"]

#: Exit status when estimates were produced but some reports were rejected.
EXIT_REJECTS = 3
CONSISTENCY_METHODS = ("none", "norm-sub", "base-cut", "norm-mul", "clip")
#: How ``ldp aggregate`` names the parameters of library errors.
FLAGS = Flags(choices=frozenset({"engine"}))


def check_estimates_output(path: str | None, option: str = "-o") -> None:
    """Refuse an estimates/results file before any work: unknown extension or a place that cannot be written.

    ``None`` and ``-`` (a table on stdout) are always fine. The extension is
    checked by the writers' own check (``.gz`` allowed except for Parquet).
    """
    if path is None or str(path) == "-":
        return
    from ldp.aggregator.writers import estimates_format

    estimates_format(str(path))
    check_writable(path, option)


@click.command("aggregate")
@click.option(
    "--spec",
    "spec_path",
    type=click.Path(dir_okay=False),
    help="Spec JSON file the reports were encoded with (with --task: the task's spec by default).",
)
@click.argument("reports", nargs=-1, type=click.Path(allow_dash=True))
@click.option(
    "--store",
    "store_url",
    metavar="URL",
    default=None,
    help="Read the reports of --task from this collector store (SQLite file or postgresql:// URL; "
    "default ldp-collector.db) instead of report files.",
)
@click.option("--task", "task_id", metavar="TASK", default=None, help="The stored task to estimate from.")
@click.option(
    "--from", "start", type=int, default=None, metavar="UNIX", help="With --task: reports with t >= this."
)
@click.option(
    "--to", "end", type=int, default=None, metavar="UNIX", help="With --task: reports with t < this."
)
@click.option(
    "--window",
    "windows",
    type=int,
    multiple=True,
    metavar="UNIX",
    help="With a report directory partitioned by window (ldp task export --out): read only the partition "
    "window=UNIX (its window start); repeatable.",
)
@click.option(
    "--candidates",
    type=click.Path(dir_okay=False),
    help="Candidate values, one per line: RAPPOR decode, or the values a CMS/HCMS sketch estimates.",
)
@click.option(
    "--consistency",
    type=click.Choice(CONSISTENCY_METHODS),
    default=None,
    help="The consistent view of frequency estimates, column 'consistent' (non-negative, summing to n; "
    "biased, lower error); the unbiased columns are kept. Default norm-sub where it applies; none drops it.",
)
@click.option(
    "--estimator",
    type=click.Choice(("unbiased", "em")),
    default="unbiased",
    show_default=True,
    help="em: the consistent view is the EM (iterative Bayesian update) estimate over the mechanism's "
    "channel instead of a post-processing of the unbiased estimate (pure frequency oracles).",
)
@click.option(
    "--bootstrap",
    "resamples",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="B",
    help="Add a parametric-bootstrap interval of the consistent view (columns consistent_ci_low/high) "
    "from B resamples (pure frequency oracles; norm-sub or em).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the --bootstrap resamples.",
)
@click.option(
    "--confidence", type=float, default=0.95, show_default=True, help="Confidence level of the intervals."
)
@click.option(
    "--range",
    "ranges",
    metavar="LO:HI",
    multiple=True,
    help="Range specs (range-hierarchy, range-haar): the count of values from LO to HI (both included, in the "
    "domain's order), with SE and CI; repeatable.",
)
@click.option(
    "--quantiles",
    metavar="Q1,Q2,...",
    default=None,
    help="Range specs: the quantiles (each in (0, 1)) of the consistent CDF, with the CDF's SE and CI there.",
)
@click.option(
    "--correction",
    type=click.Choice(("bonferroni", "bh", "none")),
    default="bh",
    show_default=True,
    help="RAPPOR candidate decode: multiple-testing correction of the detection p-values "
    "(bh = Benjamini-Hochberg false discovery rate).",
)
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="RAPPOR candidate decode: family-wise error (bonferroni), false discovery rate (bh) "
    "or per-candidate level (none) of the detections; heavy hitters (pem, treehist): family-wise "
    "error of the significant column.",
)
@click.option(
    "--rejects",
    "rejects_path",
    type=click.Path(dir_okay=False),
    help="Write rejected reports here (.jsonl or .csv).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Estimates file (.csv, .json, .jsonl, .parquet); default: a table on stdout.",
)
@click.option(
    "--counts",
    "counts_path",
    type=click.Path(dir_okay=False),
    help="Decode RAPPOR from a Google counts.csv instead of reports.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Reports read at a time (bounds memory).",
)
@click.option(
    "--engine",
    type=click.Choice(("local", "dask")),
    default="local",
    show_default=True,
    help='local: this machine; dask: a Dask cluster (pip install -e ".[dask]").',
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    default=None,
    help="local: reader threads (default 1); dask: workers of the local cluster started without --scheduler. "
    "At most 2 per CPU.",
)
@click.option(
    "--scheduler",
    metavar="ADDRESS",
    default=None,
    help="Dask scheduler address (--engine dask); without it a local cluster is started.",
)
@click.option(
    "--by-group",
    is_flag=True,
    help="Numeric specs: one mean per report group key (ldp encode --group-column), "
    "columns group, mean, std_error, ci_low, ci_high, n, plus the overall row (empty group).",
)
def aggregate(
    spec_path,
    reports,
    store_url,
    task_id,
    start,
    end,
    windows,
    candidates,
    consistency,
    estimator,
    resamples,
    seed,
    confidence,
    ranges,
    quantiles,
    correction,
    alpha,
    rejects_path,
    output,
    counts_path,
    chunk_size,
    engine,
    workers,
    scheduler,
    by_group,
):
    """Estimate frequencies (with standard errors and confidence intervals) from report files.

    REPORTS are JSON Lines, CSV or Parquet files (by extension; .jsonl.gz and
    .csv.gz accepted; - reads JSON Lines from stdin), or directories of
    Parquet files (a dataset partitioned by window, ldp task export --out;
    --window W reads only its partition window=W), read in bounded-memory
    chunks. Bad reports are never counted and never dropped silently: each
    goes to --rejects with its file, line, reason and raw text, and the
    summary on stderr counts them by reason.

    --by-group (numeric specs) estimates one mean per group key carried by
    the reports (ldp encode --group-column), plus the overall mean of all
    reports (the row with an empty group). Group keys are sent in the clear,
    not privatized.

    --store URL --task TASK [--from F] [--to T] estimates from the reports
    ldp serve stored for TASK (F <= t < T, Unix seconds) instead of report
    files, through the same estimate: the spec is the task's (a --spec given
    too must have its fingerprint); --task alone reads ldp-collector.db.

    Exit status: 0 all reports valid; 3 estimates written but some reports
    rejected; 2 usage error or nothing could be read.

    \b
    Example:
      ldp aggregate --spec spec.json reports-*.jsonl.gz --rejects rejects.jsonl -o estimates.csv
      ldp aggregate --spec rappor.json reports.parquet --candidates urls.txt
      ldp aggregate --spec rappor.json --counts counts.csv --candidates urls.txt
      ldp aggregate --spec spec.json big.parquet --workers 2
      ldp aggregate --spec spec.json reports/*.parquet --engine dask --scheduler tcp://10.0.0.5:8786
      ldp aggregate --spec export/_spec.json export --engine dask --window 1764028800
      ldp aggregate --spec duchi.json reports.jsonl --by-group -o means-by-version.csv
      ldp aggregate --store ldp-collector.db --task TASK --from 1764028800 --to 1764115200
    """
    status = run_guarded(
        _translated,
        spec_path=spec_path,
        reports=reports,
        windows=windows,
        stored={"url": store_url, "task_id": task_id, "start": start, "end": end},
        candidates_path=candidates,
        consistency=consistency,
        views={"estimator": estimator, "resamples": resamples, "seed": seed},
        confidence=confidence,
        decode_options={"correction": correction, "alpha": alpha},
        rejects_path=rejects_path,
        output=output,
        counts_path=counts_path,
        chunk_size=chunk_size,
        engine={"engine": engine, "workers": workers, "scheduler": scheduler},
        by_group=by_group,
        queries={"ranges": ranges, "quantiles": quantiles},
    )
    sys.exit(status)


def _translated(**options) -> int:
    """:func:`_aggregate` with library errors worded in this command's flags."""
    with FLAGS.translating():
        return _aggregate(**options)


def _report_kind(spec: Spec) -> str:
    """The spec's kind of report (``value``, ``bits``, ``hashed``, ``rappor``, ``numeric``)."""
    return str(getattr(spec, "report_kind", ""))


def _aggregate(
    *,
    spec_path,
    reports,
    candidates_path,
    consistency,
    confidence,
    rejects_path,
    output,
    counts_path,
    chunk_size,
    views=None,
    engine=None,
    decode_options=None,
    by_group=False,
    stored=None,
    queries=None,
    windows=(),
) -> int:
    from ldp.allocator import keep_freed_memory

    keep_freed_memory()  # chunks of NumPy arrays come and go: reuse their pages (ldp.allocator)
    selection = _store_selection(stored or {})
    if selection is not None:
        _check_store_options(selection, reports, counts_path, rejects_path, engine or {})
        if windows:
            raise OptionConflict(
                "--window selects partitions of a report directory; with --store, select times with --from and --to"
            )
        spec = _task_spec(selection, spec_path)
    else:
        spec = _file_spec(spec_path)
    if by_group and _report_kind(spec) != "numeric":
        raise ParameterError(
            f"--by-group gives per-group means and needs a numeric spec; this spec is {spec.mechanism}"
        )
    if not 0 < confidence < 1:
        raise ParameterError(f"--confidence must be in (0, 1), got {confidence}")
    if counts_path and reports:
        raise ParameterError("give report files or --counts, not both")
    if not counts_path and not reports and selection is None:
        raise ParameterError(
            "no report files given (or use --counts counts.csv for RAPPOR, or --store and --task for a collector store)"
        )
    check_estimates_output(output)
    check_outputs_distinct(
        [
            *(("REPORTS", path) for path in reports),
            ("--spec", spec_path),
            ("--candidates", candidates_path),
            ("--counts", counts_path),
            ("--store", _store_file(selection)),
        ],
        [("-o", output), ("--rejects", rejects_path)],
    )
    candidates = read_candidates(candidates_path) if candidates_path else None
    if candidates is not None and spec.candidates_mode is None:
        from ldp.specs.base import registered_specs

        takers = ", ".join(name for name, cls in registered_specs().items() if cls.candidates_mode)
        raise ParameterError(
            f"--candidates is for specs whose estimates take candidate values ({takers}); "
            f"this spec is {spec.mechanism}"
        )
    views = views or {}
    consistency = _resolve_consistency(spec, consistency, views, with_candidates=candidates is not None)
    range_options = _range_options(spec, queries or {}, output)
    if counts_path:
        accumulator = _from_counts(spec, counts_path)
        status = 0
    elif selection is not None:
        accumulator, status = _from_store(spec, selection, chunk_size), 0
    else:
        paths = list(reports)
        if windows:
            from ldp.aggregator.datasets import expand_datasets

            paths = expand_datasets(paths, sorted(set(windows)))
        accumulator, status = accumulate_reports(spec, paths, rejects_path, chunk_size, engine or {})
    if range_options:
        from ldp.aggregator.writers import write_estimates

        for options in range_options:
            write_estimates(accumulator.estimate(confidence, **options), output)
        return status
    if by_group:
        estimates = accumulator.estimate(confidence, by_group=True, with_overall=True)
        if len(estimates) == 1:
            click.echo(
                "note: no report carries a group key (ldp encode --group-column); only the overall mean is given",
                err=True,
            )
    else:
        estimates = _estimate(
            accumulator,
            spec,
            candidates=candidates,
            consistency=consistency,
            confidence=confidence,
            decode_options=decode_options or {},
        )
        if views.get("estimator") == "em" or views.get("resamples"):
            from ldp.aggregator.table import as_frame
            from ldp.aggregator.views import add_post_processed_views

            estimates = as_frame(estimates)
            add_post_processed_views(
                estimates,
                accumulator,
                estimator="em" if views.get("estimator") == "em" else consistency,
                resamples=int(views.get("resamples") or 0),
                confidence=confidence,
                seed=int(views.get("seed") or 0),
            )
    if candidates is not None and "allocated_mass" in estimates.attrs:
        click.echo(_decode_summary(estimates.attrs), err=True)
    from ldp.aggregator.writers import write_estimates

    write_estimates(estimates, output)
    if output is None or str(output) == "-":
        label = _view_label(estimates.attrs)
        if label:
            click.echo(label, err=True)
    return status


def _range_options(spec: Spec, queries: dict, output: str | None) -> list[dict[str, Any]]:
    """The estimate options of --range and --quantiles (checked before any report is read); [] without them."""
    from ldp.range_math import parse_range

    ranges, quantiles = queries.get("ranges") or (), queries.get("quantiles")
    if not ranges and quantiles is None:
        return []
    if not getattr(spec, "answers_ranges", False):
        raise ParameterError(
            f"--range and --quantiles need a range spec (range-hierarchy, range-haar); this spec is {spec.mechanism}"
        )
    out: list[dict[str, Any]] = []
    if ranges:
        out.append({"ranges": [parse_range(text) for text in ranges]})
    if quantiles is not None:
        try:
            levels = [float(part) for part in str(quantiles).split(",") if part.strip()]
        except ValueError:
            raise ParameterError(
                f"--quantiles must be numbers in (0, 1) separated by commas, got {quantiles!r}"
            ) from None
        if not levels or not all(0 < q < 1 for q in levels):
            raise ParameterError(
                f"--quantiles must be numbers in (0, 1) separated by commas, got {quantiles!r}"
            )
        out.append({"quantiles": levels})
    if len(out) > 1 and output not in (None, "-"):
        raise OptionConflict("-o holds one table: give --range or --quantiles with -o, not both")
    return out


#: How the stdout note names each consistent view.
_VIEW_NAMES = {
    "norm-sub": "Norm-Sub (projection onto the simplex)",
    "norm-mul": "Norm-Mul",
    "clip": "clipping to [0, n]",
    "base-cut": "Base-Cut",
    "em": "EM over the mechanism's channel",
}


#: The views whose counts sum to n.
_SUMS = dict.fromkeys(("norm-sub", "norm-mul", "em"), ", summing to n")


def _view_label(attrs: dict) -> str | None:
    """The note saying which view the ``consistent`` column is (None without one)."""
    method = attrs.get("consistency")
    if not method:
        return None
    label = (
        f"consistent: {_VIEW_NAMES.get(method, method)}, non-negative{_SUMS.get(method, '')} "
        "(biased, lower total error); "
        "estimate, std_error, ci_low, ci_high: the unbiased estimate"
    )
    if "bootstrap_resamples" in attrs:
        label += (
            f"; consistent_ci_low/high: parametric bootstrap, {attrs['bootstrap_resamples']} resamples, "
            f"seed {attrs['bootstrap_seed']}"
        )
    if attrs.get("em_converged") is False:
        label += f"; EM stopped unconverged after {attrs['em_iterations']} updates"
    return label


def _file_spec(spec_path: str | None) -> Spec:
    """The spec of report files: --spec is required."""
    from ldp.specs import load_spec

    if spec_path is None:
        raise ParameterError("--spec is required (the spec JSON the reports were encoded with)")
    return load_spec(spec_path)


def _store_selection(stored: dict) -> StoreSelection | None:
    """The stored reports --store, --task, --from and --to select; None without --task (report files)."""
    url, task_id, start, end = (stored.get(key) for key in ("url", "task_id", "start", "end"))
    if task_id is None:
        given = [
            flag for flag, value in (("--store", url), ("--from", start), ("--to", end)) if value is not None
        ]
        if given:
            raise OptionConflict(f"{given[0]} reads a collector store and needs --task TASK")
        return None
    # the collector only when a store is read: report files never import it
    from ldp.collector.cli import FLAGS as STORE_FLAGS
    from ldp.collector.cli import StoreSelection
    from ldp.collector.store import DEFAULT_STORE

    with STORE_FLAGS.translating():
        return StoreSelection(url if url is not None else DEFAULT_STORE, task_id, start, end)


def _check_store_options(
    selection: StoreSelection, reports, counts_path: str | None, rejects_path: str | None, engine: dict
) -> None:
    """Refuse, with --task, the options that read or describe report files."""
    if reports:
        raise OptionConflict("give report files or --store/--task, not both")
    if counts_path:
        raise OptionConflict("give --counts or --store/--task, not both")
    if rejects_path:
        raise OptionConflict(
            "--rejects is for report files: stored reports were checked when the collector received them"
        )
    if engine.get("engine", "local") != "local" or engine.get("workers") or engine.get("scheduler"):
        raise OptionConflict(
            "--engine, --workers and --scheduler read report files; with --store, export the reports first "
            "(ldp task export) to aggregate them in parallel"
        )


def _store_file(selection: StoreSelection | None) -> str | None:
    """The SQLite file of the selected store (an input no output may overwrite), or None."""
    if selection is None:
        return None
    from ldp.collector.cli import sqlite_path

    return sqlite_path(selection.url)


def _task_spec(selection: StoreSelection, spec_path: str | None) -> Spec:
    """The selected task's spec; a --spec given too must have its fingerprint."""
    from ldp.collector.cli import FLAGS as STORE_FLAGS
    from ldp.collector.cli import open_task
    from ldp.specs import load_spec

    with STORE_FLAGS.translating():
        store, task = open_task(selection.url, selection.task_id)
    store.close()
    if spec_path is not None:
        given = load_spec(spec_path)
        if given.fingerprint != task.fingerprint:
            raise ParameterError(
                f"--spec {spec_path!r} (fingerprint {given.fingerprint}) is not the spec of task "
                f"{task.task_id} (fingerprint {task.fingerprint}); leave --spec out to use the task's"
            )
    return task.spec


def _from_store(spec: Spec, selection: StoreSelection, chunk_size: int):
    """The accumulator of the selected stored reports (and kept aggregates); the summary line goes to stderr.

    A window the task's retention pruned counts through its kept aggregate
    (:func:`ldp.collector.retention.accumulate_range`), as ``ldp serve`` counts it.
    """
    from ldp.collector.cli import FLAGS as STORE_FLAGS
    from ldp.collector.cli import open_task
    from ldp.collector.retention import accumulate_range

    progress = CountProgress("reports")
    seen = 0

    def counted(size: int) -> None:
        nonlocal seen
        seen += size
        progress.update(seen)

    with STORE_FLAGS.translating():
        store, task = open_task(selection.url, selection.task_id)
        try:
            with store:
                accumulator, _, pruned = accumulate_range(
                    store, task, selection.start, selection.end, chunk_size, counted
                )
        finally:
            progress.done()
    click.echo(f"{seen:,} stored reports read from {store.url}, {selection.describe()}", err=True)
    if pruned:
        click.echo(
            f"{pruned:,} pruned window(s) ({accumulator.n - seen:,} reports) counted from their kept aggregates",
            err=True,
        )
    if accumulator.n < task.min_batch:
        click.echo(
            f"note: fewer reports than the task's min batch ({task.min_batch:,}); ldp serve withholds such a range",
            err=True,
        )
    return accumulator


def _from_counts(spec, path: str):
    if _report_kind(spec) != "rappor":
        raise ParameterError(f"--counts is for RAPPOR specs; this spec is {spec.mechanism}")
    try:
        from ldp.aggregator.google import read_counts
    except ImportError:
        raise ParameterError(
            "--counts needs ldp.aggregator.google, which is not available in this version"
        ) from None
    from ldp.aggregator.accumulators import RapporAccumulator, make_aggregator

    cohort_counts, bit_counts = read_counts(path, spec)
    empty = make_aggregator(spec)
    assert isinstance(empty, RapporAccumulator)  # a RAPPOR spec (checked above)
    return type(empty).from_counts(spec, cohort_counts, bit_counts)


def accumulate_reports(
    spec, paths: list[str], rejects_path: str | None, chunk_size: int, engine: dict | None = None
):
    """Read every file into one accumulator with the chosen engine; (accumulator, exit status).

    Shared by ``ldp aggregate`` and ``ldp google-rappor counts``: the same reader
    (:func:`ldp.aggregator.accumulate.accumulate_files`), rejects, summary line
    (printed here, on stderr) and exit statuses. ``engine`` holds the
    ``engine``, ``workers`` and ``scheduler`` options; library errors name them
    by their flags.
    """
    from ldp.aggregator.accumulate import accumulate_files

    progress = CountProgress("reports")
    try:
        with FLAGS.translating():
            result = accumulate_files(
                spec,
                paths,
                rejects_path=rejects_path,
                chunk_size=chunk_size,
                progress=progress.update,
                **(engine or {}),
            )
    finally:
        progress.done()
    click.echo(result.summary, err=True)
    if result.rejected and rejects_path is None:
        for reject in result.examples:
            click.echo(f"  {reject.file}:{reject.line}: {reject.reason}: {reject.detail}", err=True)
        click.echo("  (use --rejects FILE to keep every rejected report)", err=True)
    return result.accumulator, (EXIT_REJECTS if result.rejected else 0)


def _decode_summary(summary: dict) -> str:
    """One line on the RAPPOR candidate decode: detections, allocated and unexplained mass."""
    line = (
        f"detected {summary['num_detected']} of {summary['num_candidates']} candidates "
        f"({summary['correction']}, alpha={summary['alpha']:g}); allocated mass {summary['allocated_mass']:.4f}"
    )
    if "unexplained_mass" in summary:
        line += f"; unexplained mass {summary['unexplained_mass']:.4f}"
        se = summary.get("unexplained_mass_se")
        if se is not None and se == se:  # not NaN
            line += f" ± {se:.4f}"
    return line


def _resolve_consistency(spec, consistency: str | None, views: dict, *, with_candidates: bool) -> str:
    """The consistent view's method: --consistency, else norm-sub where it applies; EM and bootstrap checked."""
    if consistency is None:
        from ldp.aggregator.views import default_consistency

        consistency = default_consistency(spec, with_candidates=with_candidates)
    _check_consistency(spec, consistency, with_candidates=with_candidates)
    estimator, resamples = views.get("estimator", "unbiased"), int(views.get("resamples") or 0)
    if estimator == "em" or resamples:
        if estimator == "em" and consistency not in ("norm-sub", "none"):
            raise OptionConflict(
                f"--estimator em is its own consistent view; leave out --consistency {consistency}"
            )
        view = "em" if estimator == "em" else consistency
        if view not in ("norm-sub", "em"):
            raise OptionConflict(f"--bootstrap intervals are for the norm-sub or em view, not {view}")
        if with_candidates:
            raise OptionConflict("--estimator em and --bootstrap estimate the domain, not --candidates")
        from ldp.aggregator.views import check_channel

        check_channel(spec, estimator=view, resamples=resamples)
    return consistency


def _check_consistency(spec, consistency: str, *, with_candidates: bool) -> None:
    """--consistency post-processes frequency estimates only; checked before any report is read."""
    if consistency == "none":
        return
    if getattr(spec, "answers_ranges", False):
        raise ParameterError(
            f"--consistency {consistency} does not apply to {spec.mechanism}: its estimates are consistent across "
            "the tree's levels already; use --consistency none"
        )
    if _report_kind(spec) == "numeric":
        raise ParameterError(
            f"--consistency {consistency} does not apply to mean estimates ({spec.mechanism} spec); "
            "use --consistency none"
        )
    if with_candidates and spec.candidates_mode == "decode":
        raise ParameterError(f"--consistency does not apply to a {spec.mechanism} candidate decode")
    if _report_kind(spec) == "rappor" and getattr(spec, "encoding", None) == "bloom":
        raise ParameterError(
            "--consistency does not apply to Bloom RAPPOR bit estimates (give --candidates to decode values)"
        )


def _estimate(accumulator, spec, *, candidates, consistency, confidence, decode_options=None):
    """The estimate table (options already checked by :func:`_check_consistency`)."""
    from ldp.specs import HeavyHitterSpec

    options: dict[str, Any] = {"confidence": confidence, "consistency": consistency}
    if isinstance(spec, HeavyHitterSpec):  # the level of the discoveries' `significant` column
        options["alpha"] = (decode_options or {}).get("alpha", 0.05)
    if candidates is not None and spec.candidates_mode == "estimate":  # estimates of the candidates
        options = {"confidence": confidence, "consistency": consistency, "candidates": candidates}
    elif candidates is not None:
        options = {"confidence": confidence, "candidates": candidates, **(decode_options or {})}
    # a table built without pandas where the accumulator can (frequency oracles, RAPPOR): written by csv
    table = accumulator.estimate_columns(**options)
    return table if table is not None else accumulator.estimate(**options)
