"""Where ``ldp encode`` writes its reports, and the budget charges of reports never written.

Reports go to a file written under a temporary name and renamed into place
only when every row succeeded, or to standard output; when the run fails,
the charges of the reports made but not released are refunded
(:class:`Charges`, :func:`write_or_refund`).
"""

from __future__ import annotations

import sys
from typing import IO, Any, cast

import click

from ldp.specs import Spec

__all__ = ["Charges", "CountingStream", "write_or_refund"]


class Charges:
    """Reports charged to client budgets, in output order, until they are known to be written.

    When ``ldp encode`` fails, the reports it made but never wrote were seen
    by nobody; :meth:`refund_unwritten` gives their charges back.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[Any, Any]] = []  # (budgeted encoder, value), oldest first
        self._written = 0  # reports of the run known to be written (pending[0] is report number _written)

    def add(self, encoder: Any, value: Any) -> None:
        self._pending.append((encoder, value))

    def written(self, count: int) -> None:
        """The first ``count`` reports of the run are out: their charges stand."""
        del self._pending[: max(0, count - self._written)]
        self._written = max(self._written, count)

    def refund_unwritten(self) -> int:
        """Refund every pending charge, one ledger transaction per client; return how many."""
        by_encoder: dict[int, tuple[Any, list]] = {}
        for encoder, value in self._pending:
            by_encoder.setdefault(id(encoder), (encoder, []))[1].append(value)
        for encoder, values in by_encoder.values():
            encoder.refund(values)
        refunded, self._pending = len(self._pending), []
        return refunded


class CountingStream:
    """A text stream that counts the report lines handed to it (for standard output).

    Each write tells ``charges`` how many reports are out, so their charges
    stand and are forgotten: only the unwritten ones are kept for a refund.
    """

    def __init__(self, stream: IO[str], charges: Charges | None):
        self.stream = stream
        self.charges = charges
        self.lines = 0

    def write(self, text: str) -> int:
        written = self.stream.write(text)
        self.lines += text.count("\n")
        if self.charges is not None:
            self.charges.written(self.lines)
        return written


def write_or_refund(items, output: str | None, spec: Spec, charges: Charges | None) -> int:
    """Write the reports; if that fails, discard what was not released and refund its charges.

    A file is written under a temporary name and renamed into place only on
    success (:func:`ldp.atomic.atomic_output`); on failure nothing of it is
    released, so every charge of the run is refunded. On standard output the
    reports already printed stay charged. The error is re-raised with what
    happened appended.
    """
    from ldp.aggregator.writers import write_reports
    from ldp.atomic import atomic_output
    from ldp.errors import LDPError

    to_stdout = output in (None, "-")
    stream = CountingStream(sys.stdout, charges) if to_stdout else None
    try:
        if stream is not None:
            return write_reports(items, cast(IO[str], stream), spec)  # it has the write() they use
        assert output is not None  # not standard output
        with atomic_output(output) as temporary:
            return write_reports(items, temporary, spec)
    except BaseException as exc:
        notes = []
        if stream is not None:
            notes.append(f"{stream.lines} reports had been written to standard output before the failure")
        else:
            notes.append(f"nothing was written to {output!r}")
        if charges is not None:
            try:
                refunded = charges.refund_unwritten()
                if refunded:
                    notes.append(
                        f"the budget charges of the {refunded} reports made but not written were refunded"
                    )
            except LDPError as refund_error:
                notes.append(
                    f"refunding the budget charges of the reports not written failed ({refund_error})"
                )
        if isinstance(exc, LDPError):
            raise type(exc)(f"{exc}; " + "; ".join(notes)) from None
        click.echo("ldp encode stopped: " + "; ".join(notes), err=True)
        raise
