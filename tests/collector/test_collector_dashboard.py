"""The collector's dashboard page (collector/static/) in headless Chromium.

The page is served by a small stand-in for ``ldp serve``: the package's static
files at ``/`` and ``/static/<name>`` and a canned ``GET /v1/dashboard`` reply
that a test can change (and protect with a token). The page checks
(``assert_*``) take the page and the reply the server gives, and most tests use
only the ``Collector`` protocol (``base_url``, ``token``, ``publish``), so the
``collector`` fixture can be pointed at the real server: ``publish`` then stores
reports that produce the wanted windows. The polling and token tests also read
the stand-in's request log."""

from __future__ import annotations

import base64
import json
import math
import re
import shutil
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol

import pytest

CHROMIUM = next(
    (
        p
        for p in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser"))
        if p and Path(p).exists()
    ),
    None,
)
if CHROMIUM is None:
    reason = "no Chromium at /usr/bin/chromium or on PATH (apt-get install -y chromium; .ci/run installs it)"
    print(f"test_collector_dashboard skipped: {reason}")
    pytest.skip(reason, allow_module_level=True)

import uvicorn  # noqa: E402 (after the module-level skip)
from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.requests import Request  # noqa: E402
from starlette.responses import FileResponse, JSONResponse, Response  # noqa: E402
from starlette.routing import Route  # noqa: E402

# under pytest-xdist the tests of this module run on one worker, so its Chromium and collector start once
pytestmark = pytest.mark.xdist_group("dashboard")

STATIC = Path(str(resources.files("ldp.collector") / "static"))
#: The dashboard's polling interval (``POLL_MS`` in dashboard.js), in milliseconds.
POLL_MS = int(re.search(r"const POLL_MS = (\d+);", (STATIC / "dashboard.js").read_text()).group(1))
HOUR = 3600
T0 = 1_764_000_000 // HOUR * HOUR  # a window boundary
Z95 = 1.959963984540054
XSS = '<img src=x onerror="window.__xss = 1">'
# The stand-in serves the page under a strict content security policy: the page needs
# nothing inline and nothing from another origin, and the real server may do the same.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


def task_id(seed: int) -> str:
    """A 43-character task id (32 bytes, base64url without padding), fixed per seed."""
    return base64.urlsafe_b64encode(bytes([seed]) * 32).rstrip(b"=").decode()


def frequency_records(counts: dict[Any, float], n: int) -> list[dict[str, Any]]:
    """``ldp aggregate``'s frequency columns for the given estimated counts."""
    records = []
    for value, estimate in counts.items():
        se = math.sqrt(n) * 0.4
        records.append(
            {
                "value": value,
                "estimate": estimate,
                "std_error": se,
                "ci_low": estimate - Z95 * se,
                "ci_high": estimate + Z95 * se,
                "proportion": estimate / n,
            }
        )
    return records


def grr_task(windows: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "task": task_id(1),
        "name": "Browser",
        "description": "Which browser people use, hourly.",
        "mechanism": "grr",
        "kind": "frequency",
        "fingerprint": "f" * 43,
        "window": HOUR,
        "time_precision": 60,
        "min_batch": 1000,
        "confidence": 0.95,
        "windows": windows,
    }


def grr_window(k: int, n: int, counts: dict[Any, float] | None) -> dict[str, Any]:
    """Window ``k`` of the GRR task: estimates from ``counts``, or withheld when None."""
    window: dict[str, Any] = {"start": T0 + k * HOUR, "end": T0 + (k + 1) * HOUR, "n": n}
    if counts is None:
        window |= {"estimates": None, "withheld": f"fewer than min_batch (1000) reports: {n}"}
    else:
        window |= {"estimates": frequency_records(counts, n), "withheld": None, "central": CENTRAL}
    return window


#: A shuffle-mode window's central privacy, as ``ldp serve`` replies it (collector/central.py).
CENTRAL = {
    "epsilon": 0.041234,
    "delta": 1e-6,
    "epsilon0": 1.0,
    "windows": 1,
    "bound": "numerical (clone mixture)",
    "composition": "one window",
}


FIRST_COUNTS = {"a": 1302.4, "b": 2100.0, "c": -40.5, "d": 900.0, XSS: 948.1}


def rappor_task() -> dict[str, Any]:
    """A Bloom-filter RAPPOR task: per-(cohort, bit) rows, 2 cohorts of 4 bits."""
    rows = []
    for cohort, reports in ((0, 1500), (1, 1700)):
        for bit in range(4):
            estimate, se = 100.0 * (bit + 1) + 10 * cohort, 30.0 + cohort
            rows.append(
                {
                    "cohort": cohort,
                    "bit": bit,
                    "reports": reports,
                    "estimate": estimate,
                    "std_error": se,
                    "ci_low": estimate - Z95 * se,
                    "ci_high": estimate + Z95 * se,
                    "proportion": estimate / reports,
                }
            )
    window = {"start": T0, "end": T0 + HOUR, "n": 3200, "estimates": rows, "withheld": None}
    return grr_task([window]) | {
        "task": task_id(2),
        "name": "",
        "description": "",
        "mechanism": "rappor",
        "windows": [window],
    }


def mean_task() -> dict[str, Any]:
    record = {
        "mean": 0.42,
        "std_error": 0.01,
        "ci_low": 0.42 - Z95 * 0.01,
        "ci_high": 0.42 + Z95 * 0.01,
        "n": 2000,
        "sum": 840.0,
        "sum_std_error": 20.0,
        "sum_ci_low": 800.8,
        "sum_ci_high": 879.2,
    }
    window = {"start": T0, "end": T0 + HOUR, "n": 2000, "estimates": [record], "withheld": None}
    return grr_task([window]) | {
        "task": task_id(3),
        "name": "Session length",
        "description": "",
        "mechanism": "piecewise",
        "kind": "mean",
        "windows": [window],
    }


def first_reply() -> dict[str, Any]:
    """Two windows with estimates, then a withheld one (the latest)."""
    grr = grr_task(
        [
            grr_window(0, 4000, {"a": 1000.0, "b": 1000.0, "c": 1000.0, "d": 1000.0, XSS: 0.0}),
            grr_window(1, 5210, FIRST_COUNTS),
            grr_window(2, 12, None),
        ]
    )
    return {"tasks": [grr, rappor_task(), mean_task()]}


# ---- the server: a stand-in for `ldp serve` --------------------------------------------


class Collector(Protocol):
    base_url: str  # ends with "/"
    token: str | None  # the collector token the dashboard needs, or None

    def publish(self, reply: dict[str, Any]) -> None:
        """Make GET /v1/dashboard answer ``reply`` (for the real server: store reports that give it)."""
        ...


@dataclass
class StandIn:
    """The page's files and a canned /v1/dashboard reply, on uvicorn in a thread."""

    base_url: str = ""
    token: str | None = None
    reply: dict[str, Any] = field(default_factory=first_reply)
    authorizations: list[str | None] = field(default_factory=list)
    requests: int = 0

    def publish(self, reply: dict[str, Any]) -> None:
        self.reply = reply

    def app(self) -> Starlette:
        def static(name: str) -> Response:
            if name not in {path.name for path in STATIC.iterdir()}:
                return Response(status_code=404)
            return FileResponse(STATIC / name, headers={"Content-Security-Policy": CSP})

        async def index(request: Request) -> Response:
            return static("index.html")

        async def static_file(request: Request) -> Response:
            return static(request.path_params["name"])

        async def dashboard(request: Request) -> Response:
            self.requests += 1
            header = request.headers.get("authorization")
            self.authorizations.append(header)
            if self.token is not None and header != f"Bearer {self.token}":
                problem = {"type": "about:blank", "title": "Unauthorized", "status": 401}
                return JSONResponse(problem, 401, media_type="application/problem+json")
            return JSONResponse(self.reply)

        return Starlette(
            routes=[
                Route("/", index),
                Route("/static/{name}", static_file),
                Route("/v1/dashboard", dashboard),
            ]
        )


@pytest.fixture(scope="module")
def standin() -> Iterator[StandIn]:
    server_state = StandIn()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(server_state.app(), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline, "the stand-in server did not start"
        time.sleep(0.02)
    server_state.base_url = f"http://127.0.0.1:{port}/"
    try:
        yield server_state
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def collector(standin: StandIn) -> StandIn:
    """The stand-in with the first reply and no token (swap this fixture for the real server)."""
    standin.publish(first_reply())
    standin.token = None
    standin.authorizations.clear()
    return standin


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page with its own sessionStorage."""
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(5000)
    yield page
    context.close()


@pytest.fixture
def console_errors(page: Page) -> list[str]:
    """The page's console errors and uncaught exceptions, recorded from before it loads."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def fetch_reply(collector: Collector) -> dict[str, Any]:
    request = urllib.request.Request(collector.base_url + "v1/dashboard")
    if collector.token:
        request.add_header("Authorization", f"Bearer {collector.token}")
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


# ---- page checks: functions of the page and the server's reply ------------------------------


def open_dashboard(page: Page, base_url: str) -> None:
    page.goto(base_url)
    page.wait_for_selector("#tasks tbody tr")


def assert_tasks_listed(page: Page, reply: dict[str, Any]) -> None:
    """One row per task: shortened id (full id in its title), name, mechanism, window, precision, min batch."""
    rows = page.locator("#tasks tbody tr")
    assert rows.count() == len(reply["tasks"])
    for i, task in enumerate(reply["tasks"]):
        button = rows.nth(i).locator("th button")
        assert button.get_attribute("title") == task["task"]
        assert button.text_content() == task["task"][:8] + "…"
        cells = rows.nth(i).locator("td").all_text_contents()
        assert cells[0] == (task.get("name") or "–")
        assert cells[1] == task["mechanism"]
        assert cells[4] == f"{task['min_batch']:,}"


def chart_geometry(page: Page) -> dict[str, Any]:
    """The estimate chart's bars: their data and their SVG geometry."""
    return page.evaluate(
        """() => {
            const chart = document.querySelector('#estimates-chart');
            const bars = [...chart.querySelectorAll('g.estimate')].map((g) => {
                const rect = g.querySelector('rect.bar');
                const ci = g.querySelector('line.ci:not(.cap)');
                return {
                    label: g.dataset.label, value: +g.dataset.value, low: +g.dataset.low, high: +g.dataset.high,
                    text: g.querySelector('text.label')?.textContent ?? null,
                    y: +rect.getAttribute('y'), height: +rect.getAttribute('height'),
                    ciTop: +ci.getAttribute('y1'), ciBottom: +ci.getAttribute('y2'),
                };
            });
            return {zero: +chart.querySelector('line.zero').getAttribute('y1'), bars};
        }"""
    )


def assert_bars_match(page: Page, expected: list[tuple[str, float, float, float]]) -> None:
    """One bar per (label, value, low, high), bars and error bars on one linear scale through zero."""
    geometry = chart_geometry(page)
    bars, zero = geometry["bars"], geometry["zero"]
    assert [bar["label"] for bar in bars] == [label for label, *_ in expected]
    scale = None
    for bar, (_, value, low, high) in zip(bars, expected):
        assert (bar["value"], bar["low"], bar["high"]) == pytest.approx(
            (value, low, high), rel=1e-9, abs=1e-12
        )
        top = bar["y"] if value >= 0 else bar["y"] + bar["height"]  # the end away from zero
        assert (bar["y"] + bar["height"] if value >= 0 else bar["y"]) == pytest.approx(zero)
        scale = scale or (zero - top) / value
        assert scale > 0
        assert zero - top == pytest.approx(value * scale, abs=1e-6)
        assert zero - bar["ciTop"] == pytest.approx(high * scale, abs=1e-6)
        assert zero - bar["ciBottom"] == pytest.approx(low * scale, abs=1e-6)


def frequency_expectation(window: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    n = window["n"]
    return [
        (
            str(r["value"]),
            r["consistent"] / n if "consistent" in r else r["proportion"],
            r["ci_low"] / n,
            r["ci_high"] / n,
        )
        for r in window["estimates"]
    ]


def latest_with_estimates(task: dict[str, Any]) -> dict[str, Any]:
    return [w for w in task["windows"] if w["estimates"] is not None][-1]


def select_task(page: Page, index: int) -> None:
    """Click task ``index``'s button; wait until the page shows that task selected.

    One click: the page keeps its task buttons through a redraw (a poll, a resize), so a redraw cannot
    take a click away (test_a_press_that_a_refresh_lands_in_still_selects_the_task), and clicking again
    would hide a page that loses one."""
    button = page.locator("#tasks tbody tr").nth(index).locator("th button")
    button.click()
    expect(button).to_have_attribute("aria-pressed", "true")


# ---- the tests ----------------------------------------------------------------------------


def test_page_loads_and_lists_tasks(page: Page, collector: Collector, console_errors: list[str]) -> None:
    open_dashboard(page, collector.base_url)
    reply = fetch_reply(collector)
    assert_tasks_listed(page, reply)
    # window and time precision as the CLI writes durations
    assert page.locator("#tasks tbody tr").nth(0).locator("td").all_text_contents()[2:4] == ["1h", "1m"]
    assert page.locator("h1").text_content() == "ldp collector"
    # the selected task's name and description
    assert page.locator("#task-about").text_content() == "Browser: Which browser people use, hourly."
    assert page.locator("#estimates-table tbody tr").count() == len(
        latest_with_estimates(reply["tasks"][0])["estimates"]
    )
    assert console_errors == []


@pytest.mark.slow
def test_frequency_bars_and_error_bars_match_the_intervals(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    open_dashboard(page, collector.base_url)
    reply = fetch_reply(collector)
    window = latest_with_estimates(reply["tasks"][0])  # the default: the latest window with estimates
    assert_bars_match(page, frequency_expectation(window))
    # a negative estimate hangs below the zero line
    negative = next(bar for bar in chart_geometry(page)["bars"] if bar["label"] == "c")
    assert negative["y"] == pytest.approx(chart_geometry(page)["zero"])
    # reports per window: one bar per window, the min-batch line, the withheld one marked
    assert page.locator("#windows-chart rect.bar").count() == 3
    assert page.locator("#windows-chart rect.bar.withheld").count() == 1
    assert page.locator("#windows-chart line.min-batch").count() == 1
    # shuffle mode: the window's central epsilon under the estimates
    caption = page.locator("#estimates-caption").text_content()
    assert "Shuffled: central ε ≤ 0.0412 at δ = 0.000001 (numerical (clone mixture))." in caption
    assert console_errors == []


def test_values_are_text_never_markup(page: Page, collector: Collector) -> None:
    open_dashboard(page, collector.base_url)
    assert page.evaluate("window.__xss") is None
    assert page.locator("img").count() == 0
    labels = [bar["label"] for bar in chart_geometry(page)["bars"]]
    assert XSS in labels
    assert page.locator("#estimates-table td", has_text="<img src=x").count() == 1


@pytest.mark.slow
def test_withheld_window_shows_its_reason(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    open_dashboard(page, collector.base_url)
    withheld = fetch_reply(collector)["tasks"][0]["windows"][-1]
    page.select_option("#window-select", str(withheld["start"]))
    reason = page.locator("#withheld")
    reason.wait_for(state="visible")
    assert reason.text_content() == f"Withheld: {withheld['withheld']}"
    assert page.locator("#estimates-chart").is_hidden()
    assert page.locator("#estimates-table").is_hidden()
    assert console_errors == []


@pytest.mark.slow
def test_rappor_bloom_and_mean_tasks(page: Page, collector: Collector, console_errors: list[str]) -> None:
    open_dashboard(page, collector.base_url)
    rappor, mean = fetch_reply(collector)["tasks"][1:3]
    select_task(page, 1)
    rows = rappor["windows"][0]["estimates"]
    expected = []
    for bit in range(4):
        bits = [r for r in rows if r["bit"] == bit]
        reports = sum(r["reports"] for r in bits)
        p = sum(r["estimate"] for r in bits) / reports
        half = Z95 * math.sqrt(sum(r["std_error"] ** 2 for r in bits)) / reports
        expected.append((f"bit {bit}", p, p - half, p + half))
    assert_bars_match(page, expected)
    assert "pooled over 2 cohorts" in page.locator("#estimates-caption").text_content()
    select_task(page, 2)
    record = mean["windows"][0]["estimates"][0]
    assert_bars_match(page, [("mean", record["mean"], record["ci_low"], record["ci_high"])])
    assert "sum_ci_high" in page.locator("#estimates-table thead").text_content()
    assert console_errors == []


@pytest.mark.slow
def test_live_refresh_follows_the_latest_window(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    open_dashboard(page, collector.base_url)
    reply = fetch_reply(collector)
    newer = {"a": 3000.0, "b": 500.0, "c": 500.0, "d": 500.0, XSS: 500.0}
    reply["tasks"][0]["windows"].append(grr_window(3, 5000, newer))
    collector.publish(reply)
    # the page follows the latest window with estimates: the new one
    expected = frequency_expectation(latest_with_estimates(fetch_reply(collector)["tasks"][0]))
    assert expected[0][1] == pytest.approx(3000 / 5000)
    # a locator, not wait_for_function: the page's CSP (script-src 'self') refuses the eval its polling uses
    expect(page.locator("#estimates-chart g.estimate").first).to_have_attribute(
        "data-value", str(expected[0][1]), timeout=5000
    )
    assert_bars_match(page, expected)
    assert page.locator("#windows-chart rect.bar").count() == 4
    assert console_errors == []


@pytest.mark.slow
def test_polling_pauses_while_the_tab_is_hidden(page: Page, collector: StandIn) -> None:
    # stand-in only: counts the server's requests
    open_dashboard(page, collector.base_url)
    visibility = """hidden => {
        Object.defineProperty(document, 'hidden', {value: hidden, configurable: true});
        document.dispatchEvent(new Event('visibilitychange'));
    }"""
    page.evaluate(visibility, True)
    page.wait_for_timeout(300)  # a request already under way may still arrive
    before = collector.requests
    page.wait_for_timeout(2600)
    assert collector.requests == before
    page.evaluate(visibility, False)
    page.wait_for_timeout(300)
    assert collector.requests == before + 1  # at once on showing the tab


def assert_token_flow(page: Page, base_url: str, token: str) -> None:
    """401 shows the token form; a refused token says so; the right one shows the dashboard."""
    page.goto(base_url)
    page.locator("#auth").wait_for(state="visible")
    assert page.locator("#tasks-section").is_hidden()
    page.fill("#token", "not-the-token")
    page.click("#auth button[type=submit]")
    expect(page.locator("#auth-message")).to_contain_text("refused")  # no eval: the page's CSP refuses it
    page.fill("#token", token)
    page.click("#auth button[type=submit]")
    page.wait_for_selector("#tasks tbody tr")
    assert page.locator("#auth").is_hidden()
    assert page.evaluate("sessionStorage.getItem('ldp-collector-token')") == token


@pytest.mark.slow  # fast: the 401 without a token in test_collector_http (dashboard) and test_collector_server (estimates)
def test_token_form_on_401_then_bearer_token(
    page: Page, collector: StandIn, console_errors: list[str]
) -> None:
    collector.token = "s3cret-token"
    assert_token_flow(page, collector.base_url, collector.token)
    assert collector.authorizations[:3] == [None, "Bearer not-the-token", "Bearer s3cret-token"]
    # the token stays for the session: a reload goes straight to the dashboard
    page.reload()
    page.wait_for_selector("#tasks tbody tr")
    assert collector.authorizations[-1] == "Bearer s3cret-token"
    unexpected = [e for e in console_errors if "401" not in e]  # the browser logs each 401 reply
    assert unexpected == []


# ---- the real collector: ldp serve in a subprocess ------------------------------------------


def _grr_reports(values: list[str], seed: int) -> list[Any]:
    import numpy as np

    import ldp
    from ldp.client import encode_batch

    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=2.0)
    return list(encode_batch(spec, values, np.random.default_rng(seed)).reports(spec))


@pytest.mark.slow  # ldp serve and Chromium; fast: the page against the stand-in (test_page_loads_and_lists_tasks),
# the service's dashboard reply in test_collector_longitudinal and the real server's estimates in test_collector_server
def test_real_collector_shows_a_tasks_bars_after_uploads_and_refreshes(
    page: Page, tmp_path: Path, console_errors: list[str]
) -> None:
    from collector_server import create_task, envelopes, now_truncated, running, store_path, upload

    import ldp

    store = store_path(tmp_path)
    task, _ = create_task(
        store,
        ldp.GRR(domain=("a", "b", "c"), epsilon=2.0),
        window="1h",
        time_precision="1m",
        min_batch=50,
        not_before=int(time.time()) // HOUR * HOUR
        - HOUR,  # it started last hour: it takes last hour's reports
    )
    now = now_truncated(task)
    earlier = now - now % HOUR - HOUR
    with running(store, "--dashboard-public") as server:
        reply = upload(
            server, task, envelopes(_grr_reports(["a"] * 60 + ["b"] * 30 + ["c"] * 10, 1), earlier)
        )
        assert reply.json()["accepted"] == 100
        base_url = server.url + "/"
        page.clock.install()  # the page's clock runs as usual; fast_forward below skips the poll's wait
        open_dashboard(page, base_url)
        page.wait_for_selector("#estimates-chart g.estimate")
        dashboard = fetch_reply(RealCollector(base_url))
        window = latest_with_estimates(dashboard["tasks"][0])
        # the bars are the consistent view (Norm-Sub: non-negative, summing to n), and the caption says so
        assert window["consistency"] == "norm-sub" and "consistent" in window["estimates"][0]
        assert sum(r["consistent"] for r in window["estimates"]) == pytest.approx(window["n"])
        assert_bars_match(page, frequency_expectation(window))
        assert "Bars: the consistent view (Norm-Sub" in page.locator("#estimates-caption").text_content()
        assert page.locator("#windows-chart rect.bar").count() == 1
        # a new window arrives: the page picks it up on its own
        upload(server, task, envelopes(_grr_reports(["b"] * 70, 2), now))
        page.clock.fast_forward(POLL_MS)  # the next poll is due
        _wait_until(page, "() => document.querySelectorAll('#windows-chart rect.bar').length === 2")
        latest = latest_with_estimates(fetch_reply(RealCollector(base_url))["tasks"][0])
        assert latest["start"] == now - now % HOUR and latest["n"] == 70
        expected = [value for _, value, _, _ in frequency_expectation(latest)]
        _wait_until(
            page,
            f"() => [...document.querySelectorAll('#estimates-chart g.estimate')].map((g) => +g.dataset.value).join() === {','.join(map(repr, expected))!r}",
        )
        assert_bars_match(page, frequency_expectation(latest))
    assert console_errors == []


@pytest.mark.slow
def test_real_collector_asks_for_the_token_by_default(page: Page, tmp_path: Path) -> None:
    from collector_server import create_task, envelopes, now_truncated, running, store_path, upload

    import ldp

    store = store_path(tmp_path)
    task, token = create_task(
        store, ldp.GRR(domain=("a", "b", "c"), epsilon=2.0), window="1h", time_precision="1m"
    )
    with running(store) as server:  # on loopback too: behind a reverse proxy every client is loopback
        upload(server, task, envelopes(_grr_reports(["a", "b"], 3), now_truncated(task)))
        assert_token_flow(page, server.url + "/", token)


def _wait_until(page: Page, predicate: str, seconds: float = 10.0) -> None:
    """Poll a page predicate from Python: the page's CSP refuses the string evaluation of Playwright's own polling."""
    deadline = time.monotonic() + seconds
    while not page.evaluate(predicate):
        assert time.monotonic() < deadline, f"not true after {seconds} s: {predicate}"
        time.sleep(0.1)


@dataclass
class RealCollector:
    base_url: str
    token: str | None = None


# ---- estimates per window (the series of each value over the windows) ----------------------------

SERIES_COUNTS = [
    {"a": 1000.0, "b": 900.0, "c": 800.0, "d": 700.0, "e": 400.0, "f": 150.0, "g": 50.0},
    None,  # withheld: a gap in every line
    {"a": 600.0, "b": 1000.0, "c": 900.0, "d": 700.0, "e": 500.0, "f": 200.0, "g": 100.0},
    {"a": 400.0, "b": 1100.0, "c": 1000.0, "d": 650.0, "e": 550.0, "f": 250.0, "g": 50.0},
]


def longitudinal_task() -> dict[str, Any]:
    """An l-grr task of four daily-like rounds (windows), the second withheld."""
    windows = [
        grr_window(k, 12 if counts is None else 4000 + 500 * k, counts)
        for k, counts in enumerate(SERIES_COUNTS)
    ]
    return grr_task(windows) | {"task": task_id(4), "mechanism": "l-grr", "memoized": True}


def series_geometry(page: Page) -> list[dict[str, Any]]:
    """The series chart's lines: label, path, and per point its data and geometry."""
    return page.evaluate(
        """() => [...document.querySelectorAll('#series-chart g.series')].map((g) => ({
            label: g.dataset.label,
            path: g.querySelector('path.line')?.getAttribute('d') ?? '',
            points: [...g.querySelectorAll('g.point')].map((p) => {
                const ci = p.querySelector('line.ci:not(.cap)');
                const dot = p.querySelector('circle.dot');
                return {
                    start: +p.dataset.start, value: +p.dataset.value, low: +p.dataset.low, high: +p.dataset.high,
                    cx: +dot.getAttribute('cx'), cy: +dot.getAttribute('cy'),
                    top: +ci.getAttribute('y1'), bottom: +ci.getAttribute('y2'),
                };
            }),
        }))"""
    )


@pytest.mark.slow
def test_estimates_per_window_draw_each_values_series_with_its_intervals(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    task = longitudinal_task()
    collector.publish({"tasks": [task]})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#series-chart g.series")
    shown = [w for w in task["windows"] if w["estimates"] is not None]
    # the 6 values with the largest mean proportion over the windows (g is left out), in the table's order
    assert (
        page.locator("#series-select option").first.text_content()
        == "The 6 largest of 7 (by mean over windows)"
    )
    lines = series_geometry(page)
    assert [line["label"] for line in lines] == ["a", "b", "c", "d", "e", "f"]
    assert page.locator("#series-legend li").all_text_contents() == ["a", "b", "c", "d", "e", "f"]
    # every point is its window's proportion and interval / n, all on one linear scale
    pairs = []
    for line in lines:
        expected = [
            next(r for r in w["estimates"] if r["value"] == line["label"])
            | {"n": w["n"], "start": w["start"]}
            for w in shown
        ]
        assert [p["start"] for p in line["points"]] == [e["start"] for e in expected]
        for point, e in zip(line["points"], expected):
            assert (point["value"], point["low"], point["high"]) == pytest.approx(
                (e["proportion"], e["ci_low"] / e["n"], e["ci_high"] / e["n"]), rel=1e-9
            )
            pairs += [
                (point["value"], point["cy"]),
                (point["low"], point["bottom"]),
                (point["high"], point["top"]),
            ]
        # x: one slot per window length, so the withheld window leaves a slot and breaks the line
        xs = [p["cx"] for p in line["points"]]
        assert xs[1] - xs[0] == pytest.approx(2 * (xs[2] - xs[1]), abs=1e-6)
        assert line["path"].count("M") == 2 and line["path"].count("L") == 1
    (v0, y0), (v1, y1) = min(pairs), max(pairs)
    slope = (y1 - y0) / (v1 - v0)
    assert slope < 0  # larger values higher up
    for value, y in pairs:
        assert y == pytest.approx(y0 + slope * (value - v0), abs=1e-6)
    # what the axes measure, and that the windows of a longitudinal task are its rounds
    titles = page.locator("#series-chart text.axis-title").all_text_contents()
    assert titles == ["Round: window start (UTC), one every 1h", "Proportion of the window's reports"]
    assert "each window is one round" in page.locator("#series-caption").text_content()
    # one value alone
    page.locator("#series-select").select_option(label="g")
    page.wait_for_function("document.querySelectorAll('#series-chart g.series').length === 1")
    assert [line["label"] for line in series_geometry(page)] == ["g"]
    # one value alone: its interval as a shaded band too, one area per run of adjacent windows
    assert page.locator("#series-chart g.series path.band").count() == 2
    assert console_errors == []


@pytest.mark.slow
def test_estimates_per_window_need_two_windows_with_estimates(page: Page, collector: Collector) -> None:
    reply = first_reply()  # grr: two windows with estimates; rappor and the mean task: one each
    collector.publish(reply)
    open_dashboard(page, collector.base_url)
    expect(page.locator("#series-section")).to_be_visible()
    assert "round" not in page.locator("#series-caption").text_content()  # not a memoized task
    select_task(page, 1)
    expect(page.locator("#series-section")).to_be_hidden()


@pytest.mark.slow  # ldp serve and Chromium
def test_real_collector_shows_each_attribute_of_a_multi_attribute_task(
    page: Page, tmp_path: Path, console_errors: list[str]
) -> None:
    """A record task: its first attribute's values as bars (the consistent view), then its numeric attribute's mean."""
    import numpy as np
    from collector_server import create_task, envelopes, now_truncated, running, store_path, upload

    from ldp.client import encode_batch
    from ldp.specs.multiattr import MultiAttribute

    spec = MultiAttribute(
        [
            {"name": "os", "mechanism": "grr", "domain": ["l", "m"]},
            {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100},
        ],
        2.0,
    )
    store = store_path(tmp_path)
    task, _ = create_task(store, spec, window="1h", time_precision="1m", min_batch=50)
    records = [{"os": "l" if i % 3 else "m", "ms": float(i % 100)} for i in range(200)]
    reports = list(encode_batch(spec, records, np.random.default_rng(4)).reports(spec))
    with running(store, "--dashboard-public") as server:
        assert upload(server, task, envelopes(reports, now_truncated(task))).json()["accepted"] == 200
        open_dashboard(page, server.url + "/")
        page.wait_for_selector("#estimates-chart g.estimate")
        task_reply = fetch_reply(RealCollector(server.url + "/"))["tasks"][0]
        assert task_reply["kind"] == "records"
        window = latest_with_estimates(task_reply)
        n = window["n"]
        counts = [r for r in window["estimates"] if r["statistic"] == "count"]
        expected = [(r["value"], r["consistent"] / n, r["ci_low"] / n, r["ci_high"] / n) for r in counts]
        assert_bars_match(page, expected)
        caption = page.locator("#estimates-caption").text_content()
        assert "Attribute os, each of its 2 values. Bars: the consistent view (Norm-Sub" in caption
        assert "attribute" in page.locator("#estimates-table thead").text_content()
        assert [a["name"] for a in task_reply["attributes"]] == ["os", "ms"]
        choose(page, "#attribute-select", "ms: mean")
        (mean,) = [r for r in window["estimates"] if r["statistic"] == "mean"]
        assert_bars_match(page, [("ms", mean["estimate"], mean["ci_low"], mean["ci_high"])])
    assert console_errors == []


# ---- what a person reads: empty tasks, labelled axes, phone width, CSV, range and key-value tasks ----------


def real_window(
    spec: Any, values: list[Any], k: int, seed: int = 5, candidates: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Window ``k`` as ``ldp serve``'s dashboard replies it for ``values`` encoded under ``spec`` (min batch 100)."""
    import numpy as np

    from ldp.aggregator.accumulators import make_aggregator
    from ldp.client import encode_batch
    from ldp.collector.candidate_view import top_candidates
    from ldp.collector.service import DASHBOARD_CANDIDATES
    from ldp.collector.tasks import new_task
    from ldp.collector.windows import estimate_reply

    task, _ = new_task(spec, window="1h", time_precision="1m", min_batch=100, candidates=candidates)
    accumulator = make_aggregator(spec)
    accumulator.add_batch(encode_batch(spec, values, np.random.default_rng(seed)))
    reply = top_candidates(estimate_reply(task, accumulator, 0.95), DASHBOARD_CANDIDATES)
    return json.loads(json.dumps({"start": T0 + k * HOUR, "end": T0 + (k + 1) * HOUR, **reply}))


def range_task() -> dict[str, Any]:
    """A range-hierarchy task over 0..31, two windows of 3,000 reports (real estimates, CDF and quantiles)."""
    import numpy as np

    from ldp.specs.ranges import RangeHierarchy

    spec = RangeHierarchy(domain=range(32), epsilon=2.0)
    rng = np.random.default_rng(7)
    windows = [
        real_window(spec, [int(v) for v in np.minimum(rng.geometric(0.12, 3000) - 1, 31)], k, seed=k)
        for k in range(2)
    ]
    return grr_task(windows) | {
        "task": task_id(5),
        "name": "Load time",
        "description": "Page load time in 100 ms steps.",
        "mechanism": "range-hierarchy",
        "min_batch": 100,
        "windows": windows,
    }


def key_value_task() -> dict[str, Any]:
    """A PCKV-UE task: keys a, b, c with values in [-1, 1] (real estimates: frequency and mean per key)."""
    from ldp.specs.key_value import PCKVUE

    spec = PCKVUE(domain=["a", "b", "c"], epsilon=2.0)
    values = [{"a": 0.5}, {"b": -0.2, "c": 1.0}, {"a": -0.4, "c": 0.1}] * 1000
    window = real_window(spec, values, 0)
    return grr_task([window]) | {
        "task": task_id(6),
        "name": "Ratings",
        "description": "",
        "mechanism": "pckv-ue",
        "min_batch": 100,
        "windows": [window],
    }


#: A Bloom RAPPOR task's candidates: eight values reported, 22 never (more than the dashboard's 20).
URLS = tuple(f"https://shop.example/page/{i}" for i in range(30))


def rappor_candidates_task() -> dict[str, Any]:
    """A Bloom RAPPOR task with candidates, two windows of 4,000 reports (real bit estimates and decodes)."""
    import numpy as np

    import ldp

    spec = ldp.Rappor(num_bits=32, num_hashes=2, num_cohorts=8, f="1/4", p="1/4", q="3/4")
    shares = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05])
    rng = np.random.default_rng(11)
    windows = [
        real_window(spec, list(rng.choice(URLS[:8], size=4000, p=shares)), k, seed=k, candidates=URLS)
        for k in range(2)
    ]
    return grr_task(windows) | {
        "task": task_id(8),
        "name": "Pages",
        "description": "Which pages people open (Bloom RAPPOR).",
        "mechanism": "rappor",
        "min_batch": 100,
        "memoized": True,
        "num_candidates": len(URLS),
        "windows": windows,
    }


#: A multi-attribute task's countries: 30 values, more than the window chart's 20.
COUNTRIES = tuple(f"country-{i:02d}" for i in range(30))


def records_task() -> dict[str, Any]:
    """A multi-attribute (SMP) task: os (3 values), ms (a number in [0, 100]) and country (30 values); three
    windows of 3,000 records with real estimates, the os shares and the mean of ms drifting."""
    import numpy as np

    from ldp.collector.windows import record_attributes
    from ldp.specs.multiattr import MultiAttribute

    spec = MultiAttribute(
        [
            {"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "win"]},
            {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100},
            {"name": "country", "mechanism": "oue", "domain": list(COUNTRIES)},
        ],
        4.0,
    )
    rng = np.random.default_rng(13)
    countries = np.array([0.3, 0.2, 0.1, *[0.4 / 27] * 27])
    windows = []
    for k in range(3):
        os_shares = np.array([0.5 - 0.1 * k, 0.3, 0.2 + 0.1 * k])
        records = [
            {"os": o, "ms": float(m), "country": c}
            for o, m, c in zip(
                rng.choice(["linux", "mac", "win"], 3000, p=os_shares),
                np.clip(rng.normal(30 + 10 * k, 10, 3000), 0, 100),
                rng.choice(COUNTRIES, 3000, p=countries / countries.sum()),
            )
        ]
        windows.append(real_window(spec, records, k, seed=20 + k))
    return grr_task(windows) | {
        "task": task_id(9),
        "name": "Sessions",
        "description": "Operating system, load time and country of each session.",
        "mechanism": "multi-attribute",
        "kind": "records",
        "min_batch": 100,
        "attributes": record_attributes(spec),
        "windows": windows,
    }


def records_expectation(window: dict[str, Any], attribute: str) -> list[tuple[str, float, float, float]]:
    """A categorical attribute's bars: each value's consistent view, interval / n, in the table's order."""
    n = window["n"]
    rows = [r for r in window["estimates"] if r["attribute"] == attribute]
    return [(r["value"], r["consistent"] / n, r["ci_low"] / n, r["ci_high"] / n) for r in rows]


def choose(page: Page, select: str, label: str) -> None:
    """Choose ``label`` in the select ``select``; wait until the page redrew with it chosen."""
    page.locator(select).select_option(label=label)
    _wait_until(
        page,
        f"() => document.querySelector({select!r}).selectedOptions[0]?.textContent === {label!r}",
    )


def empty_task() -> dict[str, Any]:
    return grr_task([]) | {"task": task_id(7), "name": "Just created", "description": ""}


def all_kinds_reply() -> dict[str, Any]:
    """Every kind the page draws: frequency (with negatives), Bloom RAPPOR (bits, and decoded candidates), mean,
    range, key-value, multi-attribute, empty."""
    tasks = [
        *first_reply()["tasks"],
        range_task(),
        key_value_task(),
        rappor_candidates_task(),
        records_task(),
        empty_task(),
    ]
    return {"tasks": tasks}


#: What a person cannot read, found in the page as laid out: text under 11 px, text or page wider than the
#: screen, and text boxes of one chart that overlap. Tables scroll inside their box (.scroll), so their
#: cells are checked against that box instead of the screen.
READABILITY = """() => {
    const problems = [];
    const screen = document.documentElement.clientWidth;
    if (document.documentElement.scrollWidth > screen + 1)
        problems.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} > ${screen}`);
    const shown = (e) => e.checkVisibility() && e.getBoundingClientRect().width > 0;
    const name = (e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''} "${e.textContent.trim().slice(0, 40)}"`;
    const texts = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const node = walker.currentNode;
        const parent = node.parentElement;
        if (!node.textContent.trim() || !parent || parent.closest('title, option, script, style')) continue;
        if (shown(parent) && !texts.includes(parent)) texts.push(parent);
    }
    for (const e of texts) {
        const box = e.getBoundingClientRect();
        let size = parseFloat(getComputedStyle(e).fontSize);
        const ctm = e instanceof SVGElement ? e.getScreenCTM() : null;
        if (ctm) size *= Math.hypot(ctm.a, ctm.b);
        if (size < 10.95) problems.push(`${name(e)} is ${size.toFixed(1)} px`);
        const frame = e.closest('.scroll')?.getBoundingClientRect() ?? { left: 0, right: screen };
        if (!e.closest('.scroll') && (box.left < -0.5 || box.right > frame.right + 0.5))
            problems.push(`${name(e)} is off-screen: ${box.left.toFixed(0)}..${box.right.toFixed(0)} of ${screen}`);
    }
    for (const chart of document.querySelectorAll('svg.chart')) {
        const boxes = [...chart.querySelectorAll('text')].filter(shown).map((t) => [t, t.getBoundingClientRect()]);
        for (let i = 0; i < boxes.length; i++)
            for (let j = i + 1; j < boxes.length; j++) {
                const [[a, p], [b, q]] = [boxes[i], boxes[j]];
                const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
                const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
                if (w > 0.5 && h > 0.5) problems.push(`in #${chart.id}: ${name(a)} overlaps ${name(b)}`);
            }
    }
    return problems;
}"""


def chart_texts(page: Page, chart: str, kind: str) -> list[str]:
    return page.locator(f"#{chart} text.{kind}").all_text_contents()


def assert_readable(page: Page, path: Path) -> None:
    """No readability problem, and a screenshot of the whole page (kept under pytest's tmp_path)."""
    assert page.evaluate(READABILITY) == []
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


@pytest.mark.slow  # fast: the page in test_page_loads_and_lists_tasks and test_values_are_text_never_markup
def test_phone_width_is_readable_with_labelled_axes(
    browser: Browser, collector: Collector, tmp_path: Path, console_errors: list[str]
) -> None:
    """At 390 px: text at least 11 px, nothing off-screen, no overlapping text; the charts' labels are there."""
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    try:
        open_dashboard(page, collector.base_url)
        page.wait_for_selector("#estimates-chart g.estimate")
        # charts are drawn at their width on screen: one SVG unit is one CSS pixel
        width = page.evaluate("document.querySelector('#estimates-chart').getBoundingClientRect().width")
        view_box = page.locator("#estimates-chart").get_attribute("viewBox")
        assert float(view_box.split()[2]) == pytest.approx(width, abs=1)
        # the window chart: each bar's count under it, the min-batch line labelled, axes titled, round ticks
        task = fetch_reply(collector)["tasks"][0]
        assert chart_texts(page, "windows-chart", "count") == [f"{w['n']:,}" for w in task["windows"]]
        assert chart_texts(page, "windows-chart", "min-batch-label") == [
            "min batch 1,000: fewer reports are withheld"
        ]
        assert chart_texts(page, "windows-chart", "axis-title") == ["Window start (UTC)", "Reports"]
        ticks = [float(t.replace(",", "")) for t in chart_texts(page, "windows-chart", "tick")[:-2]]
        assert ticks[0] == 0 and len({round(b - a, 9) for a, b in pairwise(ticks)}) == 1
        assert all(t / (ticks[1] - ticks[0]) == round(t / (ticks[1] - ticks[0])) for t in ticks)
        assert chart_texts(page, "estimates-chart", "axis-title") == [
            "Value",
            "Share of the window's reports",
        ]
        # the unbiased estimate of "c" is negative: the caption says why, and that the bars are not
        assert "below zero" in page.locator("#estimates-caption").text_content()
        assert_readable(page, tmp_path / "phone-frequency.png")
    finally:
        context.close()
    assert console_errors == []


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_every_kind_of_task_is_readable_at_desktop_and_phone_widths(
    browser: Browser, collector: Collector, tmp_path: Path, width: int, console_errors: list[str]
) -> None:
    reply = all_kinds_reply()
    collector.publish(reply)
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    try:
        open_dashboard(page, collector.base_url)
        for i, task in enumerate(reply["tasks"]):
            select_task(page, i)
            if task["windows"]:
                page.wait_for_selector("#estimates-section:not([hidden])")
            assert_readable(page, tmp_path / f"{width}-{i}-{task['mechanism']}.png")
    finally:
        context.close()
    assert console_errors == []


@pytest.mark.slow
def test_an_empty_task_says_no_reports_yet(page: Page, collector: Collector) -> None:
    collector.publish({"tasks": [empty_task(), *first_reply()["tasks"]]})
    open_dashboard(page, collector.base_url)
    expect(page.locator("#no-reports")).to_have_text("No reports yet: this task has received no reports.")
    assert page.locator("#windows-chart").is_hidden() and page.locator("#window-select").is_hidden()
    assert page.locator("#estimates-section").is_hidden()
    assert page.locator("#task-about").text_content() == "Just created"
    select_task(page, 1)
    expect(page.locator("#no-reports")).to_be_hidden()
    assert page.locator("#windows-chart").is_visible()


@pytest.mark.slow
def test_a_pruned_window_shows_its_estimates_and_says_its_raw_reports_are_gone(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    """Issue 29: a window whose raw reports the retention deleted keeps its estimates, and the page says so."""
    old = grr_window(0, 4000, {"a": 1000.0, "b": 1000.0, "c": 1000.0, "d": 1000.0, XSS: 0.0}) | {
        "pruned": True
    }
    task = grr_task([old, grr_window(1, 5210, FIRST_COUNTS) | {"pruned": False}]) | {"retain": 90 * 86_400}
    collector.publish({"tasks": [task]})
    open_dashboard(page, collector.base_url)
    assert page.locator("#windows-chart rect.bar.pruned").count() == 1
    expect(page.locator("#pruned-note")).to_be_hidden()  # the latest window still has its reports
    page.select_option("#window-select", str(old["start"]))
    note = page.locator("#pruned-note")
    expect(note).to_be_visible()
    assert note.text_content().startswith(
        "This window's raw reports were deleted by the task's retention (kept 90d after a window ends)"
    )
    assert page.locator("#estimates-table tbody tr").count() == len(old["estimates"])  # the estimates remain
    assert "raw reports deleted" in page.locator("#window-select option:checked").text_content()
    assert console_errors == []


@pytest.mark.slow
def test_a_task_whose_windows_are_all_withheld_follows_the_latest_window(
    page: Page, collector: Collector
) -> None:
    collector.publish({"tasks": [grr_task([grr_window(0, 12, None)])]})
    open_dashboard(page, collector.base_url)
    assert page.locator("#window-select option").first.text_content() == "Latest window"
    expect(page.locator("#withheld")).to_be_visible()


@pytest.mark.slow
def test_range_task_draws_its_cdf_with_its_band_and_lists_its_quantiles(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    task = range_task()
    collector.publish({"tasks": [task]})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#cdf-chart path.cdf-line")
    window = latest_with_estimates(task)
    # the band's upper edge runs through every ci_high, its lower edge back through every ci_low, the line
    # through every cdf: all on one linear scale
    geometry = page.evaluate(
        """() => {
            const chart = document.querySelector('#cdf-chart');
            const points = (d) => d.replace(/[MLZ]/g, ' ').trim().split(/\\s+/).map(Number);
            return {line: points(chart.querySelector('path.cdf-line').getAttribute('d')),
                    band: points(chart.querySelector('path.band').getAttribute('d'))};
        }"""
    )
    cdf = window["cdf"]
    ys = geometry["line"][1::2]
    band = geometry["band"][1::2]
    upper, lower = band[: len(cdf)], band[len(cdf) :][::-1]
    values = [r["cdf"] for r in cdf] + [r["ci_high"] for r in cdf] + [r["ci_low"] for r in cdf]
    pixels = ys + upper + lower
    (v0, y0), (v1, y1) = min(zip(values, pixels)), max(zip(values, pixels))
    slope = (y1 - y0) / (v1 - v0)
    assert slope < 0
    for value, y in zip(values, pixels):
        assert y == pytest.approx(y0 + slope * (value - v0), abs=0.01)  # the path's 2 decimals
    # the quantiles: a table row each, a dot each on the line
    rows = page.locator("#quantiles-table tbody tr")
    assert rows.count() == len(window["quantiles"]) == 5
    assert rows.nth(1).locator("td").all_text_contents()[:2] == ["p50", str(window["quantiles"][1]["value"])]
    assert page.locator("#cdf-chart circle.quantile").count() == 5
    assert chart_texts(page, "cdf-chart", "axis-title") == [
        "Value (in the domain's order)",
        "Share at or below",
    ]
    assert console_errors == []


@pytest.mark.slow
def test_key_value_task_shows_each_keys_frequency_and_mean_with_intervals(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    task = key_value_task()
    collector.publish({"tasks": [task]})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#means-chart g.estimate")
    window = latest_with_estimates(task)
    assert_bars_match(page, frequency_expectation(window))
    means = page.evaluate(
        """() => [...document.querySelectorAll('#means-chart g.estimate')].map((g) =>
            [g.dataset.label, +g.dataset.value, +g.dataset.low, +g.dataset.high])"""
    )
    expected = [[r["value"], r["mean"], r["mean_ci_low"], r["mean_ci_high"]] for r in window["estimates"]]
    assert [m[0] for m in means] == [e[0] for e in expected]
    assert [m[1:] for m in means] == [pytest.approx(e[1:], rel=1e-12) for e in expected]
    assert chart_texts(page, "means-chart", "axis-title") == ["Key", "Mean value"]
    assert console_errors == []


@pytest.mark.slow
def test_rappor_bits_fold_their_per_cohort_table_and_say_how_to_decode(
    page: Page, collector: Collector
) -> None:
    open_dashboard(page, collector.base_url)
    select_task(page, 1)
    assert page.locator("#estimates-details").get_attribute("open") is None
    assert page.locator("#estimates-summary").text_content() == "Per-cohort bit estimates as a table (8 rows)"
    # a task without candidates says how to give it some (issue 29), and shows no candidate table
    assert "ldp task update TASK --candidates FILE" in page.locator("#estimates-caption").text_content()
    assert page.locator("#candidates-block").is_hidden()
    select_task(page, 0)
    assert page.locator("#estimates-details").get_attribute("open") == ""


def candidate_expectation(window: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    n = window["n"]
    rows = window["candidates"]["rows"]
    return [(r["value"], r["estimate"] / n, r["ci_low"] / n, r["ci_high"] / n) for r in rows]


@pytest.mark.slow
@pytest.mark.parametrize("width", [1280, 390])
def test_rappor_candidates_show_the_largest_decoded_with_intervals(
    browser: Browser, collector: Collector, tmp_path: Path, width: int, console_errors: list[str]
) -> None:
    """Issue 29: a Bloom RAPPOR task with candidates shows its windows decoded (the 20 largest, with intervals,
    largest first), how much of the reports they explain, why an interval reaches below zero; its bits folded."""
    task = rappor_candidates_task()
    collector.publish({"tasks": [task]})
    window = task["windows"][-1]
    block = window["candidates"]
    assert len(block["rows"]) == 20 and block["num_candidates"] == 30
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    try:
        open_dashboard(page, collector.base_url)
        page.wait_for_selector("#estimates-chart g.estimate")
        assert_bars_match(page, candidate_expectation(window))
        estimates = [bar["value"] for bar in chart_geometry(page)["bars"]]
        assert estimates == sorted(estimates, reverse=True)
        # each bar labelled with its candidate's start and end: URLs differ at the end
        short = [r["value"][:4] + "…" + r["value"][-7:] for r in block["rows"]]
        assert chart_texts(page, "estimates-chart", "label") == short
        assert chart_texts(page, "estimates-chart", "axis-title") == [
            "Candidate value",
            "Share of the window's reports",
        ]
        caption = page.locator("#estimates-caption").text_content()
        assert "the 20 largest of 30 candidates" in caption
        detected = f"{block['num_detected']} of 30 candidates detected explain "
        assert detected + f"{block['allocated_mass'] * 100:.3g}% of the reports" in caption
        assert "values outside the list: about" in caption
        assert any(r["ci_low"] < 0 for r in block["rows"])  # candidates never reported: noise around zero
        assert "an interval reaching below zero means that candidate is not told apart from zero" in caption
        # the table of what the chart shows, largest first; the bit table folded beneath it
        assert (
            page.locator("#candidates-table caption").text_content()
            == "The 20 largest of 30 decoded candidates"
        )
        cells = page.locator("#candidates-table tbody tr td:first-child").all_text_contents()
        assert cells == [r["value"] for r in block["rows"]]
        header = page.locator("#candidates-table thead th").all_text_contents()
        assert header == [
            "value",
            "estimate",
            "std_error",
            "ci_low",
            "ci_high",
            "proportion",
            "p_value",
            "detected",
        ]
        detected_cells = page.locator("#candidates-table tbody tr td:last-child").all_text_contents()
        assert detected_cells == ["yes" if r["detected"] else "no" for r in block["rows"]]
        assert (
            "GET /v1/tasks/{task}/estimates gives every candidate"
            in page.locator("#candidates-note").text_content()
        )
        assert page.locator("#estimates-details").get_attribute("open") is None
        assert (
            page.locator("#estimates-summary")
            .text_content()
            .startswith("Per-cohort bit estimates as a table")
        )
        # the CSV holds the candidates shown, at full precision
        with page.expect_download() as info:
            page.click("#candidates-csv")
        path = tmp_path / "candidates.csv"
        info.value.save_as(path)
        import csv

        with path.open(newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [row["value"] for row in rows] == [r["value"] for r in block["rows"]]
        assert [float(row["estimate"]) for row in rows] == [r["estimate"] for r in block["rows"]]
        # the series over the two windows follows the candidates, as shares of each window's reports
        page.wait_for_selector("#series-chart g.series")
        assert (
            "Share of the window's reports in each window" in page.locator("#series-caption").text_content()
        )
        assert page.locator("#series-legend li").first.text_content() == URLS[0]
        assert_readable(page, tmp_path / f"{width}-rappor-candidates.png")
    finally:
        context.close()
    assert console_errors == []


@pytest.mark.slow
def test_csv_download_is_what_is_shown(page: Page, collector: Collector, tmp_path: Path) -> None:
    import csv

    open_dashboard(page, collector.base_url)
    window = latest_with_estimates(fetch_reply(collector)["tasks"][0])
    with page.expect_download() as info:
        page.click("#estimates-csv")
    path = tmp_path / "estimates.csv"
    info.value.save_as(path)
    assert info.value.suggested_filename.endswith("-estimates.csv")
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(window["estimates"])
    for row, record in zip(rows, window["estimates"]):
        value = str(record["value"])
        assert row["value"] == (f"'{value}" if value[:1] in "=+-@" else value)
        assert float(row["estimate"]) == record["estimate"]  # full precision
    assert rows[-1]["value"] == XSS  # markup is text in a CSV too
    # the series shown: one row per value and window with estimates
    with page.expect_download() as info:
        page.click("#series-csv")
    info.value.save_as(tmp_path / "series.csv")
    with (tmp_path / "series.csv").open(newline="", encoding="utf-8") as f:
        series = list(csv.DictReader(f))
    assert {r["label"] for r in series} == {"a", "b", "c", "d", XSS}
    assert len(series) == 5 * 2


@pytest.mark.slow
def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(
    page: Page, collector: Collector, tmp_path: Path
) -> None:
    import csv

    counts = {"=1+1": 2000.0, "+cmd": 1000.0, "-2": 1000.0, "@x": 500.0, 'a,"b"': 500.0}
    collector.publish({"tasks": [grr_task([grr_window(0, 5000, counts)])]})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#estimates-chart g.estimate")
    with page.expect_download() as info:
        page.click("#estimates-csv")
    info.value.save_as(tmp_path / "e.csv")
    with (tmp_path / "e.csv").open(newline="", encoding="utf-8") as f:
        values = [row["value"] for row in csv.DictReader(f)]
    assert values == ["'=1+1", "'+cmd", "'-2", "'@x", 'a,"b"']


@pytest.mark.slow
def test_charts_reflow_when_the_page_narrows(page: Page, collector: Collector) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#estimates-chart g.estimate")
    wide = float(page.locator("#estimates-chart").get_attribute("viewBox").split()[2])
    page.set_viewport_size({"width": 390, "height": 844})
    expect(page.locator("#estimates-chart")).not_to_have_attribute("viewBox", re.compile(f"^0 0 {wide:g} "))
    narrow = float(page.locator("#estimates-chart").get_attribute("viewBox").split()[2])
    assert narrow < 400 < wide
    assert page.evaluate(READABILITY) == []


@pytest.mark.slow  # fast: the task table in test_page_loads_and_lists_tasks
def test_a_press_that_a_refresh_lands_in_still_selects_the_task(page: Page, collector: Collector) -> None:
    """A poll with new data redraws the task table between the press and the release of a task's button:
    the release is on the button pressed, so the click selects its task (the table built anew replaced the
    button under the pointer and the click was lost: a task clicked while reports stream in stayed unselected).
    """
    page.clock.install()  # the page's clock runs as usual; fast_forward below makes the next poll due
    open_dashboard(page, collector.base_url)
    button = page.locator("#tasks tbody tr").nth(1).locator("th button")
    expect(button).to_have_attribute("aria-pressed", "false")
    box = button.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    reply = first_reply()
    reply["tasks"][0]["windows"].append(grr_window(3, 20, None))
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#tasks tbody tr").first.locator("td").last).to_have_text("4")  # redrawn
    page.mouse.up()
    expect(button).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#tasks tbody tr.selected th button")).to_have_attribute(
        "title", reply["tasks"][1]["task"]
    )


@pytest.mark.slow  # fast: the window bars in test_frequency_bars_and_error_bars_match_the_intervals
def test_a_press_on_a_window_bar_that_a_refresh_lands_in_still_selects_the_window(
    page: Page, collector: Collector
) -> None:
    """A poll with new data (the latest window's count grows) redraws the reports-per-window chart between
    the press and the release of a window's bar: the release is on the bar pressed, so the click selects its
    window (the chart drawn anew replaced the bar under the pointer and the click was lost)."""
    page.clock.install()  # the page's clock runs as usual; fast_forward below makes the next poll due
    open_dashboard(page, collector.base_url)
    first = page.locator("#windows-chart rect.bar").first
    expect(first).to_have_attribute("data-start", str(T0))
    expect(first).not_to_have_class(re.compile(r"\bselected\b"))  # window 1 is: the latest with estimates
    box = first.bounding_box()
    assert box is not None
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    reply = first_reply()
    reply["tasks"][0]["windows"][2]["n"] = 500  # still withheld, the chart's scale kept
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#windows-chart text.count").last).to_have_text("500")  # redrawn
    page.mouse.up()
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#window-select")).to_have_value(str(T0))
    assert page.locator("#windows-chart rect.bar.selected").count() == 1


@pytest.mark.slow  # fast: the window bars in test_frequency_bars_and_error_bars_match_the_intervals
def test_a_press_on_a_window_bar_that_a_new_window_moves_still_selects_the_window(
    page: Page, collector: Collector
) -> None:
    """A poll brings a new window between the press and the release of a window's bar: the bars narrow and
    the pressed one moves from under the pointer, which does not move. The release where the bar was
    pressed selects its window (it was a release off the bar, and the click was lost)."""
    page.clock.install()  # the page's clock runs as usual; fast_forward below makes the next poll due
    open_dashboard(page, collector.base_url)
    first = page.locator("#windows-chart rect.bar").first
    expect(first).to_have_attribute("data-start", str(T0))
    box = first.bounding_box()
    assert box is not None
    x, y = box["x"] + box["width"] * 0.9, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    reply = first_reply()
    reply["tasks"][0]["windows"].append(grr_window(3, 20, None))
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#windows-chart rect.bar")).to_have_count(4)  # redrawn
    moved = first.bounding_box()
    assert moved is not None and not moved["x"] <= x <= moved["x"] + moved["width"]  # off the bar now
    page.mouse.up()
    expect(first).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#window-select")).to_have_value(str(T0))


@pytest.mark.slow  # fast: the window select in test_withheld_window_shows_its_reason
def test_a_refresh_leaves_an_open_select_as_it_is_until_it_closes(page: Page, collector: Collector) -> None:
    """The window select is open (from the keyboard) on an option when a poll brings a new window: its list
    is left as it is, so Enter chooses the window the person is on (the options rebuilt with the new window
    first moved the list's mark onto the next newer window, and Enter chose that one); once the select
    closes, the page draws the new window's option."""
    page.clock.install()  # the page's clock runs as usual; fast_forward below makes the next poll due
    open_dashboard(page, collector.base_url)
    select = page.locator("#window-select")
    expect(select.locator("option")).to_have_count(4)  # latest with estimates, windows 2, 1, 0
    select.focus()
    page.keyboard.press("Alt+ArrowDown")  # opens the list
    _wait_until(page, "() => document.querySelector('#window-select').matches(':open')")
    for _ in range(3):
        page.keyboard.press("ArrowDown")  # to window 0, in the list: the select's value is unchanged
    expect(select).to_have_value("")
    reply = first_reply()
    reply["tasks"][0]["windows"].append(grr_window(3, 20, None))
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#windows-table tbody tr")).to_have_count(4)  # redrawn
    page.keyboard.press("Enter")
    expect(select).to_have_value(str(T0))
    expect(page.locator("#windows-chart rect.bar.selected")).to_have_attribute("data-start", str(T0))
    expect(select.locator("option")).to_have_count(5)  # closed: the new window is offered
    expect(select.locator("option").nth(1)).to_contain_text(": 20 reports (withheld)")
    assert page.evaluate("document.activeElement.id") == "window-select"


@pytest.mark.slow  # fast: the estimates table in test_frequency_bars_and_error_bars_match_the_intervals
def test_a_refresh_keeps_a_chart_and_a_table_whose_data_is_unchanged(
    page: Page, collector: Collector
) -> None:
    """A poll brings new data for another window (the latest, withheld, gains reports): the shown window's
    estimates are as they were, so its chart and table stay as drawn. Text selected in the table stays
    selected and a bar's tooltip stays over it (the table and the chart drawn anew on every poll with new
    data dropped the selection: a person copying estimates while reports stream in lost it every 2 s)."""
    page.clock.install()  # the page's clock runs as usual; fast_forward below makes the next poll due
    open_dashboard(page, collector.base_url)
    cell = page.locator("#estimates-table tbody tr").first.locator("td").first
    cell.click(click_count=3)  # selects the cell's text
    selected = page.evaluate("window.getSelection().toString()").strip()
    assert selected == cell.text_content()
    page.evaluate("document.querySelector('#estimates-chart g.estimate').dataset.probe = 'drawn'")
    reply = first_reply()
    reply["tasks"][0]["windows"][2]["n"] = 500
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#windows-chart text.count").last).to_have_text("500")  # redrawn
    assert page.evaluate("window.getSelection().toString()").strip() == selected
    assert page.locator("#estimates-chart g.estimate[data-probe=drawn]").count() == 1
    # new estimates for the shown window redraw them
    reply["tasks"][0]["windows"][1] = grr_window(1, 5210, FIRST_COUNTS | {"a": 1500.0})
    collector.publish(reply)
    page.clock.fast_forward(POLL_MS)
    expect(page.locator("#estimates-chart g.estimate[data-probe=drawn]")).to_have_count(0)
    value = page.locator("#estimates-chart g.estimate[data-label=a]").get_attribute("data-value")
    assert float(value or "nan") == pytest.approx(1500 / 5210)


@pytest.mark.slow  # fast: the page in test_page_loads_and_lists_tasks
def test_a_resize_that_keeps_the_width_redraws_nothing(page: Page, collector: Collector) -> None:
    """A resize event at the same width (a phone's toolbar sliding away, a full-page screenshot) leaves the
    charts as drawn: a redraw would replace the window bar under the pointer. A new width still redraws them
    (test_charts_reflow_when_the_page_narrows)."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.clock.install()
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#windows-chart rect.bar")
    page.evaluate("document.querySelector('#windows-chart rect.bar').dataset.probe = 'drawn'")
    page.set_viewport_size({"width": 390, "height": 600})  # a resize event, the width kept
    page.clock.run_for(1000)  # past the resize's wait before a redraw
    assert page.locator("#windows-chart rect.bar[data-probe=drawn]").count() == 1


# ---- multi-attribute records and key-value tasks: per attribute, per window ----------------------------------


@pytest.mark.slow  # about 9 s of Chromium; the fast set keeps test_page_loads_and_lists_tasks and the records
# task's numbers (test_collector_cli.py::test_the_dashboards_windows_equal_aggregate_store_for_each_window[smp])
def test_multi_attribute_task_shows_each_attribute_per_window_with_its_intervals(
    browser: Browser, collector: Collector, tmp_path: Path, console_errors: list[str]
) -> None:
    """A records task, one attribute at a time (chosen above the window's chart or above the series, one
    choice): a categorical attribute's values as the consistent view with the unbiased intervals (the 20
    largest when it has more), a numeric attribute's mean with its interval; each per window with its band;
    readable at a phone's width."""
    import csv

    task = records_task()
    collector.publish({"tasks": [task]})
    context = browser.new_context(viewport={"width": 390, "height": 844}, accept_downloads=True)
    page = context.new_page()
    page.on("pageerror", lambda error: console_errors.append(str(error)))
    try:
        open_dashboard(page, collector.base_url)
        page.wait_for_selector("#estimates-chart g.estimate")
        window = task["windows"][-1]
        # the first attribute by default; every attribute offered, in spec order, in both selectors
        offered = [
            "os: 3 values",
            "ms: mean",
            "country: 30 values",
        ]
        assert page.locator("#attribute-select option").all_text_contents() == offered
        assert page.locator("#series-view-select option").all_text_contents() == offered
        assert page.locator("#series-view-label").text_content() == "Attribute"
        assert_bars_match(page, records_expectation(window, "os"))
        caption = page.locator("#estimates-caption").text_content()
        assert "Attribute os, each of its 3 values. Bars: the consistent view (Norm-Sub" in caption
        assert "unbiased estimate's 95% confidence interval" in caption
        assert chart_texts(page, "estimates-chart", "axis-title") == [
            "Value of os",
            "Share of the window's records",
        ]
        # the series: each value of os in each window, the consistent view / n, with the intervals
        lines = series_geometry(page)
        assert [line["label"] for line in lines] == ["linux", "mac", "win"]
        for line in lines:
            expected = [
                next(r for r in w["estimates"] if r["attribute"] == "os" and r["value"] == line["label"])
                | {"n": w["n"]}
                for w in task["windows"]
            ]
            got = [(p["value"], p["low"], p["high"]) for p in line["points"]]
            assert got == [
                pytest.approx(
                    (e["consistent"] / e["n"], e["ci_low"] / e["n"], e["ci_high"] / e["n"]), rel=1e-9
                )
                for e in expected
            ]
        assert (
            "Attribute os: points are the consistent view (Norm-Sub)"
            in page.locator("#series-caption").text_content()
        )
        assert chart_texts(page, "series-chart", "axis-title")[1] == "Share of the window's records"
        assert_readable(page, tmp_path / "records-os.png")

        # a numeric attribute, chosen above the series: both charts show its mean with its interval
        choose(page, "#series-view-select", offered[1])
        _wait_until(page, "() => document.querySelector('#attribute-select').selectedOptions[0].index === 1")
        mean = next(r for r in window["estimates"] if r["attribute"] == "ms")
        assert_bars_match(page, [("ms", mean["estimate"], mean["ci_low"], mean["ci_high"])])
        assert chart_texts(page, "estimates-chart", "axis-title") == ["Attribute", "Mean of ms"]
        assert "Attribute ms: its mean over the" in page.locator("#estimates-caption").text_content()
        (line,) = series_geometry(page)
        assert [(p["value"], p["low"], p["high"]) for p in line["points"]] == [
            pytest.approx((r["estimate"], r["ci_low"], r["ci_high"]), rel=1e-12)
            for w in task["windows"]
            for r in w["estimates"]
            if r["attribute"] == "ms"
        ]
        assert page.locator("#series-chart g.series path.band").count() == 1  # one line: its band
        expect(page.locator("#series-picker")).to_be_hidden()  # nothing else to show
        assert chart_texts(page, "series-chart", "axis-title")[1] == "Mean of ms"
        assert_readable(page, tmp_path / "records-ms.png")

        # a categorical attribute of 30 values: the window's 20 largest, largest first
        choose(page, "#attribute-select", offered[2])
        rows = sorted(records_expectation(window, "country"), key=lambda r: -r[1])[:20]
        assert_bars_match(page, rows)
        assert (
            "Attribute country, the 20 largest of its 30 values"
            in page.locator("#estimates-caption").text_content()
        )
        assert (
            page.locator("#series-select option").first.text_content()
            == "The 6 largest of 30 (by mean over windows)"
        )
        assert_readable(page, tmp_path / "records-country.png")
        # the series' CSV names the attribute beside each value: the six shown, each in the three windows
        with page.expect_download() as info:
            page.click("#series-csv")
        info.value.save_as(tmp_path / "series.csv")
        with (tmp_path / "series.csv").open(newline="", encoding="utf-8") as f:
            series = list(csv.DictReader(f))
        assert {r["attribute"] for r in series} == {"country"} and len(series) == 6 * 3
        assert set(COUNTRIES[:3]) <= {r["label"] for r in series}  # 30 %, 20 % and 10 % of the records
    finally:
        context.close()
    assert console_errors == []


def key_value_series_task() -> dict[str, Any]:
    """A PCKV-UE task of two windows (real estimates), the mean of key a moving from 0.5 to -0.5."""
    from ldp.specs.key_value import PCKVUE

    spec = PCKVUE(domain=["a", "b", "c"], epsilon=2.0)
    windows = [
        real_window(spec, [{"a": value}, {"b": -0.2, "c": 1.0}, {"a": -0.4, "c": 0.1}] * 1000, k, seed=30 + k)
        for k, value in enumerate((0.5, -0.5))
    ]
    return key_value_task() | {"windows": windows}


@pytest.mark.slow
def test_key_value_task_shows_each_keys_frequency_and_mean_per_window(
    page: Page, collector: Collector, console_errors: list[str]
) -> None:
    task = key_value_series_task()
    collector.publish({"tasks": [task]})
    open_dashboard(page, collector.base_url)
    page.wait_for_selector("#series-chart g.series")
    assert page.locator("#series-view-label").text_content() == "Estimate"
    assert page.locator("#series-view-select option").all_text_contents() == [
        "Each key's frequency",
        "Each key's mean value",
    ]
    expect(page.locator("#attribute-picker")).to_be_hidden()

    def points(column: str, low: str, high: str, scale: bool) -> dict[str, list[Any]]:
        """Each key's points: ``column`` (a share or a mean), its interval (counts divided by n when ``scale``)."""
        out: dict[str, list[Any]] = {}
        for w in task["windows"]:
            for r in w["estimates"]:
                n = w["n"] if scale else 1
                out.setdefault(r["value"], []).append(
                    pytest.approx((r[column], r[low] / n, r[high] / n), rel=1e-9)
                )
        return out

    def drawn() -> dict[str, list[tuple[float, float, float]]]:
        return {
            line["label"]: [(p["value"], p["low"], p["high"]) for p in line["points"]]
            for line in series_geometry(page)
        }

    assert drawn() == points("proportion", "ci_low", "ci_high", scale=True)
    assert "Each key's frequency" in page.locator("#series-caption").text_content()
    choose(page, "#series-view-select", "Each key's mean value")
    assert drawn() == points("mean", "mean_ci_low", "mean_ci_high", scale=False)
    assert chart_texts(page, "series-chart", "axis-title")[1] == "Mean value of the key"
    assert (
        "Each key's mean value among the reports that hold it"
        in page.locator("#series-caption").text_content()
    )
    # the window's own charts are unchanged: the frequency bars and the means chart
    assert_bars_match(page, frequency_expectation(latest_with_estimates(task)))
    assert page.locator("#means-chart g.estimate").count() == 3
    assert console_errors == []
