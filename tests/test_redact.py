"""Secrets out of URLs and log records: ldp.redact.redact_url and the collector's log filter."""

from __future__ import annotations

import logging
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldp.redact import redact_url


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
        ("https://u:pw@host/p?a=1#key=frag", "https://u:***@host/p?a=1#key=frag"),
        ("postgresql://db/ldp?options=a@b", "postgresql://db/ldp?options=a@b"),
        ("ldp-collector.db", "ldp-collector.db"),
        ("sqlite:///data/ldp.db", "sqlite:///data/ldp.db"),
        ("host=db password=x", "host=db password=x"),
        ("", ""),
    ],
)
def test_redact_url(url, redacted):
    assert redact_url(url) == redacted


@given(st.text(max_size=80))
def test_redact_url_never_raises_and_leaves_non_urls_alone(text):
    redacted = redact_url(text)
    assert isinstance(redacted, str)
    if "://" not in text:
        assert redacted == text


@given(password=st.text(alphabet=st.characters(blacklist_characters="@/?#", min_codepoint=33), min_size=1))
def test_every_password_is_masked(password):
    assert (
        redact_url(f"postgresql://ldp:{password}@db.internal:5432/ldp")
        == "postgresql://ldp:***@db.internal:5432/ldp"
    )


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
