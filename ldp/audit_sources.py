"""Where the audit's reports come from: the Python client, or any encoder command (black box).

A sampler is ``sampler(value, claim, n)`` → n samples, each the checked
reports (:func:`ldp.report_check.check_report`) of one client; see
:func:`ldp.audit.run_audit`. Every report is checked exactly as the
aggregator checks it, so an encoder whose output the aggregator would
refuse is refused here too, with the line that was wrong.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ldp.audit import Claim, Sampler
from ldp.errors import LDPError, ParameterError
from ldp.report import Report
from ldp.report_check import CheckedReport, check_report

__all__ = ["command_sampler", "python_client_sampler", "value_text"]

#: Characters of an encoder command's standard error quoted in an error.
STDERR_TAIL = 300
#: Distinct report lines of one ``--encoder-cmd`` call whose parse is kept for the equal lines after them.
_PARSED_LINES = 4_096


@contextmanager
def python_client_sampler(spec: Any) -> Iterator[Sampler]:
    """Samples from the real client (:func:`ldp.client.make_encoder`, every coin from the CSPRNG).

    Stateless encoders are made once (they keep nothing between reports).
    A memoizing mechanism (``spec.memoized``: RAPPOR, the longitudinal
    chains, LOLOHA, 1BitMean with α-point rounding) gets a fresh client
    (secret and cohort) per sample; a memoized sample of r reports is one
    client, its state created in a file of a temporary directory, reporting
    the value r times (then, for a longitudinal claim, each value of
    ``claim.then``, from one client in memory). The directory is removed on exit.
    """
    from ldp.client import make_encoder

    memoized = bool(getattr(spec, "memoized", False))
    with tempfile.TemporaryDirectory(prefix="ldp-audit-", dir=_memory_directory()) as directory:
        shared = None if memoized else make_encoder(spec)

        def sample(value: Any, claim: Claim, n: int) -> list[list[CheckedReport]]:
            out = []
            for i in range(n):
                if shared is not None:
                    reports = [shared.encode(v) for v in [value] * claim.reports + list(claim.then)]
                elif claim.then:  # one client (in memory): the value r times, then each of claim.then
                    client = make_encoder(spec)
                    reports = [client.encode(v) for v in [value] * claim.reports + list(claim.then)]
                elif claim.reports == 1:
                    reports = [make_encoder(spec).encode(value)]
                else:  # one client, its state in a file, reporting the same value r times
                    path = str(Path(directory) / f"client-{i}.json")
                    client = make_encoder(spec, state=path)
                    reports = [client.encode(value) for _ in range(claim.reports)]
                    os.unlink(path)
                out.append([check_report(spec, r) for r in reports])
            return out

        yield sample


def _memory_directory() -> str | None:
    """/dev/shm when it is a writable directory (state files are fsynced: cheap in memory), else the default."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def value_text(value: Any) -> str:
    """``value`` as one line of a values file.

    Booleans as true/false, floats in full precision, and a key-value input as
    JSON, which the encoders' command lines read (``ldp encode``, ``ldp-encode``,
    the Kotlin CLI): a mapping as its object, a tuple or list of (key, value)
    pairs as an array of ``[key, value]`` arrays (every pair kept, in order).
    """
    if isinstance(value, Mapping):
        return json.dumps(dict(value), allow_nan=False)
    if isinstance(value, tuple | list):
        return json.dumps([list(pair) for pair in value], allow_nan=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


#: Placeholder of an encoder command replaced by the path of a values file (instead of standard input).
VALUES_PLACEHOLDER = "{values}"


def command_sampler(spec: Any, command: str, timeout: float | None = None) -> Sampler:
    """Samples from an encoder command: values on its standard input, one report JSON line per value out.

    Each call runs ``command`` once (split as a shell would, but run without
    a shell) with n lines of the value, on its standard input or, when the
    command contains ``{values}``, in a temporary file whose path replaces
    it (for encoders that read a file, such as ``ldp encode``). It must exit
    with status 0 and print exactly n reports, in order, each valid for
    ``spec``. Only one-report claims can be audited this way (each line is a
    new client).

    Raises
    ------
    ParameterError
        The command cannot be run, fails, or prints a wrong number of lines
        or a malformed report (the line number and the reason).
    """
    argv = shlex.split(command)
    if not argv:
        raise ParameterError("--encoder-cmd is empty")

    def sample(value: Any, claim: Claim, n: int) -> list[list[CheckedReport]]:
        if claim.reports != 1 or claim.then:
            raise ParameterError(
                "--encoder-cmd audits one-report claims only (each input line is a new client)"
            )
        text = value_text(value)
        if "\n" in text or "\r" in text:
            raise ParameterError(f"value {text!r} cannot be sent as one line")
        lines_in = (text + "\n") * n
        with tempfile.TemporaryDirectory(prefix="ldp-audit-") as directory:
            values = Path(directory) / "values.txt"
            if any(VALUES_PLACEHOLDER in arg for arg in argv):
                values.write_text(lines_in, encoding="utf-8")
                lines_in = ""
            done = _run([arg.replace(VALUES_PLACEHOLDER, str(values)) for arg in argv], lines_in, timeout)
        if done.returncode != 0:
            tail = _stderr_gist(done.stderr)
            raise ParameterError(
                f"--encoder-cmd exited with status {done.returncode} on {n} lines of {text!r}: {tail or '(no stderr)'}"
            )
        lines = done.stdout.splitlines()
        if len(lines) != n:
            raise ParameterError(
                f"--encoder-cmd printed {len(lines)} lines for {n} values of {text!r}; expected one report per value"
            )
        # A report is a pure function of its line and immutable, so equal lines share one parse: an encoder of
        # a small output space (randomized response: d distinct lines in 40,000) is parsed d times, not n.
        parsed: dict[str, CheckedReport] = {}
        out = []
        for number, line in enumerate(lines, 1):
            report = parsed.get(line)
            if report is None:
                try:
                    report = check_report(spec, Report.from_json(line))
                except LDPError as exc:
                    raise ParameterError(
                        f"--encoder-cmd output line {number} (value {text!r}) is not a valid report: {exc}"
                    ) from None
                if len(parsed) < _PARSED_LINES:
                    parsed[line] = report
            out.append([report])
        return out

    return sample


def _stderr_gist(stderr: str) -> str:
    """The line of an encoder's standard error that says what went wrong: its first error line, else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "error" in line]
    gist = (errors or lines or [""])[0 if errors else -1]
    return gist[:STDERR_TAIL]


def _run(argv: list[str], stdin: str, timeout: float | None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            argv, input=stdin, capture_output=True, text=True, encoding="utf-8", timeout=timeout
        )
    except FileNotFoundError:
        raise ParameterError(f"--encoder-cmd: command {argv[0]!r} not found") from None
    except subprocess.TimeoutExpired:
        raise ParameterError(f"--encoder-cmd: {argv[0]!r} did not finish within {timeout} s") from None
