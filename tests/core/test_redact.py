"""ldp.redact.redact_url: URLs shown without passwords, tokens or other secrets."""

from __future__ import annotations

import logging
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldp.redact import MASK, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:s3cret@127.0.0.1:8000", "http://user:***@127.0.0.1:8000"),
        (
            "postgresql://ldp:s3cret@db:5432/ldp?sslmode=require",
            "postgresql://ldp:***@db:5432/ldp?sslmode=require",
        ),
        ("http://:s3cret@h/x", "http://:***@h/x"),
        # a password holding "@", ":", "/", "?" or "#" unencoded is masked whole
        ("http://u:p@ss@h/x", "http://u:***@h/x"),
        ("http://u:p:ss@h:1/x", "http://u:***@h:1/x"),
        ("http://u:pa/ss@h:9/p?x=1", "http://u:***@h:9/p?x=1"),
        ("http://u:pa?ss@h/x", "http://u:***@h/x"),
        ("http://u:pa#ss@h/x", "http://u:***@h/x"),
        ("http://u:pw@[::1]:8000/", "http://u:***@[::1]:8000/"),
        ("HTTPS://U:PW@H", "HTTPS://U:***@H"),
        # the scheme left out
        ("u:s3cret@h:8000", "u:***@h:8000"),
    ],
)
def test_the_password_of_the_user_part_is_masked(url, shown):
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://c.example/v1?token=abc&task=t1", "https://c.example/v1?token=***&task=t1"),
        ("https://c.example/?Token=abc", "https://c.example/?Token=***"),
        ("postgresql://u@h/d?sslmode=require&password=pw", "postgresql://u@h/d?sslmode=require&password=***"),
        ("postgresql://u@h/d?sslpassword=pw&PASSWORD=x", "postgresql://u@h/d?sslpassword=***&PASSWORD=***"),
        (
            "http://h/?api_key=1&client_secret=2&access_token=3",
            "http://h/?api_key=***&client_secret=***&access_token=***",
        ),
        ("http://h/?secret=&key", "http://h/?secret=&key"),  # nothing to hide
        ("http://h/cb#access_token=abc&state=s", "http://h/cb#access_token=***&state=s"),
        ("http://h/?pass%77ord=x", "http://h/?pass%77ord=***"),  # percent-encoded names are read decoded
        ("http://u:pw@h/?token=t", "http://u:***@h/?token=***"),
    ],
)
def test_secret_query_parameters_are_masked_and_the_rest_kept_as_written(url, shown):
    assert redact_url(url) == shown


@pytest.mark.parametrize(
    "text",
    [
        "",
        "reports.jsonl",
        "a plain sentence: with a colon",
        "localhost:8000",
        "user@example.org",
        "http://127.0.0.1:8000",
        "http://u@h:8000/x",
        "http://h/a@b",  # an "@" in the path is not a user part
        "http://h:80/a@b",
        "http://h/?task=t1&monkey",  # a parameter without a value
        "sqlite:///var/lib/ldp/store.db",
        "http://[::1]:8000/?q=%20",
    ],
)
def test_what_holds_no_secret_is_unchanged(text):
    assert redact_url(text) == text


@pytest.mark.parametrize(
    "url",
    ["http://u:s3cret@[::1/x?token=s3cret", "  http://u:s3cret@h", "http://u:s3cret@h/\tx?token=s3cret"],
)
def test_a_url_urlsplit_refuses_is_still_masked(url):
    shown = redact_url(url)
    assert "s3cret" not in shown
    assert MASK in shown


def test_never_raises_and_never_shows_a_password_of_bytes_or_other_objects():
    assert redact_url(b"http://u:s3cret@h") == "http://u:***@h"  # type: ignore[arg-type]
    assert redact_url(None) == "None"  # type: ignore[arg-type]

    class Unprintable:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert redact_url(Unprintable()) == MASK  # type: ignore[arg-type]


_PASSWORD = st.text(st.characters(codec="utf-8"), min_size=6, max_size=20)


@given(
    password=_PASSWORD,
    user=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    host=st.sampled_from(["h", "db.example:5432", "127.0.0.1:8000", "[::1]:1"]),
)
def test_a_password_never_survives(password, user, host):
    shown = redact_url(f"postgresql://{user}:{password}@{host}/db")
    assert password not in shown
    assert shown.startswith(f"postgresql://{user}:{MASK}@")


@given(text=st.text(max_size=60))
def test_any_string_is_redacted_without_raising(text):
    assert isinstance(redact_url(text), str)


# -- the store URLs ldp serve is given, and the collector's log filter --


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("postgresql://user:PASSWORD@db:5432/ldp", "postgresql://user:***@db:5432/ldp"),
        ("postgres://user:p%40ss@db/ldp", "postgres://user:***@db/ldp"),
        ("postgresql://user:p@ss@db/ldp", "postgresql://user:***@db/ldp"),
        ("postgresql://user:p/ss@db/ldp", "postgresql://user:***@db/ldp"),
        ("postgresql://user@db/ldp", "postgresql://user@db/ldp"),
        ("postgresql://db/ldp?sslmode=require", "postgresql://db/ldp?sslmode=require"),
        (
            "postgresql://db/ldp?password=x&Token=y&SECRET=z&key=k&keys=1&sslmode=require",
            "postgresql://db/ldp?password=***&Token=***&SECRET=***&key=***&keys=1&sslmode=require",
        ),
        ("https://u:pw@host/p?a=1#key=frag", "https://u:***@host/p?a=1#key=***"),
        ("postgresql://db/ldp?options=a@b", "postgresql://db/ldp?options=a@b"),
        ("ldp-collector.db", "ldp-collector.db"),
        ("sqlite:///data/ldp.db", "sqlite:///data/ldp.db"),
        ("host=db password=x", "host=db password=x"),
        ("", ""),
    ],
)
def test_redact_url_of_store_urls(url, redacted):
    assert redact_url(url) == redacted


def test_the_log_filter_masks_secrets_in_messages_and_tracebacks():
    pytest.importorskip("uvicorn")
    from ldp.collector.serving import RedactingFilter, url_secrets

    url = "postgresql://ldp:Hunter%232@db/ldp?token=T0k3n"
    secrets = url_secrets(url)
    assert {"Hunter%232", "Hunter#2", "T0k3n"} <= set(secrets)
    scrubber = RedactingFilter(secrets)
    try:
        raise RuntimeError("password authentication failed: Hunter#2")
    except RuntimeError:
        record = logging.LogRecord(
            "x", logging.ERROR, __file__, 1, "connecting to %s", (url,), sys.exc_info()
        )
    assert scrubber.filter(record)
    text = logging.Formatter().format(record)
    assert "Hunter" not in text and "T0k3n" not in text
    assert "postgresql://ldp:***@db/ldp?token=***" in text


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://db/ldp?sslpassword=S3cr3tPw",
        "https://collector.example/v1?api_key=S3cr3tPw",
        "https://u:S3cr3tPw@host/p#access_token=S3cr3tPw",
        "u:S3cr3tPw@db.internal/ldp",
    ],
)
def test_the_log_filter_masks_every_secret_redact_url_masks(url):
    """One reading of a URL for both: a secret redact_url hides is never left in a log line."""
    pytest.importorskip("uvicorn")
    from ldp.collector.serving import RedactingFilter, url_secrets

    assert "S3cr3tPw" not in redact_url(url)
    record = logging.LogRecord(
        "x", logging.ERROR, __file__, 1, "connecting with %s failed: S3cr3tPw", (url,), None
    )
    assert RedactingFilter(url_secrets(url)).filter(record)
    assert "S3cr3tPw" not in logging.Formatter().format(record)
