"""The collector's service layer: tasks, ingestion and estimates over one store, with no HTTP in it.

:class:`CollectorService` is what one running collector serves from; the
HTTP routes (:mod:`ldp.collector.app`) only read a request, call it, and
write its answer. It is made of three parts, each with one job:

* :class:`TaskRegistry`: the tasks held in memory, each with its windows
  (:class:`ldp.collector.windows.Windows`) loaded once from the store.
  Only the background refresher re-reads the whole task table
  (:meth:`TaskRegistry.refresh`); a request for a task id not in memory
  costs one indexed store lookup, in a worker thread, so requests with
  made-up ids cannot make the server re-read its tasks.
* :class:`Ingestion`: an upload's rate limit, its envelopes checked
  (:mod:`ldp.collector.envelopes`), committed in groups
  (:mod:`ldp.collector.ingest`) and acknowledged only after their commit.
* :class:`Estimates`: estimates over a range of windows, per window, the
  dashboard, and the numeric sampling tables, each behind its token check.

Every refusal is an error of :mod:`ldp.collector.errors` (or the store's
:class:`~ldp.collector.store.StoreUnavailable`, or a
:class:`~ldp.errors.ParameterError` for a bad parameter), answered by
:func:`ldp.collector.problems.problem_for`. Client addresses are used in
memory for rate limiting and never stored or logged.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from starlette.concurrency import run_in_threadpool

from ldp.collector.acceptance import DEFAULT_ACCEPTANCE, Acceptance
from ldp.collector.candidate_view import top_candidates
from ldp.collector.envelopes import CheckedUpload, check_envelopes, parse_upload
from ldp.collector.errors import (
    NoNumericTable,
    RateLimited,
    ReportsNotStored,
    StoreUnhealthy,
    TaskDeleted,
    TaskNotFound,
    Unauthorized,
)
from ldp.collector.forwarded import TrustedProxies
from ldp.collector.ingest import GroupCommitter, UploadOutcome, upload_outcome
from ldp.collector.metrics import CollectorMetrics
from ldp.collector.ratelimit import RateLimiter
from ldp.collector.retention import PRUNE_SECONDS, PruneResult, prune_task
from ldp.collector.store import Store, StoreUnavailable, UnknownTaskError
from ldp.collector.tasks import Task, hash_token, is_task_id
from ldp.collector.upload_batch import check_upload_body
from ldp.collector.windows import Windows, check_range, estimate_reply, task_summary
from ldp.errors import ParameterError
from ldp.numeric_wire import has_table
from ldp.numeric_wire import numeric_table as wire_table
from ldp.specs.base import load_spec
from ldp.specs.multiattr import MultiAttribute
from ldp.specs.numeric import NumericSpec

__all__ = [
    "CollectorService",
    "CollectorSettings",
    "Estimates",
    "Ingestion",
    "TaskRegistry",
    "numeric_table",
]

#: Uploads of at most this many envelopes are checked on the event loop (about 2 ms of CPU at most);
#: the hop to a worker thread costs more than it saves when the check holds the GIL anyway.
INLINE_CHECK_ENVELOPES = 128
#: The confidence of the dashboard's intervals.
DASHBOARD_CONFIDENCE = 0.95
#: The decoded candidates of a Bloom RAPPOR window the dashboard receives: the largest ones (the
#: estimates API gives them all).
DASHBOARD_CANDIDATES = 20


@dataclasses.dataclass(frozen=True)
class CollectorSettings:
    """How one collector serves.

    Parameters
    ----------
    store : str
        The store URL (:func:`ldp.collector.store.open_store`).
    dashboard_public : bool
        The dashboard and ``/v1/dashboard`` show every task to anyone, with no
        token (``ldp serve --dashboard-public``). Off by default: the listening
        address says nothing about who can reach the server (a reverse proxy
        on the same machine connects from loopback for every client).
    rate_limit : float
        Upload requests per second per client address (0: no limit).
    max_group_reports : int
        The most reports one group commit takes.
    acceptance : Acceptance
        The report times accepted (:mod:`ldp.collector.acceptance`): at most
        30 days old and 1,000 windows back by default.
    trusted_proxies : tuple of str
        Addresses or CIDR networks of reverse proxies whose ``X-Forwarded-For``
        names the client to rate-limit (``ldp serve --trusted-proxy``); empty:
        the socket's peer address, the header never read
        (:mod:`ldp.collector.forwarded`).
    prune_seconds : float
        Seconds between two retention runs (``ldp serve --prune-every``,
        :mod:`ldp.collector.retention`); the first runs at start.
    """

    store: str
    dashboard_public: bool = False
    rate_limit: float = 100.0
    max_group_reports: int = 5_000
    acceptance: Acceptance = DEFAULT_ACCEPTANCE
    trusted_proxies: tuple[str, ...] = ()
    prune_seconds: float = PRUNE_SECONDS


class TaskRegistry:
    """The tasks one collector serves, held in memory with their windows, over the store.

    The table of tasks is replaced, never changed in place, so a reader never
    sees it change under it; a task's windows are loaded one task at a time,
    before any request can have the task, so no upload of it is committed
    while its windows are read.
    """

    def __init__(self, store: Store, windows: Windows) -> None:
        self.store = store
        self.windows = windows
        self.tasks: dict[str, Task] = {}
        self._lock = threading.Lock()  # guards replacing self.tasks
        self._adopting = threading.Lock()  # one task's windows loaded at a time

    def refresh(self) -> None:
        """Re-read the whole task list (blocking: start-up and the background refresher only).

        A task changed by ``ldp task update`` (its name, description or
        retention) is replaced, its windows kept; the windows each task's
        retention pruned meanwhile are marked (:meth:`Windows.mark_pruned`).
        """
        with self._lock:
            known = set(self.tasks)
        current = {task.task_id: task for task in self.store.tasks()}
        for task_id in known - set(current):
            self.forget(task_id)
        with self._adopting:
            added = {}
            for task_id, task in current.items():
                held = self.tasks.get(task_id)
                if held is None:
                    self.windows.load(self.store, task)
                    added[task_id] = task
                elif held != task:  # its mutable fields changed: the same windows
                    added[task_id] = task
            if added:
                with self._lock:
                    self.tasks = {**self.tasks, **added}
        self.mark_pruned()

    def mark_pruned(self) -> None:
        """Mark the held windows whose raw reports a retention run (here, another server or ``ldp task prune``) deleted."""
        for task in list(self.tasks.values()):
            if task.retain is not None or self.windows.pruned(task.task_id):
                self.windows.mark_pruned(task.task_id, set(self.store.pruned_windows(task.task_id)))

    def lookup(self, task_id: str) -> Task | None:
        """The task ``task_id`` from the store (one indexed read; blocking), kept in memory when found."""
        found = self.store.task(task_id)
        return None if found is None else self._adopt(found)  # created since the last refresh

    def _adopt(self, task: Task) -> Task:
        """``task`` as held in memory: the first time, its windows are rebuilt from the store."""
        with self._adopting:
            held = self.tasks.get(task.task_id)
            if held is not None:
                return held
            self.windows.load(self.store, task)
            with self._lock:
                self.tasks = {**self.tasks, task.task_id: task}  # a new dict: readers never see it change
            return task

    def sync(self) -> int:
        """Count what other servers committed to the tasks held (blocking: the background syncer only)."""
        return self.windows.sync(self.store, list(self.tasks.values()))

    def forget_commits(self) -> int:
        """Trim the store's commit log (blocking: the background syncer only)."""
        return self.store.forget_commits()

    def forget(self, task_id: str) -> None:
        """Drop a task found deleted (by the refresher, or when its upload's commit refused it)."""
        with self._lock:
            self.tasks = {key: task for key, task in self.tasks.items() if key != task_id}
        self.windows.forget(task_id)

    async def task(self, task_id: str) -> Task:
        """The task ``task_id``: from memory, else one store lookup off the event loop.

        Raises
        ------
        TaskNotFound
            If there is no such task (a text that is not a task id costs no store work).
        """
        if not is_task_id(task_id):
            raise TaskNotFound(task_id)
        found = self.tasks.get(task_id)
        if found is None:
            found = await run_in_threadpool(self.lookup, task_id)
        if found is None:
            raise TaskNotFound(task_id)
        return found

    def token_tasks(self, token: str) -> list[Task]:
        """The tasks in memory ``token`` reads (hashed once, compared in constant time with each task's hash)."""
        digest = hash_token(token)
        return [t for t in self.tasks.values() if t.token_hash and hmac.compare_digest(digest, t.token_hash)]

    def lookup_token(self, token: str) -> list[Task]:
        """The tasks ``token`` reads from the store (one indexed read; blocking), kept in memory."""
        return [self._adopt(task) for task in self.store.tasks_with_token_hash(hash_token(token))]

    async def readable_tasks(self, token: str) -> list[Task]:
        """The tasks ``token`` reads: from memory, else one indexed store read off the event loop.

        A task created since the last refresh is found by its token at once, as
        an upload finds it by its id; a token that reads nothing costs one
        indexed read, never a re-read of the task table.
        """
        return self.token_tasks(token) or await run_in_threadpool(self.lookup_token, token)


class Ingestion:
    """Uploads into the store: rate limited per address, checked, group-committed, then counted."""

    def __init__(
        self, settings: CollectorSettings, store: Store, registry: TaskRegistry, metrics: CollectorMetrics
    ) -> None:
        self.acceptance = settings.acceptance
        self.registry = registry
        self.metrics = metrics
        self.limiter = RateLimiter(settings.rate_limit)
        self.proxies = TrustedProxies(settings.trusted_proxies)
        self.committer = GroupCommitter(
            store,
            registry.windows,
            max_reports=settings.max_group_reports,
            on_commit=metrics.observe_commit,
            on_failure=metrics.observe_store_error,
        )

    def admit(self, peer: str, forwarded_for: str | None = None) -> None:
        """Let one upload in, or raise :class:`RateLimited`.

        The bucket is the peer address's, or, from a trusted proxy, the
        client's its ``X-Forwarded-For`` names (:class:`TrustedProxies`).
        """
        if not self.limiter.allow(self.proxies.client(peer, forwarded_for)):
            raise RateLimited(self.limiter.retry_after())

    async def ingest(self, task: Task, items: Sequence[Any]) -> UploadOutcome:
        """Check the envelopes ``items`` of one upload, store the accepted ones, and say what became of each.

        Raises
        ------
        TaskDeleted
            If the task was deleted while the upload was being stored (nothing was stored).
        ReportsNotStored
            If the commit failed (nothing was acknowledged; the same envelopes may be sent again).
        """
        return await self._store(task, await self._check(task, items, time.time()))

    async def ingest_body(
        self, task: Task, body: bytes, content_type: str | None, *, beacon: bool = False
    ) -> UploadOutcome:
        """:meth:`ingest` an upload's body as it came (:func:`~ldp.collector.envelopes.parse_upload`'s arguments).

        A JSON body whose envelopes are all accepted is decoded and checked as
        a whole (:func:`~ldp.collector.upload_batch.check_upload_body`); any
        other is parsed and checked envelope by envelope, which accepts each
        envelope or gives the reason it is refused.

        Raises
        ------
        UnreadableBody
            When the body cannot be read as a whole (:func:`~ldp.collector.envelopes.parse_upload`).
        TaskDeleted, ReportsNotStored
            As :meth:`ingest`.
        """
        now = time.time()
        checked = check_upload_body(
            task, body, content_type, now, self.acceptance, self.registry.windows.pruned(task.task_id)
        )
        if checked is None:
            checked = await self._check(task, parse_upload(body, content_type, beacon=beacon), now)
        return await self._store(task, checked)

    async def _check(self, task: Task, items: Sequence[Any], now: float) -> CheckedUpload:
        pruned = self.registry.windows.pruned(task.task_id)
        if len(items) <= INLINE_CHECK_ENVELOPES:
            return check_envelopes(task, items, now, self.acceptance, pruned)
        return await run_in_threadpool(check_envelopes, task, items, now, self.acceptance, pruned)

    async def _store(self, task: Task, checked: CheckedUpload) -> UploadOutcome:
        try:
            outcomes = await self.committer.commit(task, checked.accepted)
        except UnknownTaskError:  # the task was deleted meanwhile
            self.registry.forget(task.task_id)
            raise TaskDeleted(task.task_id) from None
        except Exception as exc:
            raise ReportsNotStored(type(exc).__name__) from None
        outcome = upload_outcome(checked, outcomes)
        self.metrics.count_upload(outcome.accepted, outcome.replayed, [r.reason for r in outcome.rejected])
        return outcome

    def close(self) -> None:
        self.committer.close()


class Estimates:
    """What a task's collector token reads: estimates over windows, the dashboard; and the public tables."""

    def __init__(self, registry: TaskRegistry, dashboard_public: bool) -> None:
        self.registry = registry
        self.windows = registry.windows
        self.dashboard_public = dashboard_public

    @staticmethod
    def authorize(task: Task, token: str | None) -> None:
        """Raise :class:`Unauthorized` unless ``token`` is ``task``'s collector token."""
        if token is None or not task.token_matches(token):
            raise Unauthorized("give this task's collector token as 'Authorization: Bearer TOKEN'")

    async def estimates(
        self, task: Task, start: int | None, end: int | None, confidence: float, by: str | None
    ) -> dict[str, Any]:
        """The reply of ``GET /v1/tasks/{task}/estimates`` (the token already checked).

        Raises
        ------
        ParameterError
            If ``confidence`` is not in (0, 1), ``by`` is not ``window``, or the range is bad.
        """
        if not 0 < confidence < 1:
            raise ParameterError(f"confidence must be in (0, 1), got {confidence}")
        if by not in (None, "window"):
            raise ParameterError(f"'by' takes only 'window', got {by!r}")
        check_range(task, start, end)
        head = {"task": task.task_id, "mechanism": task.spec.mechanism, "confidence": confidence}
        if by == "window":
            windows = await run_in_threadpool(self.windows.replies, task, confidence)
            selected = [
                w
                for w in windows
                if (start is None or w["start"] >= start) and (end is None or w["start"] < end)
            ]
            return {**head, "windows": selected}
        merged, counts = await run_in_threadpool(self.windows.merged_with_counts, task, start, end)
        reply = await run_in_threadpool(
            estimate_reply, task, merged, confidence, counts, self.windows.decodes
        )
        pruned = sum(
            1
            for s in self.windows.pruned(task.task_id)
            if (start is None or s >= start) and (end is None or s < end)
        )
        return {**head, "from": start, "to": end, **reply, "pruned_windows": pruned}

    async def dashboard(self, token: str | None) -> dict[str, Any]:
        """Every task ``token`` reads (every task when the dashboard is public), with its windows' estimates."""
        if self.dashboard_public:
            visible = list(self.registry.tasks.values())
        else:
            visible = await self.registry.readable_tasks(token) if token else []
            if not visible:
                raise Unauthorized("give a collector token as 'Authorization: Bearer TOKEN'")
        tasks = []
        for task in visible:
            windows = await run_in_threadpool(self.windows.replies, task, DASHBOARD_CONFIDENCE)
            windows = [top_candidates(window, DASHBOARD_CANDIDATES) for window in windows]
            summary = task_summary(task, DASHBOARD_CONFIDENCE)
            tasks.append({**summary, "task": task.task_id, "windows": windows})
        return {"tasks": tasks}

    @staticmethod
    async def table(task: Task) -> tuple[bytes, str]:
        """(JSON body, ETag) of the task's numeric sampling table; :class:`NoNumericTable` for other mechanisms."""
        reply = await run_in_threadpool(_table_reply, task.spec_json)
        if reply is None:
            raise NoNumericTable(task.task_id, task.spec.mechanism)
        return reply


class CollectorService:
    """One collector over an open store: its tasks, ingestion and estimates, and its health.

    Parameters
    ----------
    settings : CollectorSettings
        How it serves.
    store : Store
        The open store (the service closes it in :meth:`close`).
    """

    def __init__(self, settings: CollectorSettings, store: Store) -> None:
        self.settings = settings
        self.store = store
        self.metrics = CollectorMetrics()
        self.registry = TaskRegistry(store, Windows())
        self.registry.refresh()
        self.ingestion = Ingestion(settings, store, self.registry, self.metrics)
        committer = self.ingestion.committer
        self.metrics.watch(committer.queued, committer.commit_seconds, self.registry.windows.held)
        self.estimates = Estimates(self.registry, settings.dashboard_public)

    async def task(self, task_id: str) -> Task:
        """The task ``task_id`` (:meth:`TaskRegistry.task`); :class:`TaskNotFound` if there is none."""
        return await self.registry.task(task_id)

    def prune(self, now: float | None = None) -> list[PruneResult]:
        """One retention run over the tasks held (blocking: the background pruner only), then mark what it pruned.

        The held windows' counts do not change: a pruned window's aggregate
        holds the same reports they counted.
        """
        tasks = [task for task in self.registry.tasks.values() if task.retain is not None]
        results = []
        try:
            for task in tasks:
                try:
                    results.append(prune_task(self.store, task, now))
                except UnknownTaskError:  # deleted meanwhile
                    continue
            self.registry.mark_pruned()
        except Exception:
            self.metrics.observe_retention_failure()
            raise
        self.metrics.observe_retention(
            sum(len(result.kept) for result in results), sum(result.reports_deleted for result in results)
        )
        return results

    async def check_health(self) -> None:
        """Raise :class:`StoreUnhealthy` unless the store answers and could commit an upload now."""
        try:
            await run_in_threadpool(self.store.check_writable)
        except StoreUnavailable as exc:
            raise StoreUnhealthy(str(exc)) from None
        except Exception as exc:
            raise StoreUnhealthy(type(exc).__name__) from None

    def close(self) -> None:
        """Commit what is pending, then close the store."""
        self.ingestion.close()
        self.store.close()


def numeric_table(spec: NumericSpec) -> dict[str, Any]:
    """What ``GET /v1/tasks/{task}/tables`` serves: the spec's fingerprint and :func:`ldp.numeric_wire.numeric_table`."""
    return {"fingerprint": spec.fingerprint, **wire_table(spec)}


@functools.lru_cache(maxsize=64)
def _table_reply(spec_json: str) -> tuple[bytes, str] | None:
    """(JSON body, ETag) of a spec's numeric table, or None for a spec without one; cached by spec."""
    spec = load_spec(spec_json)
    if isinstance(spec, MultiAttribute):
        return _record_tables_reply(spec)
    if not isinstance(spec, NumericSpec) or not has_table(spec):
        return None
    table = numeric_table(spec)
    # json, not orjson: floats written as Python writes them (tests/vectors/README.md, float_text)
    body = json.dumps(table, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    tag = f"{spec.fingerprint}-{table['digest']}" if "digest" in table else spec.fingerprint
    return body, f'"{tag}"'


def _record_tables_reply(spec: MultiAttribute) -> tuple[bytes, str] | None:
    """(JSON body, ETag) of a multi-attribute spec's grid tables, by attribute name; None without one.

    Only the attributes whose table a client cannot derive from the spec
    (piecewise, hybrid, Laplace, Gaussian: built with floating-point ``exp``)
    are listed; the ETag pins the fingerprint and every table's digest.
    """
    every = {
        name: wire_table(attribute)
        for name, attribute in zip(spec.names, spec.attributes, strict=True)
        if isinstance(attribute, NumericSpec) and has_table(attribute)
    }
    tables = {name: table for name, table in every.items() if "digest" in table}  # not the two-point ones
    if not tables:
        return None
    body = json.dumps(
        {"fingerprint": spec.fingerprint, "attributes": tables}, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    pinned = hashlib.sha256("".join(t["digest"] for t in tables.values()).encode("ascii")).hexdigest()[:16]
    return body, f'"{spec.fingerprint}-{pinned}"'
