"""``ldp google-rappor``: write Google RAPPOR's params, map and counts files.

See :mod:`ldp.aggregator.google` for the formats. Errors in user input end
with a one-line message and exit status 2 (:func:`ldp.cli.run_guarded`).
``counts`` reads reports with the reader, reject handling, summary and exit
statuses of ``ldp aggregate`` (:mod:`ldp.aggregator.cli`): 0 all reports
valid, 3 counts written but some reports rejected, 2 nothing could be read.
"""

from __future__ import annotations

import sys

import click

from ldp.cli import check_outputs_distinct, run_guarded

__all__ = ["google_rappor"]


def _spec(path: str, *, warn_hash: bool = False):
    """The Bloom RAPPOR spec at ``path``; with ``warn_hash``, say on stderr when its hash is not Google's md5."""
    from ldp.errors import SpecError
    from ldp.specs import Rappor, load_spec

    spec = load_spec(path)
    if not isinstance(spec, Rappor) or spec.encoding != "bloom":
        raise SpecError(
            f"{path}: Google RAPPOR formats need a Bloom-filter RAPPOR spec, got {spec.mechanism}"
        )
    if warn_hash and spec.hash != "md5":
        click.echo(
            f"warning: {path} hashes with {spec.hash}, Google's hash_candidates.py with md5: build the map with "
            "`ldp google-rappor map` (it uses the spec's hash), and note that `ldp spec rappor --from-google` "
            "reads these params back as an md5 spec (another fingerprint)",
            err=True,
        )
    return spec


@click.group("google-rappor")
def google_rappor():
    """Read and write Google RAPPOR's CSV formats (params, map, counts).

    \b
    Example:
      ldp google-rappor params --spec spec.json -o params.csv
      ldp google-rappor map --spec spec.json --candidates names.txt -o map.csv
      ldp google-rappor counts --spec spec.json reports.jsonl -o counts.csv
    """


@google_rappor.command("params")
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="RAPPOR spec JSON.")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="params.csv to write.")
def params(spec_path, output):
    """Write params.csv (header k,h,m,p,q,f and one row).

    \b
    Example:
      ldp google-rappor params --spec spec.json -o params.csv
    """

    def work():
        from ldp.aggregator.google import write_params

        check_outputs_distinct([("--spec", spec_path)], [("-o", output)])
        write_params(_spec(spec_path, warn_hash=True), output)
        click.echo(f"wrote {output}", err=True)

    run_guarded(work)


@google_rappor.command("map")
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="RAPPOR spec JSON.")
@click.option(
    "--candidates",
    "candidates_path",
    required=True,
    type=click.Path(dir_okay=False),
    help="Candidate strings, one per line.",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="map.csv to write.")
def map_(spec_path, candidates_path, output):
    """Write map.csv: each candidate, then its 1-based indices cohort*k + bit + 1.

    With a spec using hash "md5" the indices equal Google's hash_candidates.py.

    \b
    Example:
      ldp google-rappor map --spec spec.json --candidates names.txt -o map.csv
    """

    def work():
        from ldp.aggregator.google import read_candidates, write_map

        check_outputs_distinct([("--spec", spec_path), ("--candidates", candidates_path)], [("-o", output)])
        spec = _spec(spec_path)
        candidates = read_candidates(candidates_path)
        write_map(output, spec, candidates)
        click.echo(f"wrote {output} ({len(candidates)} candidates)", err=True)

    run_guarded(work)


@google_rappor.command("counts")
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False), help="RAPPOR spec JSON.")
@click.argument("reports", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="counts.csv to write.")
@click.option(
    "--rejects",
    "rejects_path",
    type=click.Path(dir_okay=False),
    help="Write rejected reports here (.jsonl or .csv).",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Reports read at a time (bounds memory).",
)
def counts(spec_path, reports, output, rejects_path, chunk_size):
    """Sum RAPPOR reports into counts.csv: per cohort, N then the ones of each bit.

    REPORTS are read exactly as ldp aggregate reads them: JSON Lines, CSV or
    Parquet files (by extension; .jsonl.gz and .csv.gz accepted; - reads JSON
    Lines from stdin). Bad reports are never counted and never dropped
    silently: each goes to --rejects with its file, line, reason and raw
    text, and the summary on stderr counts them by reason.

    Exit status: 0 all reports valid; 3 counts written but some reports
    rejected; 2 usage error or nothing could be read.

    \b
    Example:
      ldp google-rappor counts --spec spec.json reports.jsonl -o counts.csv
      ldp google-rappor counts --spec spec.json reports-*.csv.gz --rejects rejects.jsonl -o counts.csv
    """
    sys.exit(run_guarded(_counts, spec_path, list(reports), output, rejects_path, chunk_size))


def _counts(spec_path, reports, output, rejects_path, chunk_size) -> int:
    """Read the reports like ldp aggregate (same reader, rejects, summary); write counts.csv; the exit status."""
    from ldp.aggregator.cli import accumulate_reports
    from ldp.aggregator.google import write_counts

    check_outputs_distinct(
        [*(("REPORTS", path) for path in reports), ("--spec", spec_path)],
        [("-o", output), ("--rejects", rejects_path)],
    )
    spec = _spec(spec_path)
    accumulator, status = accumulate_reports(spec, reports, rejects_path, chunk_size)
    write_counts(output, accumulator.cohort_counts, accumulator.bit_counts)
    click.echo(f"wrote {output} ({int(accumulator.cohort_counts.sum()):,} reports)", err=True)
    return status
