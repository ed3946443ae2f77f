"""A Python client for a running collector: tasks, uploads from memory, estimates as DataFrames.

:class:`CollectorClient` talks to ``ldp serve`` over its HTTP API
(docs/reference/http-api.md) with the machinery of ``ldp upload``
(:mod:`ldp.client.upload`): the same retries with backoff (connection
errors, timeouts, 5xx, 429 honouring ``Retry-After``), the same private-CA
option (``cacert``), the same envelope file. An upload from memory is
spooled once to an envelope file that every later call with the same
reports reuses byte for byte, so a retry or a rerun after a crash is never
counted twice.

Tasks are created and deleted in the store, not over HTTP (the API has no
such endpoint: whoever can reach the collector could otherwise make
tasks): use ``ldp task create`` or :func:`ldp.collector.tasks.new_task` with
:func:`ldp.collector.store.open_store`. Over HTTP a client reads one task's
public description (:meth:`CollectorClient.task`) and lists the tasks a
collector token reads (:meth:`CollectorClient.tasks`).

This module needs no server dependency (standard library HTTP, pandas for
the tables).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable
from typing import Any

import pandas as pd

from ldp.client.upload import (
    Envelopes,
    UploadSummary,
    report_lines,
    upload_report_lines,
)
from ldp.client.upload_http import Http, TaskInfo, check_base_url, fetch_task, task_path, tls_context
from ldp.errors import ParameterError

__all__ = ["CollectorClient"]


class CollectorClient:
    """One collector, by URL.

    Parameters
    ----------
    base_url : str
        The collector, e.g. ``https://collector.example``.
    token : str, optional
        A collector token (``ldp task create`` prints it): reads estimates
        and lists the tasks it reads. Each call may give another.
    cacert : path, optional
        PEM file of the CA certificates to trust for ``https`` (a private CA).
    timeout : float
        Seconds to wait for a connection or a reply.
    retries : int
        Resends after consecutive transient failures before giving up.

    Examples
    --------
    >>> client = CollectorClient("http://127.0.0.1:8080", token=token)  # doctest: +SKIP
    >>> client.upload(task_id, reports, "reports.envelopes.jsonl")      # doctest: +SKIP
    >>> client.estimates(task_id)                                       # doctest: +SKIP
    """

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        cacert: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        retries: int = 8,
    ) -> None:
        self.base_url = base_url
        self.token = token
        self.cacert = cacert
        self.timeout = float(timeout)
        self.retries = retries
        self._context = tls_context(cacert)
        self._http = Http(check_base_url(base_url), self.timeout, retries, 0.5, 30.0, context=self._context)

    # -- tasks -------------------------------------------------------------------------------------

    def task(self, task_id: str) -> TaskInfo:
        """A task's public description (``GET /v1/tasks/{task}``: mechanism, fingerprint, window...)."""
        return fetch_task(
            self.base_url, task_id, timeout=self.timeout, retries=self.retries, context=self._context
        )

    def tasks(self, token: str | None = None) -> pd.DataFrame:
        """The tasks ``token`` reads, one row each (``GET /v1/dashboard``): id, name, description, mechanism,
        window, min batch, reports so far."""
        reply = self._get("/v1/dashboard", token)
        rows = [
            {
                "task": task["task"],
                "name": task.get("name", ""),
                "description": task.get("description", ""),
                "mechanism": task["mechanism"],
                "window": task["window"],
                "min_batch": task["min_batch"],
                "reports": sum(int(w.get("n") or 0) for w in task.get("windows", [])),
            }
            for task in reply["tasks"]
        ]
        columns = ["task", "name", "description", "mechanism", "window", "min_batch", "reports"]
        return pd.DataFrame(rows, columns=columns)

    # -- uploads -----------------------------------------------------------------------------------

    def upload(
        self,
        task_id: str,
        reports: Iterable[Any],
        envelopes_path: str | os.PathLike[str],
        *,
        now: float | None = None,
        batch_size: int = 1_000,
    ) -> UploadSummary:
        """Upload reports held in memory (:class:`~ldp.report.Report` objects, dicts or JSON texts).

        The reports are first wrapped into envelopes written once to
        ``envelopes_path`` (the spool); calling again with the same reports
        and path resends the same envelopes, which the collector answers
        ``replayed`` and never counts twice. Reports of another spec than
        the task's are refused before anything is sent or written.

        Returns
        -------
        UploadSummary
            ``accepted``, ``replayed`` and every rejection with its reason.

        Raises
        ------
        UploadError
            A refusal (4xx other than 429) or retries exhausted; call again
            with the same arguments to resume.
        """
        _, summary = self.upload_envelopes(task_id, reports, envelopes_path, now=now, batch_size=batch_size)
        return summary

    def upload_envelopes(
        self,
        task_id: str,
        reports: Iterable[Any],
        envelopes_path: str | os.PathLike[str],
        *,
        now: float | None = None,
        batch_size: int = 1_000,
    ) -> tuple[Envelopes, UploadSummary]:
        """:meth:`upload`, also returning the envelope file (``created`` says whether this call made it)."""
        return upload_report_lines(
            self.base_url,
            task_id,
            report_lines(reports),
            envelopes_path,
            now=now,
            batch_size=batch_size,
            timeout=self.timeout,
            retries=self.retries,
            cacert=self.cacert,
        )

    # -- estimates ---------------------------------------------------------------------------------

    def estimates(
        self,
        task_id: str,
        *,
        token: str | None = None,
        start: int | None = None,
        end: int | None = None,
        confidence: float = 0.95,
        by_window: bool = False,
    ) -> pd.DataFrame:
        """Estimates with standard errors and intervals, as one table.

        Over the windows from ``start`` to ``end`` (Unix seconds, window
        boundaries; default all) merged, or one block of rows per window
        with its ``window_start``, ``n`` and ``pruned`` (its raw reports were
        deleted by the task's retention; the estimates come from its kept
        aggregate) when ``by_window``. ``df.attrs`` holds the reply's ``n``,
        ``confidence``, ``consistency``, ``withheld`` (a range with fewer
        reports than the task's min batch has no rows and says why there) and
        ``pruned_windows``.
        """
        reply = self._estimates(task_id, token, start, end, confidence, by_window)
        if by_window:
            frames = []
            for window in reply["windows"]:
                frame = pd.DataFrame(window.get("estimates") or [])
                frame.insert(0, "pruned", bool(window.get("pruned")))
                frame.insert(0, "n", window.get("n"))
                frame.insert(0, "window_start", window["start"])
                frames.append(frame)
            table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            table.attrs = {"confidence": reply.get("confidence"), "task": task_id}
            return table
        table = pd.DataFrame(reply.get("estimates") or [])
        table.attrs = {
            key: reply.get(key)
            for key in ("task", "n", "confidence", "consistency", "withheld", "from", "to", "pruned_windows")
        }
        return table

    def candidates(
        self,
        task_id: str,
        *,
        token: str | None = None,
        start: int | None = None,
        end: int | None = None,
        confidence: float = 0.95,
        by_window: bool = False,
    ) -> pd.DataFrame:
        """A Bloom RAPPOR task's reports decoded against its candidates, largest estimate first.

        The table of ``ldp aggregate --candidates`` (``value, estimate,
        std_error, ci_low, ci_high, proportion, p_value, detected``) over the
        windows from ``start`` to ``end`` merged, or one block of rows per
        window with its ``window_start`` and ``n`` when ``by_window``
        (docs/collector.md#candidates). Without ``by_window``, ``df.attrs``
        holds the reply's ``n``, ``confidence`` and ``withheld`` and the
        decode's summary (``num_candidates``, ``num_detected``,
        ``allocated_mass``, ``explained_mass``, ``unexplained_mass``,
        ``unexplained_mass_se``, ``alpha``, ``correction``). No rows for a
        task without candidates (``ldp task update TASK --candidates FILE``)
        or a range withheld under the min batch.
        """
        reply = self._estimates(task_id, token, start, end, confidence, by_window)
        if by_window:
            frames = []
            for window in reply["windows"]:
                frame = pd.DataFrame((window.get("candidates") or {}).get("rows") or [])
                frame.insert(0, "n", window.get("n"))
                frame.insert(0, "window_start", window["start"])
                frames.append(frame)
            table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
            table.attrs = {"confidence": reply.get("confidence"), "task": task_id}
            return table
        block = reply.get("candidates") or {}
        table = pd.DataFrame(block.get("rows") or [])
        summary = {key: value for key, value in block.items() if key != "rows"}
        table.attrs = {**{key: reply.get(key) for key in ("task", "n", "confidence", "withheld")}, **summary}
        return table

    def _estimates(
        self,
        task_id: str,
        token: str | None,
        start: int | None,
        end: int | None,
        confidence: float,
        by_window: bool,
    ) -> Any:
        """The reply of ``GET /v1/tasks/{task}/estimates`` for these parameters."""
        query: dict[str, Any] = {"confidence": confidence}
        if start is not None:
            query["from"] = start
        if end is not None:
            query["to"] = end
        if by_window:
            query["by"] = "window"
        return self._get(f"{task_path(task_id)}/estimates?{urllib.parse.urlencode(query)}", token)

    # -- HTTP --------------------------------------------------------------------------------------

    def _get(self, path: str, token: str | None) -> Any:
        token = token or self.token
        if not token:
            raise ParameterError("give a collector token (token=..., as 'ldp task create' printed it)")
        if self._http.target.authorization is not None:
            raise ParameterError(
                "a collector URL with credentials cannot also carry a collector token (one Authorization header)"
            )
        return self._http.request("GET", path, authorization=f"Bearer {token}")
