"""One JSON Lines record as text that every line-based reader sees as one line."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_line"]

# json.dumps(ensure_ascii=False) escapes the C0 controls (so "\n", "\r", "\v",
# "\f" and the \x1c-\x1e separators never appear raw) but writes NEL (U+0085),
# LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029) as they are. Those
# three are line breaks to Python's str.splitlines and to many log tools, so a
# report or reject holding one would be read back as two broken records.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(record: Any, **dumps_options: Any) -> str:
    """``record`` as one line of JSON without a trailing newline.

    Non-ASCII text stays readable (``ensure_ascii=False``) except the Unicode
    line breaks U+0085, U+2028 and U+2029, which are written as ``\\u`` escapes
    (they can only occur inside JSON strings, where the escape means the same).
    Extra keyword arguments go to :func:`json.dumps`.
    """
    return json.dumps(record, ensure_ascii=False, **dumps_options).translate(_LINE_BREAKS)
