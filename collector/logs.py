"""Structured logs of ``ldp serve``: one JSON object per line (``--log-format json``, the default).

Each line has ``time`` (UTC, ISO 8601 with milliseconds), ``level``,
``logger`` and ``message``, and ``exception`` (the traceback as one string)
when the record carries one. The collector's own records never carry sender
data (no client address, payload or token: the server writes no access log);
:class:`ldp.collector.serving.RedactingFilter` runs before this formatter and
masks the store's secrets.
"""

from __future__ import annotations

import datetime
import logging

import orjson

__all__ = ["JsonFormatter"]


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON: ``{"time", "level", "logger", "message"[, "exception"]}``."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC)
        line = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return orjson.dumps(line).decode("utf-8")
