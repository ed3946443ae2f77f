"""Client state and privacy ledgers under concurrent processes and threads.

The budget must hold across every encoder charging one ledger together (not
about twice the budget, as when each process kept its own copy), and a new
client must get exactly one secret however many first runs race to create it.
These tests are deterministic in their assertions: the exact number of
reports a budget allows, and one secret per client, over repeated runs.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import ldp
from ldp.client import ClientState, make_encoder
from ldp.client.cli import ledger_path, state_path
from ldp.errors import BudgetExceededError
from ldp.privacy.budget import Budget, PrivacyLedger

GRR = ldp.GRR(domain=("a", "b", "c"), epsilon=0.25)
RAPPOR = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=64, f="1/2", p="1/2", q="3/4")
PROCESSES = 4
REPEATS = 3
#: The thread races run once in the default run and REPEATS times under `pytest -m slow`.
THREAD_RUNS = [0, *(pytest.param(run, marks=pytest.mark.slow) for run in range(1, REPEATS))]


def _ldp_command(go: Path | None = None) -> list[str]:
    """The ``ldp`` command; with ``go``, it loads ``ldp encode`` then waits for that file (a start line for races)."""
    code = "import os, sys, time\nfrom ldp.cli import main\n"
    if go is not None:
        code += (
            "import ldp.client.cli, ldp.aggregator.writers\n"
            f"while not os.path.exists({str(go)!r}): time.sleep(0.002)\n"
        )
    return [sys.executable, "-c", code + "sys.argv[0] = 'ldp'\nmain()"]


def _together(task, threads: int) -> list:
    """``task(i)`` for i < ``threads``, each in its own thread, all released at once; their results in order.

    A failure in any thread is re-raised here.
    """
    start = threading.Barrier(threads)

    def run(index: int):
        start.wait()
        return task(index)

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(run, range(threads)))


@pytest.mark.slow
@pytest.mark.parametrize("run", range(REPEATS))
def test_concurrent_ldp_encode_processes_never_exceed_the_budget(tmp_path, run):
    """4 `ldp encode --state --budget` processes on one client: together exactly the budget's reports."""
    allowed = 400  # budget 100 at epsilon 0.25 per GRR report
    rows = 400  # per process: each alone would spend the whole budget
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + "alice,a\n" * rows)
    states = tmp_path / "states"
    go = tmp_path / "go"
    procs = [
        subprocess.Popen(
            [
                *_ldp_command(go),
                "encode",
                "--spec",
                str(spec_path),
                str(users),
                "--state",
                str(states),
                "--budget",
                "100",
                "-o",
                str(tmp_path / f"out{i}.jsonl"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(PROCESSES)
    ]
    time.sleep(3.0)  # every process loads ldp encode and waits at the start line
    go.touch()
    statuses = [p.wait(timeout=300) for p in procs]
    errors = [p.stderr.read() for p in procs]
    assert all(status in (0, 3) for status in statuses), errors
    sent = sum(len((tmp_path / f"out{i}.jsonl").read_text().splitlines()) for i in range(PROCESSES))
    assert sent == allowed, f"{sent} reports sent under a budget of {allowed}"
    ledger = PrivacyLedger.load(ledger_path(states, "alice"))
    assert ledger.committed == pytest.approx(100.0)
    assert sum(s.reports for s in ledger.streams.values()) == allowed
    # the processes overlapped: more than one of them got reports out (else the race was not exercised)
    assert sum(1 for i in range(PROCESSES) if (tmp_path / f"out{i}.jsonl").stat().st_size) >= 2


@pytest.mark.parametrize("spec", [GRR, RAPPOR], ids=["grr", "rappor"])
@pytest.mark.parametrize("run", THREAD_RUNS)
def test_threads_with_their_own_encoders_on_one_ledger_never_exceed_the_budget(tmp_path, spec, run):
    """8 threads, each with its own encoder opened on one ledger file (and one shared state)."""
    threads, attempts = 8, 60
    per_report = spec.epsilon if spec is GRR else spec.epsilon_one
    allowed = 50
    budget = Budget(epsilon=allowed * per_report * (1 + 1e-9))
    path = tmp_path / "client.ledger.json"
    state = tmp_path / "client.json"

    def client(index: int) -> int:
        encoder = make_encoder(spec, state=state if spec is RAPPOR else None, ledger=path, budget=budget)
        sent = 0
        for attempt in range(attempts):
            try:
                encoder.encode(
                    f"value-{attempt}" if spec is RAPPOR else "a"
                )  # RAPPOR: every report a new value
                sent += 1
            except BudgetExceededError:
                pass
        return sent

    assert sum(_together(client, threads)) == allowed
    assert sum(s.reports for s in PrivacyLedger.load(path).streams.values()) == allowed


def test_two_encoders_in_one_process_share_one_budget(tmp_path):
    path = tmp_path / "ledger.json"
    first = make_encoder(GRR, ledger=path, budget=Budget(epsilon=1.0))
    second = make_encoder(GRR, ledger=path, budget=Budget(epsilon=1.0))
    sent = 0
    for _ in range(4):
        for encoder in (first, second):
            try:
                encoder.encode("a")
                sent += 1
            except BudgetExceededError:
                pass
    assert sent == 4  # 4 x 0.25 = 1.0: not 4 each
    assert first.committed == second.committed == pytest.approx(1.0)


_OPEN_STATES = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    import ldp
    from ldp.client import ClientState
    spec = ldp.load_spec(sys.argv[1])
    go, directory, count = Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    while not go.exists():
        time.sleep(0.002)
    states = [ClientState.open(directory / f"client-{i}.json", spec) for i in range(count)]
    print(json.dumps([[s.secret.hex(), s.cohort] for s in states]))
""")


@pytest.mark.slow
@pytest.mark.parametrize("run", range(REPEATS))
def test_concurrent_first_runs_in_processes_give_each_client_one_secret(tmp_path, run):
    clients = 40
    spec_path = tmp_path / "rappor.json"
    spec_path.write_text(RAPPOR.to_json())
    go, directory = tmp_path / "go", tmp_path / "states"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_STATES, str(spec_path), str(go), str(directory), str(clients)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(PROCESSES)
    ]
    time.sleep(1.0)  # let every process import and wait at the start line
    go.touch()
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outputs]
    seen = [json.loads(out) for out, _ in outputs]
    for i in range(clients):
        on_disk = ClientState.load(directory / f"client-{i}.json", RAPPOR)
        assert {tuple(result[i]) for result in seen} == {(on_disk.secret.hex(), on_disk.cohort)}


@pytest.mark.parametrize("run", THREAD_RUNS)
def test_concurrent_first_runs_in_threads_give_each_client_one_secret(tmp_path, run):
    threads, clients = 8, 30
    seen = _together(
        lambda _: [ClientState.open(tmp_path / f"client-{i}.json", RAPPOR) for i in range(clients)], threads
    )
    for i in range(clients):
        on_disk = ClientState.load(tmp_path / f"client-{i}.json", RAPPOR)
        assert {(s[i].secret, s[i].cohort) for s in seen} == {(on_disk.secret, on_disk.cohort)}
    assert not [p for p in tmp_path.iterdir() if ".ldp-tmp" in p.name], "no temporary file left behind"


def test_racing_new_ledgers_share_one_key(tmp_path):
    threads = 8
    path = tmp_path / "ledger.json"

    def open_and_charge(_: int) -> PrivacyLedger:
        ledger = PrivacyLedger.load_or_create(path, Budget(epsilon=100.0))
        ledger.charge(RAPPOR, "secret-value")
        return ledger

    ledgers = _together(open_and_charge, threads)
    stored = PrivacyLedger.load(path)
    assert len({ledger._key for ledger in ledgers}) == 1 and stored._key == ledgers[0]._key
    assert sum(s.reports for s in stored.streams.values()) == threads  # no charge lost to a second key


def test_state_path_is_the_same_for_every_spelling_of_an_id(tmp_path):
    assert len({state_path(tmp_path, x) for x in (7, 7.0, "7", "7.0", "7.00")}) == 1
    assert state_path(tmp_path, "007") != state_path(tmp_path, 7)


@pytest.mark.slow
def test_kill_9_mid_encode_leaves_a_valid_ledger_and_no_output(tmp_path):
    """A killed encode: the ledger parses and covers every report made; no partial output; the leftover is cleaned."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(GRR.to_json())
    users = tmp_path / "users.csv"
    users.write_text("client_id,value\n" + "alice,a\n" * 100_000)
    states, output = tmp_path / "states", tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [
            *_ldp_command(),
            "encode",
            "--spec",
            str(spec_path),
            str(users),
            "--state",
            str(states),
            "--budget",
            "100000",
            "-o",
            str(output),
        ],
        stderr=subprocess.PIPE,
    )
    ledger = ledger_path(states, "alice")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until some reports are charged
        if ledger.exists() and sum(s.reports for s in PrivacyLedger.load(ledger).streams.values()) >= 20:
            break
        time.sleep(0.01)
    proc.kill()
    proc.wait(timeout=60)
    assert proc.returncode == -9
    assert not output.exists()  # nothing released: the reports were only ever in the temporary file
    charged = sum(s.reports for s in PrivacyLedger.load(ledger).streams.values())
    assert charged >= 20  # the ledger is whole and keeps every charge (kill -9 cannot refund: the safe side)
    leftovers = [p for p in tmp_path.iterdir() if ".ldp-tmp" in p.name]
    assert leftovers, "the killed run's temporary output is left behind"
    for path in leftovers:
        os.utime(path, (time.time() - 3600, time.time() - 3600))  # old, and its writer is dead
    users.write_text("client_id,value\nalice,a\n")
    done = subprocess.run(
        [
            *_ldp_command(),
            "encode",
            "--spec",
            str(spec_path),
            str(users),
            "--state",
            str(states),
            "--budget",
            "100000",
            "-o",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not [p for p in tmp_path.iterdir() if ".ldp-tmp" in p.name]
    assert sum(s.reports for s in PrivacyLedger.load(ledger).streams.values()) == charged + 1


@pytest.mark.parametrize("files", ["unnamed", "named"])
def test_open_many_creates_new_clients_with_one_durability_pass(tmp_path, monkeypatch, files):
    """New clients in bulk: one syncfs and one directory fsync for the lot, not two fsyncs per client.

    The same with named temporary files, where a file system has no unnamed ones (``O_TMPFILE``).
    """
    import ldp.atomic

    if files == "named":
        monkeypatch.setattr(ldp.atomic, "_unnamed_files", lambda directory, stack: None)

    calls = {"syncfs": 0, "fsync": 0}
    real_syncfs, real_fsync = ldp.atomic._syncfs(), os.fsync

    def count(name, real):
        def counted(fd):
            calls[name] += 1
            return real(fd)

        return counted

    monkeypatch.setattr(ldp.atomic, "_syncfs", lambda: count("syncfs", real_syncfs) if real_syncfs else None)
    monkeypatch.setattr(os, "fsync", count("fsync", real_fsync))
    existing = ClientState.open(tmp_path / "old.json", RAPPOR)
    before = (tmp_path / "old.json").read_bytes()
    calls.update(syncfs=0, fsync=0)
    paths = [tmp_path / f"client-{i}.json" for i in range(300)]
    states = ClientState.open_many([paths[0], tmp_path / "old.json", *paths, paths[1]], RAPPOR)
    assert states[1] == existing and (tmp_path / "old.json").read_bytes() == before  # never replaced
    assert states[0] == states[2] and states[-1] == states[3]  # a path given twice: one client
    for path, state in zip(paths, states[2:]):
        assert ClientState.load(path, RAPPOR) == state and state.path == path
    assert len({state.secret for state in states}) == 301
    assert {stat.S_IMODE(path.stat().st_mode) for path in paths} == {0o600}
    if real_syncfs is not None:
        assert calls == {"syncfs": 1, "fsync": 1}  # the contents, then the directory
    else:  # pragma: no cover - no syncfs: an fsync per file, the directory once
        assert calls == {"syncfs": 0, "fsync": 301}
    assert not [p for p in tmp_path.iterdir() if ".ldp-tmp" in p.name]


def test_open_many_asks_the_system_nothing_per_client_beyond_its_file(tmp_path, monkeypatch):
    """Bulk creation reads the CSPRNG a few times per group, not per client, and stats no new file.

    Issue 28: each client used to draw its secret and cohort with their own
    ``os.urandom`` calls and its file was fstat'ed to find its file system;
    the secrets now come from one read, the cohorts from one exact uniform
    draw, and the file systems from the directories.
    """
    import random

    import ldp.atomic

    calls = {"urandom": 0, "stat": 0}

    def count(name, real):
        def counted(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)

        return counted

    monkeypatch.setattr(os, "urandom", count("urandom", os.urandom))
    monkeypatch.setattr(random, "_urandom", count("urandom", random._urandom))  # secrets' own reads
    monkeypatch.setattr(os, "fstat", count("stat", os.fstat))
    monkeypatch.setattr(os, "stat", count("stat", os.stat))
    paths = [tmp_path / "states" / f"client-{i}.json" for i in range(300)]
    states = ClientState.open_many(paths, RAPPOR)
    assert calls["urandom"] <= 3  # secrets, cohorts (and a rejection round)
    assert calls["stat"] < 10  # the directory's checks and its file system (5 here): none per file
    assert len({state.secret for state in states}) == 300
    monkeypatch.undo()
    assert [ClientState.load(path, RAPPOR) for path in paths] == states
    assert ldp.atomic.read_private_file(paths[0], "client state") == states[0].to_json() + "\n"


def test_open_many_draws_uniform_cohorts(tmp_path):
    """The cohorts of clients created in bulk are uniform: chi-square over 12 cohorts, α = 1e-4 (CSPRNG: unseeded)."""
    from scipy import stats

    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=12, f="1/2", p="1/2", q="3/4")
    states = ClientState.open_many([tmp_path / f"c{i}.json" for i in range(1_200)], spec)
    counts = [sum(state.cohort == c for state in states) for c in range(12)]
    assert sum(counts) == 1_200
    assert stats.chisquare(counts).pvalue > 1e-4


def test_encode_makes_new_clients_durable_before_any_report(tmp_path, monkeypatch):
    """``ldp encode --state``: a chunk's new states are synced, linked and their directory fsync'ed before its reports."""
    import ldp.atomic
    import ldp.client.batch
    from ldp.client.encode_batches import secure_batches

    events: list[str] = []

    def logged(name, real):
        def run(*args, **kwargs):
            events.append(name)
            return real(*args, **kwargs)

        return run

    monkeypatch.setattr(ldp.atomic, "_sync_contents", logged("sync", ldp.atomic._sync_contents))
    monkeypatch.setattr(ldp.atomic, "_fsync_directory", logged("directory", ldp.atomic._fsync_directory))
    monkeypatch.setattr(os, "link", logged("link", os.link))
    monkeypatch.setattr(
        ldp.client.batch, "rappor_irr_batch", logged("reports", ldp.client.batch.rappor_irr_batch)
    )
    rows = [(i + 2, f"v{i % 3}", f"user-{i}", None) for i in range(50)]
    batches = list(secure_batches(RAPPOR, rows, str(tmp_path / "states"), chunk_rows=20))
    assert sum(len(batch) for batch in batches) == 50
    chunk = ["sync", *["link"] * 20, "directory", "reports"]
    assert events == chunk + chunk + ["sync", *["link"] * 10, "directory", "reports"]


@pytest.mark.parametrize(
    "spec",
    [
        ldp.load_spec({"mechanism": "loloha", "domain": ["v0", "v1", "v2"], "epsilon": 1.0}),
        ldp.load_spec({"mechanism": "dbitflip", "domain": ["v0", "v1", "v2"], "epsilon": 1.0}),
        ldp.load_spec({"mechanism": "l-grr", "domain": ["v0", "v1", "v2"], "epsilon": 1.0}),
        ldp.load_spec({"mechanism": "onebitmean", "epsilon": 1.0, "rounding": "alpha"}),
        RAPPOR,
    ],
    ids=lambda spec: spec.mechanism,
)
def test_encode_opens_every_memoizing_mechanisms_new_clients_in_bulk(tmp_path, monkeypatch, spec):
    """``ldp encode --state``: the new clients of any memoizing mechanism, not a list of names, are opened together."""
    from ldp.client.encode_batches import secure_batches

    bulk: list[int] = []
    one_by_one: list[Path] = []
    open_many, open_one = ClientState.open_many, ClientState.open
    monkeypatch.setattr(
        ClientState, "open_many", lambda paths, s: bulk.append(len(paths)) or open_many(paths, s)
    )
    monkeypatch.setattr(ClientState, "open", lambda path, s: one_by_one.append(path) or open_one(path, s))
    value = 0.5 if spec.mechanism == "onebitmean" else "v1"
    rows = [(i + 2, value, f"user-{i % 30}", None) for i in range(50)]
    batches = list(secure_batches(spec, rows, str(tmp_path / "states"), chunk_rows=20))
    assert sum(len(batch) for batch in batches) == 50
    assert bulk == [20, 10, 0] and one_by_one == []  # users 0-29 are new in the first two chunks, none after


#: Opens 40 new clients in bulk, killing itself (SIGKILL) at the step named by argv[3]; argv[4] "named":
#: with named temporary files (where a file system has no unnamed ones), "unnamed": as the system allows.
_KILLED_OPEN = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import ldp, ldp.atomic
    from ldp.client import ClientState

    spec, directory, step = ldp.load_spec(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if sys.argv[4] == "named":
        ldp.atomic._unnamed_files = lambda directory, stack: None

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    def after(real, calls=[0], limit=1):
        def run(*args, **kwargs):
            real(*args, **kwargs)
            calls[0] += 1
            if calls[0] >= limit:
                die()
        return run

    if step == "before-sync":
        ldp.atomic._sync_contents = die
    elif step == "after-sync":
        ldp.atomic._sync_contents = after(ldp.atomic._sync_contents)
    elif step == "mid-links":
        os.link = after(os.link, limit=17)
    elif step == "before-directory-fsync":
        ldp.atomic._fsync_directory = die
    ClientState.open_many([directory / f"client-{i}.json" for i in range(40)], spec)
    print("not killed")
""")


@pytest.mark.parametrize(
    "step, files",
    [
        ("mid-links", "unnamed"),
        *(
            pytest.param(s, files, marks=pytest.mark.slow)
            for s in ("before-sync", "after-sync", "mid-links", "before-directory-fsync")
            for files in ("unnamed", "named")
            if (s, files) != ("mid-links", "unnamed")
        ),
    ],
)
def test_kill_9_while_opening_clients_in_bulk_leaves_each_absent_or_complete(tmp_path, step, files):
    """Killed at any step of a bulk creation: every name is absent or a whole state; a rerun keeps the present ones.

    Contents written to unnamed files (``O_TMPFILE``) leave nothing behind;
    named temporary files (the fallback) are left until swept, once stale.
    """
    spec_path, directory = tmp_path / "rappor.json", tmp_path / "states"
    spec_path.write_text(RAPPOR.to_json())
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_OPEN, str(spec_path), str(directory), step, files],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr.decode()
    paths = [directory / f"client-{i}.json" for i in range(40)]
    present = {path: ClientState.load(path, RAPPOR) for path in paths if os.path.lexists(path)}
    expected = {"before-sync": 0, "after-sync": 0, "mid-links": 17, "before-directory-fsync": 40}[step]
    assert len(present) == expected
    leftovers = [p for p in directory.iterdir() if ".ldp-tmp" in p.name]
    unnamed = files == "unnamed" and hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")
    assert bool(leftovers) == (not unnamed and step != "before-directory-fsync")  # swept later, once stale
    states = ClientState.open_many(paths, RAPPOR)
    for path, state in zip(paths, states):
        assert present.get(path, state) == state  # a state that survived is the one used, never redrawn
