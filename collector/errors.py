"""What can go wrong serving a collector request, as error types (each answered by one problem document).

The collector's service layer (:mod:`ldp.collector.service`) raises these;
:func:`ldp.collector.problems.problem_for` turns each into its reply, so a
route never builds an error reply itself. Every one is an
:class:`ldp.errors.LDPError` (a refusal on purpose, never a bug). The store's
own errors, all :class:`ldp.errors.StoreError`, stay with the store:
:class:`ldp.collector.store.StoreUnavailable` (the store cannot be reached or
cannot write now), :class:`ldp.collector.store.UnknownTaskError` (a store
write named a task it does not hold), :class:`ldp.collector.store.StoreOpenError`
and :class:`ldp.collector.store.TaskExistsError`.
"""

from __future__ import annotations

from ldp.errors import LDPError

__all__ = [
    "CollectorError",
    "NoNumericTable",
    "OriginForbidden",
    "RateLimited",
    "ReportsNotStored",
    "StoreUnhealthy",
    "TaskDeleted",
    "TaskNotFound",
    "Unauthorized",
    "UploadAborted",
]

#: Task ids longer than this are cut (with an ellipsis) where an error names them.
SHOWN_ID_CHARACTERS = 64


class CollectorError(LDPError):
    """Base class of the collector's request errors (:mod:`ldp.collector.problems` answers each)."""


class TaskNotFound(CollectorError, LookupError):
    """No task ``task_id`` on this collector (never created, or deleted before the request)."""

    def __init__(self, task_id: str) -> None:
        shown = task_id if len(task_id) <= SHOWN_ID_CHARACTERS else task_id[:SHOWN_ID_CHARACTERS] + "…"
        super().__init__(f"no task {shown!r} on this collector")
        self.task_id = task_id


class TaskDeleted(TaskNotFound):
    """The task was deleted while an upload to it was being stored: nothing of the upload was stored.

    Answered as an unknown task (404): to the client the task is gone either way.
    """


class RateLimited(CollectorError):
    """A client address sends uploads faster than the collector's rate limit."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("this address is sending uploads too fast; retry later with the same envelopes")
        self.retry_after = retry_after


class Unauthorized(CollectorError):
    """A request that needs a collector token came without the right one (the message says what to give)."""


class OriginForbidden(CollectorError):
    """A browser origin the task does not allow asked to upload (CORS preflight)."""

    def __init__(self) -> None:
        super().__init__("this origin may not upload to this task")


class NoNumericTable(CollectorError):
    """``/tables`` of a task whose mechanism has no numeric sampling table."""

    def __init__(self, task_id: str, mechanism: str) -> None:
        super().__init__(
            f"task {task_id!r} uses {mechanism}, which has no numeric table "
            "(its probabilities are in GET /v1/tasks/{task}/spec)"
        )


class ReportsNotStored(CollectorError):
    """An upload's group commit failed: none of its reports was acknowledged, the same envelopes may be retried.

    ``cause`` is the name of the store's error type (never its message, which
    may name the store's location).
    """

    def __init__(self, cause: str) -> None:
        super().__init__(f"the reports were not stored ({cause}); retry the same envelopes")
        self.cause = cause


class StoreUnhealthy(CollectorError):
    """The health check found the store unable to commit an upload now (the message says why)."""


class UploadAborted(CollectorError):
    """The client hung up, or was cut off by the read deadline, before its upload's body arrived.

    ``reason`` is ``read_timeout`` or ``client_disconnect`` (the label of the
    ``ldp_aborted_requests`` metric).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
