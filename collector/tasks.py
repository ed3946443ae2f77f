"""Collection tasks: what a collector gathers, for how long, and who may read it (docs/collector.md#tasks).

A task binds one spec to its collection rules, as a DAP task does: the
reports it accepts (the spec's fingerprint), the time precision clients
truncate their timestamps to, the window its estimates are grouped by, the
smallest batch it releases, and the collector token that reads estimates.
The task id is 32 CSPRNG bytes in base64url (43 characters, no padding); the
token is 32 more, stored only as its SHA-256 digest and compared in constant
time.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import ipaddress
import re
import secrets
import time
from collections.abc import Sequence
from typing import Any

from ldp.errors import ParameterError
from ldp.specs.base import Spec, load_spec

__all__ = [
    "DEFAULT_MIN_BATCH",
    "DEFAULT_TIME_PRECISION",
    "DEFAULT_WINDOW",
    "TIME_LIMIT",
    "Task",
    "check_candidates",
    "check_cors_origins",
    "check_retain",
    "format_duration",
    "hash_token",
    "new_task",
    "new_task_id",
    "parse_duration",
]

#: Defaults of ``ldp task create``: one-day windows, one-hour timestamps, batches of at least 1,000.
DEFAULT_WINDOW = 86_400
DEFAULT_TIME_PRECISION = 3_600
DEFAULT_MIN_BATCH = 1_000

#: Times (Unix seconds) lie strictly between minus and plus this: the stores keep 64-bit integers, and
#: sums and differences of two times stay within them.
TIME_LIMIT = 1 << 62

_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}
#: The longest window or time precision: 100 years of 365 days.
MAX_DURATION = 100 * 365 * 86_400
#: The largest min batch (the stores keep 64-bit integers).
MAX_MIN_BATCH = 1 << 62
#: The longest task name and description, characters.
MAX_NAME = 100
MAX_DESCRIPTION = 2_000
#: The most candidate values a task holds, and their most characters in all (they are read with the task
#: every few seconds, and every window's decode fits them all).
MAX_CANDIDATES = 10_000
MAX_CANDIDATE_CHARS = 1_000_000
_DURATION = re.compile(r"\s*(\d{1,30})\s*([smhdw]?)\s*")
_TASK_ID = re.compile(r"[A-Za-z0-9_-]{43}")


def parse_duration(text: str | int, what: str) -> int:
    """Seconds from ``90``, ``90s``, ``15m``, ``1h``, ``1d`` or ``2w``; a positive whole number."""
    if isinstance(text, int) and not isinstance(text, bool):
        seconds = text
    else:
        match = _DURATION.fullmatch(str(text))
        if match is None:
            raise ParameterError(f"{what} must be a duration such as 90s, 15m, 1h, 1d or 2w, got {text!r}")
        seconds = int(match[1]) * _UNITS[match[2] or "s"]
    if seconds < 1:
        raise ParameterError(f"{what} must be at least one second, got {text!r}")
    if seconds > MAX_DURATION:
        raise ParameterError(f"{what} must be at most 100 years ({MAX_DURATION} s), got {text!r}")
    return seconds


def check_cors_origins(origins: tuple[str, ...]) -> None:
    """Each CORS origin is ``scheme://host[:port]`` as a browser sends it (``http`` or ``https``,
    lower case, no path, no default port), or ``*`` for any origin (no wildcard inside an origin)."""
    for origin in origins:
        if origin == "*":
            continue
        canonical = _canonical_origin(origin)
        if canonical is None:
            raise ParameterError(
                f"CORS origin {origin!r} is not an origin: give scheme://host[:port], such as "
                "'https://app.example' (http or https, no path), or '*' for any origin"
            )
        if canonical != origin:
            raise ParameterError(
                f"CORS origin {origin!r} is not written as browsers send it: give {canonical!r}"
            )


_HOST = re.compile(r"(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


def _canonical_origin(origin: str) -> str | None:
    """The serialized origin (RFC 6454) meant by ``origin``, or None when it is not one."""
    scheme, found, rest = origin.partition("://")
    scheme = scheme.lower()
    if not found or scheme not in ("http", "https") or not origin.isascii() or origin != origin.strip():
        return None
    rest = rest.removesuffix("/")
    if not rest or any(mark in rest for mark in "/?#@\\ "):
        return None
    host, port = rest, ""
    if rest.startswith("["):
        end = rest.find("]")
        if end == -1:
            return None
        host, port = rest[: end + 1], rest[end + 1 :].removeprefix(":")
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            return None
        host = f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
    else:
        host, _, port = rest.partition(":")
        host = host.lower()
        if not _HOST.fullmatch(host) or len(host) > 253:
            return None
    if port:
        if not port.isdigit() or not 0 < int(port) < 65536:
            return None
        if int(port) == (443 if scheme == "https" else 80):
            port = ""
    return f"{scheme}://{host}" + (f":{int(port)}" if port else "")


def format_duration(seconds: int) -> str:
    """The shortest exact spelling of a duration (``86400`` -> ``1d``)."""
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"  # pragma: no cover - the unit "s" divides everything


def hash_token(token: str) -> str:
    """The stored form of a collector token: its SHA-256 digest, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _base64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def is_task_id(text: str) -> bool:
    """True for a well-formed task id (43 base64url characters)."""
    return _TASK_ID.fullmatch(text) is not None


def new_task_id() -> str:
    """A fresh task id: 32 CSPRNG bytes in base64url, drawn again while it begins with ``-``.

    One id in 64 would otherwise begin with ``-`` and read as an option on a
    command line (``ldp task show -x…``). Redrawing keeps the ids uniform over
    the ids that do not, about 255.98 bits of entropy.
    """
    while True:
        task_id = _base64url(secrets.token_bytes(32))
        if not task_id.startswith("-"):
            return task_id


def check_label(text: object, what: str, longest: int, *, one_line: bool) -> None:
    """A task's name (one line) or description: text of at most ``longest`` characters, no control characters."""
    if not isinstance(text, str):
        raise ParameterError(f"the task {what} must be text, got {type(text).__name__}")
    if len(text) > longest:
        raise ParameterError(f"the task {what} is at most {longest:,} characters, got {len(text):,}")
    allowed = "" if one_line else "\n\t"
    if any(not (ch.isprintable() or ch in allowed) for ch in text):
        kind = "one line of printable text" if one_line else "printable text (line breaks allowed)"
        raise ParameterError(f"the task {what} must be {kind}")


def check_shuffle_delta(delta: float | None) -> None:
    """A shuffle-mode δ is a number in (0, 1) (None: no shuffle mode)."""
    if delta is None:
        return
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ParameterError(f"shuffle delta must be a number in (0, 1), got {delta!r}")


def check_retain(retain: int | None, window: int) -> None:
    """A retention is None (keep every report) or whole seconds, from one window to 100 years."""
    if retain is None:
        return
    if isinstance(retain, bool) or not isinstance(retain, int) or not 1 <= retain <= MAX_DURATION:
        raise ParameterError(f"the retention must be a duration of at most 100 years, got {retain!r}")
    if retain < window:
        raise ParameterError(
            f"the retention ({format_duration(retain)}) must be at least one window ({format_duration(window)})"
        )


def check_candidates(candidates: object, spec: Spec) -> None:
    """A task's candidate values: at most :data:`MAX_CANDIDATES` distinct lines of text, for a Bloom RAPPOR spec.

    They are what a candidates file holds once read
    (:func:`ldp.aggregator.candidates.parse_candidates`): each stripped,
    non-empty, on one line, none repeated. Only a Bloom-filter RAPPOR spec
    takes them: its reports say which Bloom bits are set, not which value,
    and the collector decodes its windows against them
    (docs/collector.md#candidates).
    """
    if not isinstance(candidates, tuple) or not all(isinstance(value, str) for value in candidates):
        raise ParameterError("the task's candidates must be a tuple of text values")
    if not candidates:
        return
    encoding = getattr(spec, "encoding", None)
    if spec.report_kind != "rappor" or encoding != "bloom":
        raise ParameterError(
            f"candidates are for Bloom-filter RAPPOR tasks, whose reports are decoded against them; "
            f"this task's spec is {spec.mechanism}" + (f" with {encoding} encoding" if encoding else "")
        )
    if len(candidates) > MAX_CANDIDATES:
        raise ParameterError(f"a task takes at most {MAX_CANDIDATES:,} candidates, got {len(candidates):,}")
    if sum(len(value) for value in candidates) > MAX_CANDIDATE_CHARS:
        raise ParameterError(f"a task's candidates take at most {MAX_CANDIDATE_CHARS:,} characters in all")
    for value in candidates:
        if not value or value != value.strip() or any(mark in value for mark in "\r\n"):
            raise ParameterError(
                f"candidate {value!r} is not one line of text without surrounding spaces (as a candidates file "
                "holds one per line)"
            )
    if len(set(candidates)) != len(candidates):
        raise ParameterError("the task's candidates repeat a value")


@dataclasses.dataclass(frozen=True)
class Task:
    """One collection task.

    Parameters
    ----------
    task_id : str
        32 random bytes, base64url without padding.
    spec_json : str
        The spec's canonical JSON (what ``GET /v1/tasks/{task}/spec`` serves).
    window : int
        Seconds per estimate window; windows start at multiples of it (Unix time).
    time_precision : int
        Clients truncate report times to multiples of this many seconds; it
        divides ``window``, and no arrival time finer than it is stored.
    min_batch : int
        A window (or range) with fewer reports is withheld.
    token_hash : str
        SHA-256 of the collector token (:func:`hash_token`).
    not_before, not_after : int or None
        The task accepts reports with ``not_before <= t < not_after`` (Unix seconds).
    cors_origins : tuple of str
        Origins allowed to upload from a browser (``*`` for any); empty: none.
    shuffle_delta : float or None
        Shuffle mode: each window's estimates carry the central (ε, δ) that
        shuffling its reports gives at this δ (docs/collector.md#shuffle);
        None: not in shuffle mode.
    created : int or None
        When the task was created (Unix seconds): without ``not_before``,
        the task's start, before which (less the clock skew) no report is
        accepted (docs/collector.md#acceptance). None for tasks made before
        ldp recorded it.
    name : str
        A short name people know the task by (one line, at most 100
        characters; empty: none). Shown by ``ldp task list`` and the
        dashboard, never in the public task description.
    description : str
        What the task collects and why (at most 2,000 characters; empty: none);
        shown where the name is.
    retain : int or None
        Seconds a window's raw reports are kept after the window ends: older
        windows keep only their aggregate, so their estimates remain
        (docs/collector.md#retention). At least one window; None: kept
        until the task is deleted.
    candidates : tuple of str
        Bloom RAPPOR only: the values each window is decoded against
        (``ldp task create/update --candidates FILE``; docs/collector.md#candidates),
        in the file's order; empty: none, the windows show bit estimates only.
        Never in the public task description.
    """

    task_id: str
    spec_json: str
    window: int = DEFAULT_WINDOW
    time_precision: int = DEFAULT_TIME_PRECISION
    min_batch: int = DEFAULT_MIN_BATCH
    token_hash: str = ""
    not_before: int | None = None
    not_after: int | None = None
    cors_origins: tuple[str, ...] = ()
    shuffle_delta: float | None = None
    created: int | None = None
    name: str = ""
    description: str = ""
    retain: int | None = None
    candidates: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not is_task_id(self.task_id):
            raise ParameterError(f"task id must be 43 base64url characters, got {self.task_id!r}")
        for name in ("window", "time_precision", "min_batch"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ParameterError(f"task {name} must be a positive integer, got {value!r}")
        if self.window % self.time_precision:
            raise ParameterError(
                f"the window ({format_duration(self.window)}) must be a whole number of time precisions "
                f"({format_duration(self.time_precision)}), so that no window splits a timestamp"
            )
        if self.not_before is not None and self.not_after is not None and self.not_after <= self.not_before:
            raise ParameterError("the task's end must come after its start")
        check_shuffle_delta(self.shuffle_delta)
        check_label(self.name, "name", MAX_NAME, one_line=True)
        check_label(self.description, "description", MAX_DESCRIPTION, one_line=False)
        check_retain(self.retain, self.window)
        if self.candidates != ():  # the spec is parsed only for a task with candidates
            check_candidates(self.candidates, self.spec)

    @property
    def start(self) -> int | None:
        """The task's start: ``not_before``, else its creation time (None when neither is known)."""
        return self.not_before if self.not_before is not None else self.created

    @property
    def spec(self) -> Spec:
        """The task's spec (parsed and checked once per task object)."""
        cached = self.__dict__.get("_spec")
        if cached is None:
            cached = load_spec(self.spec_json)
            object.__setattr__(self, "_spec", cached)
        return cached

    @property
    def fingerprint(self) -> str:
        return self.spec.fingerprint

    @property
    def candidates_digest(self) -> str:
        """SHA-256 of the candidate list (hex; computed once per task object): names it in caches."""
        cached = self.__dict__.get("_candidates_digest")
        if cached is None:
            cached = hashlib.sha256("\n".join(self.candidates).encode("utf-8")).hexdigest()
            object.__setattr__(self, "_candidates_digest", cached)
        return cached

    def token_matches(self, token: str) -> bool:
        """Constant-time check of a presented collector token."""
        return bool(self.token_hash) and hmac.compare_digest(hash_token(token), self.token_hash)

    def window_start(self, t: int) -> int:
        """The start of the window holding time ``t``."""
        return t - t % self.window

    def expired_before(self, now: float) -> int | None:
        """The windows starting before this have ended more than :attr:`retain` ago at ``now`` (None: no retention).

        A window ``[s, s + window)`` is expired when ``s + window <= now -
        retain``: every window before the start of the window holding
        ``now - retain``.
        """
        if self.retain is None:
            return None
        return self.window_start(int(now) - self.retain)

    def to_dict(self) -> dict[str, Any]:
        """The task's public description (never its token hash, name, description or candidates)."""
        return {
            "task": self.task_id,
            "mechanism": self.spec.mechanism,
            "fingerprint": self.fingerprint,
            "window": self.window,
            "time_precision": self.time_precision,
            "min_batch": self.min_batch,
            "not_before": self.not_before,
            "not_after": self.not_after,
            "cors_origins": list(self.cors_origins),
            "shuffle_delta": self.shuffle_delta,
            "created": self.created,
            "retain": self.retain,
        }

    def labels(self) -> dict[str, str]:
        """``{"name", "description"}``: what people call the task (the dashboard, for a token holder)."""
        return {"name": self.name, "description": self.description}


def new_task(
    spec: str | Spec,
    *,
    window: str | int = DEFAULT_WINDOW,
    time_precision: str | int = DEFAULT_TIME_PRECISION,
    min_batch: int = DEFAULT_MIN_BATCH,
    not_before: int | None = None,
    not_after: int | None = None,
    cors_origins: tuple[str, ...] = (),
    shuffle_delta: float | None = None,
    name: str = "",
    description: str = "",
    retain: str | int | None = None,
    candidates: Sequence[str] = (),
) -> tuple[Task, str]:
    """A new task with fresh CSPRNG id and collector token: ``(task, token)``.

    The token is returned once; only its hash is kept in the task.
    """
    loaded = load_spec(spec)
    if isinstance(min_batch, bool) or not isinstance(min_batch, int) or not 1 <= min_batch <= MAX_MIN_BATCH:
        raise ParameterError(f"min_batch must be a positive integer of at most 2**62, got {min_batch!r}")
    for bound, value in (("not_before", not_before), ("not_after", not_after)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or not -TIME_LIMIT < value < TIME_LIMIT
        ):
            raise ParameterError(f"{bound} must be a time in Unix seconds (|t| < 2**62), got {value!r}")
    check_cors_origins(tuple(cors_origins))
    token = _base64url(secrets.token_bytes(32))
    task = Task(
        task_id=new_task_id(),
        spec_json=loaded.to_json(),
        window=parse_duration(window, "window"),
        time_precision=parse_duration(time_precision, "time_precision"),
        min_batch=min_batch,
        token_hash=hash_token(token),
        not_before=not_before,
        not_after=not_after,
        cors_origins=tuple(cors_origins),
        shuffle_delta=shuffle_delta,
        created=int(time.time()),
        name=name.strip() if isinstance(name, str) else name,
        description=description.strip() if isinstance(description, str) else description,
        retain=None if retain is None else parse_duration(retain, "retain"),
        candidates=tuple(candidates),
    )
    return task, token
