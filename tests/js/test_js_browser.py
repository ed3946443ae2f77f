"""The TypeScript client's web bundle (js/src/web.ts) in headless Chromium against a real ``ldp serve``.

A static server on 127.0.0.1 (another port, so another origin: the collector's
tasks allow it by ``cors_origins``) serves a test page that loads the bundle.
Checked in the browser: the RAPPOR client state in IndexedDB is created once and
survives reloads (same secret, cohort and permanent response), and so does a
longitudinal chain's (whose memo is Python's for the same secret); the Uploader
spools envelopes in IndexedDB before sending, uploads them, keeps them through
a reload while the collector is down and sends them exactly once when it is
back; ``sendBeacon`` on page hide delivers the spooled envelopes when the page
goes away (the beacon's body is ``text/plain``: see docs/collector.md#upload).
And the self-contained browser build (``npm run build:web``, js/dist/web/)
loads in a page by ``<script type="module">`` with no bundler: two entry points
share their chunks (each file fetched once), and the spec is loaded across
origins with the fingerprint of the task's JSON body (docs/web-client.md).

Skipped, with the reason, when Chromium is missing; js/ is installed and built once per session by the
``js_dist`` fixture (tests/js_build.py: skipped without node, failing then under CI).
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from collector_server import Server, create_task, free_port, store_path

import ldp
from ldp.client import ClientState, make_encoder
from ldp.specs.longitudinal import LGRR

JS = Path(__file__).resolve().parents[2] / "js"
ESBUILD = JS / "node_modules" / ".bin" / "esbuild"
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
    print(f"test_js_browser skipped: {reason}")
    pytest.skip(reason, allow_module_level=True)

from playwright.sync_api import Browser, Page, sync_playwright  # noqa: E402 (after the module-level skip)

# Slow set: every test here starts Chromium, an esbuild bundle and ``ldp serve`` processes. What covers the same
# behaviour in the fast set: Chromium in test_collector_dashboard's page test (its one browser test); the
# Uploader's spool, retries, outage and beacon copy in js/test/client.test.ts and js/test/browser.test.ts (the
# browser stores through their localStorage fallback; `npm test`, run by .ci/run); a replayed envelope counted
# once and CORS per task in test_collector_server (the fast set's shared ``ldp serve``). Under pytest-xdist the
# tests of this module run on one worker, so its Chromium and static sites start once.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("js_browser")]

# The web bundle, plus RapporEncoder to read the permanent response the client state gives.
ENTRY = f"""
export * from "{JS / "src" / "web.ts"}";
export {{ RapporEncoder }} from "{JS / "src" / "encoders.ts"}";
export {{ toHex }} from "{JS / "src" / "bytes.ts"}";
"""

PAGE = """<!doctype html><meta charset="utf-8"><title>ldp test page</title>
<script type="module" src="harness.js"></script>"""
AWAY = """<!doctype html><meta charset="utf-8"><title>away</title><p>another page"""

HARNESS = """
import * as ldp from "./ldp-web.js";

const store = ldp.defaultStore();

/** A key of the client's IndexedDB store, read directly (not through the library). */
function rawGet(key) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("ldp-client");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction("kv").objectStore("kv").get(key);
      get.onsuccess = () => { open.result.close(); resolve(get.result ?? null); };
      get.onerror = () => reject(get.error);
    };
  });
}

async function taskSpec(url, task) {
  return (await ldp.fetchTaskSpec(url, task)).spec; // the fingerprint from the task's JSON body
}

const uploader = (url, task, spool) => new ldp.Uploader(url, task, spool, { retries: 0 });

window.harness = {
  async client(url, task) {
    const spec = await taskSpec(url, task);
    const client = await ldp.openBrowserClient(store, spec);
    const prr = new ldp.RapporEncoder(spec, client).permanentBits("red");
    return {
      secret: ldp.toHex(client.secret),
      cohort: client.cohort,
      prr: prr.toString(),
      stored: await rawGet(`state:${spec.fingerprint}`),
    };
  },
  async chain(url, task, values) {
    // a longitudinal chain's client: its memo of each domain value comes from the stored secret
    const spec = await taskSpec(url, task);
    const client = await ldp.openBrowserClient(store, spec);
    const encoder = ldp.makeEncoder(spec, { client });
    const memo = spec.fields.domain.map((value) => encoder.memoIndex(value));
    const up = uploader(url, task, new ldp.BrowserSpool(store));
    await up.enqueue(values.map((v) => ldp.reportToJson(encoder.encode(v))));
    const summary = await up.flush();
    return { secret: ldp.toHex(client.secret), cohort: client.cohort, memo, accepted: summary.accepted,
             stored: await rawGet(`state:${spec.fingerprint}`) };
  },
  async enqueue(url, task, values) {
    const spec = await taskSpec(url, task);
    const encoder = ldp.makeEncoder(spec);
    const lines = await uploader(url, task, new ldp.BrowserSpool(store)).enqueue(
      values.map((v) => ldp.reportToJson(encoder.encode(v))),
    );
    return { lines, spooled: JSON.parse(await rawGet("spool")) };
  },
  async flush(url, task) {
    try {
      return { summary: await uploader(url, task, new ldp.BrowserSpool(store)).flush() };
    } catch (error) {
      return { error: String(error) };
    }
  },
  async spool() {
    return JSON.parse((await rawGet("spool")) ?? "[]");
  },
  async installBeacon(url, task) {
    const spool = new ldp.BrowserSpool(store);
    await spool.load();
    const up = uploader(url, task, spool);
    await up.taskInfo();  // the beacon builds envelopes from the task's settings: armed once they are known
    up.installBeacon(() => spool.cached);
    return spool.cached.length;
  },
};
window.harnessReady = true;
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, js_dist: Path) -> Iterator[str]:
    """The bundle and the test page on a static server at 127.0.0.1 (a free port); yields its origin."""
    root = tmp_path_factory.mktemp("site")
    entry = root / "entry.ts"
    entry.write_text(ENTRY)
    built = subprocess.run(
        [
            ESBUILD,
            entry,
            "--bundle",
            "--format=esm",
            "--platform=browser",
            f"--outfile={root / 'ldp-web.js'}",
        ],
        cwd=JS,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr
    (root / "index.html").write_text(PAGE)
    (root / "away.html").write_text(AWAY)
    (root / "harness.js").write_text(HARNESS)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


WEB_PAGE = """<!doctype html><meta charset="utf-8"><title>ldp without a bundler</title>
<script type="module">
import * as ldp from "./web/index.js";
import * as storage from "./web/browser.js";
window.ldpWeb = { ldp, storage };
window.webReady = true;
</script>"""


@pytest.fixture(scope="module")
def web_site(tmp_path_factory: pytest.TempPathFactory, js_dist: Path) -> Iterator[str]:
    """js/dist/web (``npm run build:web``, part of the session's build) and a page importing two of its
    entry points, on a static server."""
    root = tmp_path_factory.mktemp("web-site")
    shutil.copytree(JS / "dist" / "web", root / "web")
    (root / "index.html").write_text(WEB_PAGE)
    handler = functools.partial(_Quiet, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def page(browser: Browser, site: str) -> Iterator[Page]:
    """A fresh context (its own IndexedDB) with the test page loaded."""
    context = browser.new_context()
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda e: errors.append(str(e)))
    _load(opened, site)
    try:
        yield opened
    finally:
        context.close()
    assert errors == []


def _load(page: Page, site: str) -> None:
    page.goto(f"{site}/index.html")
    page.wait_for_function("window.harnessReady === true", timeout=10_000)


def _reload(page: Page) -> None:
    page.reload()
    page.wait_for_function("window.harnessReady === true", timeout=10_000)


def _call(page: Page, name: str, *args: Any) -> Any:
    return page.evaluate(f"(args) => window.harness.{name}(...args)", list(args))


def _n(server: Server, task_id: str, token: str) -> int:
    reply = httpx.get(
        f"{server.url}/v1/tasks/{task_id}/estimates", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert reply.status_code == 200, reply.text
    return reply.json()["n"]


def _task(store: str, spec: Any, site: str) -> tuple[str, str]:
    """A new task of ``spec`` in ``store`` that the page at ``site`` may upload to: its id and token."""
    task, token = create_task(
        store, spec, window="1h", time_precision="1m", min_batch=1, cors_origins=(site,)
    )
    return task.task_id, token


@contextlib.contextmanager
def _collector(tmp_path: Path, spec: Any, site: str) -> Iterator[tuple[Server, str, str, str]]:
    """A collector of its own, with one task: for a test that stops and restarts it."""
    store = store_path(tmp_path)
    task_id, token = _task(store, spec, site)
    server = Server(store, "--rate-limit", "0")
    try:
        yield server, store, task_id, token
    finally:
        server.stop()


@pytest.fixture(scope="module")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One collector for the tests that leave it running; each adds its own task (found while serving)."""
    server = Server(store_path(tmp_path_factory.mktemp("collector")), "--rate-limit", "0")
    try:
        yield server
    finally:
        server.stop()


GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


def test_client_state_is_created_once_in_indexeddb_and_survives_a_reload(page, site, collector):
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=8, f=0.5, p=0.25, q=0.75)
    task_id, _ = _task(collector.store, spec, site)
    first = _call(page, "client", collector.url, task_id)
    assert first["stored"] is not None and first["secret"] in first["stored"]  # in IndexedDB itself
    assert len(first["secret"]) == 64 and 0 <= first["cohort"] < 8
    for _ in range(2):
        _reload(page)
        assert _call(page, "client", collector.url, task_id) == first  # same secret, cohort, PRR


def test_a_longitudinal_clients_secret_is_created_once_in_indexeddb_and_gives_pythons_memo(
    page, site, tmp_path
):
    spec = LGRR(domain=("a", "b", "c", "d", "e"), epsilon=1.0)
    with _collector(tmp_path, spec, site) as (server, _, task_id, token):
        first = _call(page, "chain", server.url, task_id, ["a", "b", "c"])  # round 1
        assert first["stored"] is not None and first["secret"] in first["stored"]  # in IndexedDB itself
        assert len(first["secret"]) == 64 and first["cohort"] == 0 and first["accepted"] == 3
        _reload(page)
        second = _call(page, "chain", server.url, task_id, ["a", "b", "d"])  # round 2, after a reload
        assert (second["secret"], second["memo"], second["stored"]) == (
            first["secret"],
            first["memo"],
            first["stored"],
        )
        # the memo is the one Python's client derives from the same secret
        state = ClientState(spec=spec.fingerprint, secret=bytes.fromhex(first["secret"]), cohort=0)
        assert [make_encoder(spec, state=state).memo(v) for v in spec.domain] == first["memo"]
        assert _n(server, task_id, token) == 6


def test_uploader_spools_in_indexeddb_and_sends_each_envelope_once_across_a_collector_outage(
    page, site, tmp_path
):
    with _collector(tmp_path, GRR, site) as (server, store, task_id, token):
        done = _call(page, "enqueue", server.url, task_id, ["a", "b", "c", "a"])
        assert done["spooled"] == done["lines"] and len(done["lines"]) == 4  # spooled before any send
        assert _n(server, task_id, token) == 0
        reply = _call(page, "flush", server.url, task_id)
        assert reply["summary"]["accepted"] == 4 and reply["summary"]["rejected"] == []
        assert _call(page, "spool") == [] and _n(server, task_id, token) == 4

        later = _call(page, "enqueue", server.url, task_id, ["b", "b", "c"])["lines"]
        server.stop()  # the collector goes away
        assert "gave up" in _call(page, "flush", server.url, task_id)["error"]
        _reload(page)
        assert _call(page, "spool") == later  # kept across the reload

        back = Server(store, "--rate-limit", "0", port=server.port)
        try:
            _reload(page)
            reply = _call(page, "flush", back.url, task_id)["summary"]
            assert reply["accepted"] + reply["replayed"] == 3 and reply["rejected"] == []
            assert _call(page, "spool") == []
            assert _call(page, "flush", back.url, task_id)["summary"]["batches"] == 0
            assert _n(back, task_id, token) == 7  # each envelope counted once
        finally:
            back.stop()


def test_send_beacon_on_pagehide_delivers_the_spool(page, site, collector):
    task_id, token = _task(collector.store, GRR, site)
    lines = _call(page, "enqueue", collector.url, task_id, ["a", "c", "c"])["lines"]
    assert _call(page, "installBeacon", collector.url, task_id) == 3
    page.goto(f"{site}/away.html")  # pagehide: the spool goes out by navigator.sendBeacon
    deadline = time.monotonic() + 10
    while _n(collector, task_id, token) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _n(collector, task_id, token) == 3

    # best effort: the beaconed envelopes stay spooled, and the next flush finds them stored
    _load(page, site)
    assert _call(page, "spool") == lines
    reply = _call(page, "flush", collector.url, task_id)["summary"]
    assert reply == {"accepted": 0, "replayed": 3, "rejected": [], "batches": 1, "retries": 0}
    assert _n(collector, task_id, token) == 3


WEB_CHECK = """async ([url, task]) => {
  const { ldp, storage } = window.ldpWeb;
  const { spec, fingerprintFrom } = await ldp.fetchTaskSpec(url, task);
  const report = ldp.makeEncoder(spec).encode("b");
  const spool = new storage.BrowserSpool(storage.defaultStore(), "web-test");
  const uploader = new ldp.Uploader(url, task, spool, { fingerprint: spec.fingerprint });
  const records = await uploader.enqueue([ldp.reportToJson(report)]);
  const summary = await uploader.flush();
  // the spec's ETag from another origin: unreadable unless the collector exposes it
  const served = await fetch(`${url}/v1/tasks/${task}/spec`);
  const etag = served.headers.get("ETag");
  let etagLoad;
  try {
    etagLoad = ldp.loadSpec(await served.text(), etag).fingerprint;
  } catch (error) {
    etagLoad = String(error);
  }
  const scripts = performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => p.endsWith(".js"));
  return { fingerprint: spec.fingerprint, fingerprintFrom, value: report.value, records: records.length,
           accepted: summary.accepted, etag, etagLoad, scripts };
}"""


def test_the_browser_build_loads_without_a_bundler_and_reads_the_spec_across_origins(
    browser, web_site, collector
):
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{web_site}/index.html")
        page.wait_for_function("window.webReady === true", timeout=10_000)
        task_id, token = _task(collector.store, GRR, web_site)
        got = page.evaluate(WEB_CHECK, [collector.url, task_id])
        assert got["fingerprint"] == GRR.fingerprint and got["fingerprintFrom"] == "body"
        assert got["value"] in ("a", "b", "c") and got["records"] == 1 and got["accepted"] == 1
        assert _n(collector, task_id, token) == 1
        if got["etag"] is None:  # not exposed to this origin: loadSpec says why and where to look
            assert "no expected spec fingerprint (got null)" in got["etagLoad"]
        else:  # exposed (Access-Control-Expose-Headers): its quotes are removed
            assert got["etagLoad"] == GRR.fingerprint
        scripts = got["scripts"]
        assert len(scripts) == len(set(scripts))  # every module fetched once
        assert {"/web/index.js", "/web/browser.js"} <= set(scripts)
        assert any("/web/chunk-" in p for p in scripts)  # the shared code, in a chunk both import
    finally:
        context.close()
    assert errors == []
