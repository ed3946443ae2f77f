"""``ldp task`` and ``ldp aggregate --store`` end to end: a SQLite store in tmp_path, CliRunner.

Reports are put into the store as ``ldp serve`` would (the envelope's
report JSON, a random 16-byte id, ``t`` a multiple of the time precision)
across several windows; exporting them and aggregating the file must give
exactly the table ``ldp aggregate --store --task`` gives.
"""

from __future__ import annotations

import base64
import json
import secrets
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from conftest import rappor_specs, sample_values

import ldp
from ldp.cli import cli
from ldp.client import encode_batch
from ldp.collector import tasks as tasks_module
from ldp.collector.store import StoredReport, open_store
from ldp.collector.tasks import Task, hash_token, new_task_id
from ldp.errors import ParameterError
from ldp.report import Report
from ldp.specs import load_spec

GRR = ldp.GRR(domain=("a", "b", "c", "d", "e"), epsilon=1.0)
SPECS = {
    "grr": GRR,
    "oue": ldp.OUE(domain=("a", "b", "c", "d", "e"), epsilon=1.0),
    "olh": ldp.OLH(domain=("a", "b", "c", "d", "e"), epsilon=1.0),
    "ss": ldp.SubsetSelection(domain=("a", "b", "c", "d", "e"), epsilon=1.0, omega=2),
    "rappor": rappor_specs()[0],
    "duchi": ldp.specs.numeric_spec("duchi", 1.0, 0.0, 1.0),
}
FORMATS = ("jsonl", "csv", "parquet", "jsonl.gz", "csv.gz")
DAY, HOUR = 86_400, 3_600
#: The first window of the stored reports (a multiple of one day).
BASE = 1_764_000_000 - 1_764_000_000 % DAY
WINDOWS = 3


def _ldp(*args: object, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def _ok(*args: object, input: str | None = None) -> Result:
    result = _ldp(*args, input=input)
    assert result.exit_code == 0, result.output
    return result


def _error(*args: object) -> str:
    """The one error line of a command that must fail with exit status 2."""
    result = _ldp(*args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr
    return lines[0]


def _spec_file(tmp_path: Path, spec) -> Path:
    path = tmp_path / f"{spec.mechanism}-{spec.fingerprint}.json"
    path.write_text(spec.to_json())
    return path


def _create(store: Path, spec_path: Path, *options: object) -> tuple[str, str]:
    """A new task: (task id, token), through ``ldp task create --json``."""
    created = json.loads(
        _ok("task", "create", "--store", store, "--spec", spec_path, "--json", *options).stdout
    )
    assert set(created) == {"task", "token"}
    return created["task"], created["token"]


def _fill(store: Path, task_id: str, spec, n: int, seed: int = 1) -> dict[int, int]:
    """Store ``n`` encoded reports of ``spec`` over :data:`WINDOWS` one-day windows; reports per window start."""
    batch = encode_batch(spec, sample_values(spec, n), np.random.default_rng(seed))
    texts = [report.to_json() for report in batch.reports(spec)]
    steps = WINDOWS * DAY // HOUR
    times = [BASE + (i * 7 % steps) * HOUR for i in range(n)]
    reports = [StoredReport(secrets.token_bytes(16), t, text) for t, text in zip(times, texts)]
    with open_store(str(store)) as opened:
        opened.insert_reports([(task_id, reports[i : i + 500]) for i in range(0, n, 500)])
    windows: dict[int, int] = {}
    for t in times:
        windows[t - t % DAY] = windows.get(t - t % DAY, 0) + 1
    return windows


def _estimates(*args: object) -> pd.DataFrame:
    """``ldp aggregate ARGS -o estimates.parquet``, read back (every float exactly)."""
    out = Path(f"estimates-{secrets.token_hex(4)}.parquet")  # in tmp_path, the working directory
    _ok("aggregate", *args, "-o", out)
    return pd.read_parquet(out)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    """Every test runs in its own directory: the default store and the estimate files land there."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def grr_task(tmp_path) -> tuple[Path, Path, str, dict[int, int]]:
    """A store with a GRR task of 3,000 reports: (store, spec file, task id, reports per window)."""
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    task_id, _ = _create(store, spec_path)
    return store, spec_path, task_id, _fill(store, task_id, GRR, 3_000)


# -- create, list, show, delete --------------------------------------------------------------------


def test_create_prints_the_token_once_and_the_store_keeps_only_its_hash(tmp_path):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    result = _ok(
        "task", "create", "--store", store, "--spec", spec_path, "--window", "1d", "--time-precision", "1h"
    )
    task_line, token_line = result.stdout.splitlines()
    task_id, token = task_line.removeprefix("task "), token_line.removeprefix("token ")
    assert len(task_id) == 43 and len(token) == 43
    assert "cannot be shown again" in result.stderr
    assert result.output.count(token) == 1
    raw = b"".join(path.read_bytes() for path in tmp_path.glob("collector.db*"))  # the database, its WAL too
    assert token.encode() not in raw
    with sqlite3.connect(store) as connection:
        (stored_hash,) = connection.execute(
            "SELECT token_hash FROM tasks WHERE task_id = ?", (task_id,)
        ).fetchone()
    assert stored_hash == hash_token(token)
    with open_store(str(store)) as opened:
        found = opened.task(task_id)
    assert found is not None and found.token_matches(token) and found.spec == GRR
    for command in (("list",), ("show", task_id)):  # never shown again
        assert token not in _ok("task", *command, "--store", store).output


def test_create_json_and_the_collection_rules(tmp_path):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    options = ("--window", "2w", "--time-precision", "15m", "--min-batch", "50")
    bounds = ("--not-before", BASE, "--not-after", BASE + 10 * DAY)
    task_id, token = _create(
        store, spec_path, *options, *bounds, "--cors-origin", "https://a.example", "--cors-origin", "*"
    )
    with open_store(str(store)) as opened:
        task = opened.task(task_id)
    assert task is not None and task.token_matches(token)
    assert (task.window, task.time_precision, task.min_batch) == (14 * DAY, 900, 50)
    assert (task.not_before, task.not_after, task.cors_origins) == (
        BASE,
        BASE + 10 * DAY,
        ("https://a.example", "*"),
    )


def test_list_and_show(grr_task):
    store, _, task_id, windows = grr_task
    listed = _ok("task", "list", "--store", store).stdout.splitlines()
    assert listed[0].split() == [
        "task",
        "name",
        "mechanism",
        "window",
        "time",
        "precision",
        "min",
        "batch",
        "reports",
    ]
    assert listed[1].split() == [task_id, "-", "grr", "1d", "1h", "1,000", "3,000"]
    shown = _ok("task", "show", "--store", store, task_id).stdout
    assert task_id in shown and "grr" in shown and GRR.fingerprint in shown
    assert f"3,000 in {WINDOWS} window(s)" in shown
    for start, n in windows.items():
        day = pd.Timestamp(start, unit="s").strftime("%Y-%m-%d")
        assert any(line.startswith(day) and line.split()[4] == f"{n:,}" for line in shown.splitlines()), shown


def test_a_task_name_and_description_are_shown_by_list_and_show(tmp_path):
    """Issue 29: tasks were known only by their 43-character ids."""
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    description = "Which checkout step users abandon.\nOwner: payments team."
    task_id, _ = _create(store, spec_path, "--name", "checkout abandon", "--description", description)
    listed = _ok("task", "list", "--store", store).stdout.splitlines()
    assert listed[0].split()[:3] == ["task", "name", "mechanism"]
    assert listed[1].startswith(f"{task_id}  checkout abandon  grr")
    shown = _ok("task", "show", "--store", store, task_id).stdout.splitlines()
    assert "name            checkout abandon" in shown
    assert "description     Which checkout step users abandon." in shown
    assert "                Owner: payments team." in shown
    with open_store(str(store)) as opened:
        assert opened.task(task_id).labels() == {"name": "checkout abandon", "description": description}
    assert _error("task", "create", "--store", store, "--spec", spec_path, "--name", "two\nlines").endswith(
        "the task name must be one line of printable text"
    )
    assert _error("task", "create", "--store", store, "--spec", spec_path, "--name", "x" * 101).endswith(
        "the task name is at most 100 characters, got 101"
    )


def test_a_bloom_rappor_task_takes_candidates_on_create_and_update(tmp_path):
    """Issue 29: a Bloom RAPPOR task's candidates are given with the task, read as ldp aggregate --candidates
    reads a file (one per line, stripped, blanks and repeats dropped), changed or removed by ldp task update."""
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, SPECS["rappor"])
    listed = tmp_path / "candidates.txt"
    listed.write_text("https://a.example/\n\n  b  \nhttps://a.example/\né\n", encoding="utf-8")
    task_id, _ = _create(store, spec_path, "--candidates", listed)
    with open_store(str(store)) as opened:
        assert opened.task(task_id).candidates == ("https://a.example/", "b", "é")
    shown = _ok("task", "show", "--store", store, task_id).stdout
    assert "candidates      3 values decoded in each window (https://a.example/, b, é)" in shown
    listed.write_text("x\ny\n")
    updated = _ok("task", "update", "--store", store, task_id, "--candidates", listed)
    assert "candidates 2" in updated.stderr
    with open_store(str(store)) as opened:
        assert opened.task(task_id).candidates == ("x", "y")
    removed = _ok("task", "update", "--store", store, task_id, "--no-candidates")
    assert "candidates removed" in removed.stderr
    shown = _ok("task", "show", "--store", store, task_id).stdout
    assert "(none: windows show bit estimates; ldp task update TASK --candidates FILE decodes them)" in shown
    # one-line errors: a task that takes no candidates, an empty file, a missing one, both options
    grr = _spec_file(tmp_path, GRR)
    assert "candidates are for Bloom-filter RAPPOR tasks" in _error(
        "task", "create", "--store", store, "--spec", grr, "--candidates", listed
    )
    (tmp_path / "empty.txt").write_text("\n \n")
    assert "has no candidates (one per line)" in _error(
        "task", "update", "--store", store, task_id, "--candidates", tmp_path / "empty.txt"
    )
    assert "cannot read candidates file" in _error(
        "task", "update", "--store", store, task_id, "--candidates", tmp_path / "absent.txt"
    )
    assert "not both" in _error(
        "task", "update", "--store", store, task_id, "--candidates", listed, "--no-candidates"
    )


def test_list_of_an_empty_store_and_the_default_store(tmp_path):
    spec_path = _spec_file(tmp_path, GRR)
    task_id, _ = _create(Path("ldp-collector.db"), spec_path)  # in the working directory: the default store
    assert (tmp_path / "ldp-collector.db").exists()
    assert task_id in _ok("task", "list").stdout
    _ok("task", "delete", task_id, "--yes")
    result = _ok("task", "list")
    assert result.stdout == "" and "no tasks" in result.stderr


def test_delete_asks_unless_yes_and_removes_the_reports(grr_task, tmp_path):
    store, spec_path, task_id, _ = grr_task
    other, _ = _create(store, spec_path)
    _fill(store, other, GRR, 100, seed=2)
    declined = _ldp("task", "delete", "--store", store, task_id, input="n\n")
    assert declined.exit_code != 0 and "3,000 reports" in declined.stderr
    assert task_id in _ok("task", "list", "--store", store).stdout
    _ok("task", "delete", "--store", store, task_id, input="y\n")
    with open_store(str(store)) as opened:
        assert opened.task(task_id) is None
        assert list(opened.reports(task_id)) == []
        assert sum(len(chunk) for chunk in opened.reports(other)) == 100  # the other task keeps its reports
    with sqlite3.connect(store) as connection:
        assert connection.execute("SELECT count(*) FROM reports").fetchone() == (100,)
    _ok("task", "delete", "--store", store, other, "--yes")
    assert "no such task" in _error("task", "delete", "--store", store, other, "--yes")


# -- export and aggregate --store ------------------------------------------------------------------


@pytest.mark.parametrize("name", SPECS)
def test_export_in_every_format_aggregates_exactly_like_the_store(tmp_path, name):
    spec = SPECS[name]
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, spec)
    task_id, _ = _create(store, spec_path)
    _fill(store, task_id, spec, 1_200)
    from_store = _estimates("--store", store, "--task", task_id)
    assert len(from_store) > 0
    for fmt in FORMATS:
        exported = tmp_path / f"reports.{fmt}"
        result = _ok("task", "export", "--store", store, "--task", task_id, "-o", exported)
        assert "exported 1,200 reports" in result.stderr
        pd.testing.assert_frame_equal(_estimates("--spec", spec_path, exported), from_store, check_exact=True)
    with_spec = _estimates("--store", store, "--task", task_id, "--spec", spec_path)  # the same fingerprint
    pd.testing.assert_frame_equal(with_spec, from_store, check_exact=True)


def test_exported_reports_are_the_stored_ones(grr_task, tmp_path):
    store, _, task_id, _ = grr_task
    _ok("task", "export", "--store", store, "--task", task_id, "-o", tmp_path / "r.jsonl")
    exported = sorted((tmp_path / "r.jsonl").read_text().splitlines())
    with open_store(str(store)) as opened:
        stored = sorted(report.report for chunk in opened.reports(task_id) for report in chunk)
    assert exported == stored
    assert all(Report.from_json(line).spec == GRR.fingerprint for line in exported)
    stdout = _ok("task", "export", "--store", store, "--task", task_id, "-o", "-").stdout
    assert sorted(stdout.splitlines()) == stored


def test_options_of_the_estimate_apply_to_stored_reports(grr_task, tmp_path):
    store, spec_path, task_id, _ = grr_task
    _ok("task", "export", "--store", store, "--task", task_id, "-o", tmp_path / "r.parquet")
    options = ("--confidence", "0.9", "--consistency", "norm-sub")
    from_store = _estimates("--store", store, "--task", task_id, *options)
    from_file = _estimates("--spec", spec_path, tmp_path / "r.parquet", *options)
    pd.testing.assert_frame_equal(from_file, from_store, check_exact=True)
    assert from_store["consistent"].min() >= 0
    table = _ok("aggregate", "--store", store, "--task", task_id)
    assert "3,000 stored reports read" in table.stderr
    assert table.stdout.splitlines()[0].split() == list(
        _estimates("--store", store, "--task", task_id).columns
    )


def test_workers_on_the_exported_file_equal_the_store(grr_task, tmp_path):
    store, spec_path, task_id, _ = grr_task
    exported = tmp_path / "r.parquet"
    _ok("task", "export", "--store", store, "--task", task_id, "-o", exported, "--chunk-size", 700)
    from_store = _estimates("--store", store, "--task", task_id, "--chunk-size", 500)
    parallel = _estimates("--spec", spec_path, exported, "--workers", 2, "--chunk-size", 400)
    pd.testing.assert_frame_equal(parallel, from_store, check_exact=True)


def _records_spec(method: str):
    from ldp.specs.multiattr import MultiAttribute

    number = {"name": "ms", "mechanism": "piecewise", "low": 0, "high": 100}
    if method == "rsfd-grr":  # GRR attributes only
        number = {"name": "ms", "mechanism": "grr", "domain": ["fast", "slow", "stuck"]}
    attributes = [
        {"name": "os", "mechanism": "grr", "domain": ["linux", "mac", "win"]},
        number,
        {
            "name": "browser",
            "mechanism": "oue" if method != "rsfd-grr" else "grr",
            "domain": ["a", "b", "c", "d"],
        },
    ]
    return MultiAttribute(attributes, 2.0, method=method)


def _key_value_spec():
    from ldp.specs.key_value import PCKVUE

    return PCKVUE(domain=["a", "b", "c"], epsilon=2.0)


def _same_numbers(served: list[dict], table: pd.DataFrame) -> None:
    """The served estimate records equal ``table``'s rows exactly (NaN and null alike), in the same order."""
    assert list(served[0]) == list(table.columns)
    rows = table.astype(object).where(table.notna(), None).to_dict("records")
    assert served == rows


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: _records_spec("smp"), id="multi-attribute-smp"),
        pytest.param(lambda: _records_spec("spl"), id="multi-attribute-spl", marks=pytest.mark.slow),
        pytest.param(lambda: _records_spec("rsfd-grr"), id="multi-attribute-rsfd", marks=pytest.mark.slow),
        pytest.param(_key_value_spec, id="pckv-ue", marks=pytest.mark.slow),
    ],
)
def test_the_dashboards_windows_equal_aggregate_store_for_each_window(tmp_path, make):
    """The numbers the dashboard draws for a records (or key-value) task, from ``GET /v1/dashboard`` and
    ``GET /v1/tasks/{task}/estimates?by=window``, are ``ldp aggregate --store --from W --to W+1d``'s, bit for bit."""
    import asyncio

    from ldp.collector.service import CollectorService, CollectorSettings

    spec = make()
    store = tmp_path / "collector.db"
    task_id, token = _create(store, _spec_file(tmp_path, spec), "--min-batch", 10)
    windows = _fill(store, task_id, spec, 1_200)
    collector = CollectorService(CollectorSettings(store=str(store)), open_store(str(store), exclusive=True))
    try:

        async def served():
            task = await collector.task(task_id)
            by_window = await collector.estimates.estimates(task, None, None, 0.95, "window")
            return await collector.estimates.dashboard(token), by_window

        dashboard, by_window = asyncio.run(served())
    finally:
        collector.close()
    (task,) = dashboard["tasks"]
    assert [w["start"] for w in task["windows"]] == sorted(windows)
    if spec.mechanism == "multi-attribute":
        assert task["kind"] == "records"
        assert [a["name"] for a in task["attributes"]] == list(spec.names)
        numeric = spec.method != "rsfd-grr"
        assert [a["statistic"] for a in task["attributes"]] == [
            "count",
            "mean" if numeric else "count",
            "count",
        ]
    for window, other in zip(task["windows"], by_window["windows"], strict=True):
        start = window["start"]
        table = _estimates("--store", store, "--task", task_id, "--from", start, "--to", start + DAY)
        assert window["n"] == windows[start] and window["estimates"]
        _same_numbers(window["estimates"], table)
        assert other["estimates"] == window["estimates"]


def test_from_and_to_select_windows(grr_task, tmp_path):
    store, spec_path, task_id, windows = grr_task
    second, third = sorted(windows)[1:3]
    selection = ("--from", second, "--to", third + DAY)
    exported = tmp_path / "two-days.csv"
    _ok("task", "export", "--store", store, "--task", task_id, *selection, "-o", exported)
    assert len(pd.read_csv(exported)) == windows[second] + windows[third]
    from_store = _estimates("--store", store, "--task", task_id, *selection)
    pd.testing.assert_frame_equal(_estimates("--spec", spec_path, exported), from_store, check_exact=True)
    everything = _estimates("--store", store, "--task", task_id)
    assert not everything["estimate"].equals(from_store["estimate"])
    one_day = _ok("aggregate", "--store", store, "--task", task_id, "--from", second, "--to", second + DAY)
    assert f"{windows[second]:,} stored reports read" in one_day.stderr
    assert "min batch" not in one_day.stderr
    one_hour = _ok("aggregate", "--store", store, "--task", task_id, "--from", second, "--to", second + HOUR)
    assert "fewer reports than the task's min batch (1,000)" in one_hour.stderr
    empty = tmp_path / "empty.parquet"
    _ok("task", "export", "--store", store, "--task", task_id, "--to", BASE, "-o", empty)
    assert pd.read_parquet(empty).empty


def test_group_keys_appearing_late_get_a_column_in_csv_and_parquet(tmp_path):
    spec = SPECS["duchi"]
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, spec)
    task_id, _ = _create(store, spec_path)
    batch = encode_batch(spec, sample_values(spec, 60), np.random.default_rng(3))
    reports = [
        StoredReport(
            secrets.token_bytes(16), BASE + i * HOUR, (r if i < 40 else r.with_group(f"g{i % 2}")).to_json()
        )
        for i, r in enumerate(batch.reports(spec))
    ]
    with open_store(str(store)) as opened:
        opened.insert_reports([(task_id, reports)])
    by_group = _estimates("--store", store, "--task", task_id, "--by-group")
    assert set(by_group["group"].dropna()) == {"g0", "g1"}
    for fmt in ("csv", "parquet", "jsonl"):
        exported = tmp_path / f"r.{fmt}"
        _ok("task", "export", "--store", store, "--task", task_id, "-o", exported, "--chunk-size", 10)
        from_file = _estimates("--spec", spec_path, exported, "--by-group")
        pd.testing.assert_frame_equal(from_file, by_group, check_exact=True)


# -- export to a dataset partitioned by window (ldp task export --out) ------------------------------


def _dataset_layout(directory: Path) -> list[str]:
    return sorted(str(path.relative_to(directory)) for path in directory.rglob("*") if path.is_file())


@pytest.mark.parametrize("name", ["grr", "rappor", "duchi"])
def test_export_dataset_is_partitioned_by_window_and_aggregates_like_the_store(tmp_path, name):
    spec = SPECS[name]
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, spec)
    task_id, _ = _create(store, spec_path)
    windows = _fill(store, task_id, spec, 1_200)
    result = _ok("task", "export", "--store", store, task_id, "--out", tmp_path / "ds", "--chunk-size", 250)
    assert f"exported 1,200 reports of task {task_id} to" in result.stderr
    assert "3 windows" in result.stderr
    dataset = tmp_path / "ds"
    assert _dataset_layout(dataset) == ["_spec.json"] + [
        f"window={start}/part-00000.parquet" for start in sorted(windows)
    ]
    assert load_spec(str(dataset / "_spec.json")).fingerprint == spec.fingerprint
    parts = [pq.ParquetFile(path) for path in sorted(dataset.rglob("*.parquet"))]
    assert len({part.schema_arrow for part in parts}) == 1  # one schema: a dataset, not a pile of files
    assert [part.metadata.num_rows for part in parts] == [windows[start] for start in sorted(windows)]
    # Arrow's dataset reader sees the window as the partition key
    as_dataset = pd.read_parquet(dataset)
    assert as_dataset["window"].astype(int).value_counts().to_dict() == windows
    from_store = _estimates("--store", store, "--task", task_id)
    from_dataset = _estimates("--spec", dataset / "_spec.json", dataset)
    pd.testing.assert_frame_equal(from_dataset, from_store, check_exact=True)
    for start in sorted(windows)[1:]:
        one = _estimates("--spec", dataset / "_spec.json", dataset, "--window", start)
        stored = _estimates("--store", store, "--task", task_id, "--from", start, "--to", start + DAY)
        pd.testing.assert_frame_equal(one, stored, check_exact=True)
    first, _, last = sorted(windows)
    two = _estimates("--spec", spec_path, dataset, "--window", first, "--window", last)
    files = [dataset / f"window={start}/part-00000.parquet" for start in (first, last)]
    pd.testing.assert_frame_equal(two, _estimates("--spec", spec_path, *files), check_exact=True)
    parallel = _estimates("--spec", spec_path, dataset, "--workers", 2, "--chunk-size", 100)
    pd.testing.assert_frame_equal(parallel, from_store, check_exact=True)


def test_export_dataset_of_a_range_keeps_group_keys(tmp_path):
    spec = SPECS["duchi"]
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, spec)
    task_id, _ = _create(store, spec_path)
    batch = encode_batch(spec, sample_values(spec, 90), np.random.default_rng(4))
    reports = [  # group keys only in the later reports: every part file still has one schema
        StoredReport(
            secrets.token_bytes(16), BASE + i * HOUR, (r if i < 50 else r.with_group(f"g{i % 2}")).to_json()
        )
        for i, r in enumerate(batch.reports(spec))
    ]
    with open_store(str(store)) as opened:
        opened.insert_reports([(task_id, reports)])
    selection = ("--from", BASE + DAY, "--to", BASE + 4 * DAY)
    _ok("task", "export", "--store", store, "--task", task_id, *selection, "--out", "ds", "--chunk-size", 7)
    assert _dataset_layout(tmp_path / "ds") == ["_spec.json"] + [
        f"window={BASE + day * DAY}/part-00000.parquet" for day in (1, 2, 3)
    ]
    by_group = _estimates("--store", store, "--task", task_id, *selection, "--by-group")
    from_dataset = _estimates("--spec", spec_path, "ds", "--by-group")
    pd.testing.assert_frame_equal(from_dataset, by_group, check_exact=True)


class _ReorderedStore:
    """A store whose reports come newest chunk first, and that notes the part files present at each chunk."""

    def __init__(self, store, parent: Path):
        self._store, self._parent, self.seen = store, parent, []

    def reports(self, task_id, start=None, end=None, chunk=50_000):
        chunks = list(self._store.reports(task_id, start, end, chunk))
        for reports in reversed(chunks):
            self.seen.append(len(list(self._parent.glob(".*ldp-tmp*/*/*.parquet"))))
            yield reports


def test_export_dataset_streams_window_by_window_and_is_right_in_any_order(grr_task, tmp_path):
    from ldp.collector.export_dataset import export_dataset

    store, spec_path, task_id, windows = grr_task
    with open_store(str(store), read_only=True) as opened:
        task = opened.task(task_id)
        reordered = _ReorderedStore(opened, tmp_path)
        counts = export_dataset(reordered, task, tmp_path / "ds", chunk=400)  # type: ignore[arg-type]
    assert counts == windows
    # read lazily: part files were written while later chunks were still unread
    assert reordered.seen[0] == 0 and reordered.seen[-1] >= 2
    from_store = _estimates("--store", store, "--task", task_id)
    pd.testing.assert_frame_equal(
        _estimates("--spec", spec_path, tmp_path / "ds"), from_store, check_exact=True
    )


def test_export_dataset_never_replaces_a_directory_and_leaves_nothing_when_it_fails(
    grr_task, tmp_path, monkeypatch
):
    store, _, task_id, _ = grr_task
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    error = _error("task", "export", "--store", store, task_id, "--out", existing)
    assert "already exists" in error and "existing" in error
    assert _dataset_layout(existing) == ["keep.txt"]
    assert "no-such-dir" in _error(
        "task", "export", "--store", store, task_id, "--out", tmp_path / "no-such-dir" / "ds"
    )
    assert "one of them" in _ldp("task", "export", "--store", store, task_id).output
    assert (
        "one of them"
        in _ldp("task", "export", "--store", store, task_id, "-o", "r.jsonl", "--out", "ds").output
    )

    import ldp.aggregator.writers as writers

    calls = []
    real = writers.write_reports

    def failing(batches, path, spec):
        calls.append(path)
        if len(calls) == 2:
            raise ParameterError(f"cannot write {str(path)!r}: No space left on device")
        return real(batches, path, spec)

    monkeypatch.setattr(writers, "write_reports", failing)
    assert "No space left" in _error("task", "export", "--store", store, task_id, "--out", tmp_path / "ds")
    assert len(calls) == 2
    assert not (tmp_path / "ds").exists()
    assert not list(tmp_path.glob(".ds*"))  # the temporary directory is gone too


def _killed_export(parent: Path, name: str, age: float) -> Path:
    """A temporary dataset directory as a killed ``ldp task export --out`` leaves it, ``age`` seconds old."""
    import os
    import time

    folder = parent / name
    (folder / "window=100").mkdir(parents=True)
    (folder / "window=100" / "part-00000.parquet").write_bytes(b"partial")
    then = time.time() - age
    os.utime(folder, (then, then))
    return folder


def test_export_dataset_removes_stale_temporary_directories_of_killed_exports(grr_task, tmp_path):
    """A killed export left its temporary directory behind for good; the sweep only removed files."""
    import fcntl
    import os

    store, _, task_id, _ = grr_task
    stale = _killed_export(tmp_path, ".ds.ldp-tmp-0123456789ab", age=3600)
    earlier = _killed_export(tmp_path, ".ds.ldp-tmp-k_3x9q0z", age=3600)  # tempfile.mkdtemp's names
    young = _killed_export(tmp_path, ".ds.ldp-tmp-aaaaaaaaaaaa", age=0)
    held = _killed_export(tmp_path, ".ds.ldp-tmp-bbbbbbbbbbbb", age=3600)
    not_ours = _killed_export(tmp_path, ".ds.ldp-tmp-mine", age=3600)
    other_target = _killed_export(tmp_path, ".ds2.ldp-tmp-cccccccccccc", age=3600)
    (tmp_path / ".ds.ldp-tmp-dddddddddddd").symlink_to(not_ours, target_is_directory=True)
    fd = os.open(held, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a live export holds its temporary directory under flock
    try:
        _ok("task", "export", "--store", store, task_id, "--out", tmp_path / "ds")
        assert not stale.exists() and not earlier.exists()
        assert young.exists() and held.exists() and not_ours.exists() and other_target.exists()
        assert (tmp_path / ".ds.ldp-tmp-dddddddddddd").is_symlink()
        assert (not_ours / "window=100" / "part-00000.parquet").exists()
    finally:
        os.close(fd)
    from ldp.atomic import remove_stale_temporaries

    assert remove_stale_temporaries(tmp_path) == 2  # the released one, and the other target's
    assert not held.exists() and not other_target.exists() and young.exists() and not_ours.exists()
    assert (tmp_path / "ds" / "_spec.json").exists()


def test_aggregate_window_needs_a_dataset_directory(grr_task, tmp_path):
    store, spec_path, task_id, windows = grr_task
    _ok("task", "export", "--store", store, "--task", task_id, "-o", "r.parquet")
    assert "is not a directory" in _error("aggregate", "--spec", spec_path, "r.parquet", "--window", BASE)
    assert (
        "--from and --to" in _ldp("aggregate", "--store", store, "--task", task_id, "--window", BASE).output
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "holds no Parquet report files" in _error("aggregate", "--spec", spec_path, empty)
    _ok("task", "export", "--store", store, task_id, "--out", "ds")
    missing = _error("aggregate", "--spec", spec_path, "ds", "--window", BASE + 7)
    assert f"no partition window={BASE + 7}" in missing and str(min(windows)) in missing
    _ok("task", "export", "--store", store, task_id, "--to", BASE, "--out", "nothing")
    assert _dataset_layout(tmp_path / "nothing") == ["_spec.json"]
    # read like an empty report file: nothing to estimate from
    assert "nothing could be read: 0 reports" in _error("aggregate", "--spec", spec_path, "nothing")


# -- errors ------------------------------------------------------------------------------------------


def test_unknown_task_and_missing_store(grr_task, tmp_path):
    store, spec_path, _, _ = grr_task
    unknown = "A" * 43
    for command in (
        ("task", "show", "--store", store, unknown),
        ("task", "delete", "--store", store, unknown, "--yes"),
        ("task", "export", "--store", store, "--task", unknown, "-o", tmp_path / "r.jsonl"),
        ("aggregate", "--store", store, "--task", unknown),
    ):
        assert f"--task '{unknown}': no such task" in _error(*command)
    assert not (tmp_path / "r.jsonl").exists()
    missing = tmp_path / "missing.db"
    assert "--store" in _error("task", "list", "--store", missing)
    assert "--store" in _error("aggregate", "--store", missing, "--task", unknown)
    assert not missing.exists()  # a reader never creates a store
    assert "scheme 'mysql' is not supported" in _error("task", "list", "--store", "mysql://h/db")
    assert "is a directory" in _error("task", "create", "--store", tmp_path, "--spec", spec_path)


def test_bad_durations_and_bounds(tmp_path):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    assert "--window must be a duration" in _error(
        "task", "create", "--store", store, "--spec", spec_path, "--window", "1y"
    )
    line = _error("task", "create", "--store", store, "--spec", spec_path, "--time-precision", "0s")
    assert "--time-precision must be at least one second" in line
    line = _error(
        "task", "create", "--store", store, "--spec", spec_path, "--window", "1h", "--time-precision", "7m"
    )
    assert "whole number of time precisions" in line
    line = _error(
        "task", "create", "--store", store, "--spec", spec_path, "--not-before", 10, "--not-after", 10
    )
    assert "--not-after 10 must be later than --not-before 10" in line
    assert _ldp("task", "create", "--store", store, "--spec", spec_path, "--min-batch", 0).exit_code == 2
    assert "--to 5 must be later than --from 9" in _error(
        "aggregate", "--task", "A" * 43, "--from", 9, "--to", 5
    )
    huge = "9" * 19  # beyond 64-bit times
    assert f"--from {huge} is not a time in Unix seconds" in _error(
        "aggregate", "--task", "A" * 43, "--from", huge
    )
    assert f"--to {huge} is not a time" in _error(
        "task", "export", "--task", "A" * 43, "--to", huge, "-o", "r.jsonl"
    )


def test_overflowing_durations_times_and_batches_are_one_line_errors(tmp_path):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    create = ("task", "create", "--store", store, "--spec", spec_path)
    assert "--window must be at most 100 years" in _error(*create, "--window", "99999999999999999w")
    line = _error(*create, "--window", "99999999999999999w", "--time-precision", "99999999999999999w")
    assert "must be at most 100 years" in line
    assert "--window must be a duration" in _error(*create, "--window", "9" * 5000)
    for flag in ("--not-before", "--not-after"):
        for value in (1 << 63, -(1 << 63), 1 << 62, 10**30):
            assert f"{flag} {value} is not a time in Unix seconds" in _error(*create, flag, value)
    assert "--min-batch 9223372036854775808 is more than 2**62" in _error(*create, "--min-batch", 1 << 63)
    assert not store.exists()  # refused before the store is opened


@pytest.mark.parametrize(
    ("origin", "expected"),
    [
        ("https://app.example/", "give 'https://app.example'"),
        ("https://App.Example", "give 'https://app.example'"),
        ("https://app.example:443", "give 'https://app.example'"),
        ("app.example", "is not an origin"),
        ("https://app.example/path", "is not an origin"),
        ("ftp://app.example", "is not an origin"),
        ("https://user@app.example", "is not an origin"),
        ("https://app.example:70000", "is not an origin"),
        ("null", "is not an origin"),
        ("https://*.app.example", "is not an origin"),
        ("*.app.example", "is not an origin"),
    ],
)
def test_cors_origins_are_checked(tmp_path, origin, expected):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    line = _error("task", "create", "--store", store, "--spec", spec_path, "--cors-origin", origin)
    assert f"CORS origin {origin!r}" in line and expected in line


def test_cors_origins_that_browsers_send_and_the_wildcard(tmp_path):
    store, spec_path = tmp_path / "collector.db", _spec_file(tmp_path, GRR)
    good = ("https://app.example", "http://localhost:8080", "https://[::1]:3000", "http://10.0.0.1")
    task_id, _ = _create(store, spec_path, *[arg for origin in good for arg in ("--cors-origin", origin)])
    anywhere, _ = _create(store, spec_path, "--cors-origin", "*")
    with open_store(str(store)) as opened:
        assert opened.task(task_id).cors_origins == good
        assert opened.task(anywhere).cors_origins == ("*",)


def test_task_ids_never_begin_with_a_dash(monkeypatch):
    """One id in 64 would: 2,000 draws without a check meet one with probability 1 - (63/64)**2000 > 1 - 1e-13."""
    assert not any(new_task_id().startswith("-") for _ in range(2_000))
    draws = iter([b"\xf8" + bytes(31), bytes(range(32))])  # the first encodes to '-...'
    monkeypatch.setattr(tasks_module.secrets, "token_bytes", lambda n: next(draws))
    assert new_task_id() == base64.urlsafe_b64encode(bytes(range(32))).rstrip(b"=").decode()


@pytest.mark.parametrize(
    "task_id",
    [
        # holds 'h' and 'V': read as short options, -h printed the help instead of the task
        "-QOniSdJ4hNGY9WVkWuNnX9McE0ie2HbvGxrzim6az8",
        "--" + "A" * 41,  # reads as a long option
        "-" + "y" * 42,
    ],
)
def test_show_and_delete_take_a_task_id_beginning_with_a_dash(tmp_path, task_id):
    """Ids minted before ids were kept from beginning with '-' still work, with or without '--'."""
    store = tmp_path / "collector.db"
    with open_store(str(store)) as opened:
        opened.create_task(Task(task_id=task_id, spec_json=GRR.to_json()))
    assert task_id in _ok("task", "show", "--store", store, task_id).stdout
    assert task_id in _ok("task", "show", "--store", store, "--", task_id).stdout
    assert "0 reports" in _ok("task", "export", "--store", store, "--task", task_id, "-o", "-").stderr
    assert "0 reports" in _ok("task", "export", "--store", store, task_id, "--out", tmp_path / "ds").stderr
    assert task_id in _ok("task", "show", task_id, "--store", store).stdout
    _ok("task", "delete", task_id, "--store", store, "--yes")
    with open_store(str(store)) as opened:
        assert opened.task(task_id) is None
        opened.create_task(Task(task_id=task_id, spec_json=GRR.to_json()))
    _ok("task", "delete", "--store", store, "--yes", "--", task_id)
    with open_store(str(store)) as opened:
        assert opened.task(task_id) is None


def test_store_options_and_file_options_do_not_mix(grr_task, tmp_path):
    store, spec_path, task_id, _ = grr_task
    reports = tmp_path / "r.jsonl"
    _ok("task", "export", "--store", store, "--task", task_id, "-o", reports)
    assert "--from reads a collector store and needs --task" in _error(
        "aggregate", "--spec", spec_path, reports, "--from", 0
    )
    assert "--store reads a collector store" in _error(
        "aggregate", "--spec", spec_path, reports, "--store", store
    )
    stored = ("aggregate", "--store", store, "--task", task_id)
    assert "not both" in _error(*stored, reports)
    assert "--rejects is for report files" in _error(*stored, "--rejects", tmp_path / "rejects.jsonl")
    assert "ldp task export" in _error(*stored, "--workers", 2)
    other = _spec_file(tmp_path, ldp.GRR(domain=("a", "b"), epsilon=1.0))
    assert "is not the spec of task" in _error(*stored, "--spec", other)
    assert "--spec is required" in _error("aggregate", reports)


def test_export_never_writes_over_the_store_and_leaves_no_partial_file(grr_task, tmp_path):
    store, _, task_id, _ = grr_task
    alias = tmp_path / "alias.parquet"
    alias.symlink_to(store)
    before = store.read_bytes()
    line = _error("task", "export", "--store", store, "--task", task_id, "-o", alias)
    assert "same file as the input --store" in line
    assert store.read_bytes() == before
    assert "unknown report file extension '.db'" in _error(
        "task", "export", "--store", store, "--task", task_id, "-o", store
    )
    (tmp_path / "est.csv").symlink_to(store)
    assert "same file as the input --store" in _error(
        "aggregate", "--store", store, "--task", task_id, "-o", tmp_path / "est.csv"
    )
    # a stored report that no longer passes the spec: the export fails whole, the old output stays
    output = tmp_path / "r.csv"
    output.write_text("old\n")
    with sqlite3.connect(store) as connection:
        connection.execute(
            'UPDATE reports SET report = replace(report, \'"value":"\', \'"value":"zz\') '
            "WHERE report_id = (SELECT report_id FROM reports LIMIT 1)"
        )
    line = _error("task", "export", "--store", store, "--task", task_id, "-o", output)
    assert "fail the task's spec checks" in line
    assert output.read_text() == "old\n"
    assert not [p for p in tmp_path.iterdir() if ".ldp-tmp" in p.name]


def test_read_only_commands_open_the_store_read_only(tmp_path, monkeypatch):
    """Issue 24: ldp task list and ldp aggregate --store opened the store for writing."""
    import ldp.collector.cli as collector_cli

    spec = ldp.GRR(domain=("a", "b", "c"), epsilon=1.0)
    store = tmp_path / "ro.db"
    task_id, _ = _create(store, _spec_file(tmp_path, spec), "--min-batch", "1")
    _fill(store, task_id, spec, 50)
    opened: list[tuple[str, bool]] = []
    real_open = collector_cli.open_store

    def spy(url, **options):
        found = real_open(url, **options)
        opened.append((url, found.read_only))
        return found

    monkeypatch.setattr(collector_cli, "open_store", spy)
    _ok("task", "list", "--store", store)
    _ok("task", "show", "--store", store, task_id)
    _ok("task", "export", "--store", store, "--task", task_id, "-o", tmp_path / "out.jsonl")
    _ok("aggregate", "--store", store, "--task", task_id)
    assert len(opened) >= 4 and all(read_only for _, read_only in opened)
    _ok("task", "delete", "--store", store, task_id, "--yes")
    assert opened[-1] == (str(store), False)
