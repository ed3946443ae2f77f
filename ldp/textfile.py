"""Reading the small UTF-8 text files users point the CLI at (specs, domains, Google params)."""

from __future__ import annotations

from pathlib import Path

from ldp.errors import InputError

__all__ = ["read_utf8_text"]


def read_utf8_text(path: str | Path, what: str) -> str:
    """The whole text of ``path``; an :class:`~ldp.errors.InputError` naming ``what`` and the file otherwise.

    An unreadable file gives the operating system's reason; text that is not
    UTF-8 gives the line and the value of the first undecodable byte.
    """
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        line = exc.object[: exc.start].count(b"\n") + 1
        raise InputError(
            f"{what} {str(path)!r}, line {line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x})"
        ) from None
