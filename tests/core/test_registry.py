"""The one declarative mechanism registry (ldp.registry) and third-party mechanisms through entry points.

The toy mechanism of ``tests/plugins/toy_mechanism`` is a separate package:
nothing in ``ldp`` names it. Installed (a ``.dist-info`` with its entry point
next to its code, on ``PYTHONPATH``; or ``pip install`` in the slow test) it
works through ``ldp spec``, ``encode``, ``aggregate``, ``simulate`` and ``audit``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ldp
from ldp import registry
from ldp.errors import ParameterError
from ldp.plugins import ROLES, has_implementation, implementation
from ldp.registry import BUILTIN_MECHANISMS, LAYER_ROLES, MechanismDeclaration, declaration, declarations
from ldp.specs.base import registered_specs, spec_class

TOY = Path(__file__).resolve().parents[1] / "plugins" / "toy_mechanism"
REPO = Path(__file__).resolve().parents[2]


# -- the declarations -------------------------------------------------------------------------------


@pytest.mark.parametrize("decl", BUILTIN_MECHANISMS, ids=lambda d: d.name)
def test_every_declared_path_resolves_to_what_its_role_needs(decl):
    spec = decl.load_spec()
    assert spec.mechanism == decl.name and registered_specs()[decl.name] is spec
    for role in LAYER_ROLES:
        if decl.path(role) is not None:
            assert callable(decl.load(role)), f"{decl.name}: {role} {decl.path(role)} is not callable"
    for module in decl.docs:
        __import__(module)


def test_the_registered_specs_are_the_declared_ones_in_declaration_order():
    assert list(registered_specs()) == [d.name for d in declarations()]
    assert len({d.name for d in BUILTIN_MECHANISMS}) == len(BUILTIN_MECHANISMS)


def test_every_builtin_spec_class_is_loadable_by_name_and_from_its_json():
    for decl in BUILTIN_MECHANISMS:
        cls = decl.load_spec()
        assert spec_class(decl.name) is cls and spec_class(decl.name.upper().replace("-", "_")) is cls


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "Toy RR", "spec": "a:B"}, "lower-case"),
        ({"name": "toy", "spec": "a.B"}, "spec must be a 'module:attribute' path"),
        ({"name": "toy", "spec": "a:B", "encoder": "a.b"}, "encoder must be a 'module:attribute' path"),
    ],
)
def test_a_malformed_declaration_is_refused_when_it_is_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MechanismDeclaration(**kwargs)


def test_a_declaration_whose_spec_class_has_another_name_is_an_error():
    wrong = MechanismDeclaration("not-grr", "ldp.specs.frequency:GRR")
    with pytest.raises(RuntimeError, match="not a spec class whose mechanism is 'not-grr'"):
        wrong.load_spec()


def test_a_mechanism_name_is_looked_up_case_and_separator_insensitively():
    assert spec_class("Binary_RR") is ldp.BinaryRR
    assert declaration("binary-rr").name == "binary-rr"
    with pytest.raises(ParameterError, match=r"unknown mechanism 'nope'; known: .*grr"):
        spec_class("nope")


def test_roles_of_the_lookups_are_the_declarations_fields():
    assert tuple(ROLES) == LAYER_ROLES
    assert all(role in {f.name for f in dataclasses.fields(MechanismDeclaration)} for role in ROLES)


@pytest.mark.slow  # a fresh interpreter; the fast set's import probe: test_cli_imports' --help test
def test_the_client_imports_no_aggregator_simulation_or_audit_code():
    """Every mechanism's encoders are found without importing another layer (each lookup imports its module)."""
    code = textwrap.dedent(
        """
        import sys, json
        import numpy as np
        from ldp.client import encode_batch, make_encoder
        from conftest import every_spec_shape, sample_values
        for spec in every_spec_shape():
            make_encoder(spec).encode(sample_values(spec, 1)[0])
            encode_batch(spec, sample_values(spec, 4), np.random.default_rng(0))
        layers = ("ldp.aggregator", "ldp.simulations", "ldp.audit_events", "ldp.collector", "pandas", "scipy")
        print(json.dumps(sorted({m for m in sys.modules if m.startswith(layers)})))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_an_unknown_role_and_an_undeclared_role_are_clear_errors():
    assert not has_implementation(ldp.Duchi, "fast_simulator")
    with pytest.raises(ParameterError, match=r"no fast simulator for Duchi \(mechanism 'duchi'\)"):
        implementation(ldp.Duchi(epsilon=1.0), "fast_simulator")
    with pytest.raises(ParameterError, match="unknown plug-in role 'decoder'"):
        has_implementation(ldp.GRR, "decoder")


# -- third-party mechanisms through the entry point ---------------------------------------------------


def install_toy(target: Path) -> Path:
    """Install the toy package in ``target`` as an installer would: its code and a .dist-info with its entry point."""
    shutil.copytree(TOY / "src" / "toy_mechanism", target / "toy_mechanism")
    info = target / "ldp_toy_mechanism-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ldp-toy-mechanism\nVersion: 1.0.0\n")
    (info / "entry_points.txt").write_text("[ldp.mechanisms]\ntoy-rr = toy_mechanism:DECLARATION\n")
    return target


#: Runs ldp commands in one interpreter (each through the real CLI); prints one JSON line of results.
_DRIVER = """
import json, sys
from click.testing import CliRunner
from ldp.cli import cli
runner = CliRunner()
out = {}
for key, args in json.loads(sys.argv[1]):
    result = runner.invoke(cli, args, catch_exceptions=False)
    out[key] = [result.exit_code, result.output]
print(json.dumps(out))
"""


AGGREGATE = [sys.executable, "-m", "ldp", "aggregate", "--spec"]


def _commands(work: Path) -> list[tuple[str, list[str]]]:
    spec, values = str(work / "spec.json"), str(work / "values.txt")
    (work / "values.txt").write_text("a\nb\nc\na\n" * 500)
    return [
        ("spec", ["spec", "toy-rr", "--epsilon", "1", "--domain", "a,b,c", "-o", spec]),
        ("encode", ["encode", "--spec", spec, values, "-o", str(work / "reports.jsonl")]),
        (
            "aggregate",
            ["aggregate", "--spec", spec, str(work / "reports.jsonl"), "-o", str(work / "est.csv")],
        ),
        ("simulate", ["simulate", "-m", "toy-rr,grr", "-e", "1", "-n", "2000", "-d", "8", "--repeats", "1"]),
        # The toy's client draws CSPRNG coins (no seed): α = 1e-6 keeps a correct encoder from being flagged by
        # chance (at the default 0.95 it was, once: ε ≥ 1.0131 against 1.0).
        ("audit", ["audit", "--spec", spec, "--samples", "4000", "--confidence", "0.999999"]),
    ]


def _run_toy_commands(work: Path, env: dict[str, str]) -> dict[str, list]:
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(_commands(work))],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=True,
    )
    return json.loads(proc.stdout.splitlines()[-1])


def _check_toy_results(work: Path, results: dict[str, list]) -> None:
    for key, (code, output) in results.items():
        assert code == 0, f"ldp {key} failed: {output}"
    spec = json.loads((work / "spec.json").read_text())
    assert spec["mechanism"] == "toy-rr"
    first = json.loads((work / "reports.jsonl").read_text().splitlines()[0])
    assert set(first) == {"v", "spec", "index"} and 0 <= first["index"] < 3
    assert "2,000 valid" in results["aggregate"][1]
    rows = (work / "est.csv").read_text().splitlines()
    assert rows[0].startswith("value,consistent,estimate") and len(rows) == 4
    assert "toy-rr" in results["simulate"][1] and "grr" in results["simulate"][1]
    assert "audit of toy-rr" in results["audit"][1] and "verdict: consistent" in results["audit"][1]


# Slow set: a fresh interpreter (the toy on PYTHONPATH) runs five commands. Fast: the toy found through its entry
# point, loaded and forgotten in process (test_the_toy_mechanism_is_found_in_process_and_forgotten_after), and
# simulated when registered after the simulator was imported.
@pytest.mark.slow
def test_a_mechanism_of_an_installed_package_works_in_every_command(tmp_path):
    site = install_toy(tmp_path / "site")
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site)}
    _check_toy_results(work, _run_toy_commands(work, env))


def test_the_toy_mechanism_is_found_in_process_and_forgotten_after(tmp_path, monkeypatch):
    site = install_toy(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        decl = declaration("toy-rr")
        assert decl is not None and [d.name for d in declarations()][-1] == "toy-rr"
        toy = spec_class("toy-rr")(domain=("a", "b", "c"), epsilon=1.0)
        assert ldp.load_spec(toy.to_dict()) == toy
        assert has_implementation(toy, "accumulator") and has_implementation(toy, "audit_events")
        from ldp.specs import FREQUENCY_MECHANISMS

        assert "toy-rr" in FREQUENCY_MECHANISMS
    finally:
        monkeypatch.undo()
        for name in [m for m in sys.modules if m == "toy_mechanism" or m.startswith("toy_mechanism.")]:
            del sys.modules[name]
        registry.refresh()
    assert declaration("toy-rr") is None and "toy-rr" not in registered_specs()


def test_ldp_simulate_knows_a_mechanism_registered_after_it_was_imported(tmp_path, monkeypatch):
    """MECHANISM_KINDS reads the registry when used: an entry point found later is simulated, and forgotten after."""
    from click.testing import CliRunner

    from ldp.cli import cli
    from ldp.simulations.mechanisms import MECHANISM_KINDS, mechanism_kind

    assert "toy-rr" not in MECHANISM_KINDS  # the simulator is imported before the toy is installed
    site = install_toy(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        assert mechanism_kind("toy-rr") == "frequency" and list(MECHANISM_KINDS)[-3:] == [
            "rappor",
            "pem",
            "treehist",
        ]
        args = [
            "simulate",
            "-m",
            "toy-rr,grr",
            "-e",
            "1",
            "-n",
            "2000",
            "-d",
            "8",
            "--repeats",
            "1",
            "--seed",
            "1",
        ]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert "toy-rr" in result.output and "grr" in result.output
    finally:
        monkeypatch.undo()
        for name in [m for m in sys.modules if m == "toy_mechanism" or m.startswith("toy_mechanism.")]:
            del sys.modules[name]
        registry.refresh()
    assert "toy-rr" not in MECHANISM_KINDS


def test_a_broken_or_clashing_entry_point_is_skipped_with_a_warning(tmp_path, monkeypatch):
    site = tmp_path / "site"
    info = site / "ldp_broken-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ldp-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ldp.mechanisms]\nbroken = no_such_module:DECLARATION\nclash = ldp_clash:DECLARATION\n"
    )
    (site / "ldp_clash.py").write_text(
        "from ldp.registry import MechanismDeclaration\n"
        "DECLARATION = MechanismDeclaration('grr', 'ldp.specs.frequency:GRR')\n"
    )
    monkeypatch.syspath_prepend(str(site))
    registry.refresh()
    try:
        with pytest.warns(RuntimeWarning) as caught:
            names = [d.name for d in declarations()]
        messages = " | ".join(str(w.message) for w in caught)
        assert "skipped entry point 'broken'" in messages and "ModuleNotFoundError" in messages
        assert "skipped mechanism 'grr'" in messages and "already registered" in messages
        assert names == [d.name for d in BUILTIN_MECHANISMS]
    finally:
        monkeypatch.undo()
        sys.modules.pop("ldp_clash", None)
        registry.refresh()


@pytest.fixture
def pip_installed_toy(tmp_path):
    """The real install: pip builds the toy package from its pyproject.toml into a target directory.

    pip builds in an isolated environment, so it fetches setuptools as the wheel test of
    tests/core/test_packaging.py fetches it.
    """
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(TOY)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )  # --no-deps: ldp-telemetry is this checkout, already importable
    return site


@pytest.mark.slow
def test_the_toy_package_installed_by_pip_works_in_every_command(pip_installed_toy, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PYTHONPATH": str(pip_installed_toy)}
    results = _run_toy_commands(work, env)
    _check_toy_results(work, results)
    spec, reports = str(work / "spec.json"), str(work / "reports.jsonl")
    outputs = {}
    for engine in (
        "local",
        "dask",
    ):  # the Dask workers import the toy's accumulator from the installed package
        outputs[engine] = work / f"{engine}.csv"
        subprocess.run(
            [*AGGREGATE, spec, reports, "--engine", engine, "--workers", "2", "-o", str(outputs[engine])],
            check=True,
            capture_output=True,
            env=env,
            cwd=work,
        )
    assert outputs["dask"].read_text() == outputs["local"].read_text()


@pytest.mark.slow
def test_the_toy_mechanism_goes_through_the_collector_to_the_same_estimates(
    pip_installed_toy, tmp_path, monkeypatch
):
    """``ldp serve`` (a process with the toy installed) takes toy-rr reports and estimates as the aggregator does."""
    import httpx
    import numpy as np
    import pandas as pd
    from collector_server import create_task, envelopes, now_truncated, running, store_path, upload

    from ldp.aggregator import make_aggregator
    from ldp.client import encode_batch

    monkeypatch.setenv("PYTHONPATH", str(pip_installed_toy))
    monkeypatch.syspath_prepend(str(pip_installed_toy))
    registry.refresh()
    try:
        spec = spec_class("toy-rr")(domain=("a", "b", "c"), epsilon=1.0)
        reports = list(encode_batch(spec, ["a", "b", "c", "a"] * 75, np.random.default_rng(2)).reports(spec))
        store = store_path(tmp_path)
        task, token = create_task(store, spec, window="1h", time_precision="1m", min_batch=1)
        with running(store) as server:
            data = upload(server, task, envelopes(reports, now_truncated(task))).json()
            got = httpx.get(
                f"{server.url}/v1/tasks/{task.task_id}/estimates",
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            ).json()
        assert (data["accepted"], data["rejected"]) == (300, [])
        accumulator = make_aggregator(spec)
        for report in reports:
            accumulator.add(report)
        from ldp.aggregator.views import default_consistency

        expected = accumulator.estimate(confidence=0.95, consistency=default_consistency(spec))
        pd.testing.assert_frame_equal(
            pd.DataFrame(got["estimates"]), expected, check_exact=True, check_dtype=False
        )
    finally:
        monkeypatch.undo()
        for name in [m for m in sys.modules if m == "toy_mechanism" or m.startswith("toy_mechanism.")]:
            del sys.modules[name]
        registry.refresh()


# -- files generated from the registry -----------------------------------------------------------------


REGISTRY_GENERATORS = [
    "docs/_ext/mechanism_pages.py",
    "js/scripts/spec_fields.py",
    "kotlin/scripts/spec_fields.py",
]

#: Runs each generator's ``--check`` as its ``__main__``, in order, in one fresh interpreter (a clean registry,
#: as from the command line; one interpreter's start-up, not three), and prints {generator: [status, stderr]}.
_CHECK_GENERATORS = """
import contextlib, io, json, runpy, sys
results = {}
for generator in sys.argv[1:]:
    sys.argv, errors, status = [generator, "--check"], io.StringIO(), 0
    with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
        try:
            runpy.run_path(generator, run_name="__main__")
        except SystemExit as exit:
            status = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else 1)
            if not isinstance(exit.code, (int, type(None))):
                errors.write(str(exit.code))
    results[generator] = [status, errors.getvalue()]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def generator_checks() -> dict[str, list]:
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK_GENERATORS, *(str(REPO / g) for g in REGISTRY_GENERATORS)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr
    return {Path(g).relative_to(REPO).as_posix(): r for g, r in json.loads(proc.stdout).items()}


@pytest.mark.parametrize(
    "generator", REGISTRY_GENERATORS, ids=["docs-api-mechanisms", "js-specfields", "kotlin-specfields"]
)
def test_the_files_generated_from_the_registry_are_current(generator, generator_checks):
    """docs/api/mechanisms.md, the TypeScript files (js/src/specfields.ts, registry.ts, families.ts, catalog/*.ts) and the Kotlin ones (SpecFields.kt, Registry.kt, PrivacyRegistry.kt) are written from the registry: rerun the generator."""
    status, errors = generator_checks[generator]
    assert status == 0, errors


def test_the_generated_files_list_every_builtin_mechanism():
    page = (REPO / "docs" / "api" / "mechanisms.md").read_text(encoding="utf-8")
    for decl in BUILTIN_MECHANISMS:
        assert f"| `{decl.name}` | `{decl.spec}` |" in page
    assert "api/mechanisms.md" in (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    script = _spec_fields_script()
    catalog = (REPO / "js" / "src" / "specfields.ts").read_text(encoding="utf-8")
    for decl in BUILTIN_MECHANISMS:
        entry = script.entry_name(decl.name)
        assert f"  {decl.name}," in catalog or f'  "{decl.name}": {entry},' in catalog
        assert re.search(rf'import \{{[^}}]*\b{entry}\b[^}}]*\}} from "\./catalog/\w+\.js";', catalog), (
            decl.name
        )
    names = (REPO / "js" / "src" / "catalog" / "names.ts").read_text(encoding="utf-8")
    assert [decl.name for decl in BUILTIN_MECHANISMS] == re.findall(r'^  "([^"]+)",$', names, re.MULTILINE)


def _spec_fields_script():
    """js/scripts/spec_fields.py, the generator of the TypeScript files, as a module."""
    import importlib.util

    path = REPO / "js" / "scripts" / "spec_fields.py"
    spec = importlib.util.spec_from_file_location("ldp_js_spec_fields", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_typescript_dispatch_has_every_tagged_encoder_and_no_other_list():
    """js/src/registry.ts (makeEncoder) is the one TypeScript list of mechanisms, read from the @mechanisms tags."""
    script = _spec_fields_script()
    classes = script.encoder_classes()
    assert set(classes) <= {decl.name for decl in BUILTIN_MECHANISMS}
    assert {
        "grr",
        "binary-rr",
        "sue",
        "oue",
        "olh",
        "blh",
        "hr",
        "cms",
        "hcms",
        "ss",
        "rappor",
        "pem",
        "treehist",
    } <= set(classes)
    dispatch = (REPO / "js" / "src" / "registry.ts").read_text(encoding="utf-8")
    for name, (module, cls, _) in classes.items():
        assert f'    case "{name}":' in dispatch
        assert f'from "./{module}.js";' in dispatch and cls in dispatch
    assert "RapporEncoder.create(spec, source, options)" in dispatch
    for module, cls, _ in classes.values():  # public with makeEncoder: index.ts needs no line per encoder
        assert re.search(rf'export \{{[^}}]*\b{cls}\b[^}}]*\}} from "\./{module}\.js";', dispatch), cls
    encoders = (REPO / "js" / "src" / "encoders.ts").read_text(encoding="utf-8")
    assert "case " not in encoders


def test_the_typescript_dispatch_refuses_an_unknown_or_doubly_claimed_mechanism(tmp_path):
    script = _spec_fields_script()
    (tmp_path / "a.ts").write_text(
        "/**\n * An encoder.\n *\n * @mechanisms grr no-such-mechanism\n */\nexport class AEncoder {}\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match="no-such-mechanism"):
        script.render_registry(tmp_path)
    (tmp_path / "a.ts").write_text("/** @mechanisms grr */\nexport class AEncoder {}\n", encoding="utf-8")
    (tmp_path / "b.ts").write_text("/** @mechanisms grr */\nexport class BEncoder {}\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="grr: encoded by both AEncoder"):
        script.render_registry(tmp_path)
    (tmp_path / "b.ts").write_text(
        "/** @mechanisms sue */\nexport class BEncoder {\n  static create(spec, source, options) {}\n}\n",
        encoding="utf-8",
    )
    text = script.render_registry(tmp_path)
    assert '    case "grr":\n      return new AEncoder(spec, source);' in text
    assert '    case "sue":\n      return BEncoder.create(spec, source, options);' in text


def test_the_typescript_family_exports_are_generated_and_index_names_no_family(tmp_path, capsys):
    """js/src/families.ts re-exports each module of a tagged encoder class; index.ts re-exports it, no family."""
    script = _spec_fields_script()
    modules = {module for module, _, _ in script.encoder_classes().values()}
    families = (REPO / "js" / "src" / "families.ts").read_text(encoding="utf-8")
    for module in modules:
        assert f'export * from "./{module}.js";' in families
    index = (REPO / "js" / "src" / "index.ts").read_text(encoding="utf-8")
    assert 'export * from "./families.js";' in index
    assert not [module for module in modules if f'"./{module}.js"' in index]
    # a new family's module is exported with no line of its own
    (tmp_path / "newfamily.ts").write_text(
        "/** An encoder.\n *\n * @mechanisms grr\n */\nexport class NewEncoder {}\n", encoding="utf-8"
    )
    assert script.render_families(tmp_path).endswith('export * from "./newfamily.js";\n')
    # --check fails while families.ts is stale
    stale = tmp_path / "families.ts"
    stale.write_text(families.replace('export * from "./dbitflip.js";\n', ""), encoding="utf-8")
    script.FAMILIES = stale
    assert script.main(["--check"]) == 1
    assert "families.ts is stale: run python js/scripts/spec_fields.py" in capsys.readouterr().err
    stale.write_text(families, encoding="utf-8")
    assert script.main(["--check"]) == 0


def test_the_typescript_privacy_dispatch_has_every_tagged_family_and_is_checked_for_staleness(
    tmp_path, capsys
):
    """Each mechanism's entry (js/src/catalog/<family>.ts, one module per privacy module) names its family's
    @privacy function; specfields.ts gathers every entry (CATALOG), which mechanismPrivacy dispatches over."""
    script = _spec_fields_script()
    functions = script.privacy_functions()
    assert set(functions) == {decl.name for decl in BUILTIN_MECHANISMS}
    composite = script.composite_functions()  # a composite spec's function gets the dispatcher for its parts
    assert composite == {"multiAttributePrivacy"}
    # and so does its encoder (its create's fourth parameter): makeEncoder for its parts
    assert script.composite_encoders() == {"MultiAttributeEncoder"}
    registry = (REPO / "js" / "src" / "registry.ts").read_text(encoding="utf-8")
    assert (
        "MultiAttributeEncoder.create(spec, source, options, (part) => makeEncoder(part, options))"
        in registry
    )
    catalog = REPO / "js" / "src" / "catalog"
    assert {path.stem for path in catalog.glob("*.ts")} == {m for m, _ in functions.values()} | {"names"}
    for name, (module, function) in functions.items():
        text = (catalog / f"{module}.ts").read_text(encoding="utf-8")
        entry = re.search(
            rf"export const {script.entry_name(name)}: MechanismEntry = \{{\n(.*?)\n\}};", text, re.DOTALL
        )
        assert entry is not None, name
        assert f"  privacy: {function}," in entry[1] and f'from "../privacy/{module}.js";' in text
    # the shared claim check, the spec loader and the ledger name no mechanism: the entries do
    for module in ("claim.ts", "claimcheck.ts", "catalog.ts", "specload.ts", "budget.ts", "privacyfields.ts"):
        source = (REPO / "js" / "src" / module).read_text(encoding="utf-8")
        assert '"rappor"' not in source and "switch" not in source, module
    # --check fails while a family's entries are stale, or while a module of no family is left in catalog/
    for path in catalog.glob("*.ts"):  # a copy: the other tests read the real files meanwhile
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    script.CATALOG = tmp_path
    assert script.main(["--check"]) == 0
    stale = tmp_path / "grr.ts"
    text = stale.read_text(encoding="utf-8")
    stale.write_text(text.replace("  privacy: grrPrivacy,\n", "", 1), encoding="utf-8")
    assert script.main(["--check"]) == 1
    assert "grr.ts is stale: run python js/scripts/spec_fields.py" in capsys.readouterr().err
    stale.write_text(text, encoding="utf-8")
    (tmp_path / "gone.ts").write_text("// a family whose @privacy tags were removed\n", encoding="utf-8")
    assert script.main(["--check"]) == 1
    assert "gone.ts is stale" in capsys.readouterr().err


def test_the_typescript_privacy_dispatch_refuses_an_unknown_or_doubly_claimed_mechanism(tmp_path):
    script = _spec_fields_script()
    (tmp_path / "privacy").mkdir()
    (tmp_path / "privacy" / "a.ts").write_text(
        "/**\n * Facts.\n *\n * @privacy grr no-such-mechanism\n */\nexport function aPrivacy(fields) {}\n",
        encoding="utf-8",
    )
    with pytest.raises(
        SystemExit, match=r"@privacy names a mechanism ldp/registry\.py does not declare: no-such"
    ):
        script.catalog_modules(tmp_path)
    (tmp_path / "privacy" / "a.ts").write_text(
        "/** @privacy grr */\nexport function aPrivacy(f) {}\n", encoding="utf-8"
    )
    (tmp_path / "privacy" / "b.ts").write_text(
        "/** @privacy grr */\nexport function bPrivacy(f) {}\n", encoding="utf-8"
    )
    with pytest.raises(
        SystemExit, match=r"grr: @privacy functions both aPrivacy \(privacy/a.ts\) and bPrivacy"
    ):
        script.catalog_modules(tmp_path)
    (tmp_path / "privacy" / "b.ts").write_text(
        "/** Not tagged. */\nexport function helper() {}\n/** @privacy sue oue */\nexport function bPrivacy(f) {}\n",
        encoding="utf-8",
    )
    assert script.catalog_modules(tmp_path) == {"a": ["grr"], "b": ["sue", "oue"]}
    (tmp_path / "privacy" / "names.ts").write_text(
        "/** @privacy olh */\nexport function n(f) {}\n", encoding="utf-8"
    )
    with pytest.raises(SystemExit, match=r"privacy/names\.ts: rename it"):
        script.catalog_modules(tmp_path)  # its entries would be written over the list of every mechanism
    (tmp_path / "privacy" / "names.ts").unlink()
    text = script.render_catalog("b", tmp_path)
    assert "export const sue: MechanismEntry = {" in text and "export const oue: MechanismEntry = {" in text
    assert text.count("  privacy: bPrivacy,\n") == 2 and "grr" not in text
    assert 'import { bPrivacy } from "../privacy/b.js";' in text and "helper" not in text
    with pytest.raises(SystemExit, match=r"no @privacy function in js/src/privacy/ for: binary-rr, olh,"):
        script.render(tmp_path)  # the TypeScript client would refuse their specs


def test_the_typescript_epsilon_limits_and_calibrated_fields_are_the_python_specs():
    """Each entry's epsilonLimit, looseClaim and calibrated fields (js/src/catalog/) are generated from the spec classes."""
    from ldp.specs.base import ExactPrivacySpec

    script = _spec_fields_script()
    limits = script.epsilon_limits()
    for decl in BUILTIN_MECHANISMS:
        cls = decl.load_spec()
        if decl.name in limits:
            assert limits[decl.name] == (cls.max_epsilon, cls.max_epsilon_reason)
        else:  # no stated epsilon (RAPPOR), or a limit that depends on the grid (Laplace, Gaussian)
            assert (
                not issubclass(cls, ExactPrivacySpec)
                or cls._epsilon_limit is not ExactPrivacySpec._epsilon_limit
            )
    assert limits["grr"][0] == 23.0 and limits["olh"][0] == 21.0 and limits["sue"][0] == 45.0
    assert {"laplace", "gaussian", "rappor"}.isdisjoint(limits)
    catalog = REPO / "js" / "src" / "catalog"
    entries = {
        m.group(1): m.group(2)
        for path in catalog.glob("*.ts")
        for m in re.finditer(
            r"export const (\w+): MechanismEntry = \{\n(.*?)\n\};",
            path.read_text(encoding="utf-8"),
            re.DOTALL,
        )
    }
    assert '  epsilonLimit: [21.0, "its hash range g' in entries["olh"]
    loose = [
        d.name for d in BUILTIN_MECHANISMS if not getattr(d.load_spec(), "claim_matches_probabilities", True)
    ]
    assert "piecewise" in loose and "grr" not in loose
    assert [
        d.name for d in BUILTIN_MECHANISMS if "  looseClaim: true," in entries[script.entry_name(d.name)]
    ] == loose
    assert (
        '  calibrated: ["blocks", "p"],' in entries["hr"] and '  calibrated: ["omega", "p"],' in entries["ss"]
    )
    assert "calibrated" not in entries["rappor"]  # RAPPOR states no epsilon: f, p, q are given


def test_no_shared_typescript_module_names_a_mechanism():
    """Outside the generated dispatches and each family's own modules, js/src names no mechanism: a new one edits no list."""
    script = _spec_fields_script()
    src = REPO / "js" / "src"
    generated = {script.OUTPUT.name, script.REGISTRY.name}  # and catalog/*.ts, outside src.glob("*.ts")
    # a family's modules: its encoder (an @mechanisms class; numeric.ts's NumericEncoder takes the server's table)
    families = {module + ".ts" for module, _, _ in script.encoder_classes().values()} | {"numeric.ts"}
    # frequency.ts is the small bundle's entry (ldp-client/frequency): it names the oracles it bundles, a choice
    # of size, and refuses the rest; a new mechanism is in the main entry's generated dispatch without it
    families |= {"frequency.ts"}
    names = "|".join(re.escape(decl.name) for decl in BUILTIN_MECHANISMS)
    literal = re.compile(rf"[\"'`]({names})[\"'`]")
    shared = sorted(p.name for p in src.glob("*.ts") if p.name not in generated | families)
    assert {"claim.ts", "budget.ts", "epsilon.ts", "spec.ts", "cli.ts", "node.ts", "browser.ts"} <= set(
        shared
    )
    for name in shared:
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", (src / name).read_text(encoding="utf-8"), flags=re.DOTALL)
        assert not literal.search(code), f"js/src/{name} names {literal.search(code)[1]}"


def test_a_family_module_names_no_other_familys_mechanism():
    """Each encoder family's module of js/src names only the mechanisms of its @mechanisms tag.

    Before: multiattr.ts listed the numeric mechanisms whose tables are the server's and those with a two-point
    table (and numeric.ts its grid mechanisms' table kinds); both read the generated ``NUMERIC_TABLES`` now.
    """
    script = _spec_fields_script()
    src = REPO / "js" / "src"
    own: dict[str, set[str]] = {}
    for mechanism, (module, _, _) in script.encoder_classes().items():
        own.setdefault(module + ".ts", set()).add(mechanism)
    names = "|".join(re.escape(decl.name) for decl in BUILTIN_MECHANISMS)
    literal = re.compile(rf"[\"'`]({names})[\"'`]")
    assert "multiattr.ts" in own
    for name, mechanisms in sorted(own.items()):
        code = re.sub(r"/\*.*?\*/|//[^\n]*", "", (src / name).read_text(encoding="utf-8"), flags=re.DOTALL)
        others = sorted({match[1] for match in literal.finditer(code)} - mechanisms)
        assert not others, f"js/src/{name} names {', '.join(others)}"
    tables = (src / "specfields.ts").read_text(encoding="utf-8").split("NUMERIC_TABLES", 1)[1]
    assert (
        '  duchi: "two-point",' in tables and '  laplace: "shift",' in tables and "onebitmean" not in tables
    )


def test_the_typescript_canonical_dispatch_completes_derived_fields(tmp_path):
    """A mechanism's derived spec fields are its @canonical function's (RAPPOR's sizes, 1BitMean's default α grid,
    the prefix oracles' default width, LOLOHA's default pool),
    dispatched by completeFields."""
    script = _spec_fields_script()
    assert script.tagged_functions("canonical") == {
        "rappor": ("rappor", "rapporFields"),
        "onebitmean": ("onebitmean", "oneBitMeanFields"),
        "loloha": ("loloha", "lolohaFields"),
        "pem": ("localhash", "prefixFields"),
        "treehist": ("localhash", "prefixFields"),
    }
    entry = (REPO / "js" / "src" / "catalog" / "rappor.ts").read_text(encoding="utf-8")
    assert "  privacy: rapporPrivacy,\n  complete: rapporFields,\n};" in entry
    (tmp_path / "privacy").mkdir()
    (tmp_path / "privacy" / "a.ts").write_text(
        "/** @privacy grr */\nexport function aPrivacy(f) {}\n/** @canonical grr */\nexport function aFields(o) {}\n"
        "/** @canonical grr */\nexport function bFields(o) {}\n",
        encoding="utf-8",
    )
    with pytest.raises(SystemExit, match=r"grr: @canonical functions both aFields"):
        script.render_catalog("a", tmp_path)


def test_a_module_of_ldp_mechanisms_is_a_builtin_family(tmp_path, monkeypatch):
    """A new built-in family is one module in ldp.mechanisms with DECLARATIONS: no list is edited."""
    import sys

    import ldp.mechanisms
    from ldp import registry

    (tmp_path / "zz_family.py").write_text(
        "from ldp.registry import MechanismDeclaration\n"
        "DECLARATIONS = (MechanismDeclaration('zz-rr', 'ldp.specs.frequency:GRR'),)\n"
    )
    monkeypatch.setattr(ldp.mechanisms, "__path__", [*ldp.mechanisms.__path__, str(tmp_path)])
    names = [d.name for d in registry._builtin()]
    assert names[-1] == "zz-rr" and names[: len(registry._CORE_MECHANISMS)] == [
        d.name for d in registry._CORE_MECHANISMS
    ]
    (tmp_path / "zz_family.py").write_text("X = 1\n")
    sys.modules.pop("ldp.mechanisms.zz_family", None)
    with pytest.raises(RuntimeError, match="declares no DECLARATIONS"):
        registry._builtin()
    sys.modules.pop("ldp.mechanisms.zz_family", None)


# -- the Kotlin client's generated files (kotlin/scripts/spec_fields.py) ------------------------------------


def _kotlin_spec_fields_script():
    """kotlin/scripts/spec_fields.py, the generator of the Kotlin files, as a module."""
    import importlib.util

    path = REPO / "kotlin" / "scripts" / "spec_fields.py"
    spec = importlib.util.spec_from_file_location("ldp_kotlin_spec_fields", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_kotlin_spec_fields_list_every_builtin_mechanism_and_the_dispatch_every_tagged_encoder():
    script = _kotlin_spec_fields_script()
    fields = script.SPEC_FIELDS.read_text(encoding="utf-8")
    for decl in BUILTIN_MECHANISMS:
        assert f'        "{decl.name}" to listOf(' in fields
    classes = script.encoder_classes()
    assert {"grr", "binary-rr", "sue", "oue"} <= set(classes)
    registry = script.REGISTRY.read_text(encoding="utf-8")
    for mechanism, (_, cls, _, _, artifact) in classes.items():
        assert f'        "{mechanism}" to "{artifact}",' in registry
        family = script.module_src(artifact) / "families" / f"{script.family_class(artifact)}.kt"
        assert f"import dev.ldp.client.mechanisms.{cls}" in family.read_text(encoding="utf-8")
    frequency = script.module_src("ldp-client-frequency") / "families" / "FrequencyFamily.kt"
    text = frequency.read_text(encoding="utf-8")
    assert '"grr", "binary-rr" -> GrrEncoder(spec, source)' in text
    assert '"grr", "binary-rr" -> grrPrivacy(fields)' in text
    assert not (script.SRC / "families").exists()  # core holds no family of its own


def test_each_kotlin_artifact_declares_its_family_as_a_service():
    """core finds the families through java.util.ServiceLoader: each artifact's services file names its class."""
    script = _kotlin_spec_fields_script()
    owners = script.artifacts()
    assert owners["grr"] == "ldp-client-frequency" and owners["pem"] == "ldp-client-heavyhitters"
    assert owners["rappor"] == "ldp-client-rappor"
    assert owners["multi-attribute"] == "ldp-client-multiattribute"
    assert script.CORE not in owners.values() and script.CORE not in script.FAMILY_ARTIFACTS
    for artifact in script.FAMILY_ARTIFACTS:
        services = script.KOTLIN / artifact / "src" / "main" / "resources" / "META-INF" / "services"
        entry = (services / "dev.ldp.client.MechanismFamily").read_text(encoding="utf-8")
        assert f"dev.ldp.client.families.{script.family_class(artifact)}\n" in entry
    assert script.family_class("ldp-client-heavyhitters") == "HeavyhittersFamily"


def test_the_kotlin_dispatch_refuses_an_unknown_or_doubly_claimed_mechanism(tmp_path):
    script = _kotlin_spec_fields_script()
    (tmp_path / "mechanisms").mkdir()
    (tmp_path / "privacy").mkdir()
    a = tmp_path / "mechanisms" / "A.kt"
    a.write_text(
        "/**\n * An encoder.\n *\n * @mechanisms grr no-such-mechanism\n */\npublic class AEncoder\n"
    )
    with pytest.raises(SystemExit, match="no-such-mechanism"):
        script.render_registry(tmp_path)
    a.write_text("/** @mechanisms grr */\nclass AEncoder\n")
    b = tmp_path / "mechanisms" / "B.kt"
    b.write_text("/** @mechanisms grr */\nclass BEncoder\n")
    with pytest.raises(SystemExit, match="grr: encoded by both AEncoder"):
        script.render_registry(tmp_path)
    b.write_text(
        "/** @mechanisms sue */\npublic class BEncoder {\n    companion object {\n"
        "        @JvmStatic fun create(spec: Spec, source: ByteSource, options: EncoderOptions): Encoder = TODO()\n"
        "    }\n}\n"
        "/** @mechanisms multi-attribute */\nclass CEncoder {\n    companion object {\n"
        "        fun create(spec: Spec, source: ByteSource, options: EncoderOptions, parts: (Spec) -> Encoder)"
        ": Encoder = TODO()\n    }\n}\n"
    )
    assert '"grr" to "ldp-client-core",' in script.render_registry(tmp_path)
    text = script.render_family(script.CORE, tmp_path)
    assert '"grr" -> AEncoder(spec, source)' in text
    assert '"sue" -> BEncoder.create(spec, source, options)' in text
    assert '"multi-attribute" -> CEncoder.create(spec, source, options, parts)' in text
    (tmp_path / "privacy" / "P.kt").write_text(
        "/** @privacy grr */\npublic fun aPrivacy(fields: JsonObject): MechanismPrivacy = TODO()\n"
    )
    q = tmp_path / "privacy" / "Q.kt"
    q.write_text("/** @privacy grr */\nfun bPrivacy(fields: JsonObject): MechanismPrivacy = TODO()\n")
    with pytest.raises(SystemExit, match="grr: @privacy functions both aPrivacy"):
        script.render_family(script.CORE, tmp_path)
    q.write_text(
        "/** @privacy multi-attribute */\n"
        "fun mPrivacy(fields: JsonObject, privacy: (JsonObject) -> MechanismPrivacy?): MechanismPrivacy = TODO()\n"
        "/** @canonical rappor */\nfun rFields(out: MutableMap<String, Any?>) {}\n"
    )
    text = script.render_family(script.CORE, tmp_path)
    assert '"grr" -> aPrivacy(fields)' in text
    assert '"multi-attribute" -> mPrivacy(fields, parts)' in text
    assert '"rappor" -> rFields(out)' in text


def test_a_kotlin_privacy_function_outside_its_encoders_artifact_and_core_is_refused(tmp_path):
    """An artifact's family can call only its own privacy functions and core's: a third artifact's is an error."""
    script = _kotlin_spec_fields_script()
    roots = {script.CORE: tmp_path / "core", "ldp-client-numeric": tmp_path / "numeric"}
    for root in roots.values():
        (root / "mechanisms").mkdir(parents=True)
        (root / "privacy").mkdir()
    (roots[script.CORE] / "mechanisms" / "A.kt").write_text("/** @mechanisms grr */\nclass AEncoder\n")
    (roots["ldp-client-numeric"] / "privacy" / "P.kt").write_text(
        "/** @privacy grr */\nfun aPrivacy(fields: JsonObject): MechanismPrivacy = TODO()\n"
    )
    roots = {"ldp-client-numeric": roots["ldp-client-numeric"], "ldp-client-other": roots[script.CORE]}
    with pytest.raises(
        SystemExit, match=r"grr: its @privacy function aPrivacy .* is neither in its encoder's artifact"
    ):
        script.artifacts(roots)


def test_a_kotlin_privacy_function_in_an_artifact_its_encoders_artifact_depends_on_is_allowed(tmp_path):
    """PEM's privacy function is the frequency oracles' prefixPrivacy: allowed because ldp-client-heavyhitters'
    pom.xml declares ldp-client-frequency as a (non-test) dependency; a test-scoped one does not count."""
    script = _kotlin_spec_fields_script()
    owners = script.artifacts()
    assert owners["pem"] == "ldp-client-heavyhitters"
    assert "ldp-client-frequency" in script.depends_on("ldp-client-heavyhitters")
    assert "ldp-client-testkit" not in script.depends_on("ldp-client-heavyhitters")  # test scope
    module = tmp_path / "ldp-client-a"
    module.mkdir()
    (module / "pom.xml").write_text(
        "<project><dependencies>"
        "<dependency><groupId>dev.ldp</groupId><artifactId>ldp-client-b</artifactId></dependency>"
        "<dependency><groupId>dev.ldp</groupId><artifactId>ldp-client-c</artifactId><scope>test</scope></dependency>"
        "</dependencies></project>"
    )
    assert script.depends_on("ldp-client-a", tmp_path) == {"ldp-client-b"}
    assert script.depends_on("ldp-client-missing", tmp_path) == set()


def test_a_stale_kotlin_file_is_reported(tmp_path, monkeypatch, capsys):
    script = _kotlin_spec_fields_script()
    stale = tmp_path / "Registry.kt"
    stale.write_text("// old\n", encoding="utf-8")
    monkeypatch.setattr(script, "REGISTRY", stale)
    assert script.main(["--check"]) == 1
    assert "Registry.kt is stale: run python kotlin/scripts/spec_fields.py" in capsys.readouterr().err
