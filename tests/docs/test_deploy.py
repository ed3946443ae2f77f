"""The deployment files of docs/how-to/deploy.md (deploy/): they parse, name real metrics and real options.

The alert rules are checked for their structure and for naming only metrics
a collector exports; ``promtool`` (Debian's ``prometheus`` package) checks
them and the scrape configuration when it is installed, and
``systemd-analyze verify`` checks the unit when systemd is there.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
RULES = DEPLOY / "prometheus" / "ldp-alerts.yml"
SCRAPE = DEPLOY / "prometheus" / "prometheus.yml"
UNIT = DEPLOY / "systemd" / "ldp-collector.service"
yaml = pytest.importorskip("yaml")


def _exported_metrics() -> set[str]:
    """Every sample name a collector's /metrics can carry (counters' _total, histograms' _bucket/_count/_sum)."""
    pytest.importorskip("prometheus_client")
    from ldp.collector.metrics import CollectorMetrics

    names = set()
    for family in CollectorMetrics().registry.collect():
        suffixes = {
            "counter": ("_total",),
            "histogram": ("_bucket", "_count", "_sum"),
        }.get(family.type, ("",))
        names |= {family.name + suffix for suffix in suffixes}
    return names


def test_the_alert_rules_parse_and_name_only_exported_metrics():
    rules = yaml.safe_load(RULES.read_text())
    alerts = {rule["alert"]: rule for group in rules["groups"] for rule in group["rules"]}
    for name, rule in alerts.items():
        assert set(rule) == {"alert", "expr", "for", "labels", "annotations"}, name
        assert rule["labels"]["severity"] in ("page", "ticket"), name
        assert rule["annotations"]["summary"], name
        assert re.fullmatch(r"\d+[smh]", rule["for"]), name
    # the three: ingestion errors, store unavailable, commit latency (and a stalled commit)
    assert {"LdpIngestionErrors", "LdpStoreUnavailable", "LdpCommitLatencyHigh", "LdpCommitStalled"} <= set(
        alerts
    )
    exported = _exported_metrics()
    used = {m for rule in alerts.values() for m in re.findall(r"\b(?:ldp|process)_\w+", rule["expr"])}
    assert used and used <= exported, used - exported


def test_the_scrape_configuration_loads_the_rules():
    config = yaml.safe_load(SCRAPE.read_text())
    assert config["rule_files"] == [RULES.name]
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["ldp-collector"]["metrics_path"] == "/metrics"
    assert all(t.endswith("/readyz") for t in jobs["ldp-collector-ready"]["static_configs"][0]["targets"])


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool is not installed (apt-get install prometheus)"
)
def test_promtool_checks_the_rules_and_the_configuration(tmp_path):
    rules = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    assert rules.returncode == 0, rules.stdout + rules.stderr
    shutil.copy(RULES, tmp_path / RULES.name)
    shutil.copy(SCRAPE, tmp_path / SCRAPE.name)
    config = subprocess.run(
        ["promtool", "check", "config", str(tmp_path / SCRAPE.name)], capture_output=True, text=True
    )
    assert config.returncode == 0, config.stdout + config.stderr


def _exec_start() -> list[str]:
    line = next(line for line in UNIT.read_text().splitlines() if line.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


def test_the_unit_starts_ldp_serve_with_options_it_has():
    from ldp.collector.serve_cli import serve

    command = _exec_start()
    assert command[0].endswith("/ldp") and command[1] == "serve"
    known = {opt for param in serve.params for opt in param.opts}
    given = {arg for arg in command[2:] if arg.startswith("--")}
    assert given <= known, given - known
    # the proxy's X-Forwarded-For is believed from loopback only, where nginx connects from
    assert command[command.index("--trusted-proxy") + 1] == "127.0.0.1"
    assert "X-Forwarded-For $remote_addr" in (DEPLOY / "nginx" / "ldp-collector.conf").read_text()
    # no secret on the command line (ps shows it): the store URL comes from the environment file, password-free
    env = (DEPLOY / "systemd" / "collector.env").read_text()
    store = next(line for line in env.splitlines() if line.startswith("LDP_STORE=")).split("=", 1)[1]
    assert re.fullmatch(r"postgresql://[\w-]+@[\w.-]+(:\d+)?/\w+", store)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_unit(tmp_path):
    """The unit as shipped, with ExecStart pointed at this environment's ldp (verify checks it exists)."""
    ldp = Path(sys.executable).with_name("ldp")
    if not ldp.exists():
        pytest.skip("no ldp script beside this Python")
    unit = tmp_path / UNIT.name
    unit.write_text(UNIT.read_text().replace("/opt/ldp/bin/ldp", str(ldp)))
    done = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True)
    assert done.returncode == 0 and not done.stderr.strip(), done.stderr


def test_the_guide_quotes_the_units_command_line():
    guide = (ROOT / "docs" / "how-to" / "deploy.md").read_text()
    line = next(line for line in UNIT.read_text().splitlines() if line.startswith("ExecStart="))
    assert line in guide
