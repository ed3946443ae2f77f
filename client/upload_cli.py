"""``ldp upload``: send the reports of ``ldp encode`` to a collector (docs/cli.md#upload).

The reports are wrapped into envelopes once, in an envelope file beside them
(``reports.jsonl`` gives ``reports.envelopes.jsonl``), and every rerun sends
that same file: a report is randomized once and keeps its id, so the
collector stores it once however often it is sent (:mod:`ldp.client.upload`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ldp.cli import run_guarded
from ldp.errors import InputError
from ldp.flags import Flags
from ldp.progress import CountProgress

if TYPE_CHECKING:
    from ldp.client.upload import UploadSummary

__all__ = ["upload"]

#: Exit status when the collector rejected some envelopes.
EXIT_REJECTED = 1
#: Rejected envelopes listed one by one, at most.
LISTED_REJECTIONS = 100

_FLAGS = Flags(
    names={
        "reports_path": "REPORTS",
        "envelopes_path": "--envelopes",
        "base_url": "--to",
        "task_id": "--task",
        "batch_size": "--batch-size",
    }
)


class _Progress(CountProgress):
    """``12,000 reports sent`` on stderr while uploading (only when stderr is a terminal)."""

    def __init__(self) -> None:
        super().__init__("reports")

    def update(self, count: int) -> None:
        if self.enabled:
            sys.stderr.write(f"\r  {count:,} reports sent…")
            sys.stderr.flush()
            self.shown = True


def summary_line(summary: UploadSummary) -> str:
    """``N reports: A accepted, R already stored, J rejected (reason: count, ...)``."""
    line = (
        f"{summary.total} reports: {summary.accepted} accepted, {summary.replayed} already stored, "
        f"{len(summary.rejected)} rejected"
    )
    reasons = summary.reasons()
    if reasons:
        line += " (" + ", ".join(f"{reason}: {count}" for reason, count in reasons.items()) + ")"
    return line


def rejection_lines(summary: UploadSummary, numbers: list[int], reports_path: str) -> list[str]:
    """One line per rejected report (its line in the report file), at most :data:`LISTED_REJECTIONS`."""
    lines = [
        f"  {reports_path} line {numbers[r.index]}: {r.reason}: {r.detail}"
        for r in summary.rejected[:LISTED_REJECTIONS]
    ]
    if len(summary.rejected) > LISTED_REJECTIONS:
        lines.append(f"  ... and {len(summary.rejected) - LISTED_REJECTIONS} more")
    return lines


@click.command("upload")
@click.option(
    "--to", "base_url", required=True, metavar="URL", help="The collector, e.g. http://127.0.0.1:8000."
)
@click.option(
    "--task", "task_id", required=True, metavar="TASK", help="The task id (ldp task create prints it)."
)
@click.argument("reports_path", metavar="REPORTS", type=click.Path(dir_okay=False))
@click.option(
    "--envelopes",
    "envelopes_path",
    type=click.Path(dir_okay=False),
    help="Envelope file: made once, reused as is on every rerun (default: REPORTS.envelopes.jsonl beside REPORTS).",
)
@click.option(
    "--batch-size",
    type=int,
    default=1000,
    show_default=True,
    help="Most envelopes per request (1 to 1,000; a request also stays under 1 MiB).",
)
@click.option(
    "--cacert",
    type=click.Path(dir_okay=False),
    metavar="FILE",
    help="PEM file of the CA certificates to trust for an https collector (a private CA). Default: the system's.",
)
def upload(base_url, task_id, reports_path, envelopes_path, batch_size, cacert):
    """Send the reports of REPORTS (JSON Lines, from ldp encode) to a collector's task.

    Each report is wrapped once into an envelope (a random id and the time,
    truncated to the task's time precision) kept in the envelope file. A
    rerun, after a failure or not, resends the same envelopes: the collector
    answers "already stored" and counts each report once. Failed requests
    (no connection, timeouts, 5xx, 429) are retried with backoff.

    \b
    Examples:
      ldp encode --spec spec.json values.txt -o reports.jsonl
      ldp upload --to http://127.0.0.1:8000 --task TASK reports.jsonl
      ldp upload --to https://collector.internal --cacert ca.pem --task TASK reports.jsonl

    Exit status: 0 when every report was stored (now or before); 1 when the
    collector rejected some (they are listed); 2 on errors.
    """
    sys.exit(run_guarded(_upload, base_url, task_id, reports_path, envelopes_path, batch_size, cacert))


def _upload(
    base_url: str,
    task_id: str,
    reports_path: str,
    envelopes_path: str | None,
    batch_size: int,
    cacert: str | None = None,
) -> int:
    from ldp.cli import check_outputs_distinct, check_writable
    from ldp.client.upload import default_envelopes_path, upload_reports

    target = Path(envelopes_path) if envelopes_path is not None else default_envelopes_path(reports_path)
    if not Path(reports_path).is_file():
        raise InputError(f"REPORTS {reports_path!r} does not exist")
    check_outputs_distinct([("REPORTS", reports_path)], [("--envelopes", str(target))])
    if not target.exists():
        check_writable(target, "--envelopes")
    progress = _Progress()
    try:
        with _FLAGS.translating():
            envelopes, summary = upload_reports(
                base_url,
                task_id,
                reports_path,
                target,
                batch_size=batch_size,
                progress=progress.update,
                cacert=cacert,
            )
    finally:
        progress.done()
    click.echo(summary_line(summary), err=True)
    if summary.rejected:
        for line in rejection_lines(summary, envelopes.numbers, reports_path):
            click.echo(line, err=True)
        return EXIT_REJECTED
    return 0
