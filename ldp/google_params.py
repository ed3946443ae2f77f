"""Google RAPPOR's parameter file (``params.csv``): header ``k,h,m,p,q,f``, one row.

References
----------
.. [1] google/rappor, analysis/R/read_input.R (ReadParameterFile) and
   client/python/rappor.py (Params).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ldp.errors import InputError, SpecError
from ldp.specs.rappor import Rappor
from ldp.textfile import read_utf8_text

__all__ = ["GOOGLE_PARAMS_HEADER", "google_params_text", "read_google_params"]

GOOGLE_PARAMS_HEADER = ("k", "h", "m", "p", "q", "f")


def read_google_params(path: str | Path, *, hash: str = "md5") -> Rappor:
    """A :class:`~ldp.Rappor` spec from Google's params.csv (md5 hashing by default, as Google's client)."""
    text = read_utf8_text(path, "Google params file")
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if row]
    except csv.Error as exc:
        raise InputError(f"Google params file {str(path)!r} is not valid CSV: {exc}") from None
    if len(rows) != 2:
        raise InputError(
            f"Google params file {str(path)!r} must have a header and one row, got {len(rows)} rows"
        )
    header = [h.strip().strip('"') for h in rows[0]]
    if tuple(header) != GOOGLE_PARAMS_HEADER:
        raise InputError(
            f"Google params file {str(path)!r}: header must be {','.join(GOOGLE_PARAMS_HEADER)}, got {','.join(header)}"
        )
    if len(rows[1]) != len(header):
        raise InputError(
            f"Google params file {str(path)!r}: the row has {len(rows[1])} values, expected {len(header)} "
            f"({','.join(GOOGLE_PARAMS_HEADER)}), got {','.join(rows[1])}"
        )
    values = dict(zip(header, (v.strip() for v in rows[1])))
    try:
        ints = {name: int(values[name]) for name in ("k", "h", "m")}
    except ValueError:
        raise InputError(
            f"Google params file {str(path)!r}: k, h, m must be integers, got "
            f"{', '.join(f'{name}={values[name]}' for name in ('k', 'h', 'm'))}"
        ) from None
    return Rappor(
        num_bits=ints["k"],
        num_hashes=ints["h"],
        num_cohorts=ints["m"],
        p=values["p"],
        q=values["q"],
        f=values["f"],
        hash=hash,
    )


def _decimal(x) -> str:
    """Shortest exact text of a probability (decimal when finite, else a 17-digit float)."""
    text = f"{float(x):.17g}"
    from fractions import Fraction

    for digits in range(1, 18):
        candidate = f"{float(x):.{digits}g}"
        if Fraction(candidate) == x:
            return candidate
    return text


def google_params_text(spec: Rappor) -> str:
    """params.csv text for a Bloom-filter RAPPOR spec."""
    if spec.encoding != "bloom":
        raise SpecError("Google's params format describes Bloom-filter RAPPOR only")
    row = [
        spec.num_bits,
        spec.num_hashes,
        spec.num_cohorts,
        _decimal(spec.p),
        _decimal(spec.q),
        _decimal(spec.f),
    ]
    return ",".join(GOOGLE_PARAMS_HEADER) + "\n" + ",".join(str(v) for v in row) + "\n"
