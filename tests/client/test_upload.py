"""``ldp upload`` and ldp.client.upload against a real ``ldp serve`` (docs/collector.md#uploading-reports)."""

from __future__ import annotations

import base64
import http.server
import json
import multiprocessing
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from collector_server import Server, create_task, store_path
from collector_server import estimates as collector_estimates

import ldp
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.client import upload as upload_module
from ldp.client.upload import (
    MAX_BODY_BYTES,
    Uploader,
    UploadError,
    batch_bounds,
    default_envelopes_path,
    make_envelopes,
    upload_reports,
)
from ldp.collector.store import open_store
from ldp.errors import InputError, ParameterError

# under pytest-xdist the tests of this module run on the worker of test_collector_server, so the session's
# shared `ldp serve` (conftest's shared_collector) starts once
pytestmark = pytest.mark.xdist_group("collector_server")

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)


def _run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


def _write_reports(path: Path, spec, values, seed=1) -> Path:
    reports = encode_batch(spec, values, np.random.default_rng(seed)).reports(spec)
    path.write_text("".join(r.to_json() + "\n" for r in reports))
    return path


def _grr_reports(path: Path, n: int, seed: int = 1) -> Path:
    values = list(np.random.default_rng(seed).choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]))
    return _write_reports(path, GRR, values, seed)


def _stored_ids(store: str, task_id: str) -> list[str]:
    with open_store(store) as opened:
        return [
            base64.urlsafe_b64encode(r.report_id).rstrip(b"=").decode()
            for chunk in opened.reports(task_id)
            for r in chunk
        ]


def _envelope_ids(path: Path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """A collector of this module's own (no rate limit), for the test that restarts it: the first process and
    any restarts of it, on one port."""
    started = [Server(store_path(tmp_path_factory.mktemp("collector")), "--rate-limit", "0")]
    yield started
    for process in started:
        process.stop()


@pytest.fixture
def server(shared_collector):
    """The session's collector (conftest's shared_collector, no rate limit); each test makes its own tasks."""
    return shared_collector


def _task(server, spec=GRR, **options):
    return create_task(server.store, spec, window="1h", time_precision="1m", min_batch=1, **options)


class _Recorder:
    """Records every request urllib sends (method, URL, body) and passes it on."""

    def __init__(self, monkeypatch):
        self.requests: list[tuple[str, str, bytes | None]] = []
        real = urllib.request.urlopen

        def urlopen(request, *args, **kwargs):
            self.requests.append((request.get_method(), request.full_url, request.data))
            return real(request, *args, **kwargs)

        monkeypatch.setattr(upload_module.urllib.request, "urlopen", urlopen)

    def posts(self) -> list[bytes]:
        return [body for method, _, body in self.requests if method == "POST" and body is not None]


def test_encode_upload_estimates_equal_aggregate_and_a_rerun_stores_nothing_twice(server, tmp_path):
    task, token = _task(server)
    spec_path, values_path = tmp_path / "spec.json", tmp_path / "values.txt"
    spec_path.write_text(GRR.to_json())
    values_path.write_text("\n".join(["a"] * 300 + ["b"] * 150 + ["c"] * 50) + "\n")
    reports = tmp_path / "reports.jsonl"
    assert _run("encode", "--spec", spec_path, values_path, "-o", reports).exit_code == 0

    first = _run("upload", "--to", server.url, "--task", task.task_id, reports, "--batch-size", "200")
    assert first.exit_code == 0, first.output
    assert first.stderr.strip() == "500 reports: 500 accepted, 0 already stored, 0 rejected"
    envelopes = tmp_path / "reports.envelopes.jsonl"
    stored = envelopes.read_bytes()
    assert len(stored.splitlines()) == 500

    estimates = collector_estimates(server, task, token).json()
    out = tmp_path / "est.parquet"
    assert _run("aggregate", "--spec", spec_path, reports, "-o", out).exit_code == 0
    assert estimates["n"] == 500
    pd.testing.assert_frame_equal(
        pd.DataFrame(estimates["estimates"]), pd.read_parquet(out), check_exact=True, check_dtype=False
    )

    again = _run("upload", "--to", server.url, "--task", task.task_id, reports)
    assert again.exit_code == 0, again.output
    assert again.stderr.strip() == "500 reports: 0 accepted, 500 already stored, 0 rejected"
    assert envelopes.read_bytes() == stored  # the same envelopes, not new ones
    assert sorted(_stored_ids(server.store, task.task_id)) == sorted(_envelope_ids(envelopes))


@pytest.mark.slow  # restarts a server; fast: the in-process retry test below, test_collector_store's kill -9 of a writer
def test_a_server_killed_mid_upload_is_retried_and_every_report_is_stored_once(servers, tmp_path):
    live = servers[-1]
    task, _ = _task(live)
    reports = _grr_reports(tmp_path / "reports.jsonl", 1_000)
    restart = threading.Thread(
        target=lambda: servers.append(Server(live.store, "--rate-limit", "0", port=live.port))
    )

    def kill_after_a_few_batches(acknowledged: int) -> None:
        if acknowledged == 300:
            live.kill()  # kill -9 between two batches: the next one finds nobody listening
            restart.start()

    envelopes, summary = upload_reports(
        live.url,
        task.task_id,
        reports,
        batch_size=100,
        backoff=0.1,
        max_backoff=0.5,
        retries=200,
        progress=kill_after_a_few_batches,
    )
    restart.join(30)
    assert len(servers) >= 2 and servers[-1].process.poll() is None
    assert (summary.accepted, summary.replayed, summary.rejected) == (1_000, 0, [])
    assert summary.retries >= 1 and summary.attempts == summary.batches + summary.retries
    stored = _stored_ids(live.store, task.task_id)
    assert len(stored) == 1_000 and set(stored) == set(_envelope_ids(envelopes.path))


def test_batches_stay_under_one_mebibyte_and_a_thousand_envelopes(server, tmp_path, monkeypatch):
    rappor = ldp.Rappor(num_bits=8192, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4")
    task, _ = _task(server, rappor)
    reports = _write_reports(tmp_path / "rappor.jsonl", rappor, ["x", "y"] * 750)
    recorder = _Recorder(monkeypatch)
    _, summary = upload_reports(server.url, task.task_id, reports)
    bodies = recorder.posts()
    assert (summary.accepted, summary.batches, len(bodies)) == (1_500, len(bodies), len(bodies))
    assert len(bodies) == 3  # 1,500 envelopes of about 1.4 kB each: split by size, not by count
    assert all(len(body) <= MAX_BODY_BYTES for body in bodies)
    assert sum(body.count(b"\n") for body in bodies) == 1_500

    small = _grr_reports(tmp_path / "grr.jsonl", 250)
    lines = make_envelopes(small, tmp_path / "grr.envelopes.jsonl", 60).lines
    summary = Uploader(server.url, _task(server)[0].task_id, batch_size=100, max_body=2_000).upload(lines)
    bodies = recorder.posts()[3:]
    assert summary.accepted == 250 and len(bodies) == summary.batches > 250 * 80 // 2_000
    assert all(len(body) <= 2_000 and body.count(b"\n") <= 100 for body in bodies)


def test_batch_bounds_respect_both_limits():
    lines = [b"x" * size for size in (10, 10, 10, 30, 5, 5, 5, 5, 5)]
    assert list(batch_bounds(lines, 3, 40)) == [(0, 3), (3, 5), (5, 8), (8, 9)]
    assert list(batch_bounds(lines, 2, 1_000)) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 9)]
    with pytest.raises(ParameterError, match="max_body=20"):
        list(batch_bounds(lines, 10, 20))
    with pytest.raises(ParameterError, match="envelope 2 of envelope_lines holds a line break"):
        list(batch_bounds([b"{}", b"{}\n{}"], 10, 1_000))


def test_unusable_envelopes_are_input_errors(tmp_path):
    """An envelope with a line break or too large for one upload, an envelope file that does not match its
    reports or cannot be read: each an InputError (the data is at fault, not an option)."""
    with pytest.raises(InputError, match="max_body=20"):
        list(batch_bounds([b"x" * 30], 10, 20))
    with pytest.raises(InputError, match="line break"):
        list(batch_bounds([b"{}\n{}"], 10, 1_000))
    reports = _grr_reports(tmp_path / "reports.jsonl", 20)
    make_envelopes(reports, tmp_path / "reports.envelopes.jsonl", 60)
    _grr_reports(reports, 21)
    with pytest.raises(InputError, match="20 envelopes for 21 reports"):
        make_envelopes(reports, tmp_path / "reports.envelopes.jsonl", 60)
    (tmp_path / "a-directory").mkdir()
    with pytest.raises(InputError, match="cannot read"):
        make_envelopes(reports, tmp_path / "a-directory", 60)


def test_reports_of_another_spec_are_refused_before_anything_is_sent(server, tmp_path, monkeypatch):
    task, _ = _task(server)
    other = ldp.GRR(domain=("a", "b", "c"), epsilon=2.0)
    reports = _write_reports(tmp_path / "reports.jsonl", other, ["a", "b"])
    recorder = _Recorder(monkeypatch)
    with pytest.raises(ParameterError) as error:
        upload_reports(server.url, task.task_id, reports)
    assert other.fingerprint in str(error.value) and GRR.fingerprint in str(error.value)
    assert [method for method, _, _ in recorder.requests] == ["GET"]  # the task lookup only
    assert not default_envelopes_path(reports).exists()

    result = _run("upload", "--to", server.url, "--task", task.task_id, reports)
    assert result.exit_code == 2 and "REPORTS" in result.stderr and GRR.fingerprint in result.stderr
    assert _stored_ids(server.store, task.task_id) == []


def test_an_envelope_file_that_no_longer_matches_its_reports_is_refused(server, tmp_path):
    task, _ = _task(server)
    reports = _grr_reports(tmp_path / "reports.jsonl", 20)
    envelopes = tmp_path / "reports.envelopes.jsonl"
    made = make_envelopes(reports, envelopes, 60)
    assert made.created and not make_envelopes(reports, envelopes, 60).created
    assert make_envelopes(reports, envelopes, 60, now=0).lines == made.lines  # reused as is

    _grr_reports(reports, 20, seed=2)  # re-randomized: other reports, same count
    with pytest.raises(ParameterError, match="does not match"):
        make_envelopes(reports, envelopes, 60)
    result = _run("upload", "--to", server.url, "--task", task.task_id, reports)
    assert result.exit_code == 2
    assert "--envelopes" in result.stderr and "does not match" in result.stderr
    _grr_reports(reports, 21)  # one report more
    with pytest.raises(ParameterError, match="20 envelopes for 21 reports"):
        make_envelopes(reports, envelopes, 60)
    assert _stored_ids(server.store, task.task_id) == []


def test_rejected_reports_are_listed_with_their_lines_and_exit_1(server, tmp_path):
    task, _ = _task(server)
    reports = _grr_reports(tmp_path / "reports.jsonl", 5)
    lines = reports.read_text().splitlines()
    lines.insert(2, json.dumps({"v": 1, "spec": GRR.fingerprint, "value": "zzz"}))
    reports.write_text("\n".join(lines) + "\n")
    result = _run("upload", "--to", server.url, "--task", task.task_id, reports)
    assert result.exit_code == 1
    summary, rejected = result.stderr.strip().splitlines()
    assert summary == "6 reports: 5 accepted, 0 already stored, 1 rejected (invalid_report: 1)"
    assert "line 3: invalid_report: value_out_of_domain" in rejected


def test_a_4xx_problem_stops_the_upload_with_the_servers_detail(server, tmp_path, monkeypatch):
    reports = _grr_reports(tmp_path / "reports.jsonl", 10)
    lines = make_envelopes(reports, tmp_path / "e.jsonl", 60).lines
    recorder = _Recorder(monkeypatch)
    with pytest.raises(UploadError) as error:
        Uploader(server.url, "A" * 43, retries=5).upload(lines)
    assert error.value.status == 404 and error.value.detail == f"no task {'A' * 43!r} on this collector"
    assert "Unknown task" in str(error.value) and len(recorder.requests) == 1  # never retried


def test_outputs_that_name_the_input_and_bad_options_are_usage_errors(server, tmp_path):
    task, _ = _task(server)
    reports = _grr_reports(tmp_path / "reports.jsonl", 3)
    same = _run("upload", "--to", server.url, "--task", task.task_id, reports, "--envelopes", reports)
    assert same.exit_code == 2 and "same file as the input REPORTS" in same.stderr
    bad = _run("upload", "--to", server.url, "--task", task.task_id, reports, "--batch-size", "1001")
    assert bad.exit_code == 2 and "--batch-size 1001" in bad.stderr
    url = _run("upload", "--to", "ftp://x", "--task", task.task_id, reports)
    assert url.exit_code == 2 and "--to 'ftp://x'" in url.stderr
    assert default_envelopes_path(reports) == tmp_path / "reports.envelopes.jsonl"
    assert default_envelopes_path(tmp_path / "r.txt") == tmp_path / "r.txt.envelopes.jsonl"


class _Flaky(http.server.BaseHTTPRequestHandler):
    """Answers 503, then 429 with Retry-After, then drops a connection, then accounts for the batch."""

    script: ClassVar[list[str]] = []
    bodies: ClassVar[list[bytes]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).bodies.append(body)
        step = type(self).script.pop(0)
        if step == "drop":
            self.close_connection = True
            return  # no reply at all
        status, headers = {"503": (503, {}), "429": (429, {"Retry-After": "7"}), "200": (200, {})}[step]
        reply = (
            {"accepted": body.count(b"\n"), "replayed": 0, "rejected": []}
            if status == 200
            else {"title": "busy", "detail": "later"}
        )
        data = json.dumps(reply).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_retries_resend_the_same_bytes_with_backoff_and_honour_retry_after(tmp_path):
    _Flaky.script, _Flaky.bodies = ["503", "429", "drop", "200", "200"], []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    waits: list[float] = []
    try:
        lines = make_envelopes(_grr_reports(tmp_path / "r.jsonl", 15), tmp_path / "e.jsonl", 60).lines
        uploader = Uploader(
            f"http://127.0.0.1:{httpd.server_port}", "T", batch_size=10, backoff=1.0, sleep=waits.append
        )
        summary = uploader.upload(lines)
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert (summary.accepted, summary.attempts, summary.retries, summary.batches) == (15, 5, 3, 2)
    assert _Flaky.bodies[0] == _Flaky.bodies[1] == _Flaky.bodies[2] == _Flaky.bodies[3]
    assert _Flaky.bodies[0] == b"".join(line + b"\n" for line in lines[:10])
    assert 0.5 <= waits[0] <= 1.0 and waits[1] == 7.0 and 2.0 <= waits[2] <= 4.0


def _race(reports: str, envelopes: str, barrier, results) -> None:
    barrier.wait()
    made = make_envelopes(reports, envelopes, 60)
    results.put((made.created, b"".join(made.lines)))


def test_racing_processes_create_one_envelope_file_and_share_it(tmp_path):
    context = multiprocessing.get_context("fork")
    reports = _grr_reports(tmp_path / "reports.jsonl", 2_000)
    for round_ in range(3):
        envelopes = tmp_path / f"envelopes-{round_}.jsonl"
        barrier, results = context.Barrier(2), context.Queue()
        workers = [
            context.Process(target=_race, args=(str(reports), str(envelopes), barrier, results))
            for _ in range(2)
        ]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=30) for _ in workers]
        for worker in workers:
            worker.join(30)
        assert sorted(created for created, _ in outcomes) == [False, True]
        on_disk = b"".join(envelopes.read_bytes().splitlines())
        assert outcomes[0][1] == outcomes[1][1] == on_disk
        assert [p.name for p in tmp_path.iterdir() if ".ldp-tmp" in p.name] == []


def test_the_upload_library_imports_no_http_or_data_frame_library():
    code = (
        "import sys, ldp.client.upload\n"
        "print(','.join(sorted(m for m in ('pandas', 'scipy', 'pyarrow', 'httpx', 'requests', 'click') "
        "if m in sys.modules)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert result.stdout.strip() == ""


class _Credentials(http.server.BaseHTTPRequestHandler):
    """Records each request's path and Authorization header; a GET of /v1/tasks/R redirects to ``elsewhere``."""

    seen: ClassVar[list[tuple[str, str | None]]] = []
    elsewhere: ClassVar[str] = ""

    def do_GET(self):
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        if self.path == "/v1/tasks/R":
            self.send_response(302)
            self.send_header("Location", type(self).elsewhere + "/v1/tasks/T")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        data = b"<html>not a collector</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def credentials_servers():
    """Two local servers recording the credentials they receive (the second one is 'another host')."""
    _Credentials.seen = []
    started = [http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Credentials) for _ in range(2)]
    for httpd in started:
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
    _Credentials.elsewhere = f"http://127.0.0.1:{started[1].server_port}"
    yield [httpd.server_port for httpd in started]
    for httpd in started:
        httpd.shutdown()
        httpd.server_close()


def test_a_url_password_is_sent_as_basic_authorization_and_never_shown(credentials_servers, tmp_path):
    """Issue 24: ``ldp upload --to http://user:pw@...`` echoed the password; now every message masks it."""
    port = credentials_servers[0]
    reports = _grr_reports(tmp_path / "reports.jsonl", 3)
    result = _run("upload", "--to", f"http://ldp:s3cr%3At@127.0.0.1:{port}", "--task", "T", reports)
    assert result.exit_code == 2
    assert f"is http://ldp:***@127.0.0.1:{port} an ldp collector?" in result.stderr
    assert "s3cr" not in result.output
    expected = "Basic " + base64.b64encode(b"ldp:s3cr:t").decode()
    assert _Credentials.seen == [("/v1/tasks/T", expected)]  # the user part is not in the request line
    # a redirect to another host never carries the credentials
    _Credentials.seen = []
    with pytest.raises(UploadError) as error:
        upload_module.fetch_task(f"http://ldp:s3cret@127.0.0.1:{port}", "R")
    assert "s3cret" not in str(error.value)
    assert _Credentials.seen == [
        ("/v1/tasks/R", "Basic " + base64.b64encode(b"ldp:s3cret").decode()),
        ("/v1/tasks/T", None),
    ]


@pytest.mark.parametrize(
    "url",
    [
        "ftp://ldp:s3cret@127.0.0.1",
        "http://127.0.0.1:8000/?token=s3cret",
        "http://ldp:s3c/ret@127.0.0.1:8000",  # an unencoded "/" ends the host early
        "http://ldp:s3cret@127.0.0.1",  # once "nonnumeric port: 's3cret@127.0.0.1'" from http.client
    ],
)
def test_errors_of_a_url_with_secrets_never_show_them(url, tmp_path):
    with pytest.raises((ParameterError, UploadError)) as error:
        upload_module.fetch_task(url, "T", retries=0)
    assert "s3c" not in str(error.value)
    if isinstance(error.value, ParameterError):
        shown = _run("upload", "--to", url, "--task", "T", _grr_reports(tmp_path / "reports.jsonl", 3))
        assert shown.exit_code == 2 and "--to '" in shown.stderr and "s3c" not in shown.output


def test_an_unreachable_collector_with_credentials_is_named_without_its_password(tmp_path):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    lines = make_envelopes(_grr_reports(tmp_path / "r.jsonl", 3), tmp_path / "e.jsonl", 60).lines
    with pytest.raises(UploadError) as error:
        Uploader(f"http://ldp:s3cret@127.0.0.1:{port}", "T", retries=1, sleep=lambda _: None).upload(lines)
    assert f"reach http://ldp:***@127.0.0.1:{port}:" in str(error.value) and "s3cret" not in str(error.value)


# -- HTTPS with a private CA (ldp upload --cacert) ----------------------------------------------------


def _private_ca(directory: Path) -> tuple[Path, Path, Path]:
    """(CA certificate, server certificate, server key) PEM files: a private CA and a certificate it signed
    for 127.0.0.1, made with the ``cryptography`` package when installed, else the ``openssl`` command."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl command to make a private CA")
        return _private_ca_openssl(directory)
    return _private_ca_cryptography(directory)


def _private_ca_openssl(directory: Path) -> tuple[Path, Path, Path]:
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    ca_key, csr, extensions = directory / "ca.key", directory / "server.csr", directory / "server.ext"
    extensions.write_text(
        "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
        "authorityKeyIdentifier=keyid\nbasicConstraints=CA:FALSE\n"
    )
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    ca_rules = [
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]
    commands = [
        [
            "req",
            "-x509",
            *key,
            "-keyout",
            ca_key,
            "-out",
            paths[0],
            "-days",
            "1",
            "-subj",
            "/CN=ldp CA",
            *ca_rules,
        ],
        ["req", "-new", *key, "-keyout", paths[2], "-out", csr, "-subj", "/CN=127.0.0.1"],
        [
            "x509",
            "-req",
            "-in",
            csr,
            "-CA",
            paths[0],
            "-CAkey",
            ca_key,
            "-set_serial",
            "2",
            "-days",
            "1",
            "-out",
        ],
    ]
    commands[-1] += [paths[1], "-extfile", extensions]
    for command in commands:
        subprocess.run(["openssl", *map(str, command)], check=True, capture_output=True)
    return paths


def _private_ca_cryptography(directory: Path) -> tuple[Path, Path, Path]:
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ldp test CA")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    server = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    paths = directory / "ca.pem", directory / "server.pem", directory / "server.key"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(server.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return paths


@pytest.fixture
def tls_collector(tmp_path):
    """The collector app served over HTTPS on 127.0.0.1 (uvicorn in a thread) with a private CA's certificate."""
    import socket

    import uvicorn

    from ldp.collector.app import CollectorSettings, create_app

    ca, certificate, key = _private_ca(tmp_path)
    store = store_path(tmp_path)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(CollectorSettings(store=store, rate_limit=0)),
        host="127.0.0.1",
        port=port,
        ssl_certfile=str(certificate),
        ssl_keyfile=str(key),
        log_level="error",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    try:
        yield f"https://127.0.0.1:{port}", store, ca
    finally:
        server.should_exit = True
        thread.join(15)


def test_upload_over_https_with_a_private_ca_given_by_cacert(tls_collector, tmp_path):
    """Before: only an undocumented environment variable (SSL_CERT_FILE) made a private CA trusted."""
    url, store, ca = tls_collector
    task, _ = create_task(store, GRR, window="1h", time_precision="1m", min_batch=1)
    reports = _grr_reports(tmp_path / "reports.jsonl", 30)
    refused = _run("upload", "--to", url, "--task", task.task_id, reports)
    assert refused.exit_code == 2 and "CERTIFICATE_VERIFY_FAILED" in refused.stderr, refused.output
    done = _run("upload", "--to", url, "--task", task.task_id, "--cacert", ca, reports)
    assert done.exit_code == 0, done.output
    assert "30 accepted" in done.stderr
    with open_store(store) as opened:
        assert opened.report_counts()[task.task_id] == 30
    missing = _run("upload", "--to", url, "--task", task.task_id, "--cacert", tmp_path / "nope.pem", reports)
    assert missing.exit_code == 2 and missing.stderr.strip().splitlines()[-1].endswith("does not exist")
    not_pem = _run("upload", "--to", url, "--task", task.task_id, "--cacert", reports, reports)
    assert not_pem.exit_code == 2 and "is not a PEM file of CA certificates" in not_pem.stderr
