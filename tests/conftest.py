"""Shared fixtures: one small spec of every mechanism."""

from __future__ import annotations

import functools
import gc
import os

# One BLAS thread per pytest-xdist worker: the workers already fill the cores (-n auto), and OpenBLAS's own
# threads (one per core by default) then contend with the other worker and spin while they wait, which
# doubled the CPU time of the linear-algebra tests (RAPPOR decoding) here. Read when numpy loads its BLAS,
# so set before anything imports numpy; a value already in the environment wins.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

import pytest
from hypothesis import settings

import ldp

# Property tests run the same examples on every run (CI must not flake on a
# new random draw); a failing example is reported with its reproduction blob
# rather than kept in a local database that CI would never see. No deadline:
# speed is measured in benchmarks/, and a per-example time limit only makes a
# correct test fail when the shared machine is busy.
settings.register_profile("ldp", derandomize=True, database=None, deadline=None)
settings.load_profile("ldp")

SMALL_DOMAIN = ("a", "b", "c", "d", "e")


#: Modules all of whose tests are slow and whose import alone is costly: the fast set (``-m "not slow"``)
#: does not import them. test_collector_fuzz imports schemathesis and its pytest plugin (about 0.4 s in each
#: xdist worker) only to parametrize its one slow test.
SLOW_ONLY_MODULES = {"test_collector_fuzz.py"}


@pytest.fixture(autouse=True)
def _no_numba_compile_in_the_fast_set(request, monkeypatch):
    """Tests not marked slow encode secure one-hot batches by ldp.client.onehot's NumPy backend.

    That backend gives the same reports as the compiled one. The secure batch path compiles its numba kernel on
    first use above ``NUMBA_THRESHOLD`` reports (seconds of JIT work); the fast set must not pay that, but it
    must still cover the sampler the kernel runs (``SECURE_BATCH = "always"``). The slow set runs the
    default policy and the kernel (tests/client/test_onehot.py). Likewise the single-report lanes are walked
    in Python (``report_bits_kernel.COMPILED_WALKS = "never"``): a test that makes a run table busy must not
    load numba; tests/client/test_report_bits.py runs the kernel's code uncompiled, and compiled in the slow set.
    """
    if "slow" not in request.keywords:
        from ldp.client import onehot, report_bits_kernel

        monkeypatch.setattr(onehot, "NUMBA_THRESHOLD", 1 << 62)
        monkeypatch.setattr(onehot, "SECURE_BATCH", "always")
        monkeypatch.setattr(report_bits_kernel, "COMPILED_WALKS", "never")


def pytest_ignore_collect(collection_path, config):
    """Skip importing :data:`SLOW_ONLY_MODULES` when the slow set is deselected (plain ``pytest``)."""
    if collection_path.name in SLOW_ONLY_MODULES and config.getoption("markexpr") == "not slow":
        return True
    return None


# tryfirst: before pytest-xdist reads the groups (--dist loadgroup in pyproject's addopts)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """The README's commands on one xdist worker: each document's commands run in order in one directory.

    The tests on an in-process Dask cluster (the ``scheduler`` fixture) on one worker too, so one worker starts
    its clusters.
    """
    for item in items:
        if item.path.name == "test_readme.py":
            item.add_marker(pytest.mark.xdist_group("readme"))
        elif "scheduler" in getattr(item, "fixturenames", ()) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group("dask"))


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    """Collect with the cyclic garbage collector off, then freeze what collection left for the rest of the run.

    What an xdist worker holds after collecting (every test module, numpy, scipy, pandas, FastAPI, the items
    and their parametrized specs: about 320,000 objects) lives until the process exits, yet every full
    collection walked all of it again, at 0.1–0.2 s of CPU each: about ten times during collection, about
    twenty while a worker's tests run, and five more at exit (pytest's unraisable-exception check); about
    3 s of CPU a worker in all. Frozen (``gc.freeze``), those objects are left out of every collection; the
    tests' own garbage is collected as before.
    """
    gc.disable()
    try:
        return (yield)
    finally:
        gc.collect()  # once: collection's own garbage is freed, not frozen
        gc.freeze()
        gc.enable()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadgroup`` handing out a few tests of one module at a time (tests/xdist_chunks.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist_chunks import ChunkedLoadGroupScheduling

    return ChunkedLoadGroupScheduling(config, log)


def _built_once(build):
    """``build`` (a function returning a list of specs) run once per arguments and registry: each call returns a
    new list of the same spec objects.

    The lists parametrize tests in many modules and each xdist worker imports every module, so each list was
    built again about twenty times a worker at collection, every spec certifying its exact privacy ratio
    again: about 0.5 s of CPU a worker. A spec is a frozen dataclass, so sharing its objects changes no test.
    The registry (the declared and registered mechanisms) is part of the key: a test that registers a
    mechanism gets lists with it.
    """
    built_lists: dict = {}

    @functools.wraps(build)
    def built(*args, **kwargs):
        import ldp.registry
        from ldp.specs.base import registered_specs

        registry = (tuple(registered_specs().items()), ldp.registry.BUILTIN_MECHANISMS)
        key = (args, tuple(sorted(kwargs.items())), registry)
        if key not in built_lists:
            built_lists[key] = tuple(build(*args, **kwargs))
        return list(built_lists[key])

    return built


@_built_once
def frequency_specs(epsilon: float = 1.0, domain=SMALL_DOMAIN):
    """One spec of every registered frequency oracle over ``domain`` (its first two values for binary RR).

    Drawn from the spec registry, so a new oracle is covered by every test using this list.
    """
    from ldp.specs import FREQUENCY_MECHANISMS

    return [
        cls(domain=domain[:2] if name == "binary-rr" else domain, epsilon=epsilon)
        for name, cls in FREQUENCY_MECHANISMS.items()
    ]


@_built_once
def rappor_specs():
    """RAPPOR in each encoding."""
    return [
        ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/2", q="3/4"),
        ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="0.45", p="0.39", q="0.61", hash="md5"),
        ldp.Rappor.basic(SMALL_DOMAIN, f="1/4", p="1/4", q="3/4"),
        ldp.Rappor.boolean(f="1/4", p="1/4", q="3/4"),
        ldp.Rappor(num_bits=16, num_hashes=1, num_cohorts=2, f=0, p="1/4", q="3/4"),  # one-time RAPPOR
    ]


@_built_once
def numeric_specs(epsilon: float = 1.0):
    """One spec of every registered numeric mechanism on [0, 1] (drawn from the registry)."""
    from ldp.specs import NUMERIC_MECHANISMS, numeric_spec

    return [numeric_spec(name, epsilon, 0.0, 1.0, delta=1e-5) for name in NUMERIC_MECHANISMS]


def heavy_hitter_specs(epsilon: float | None = None):
    """One small spec of every heavy-hitter mechanism (values: strings of at most 2 bytes, like sample_values').

    PEM: 3 groups (prefixes of 2, 9 and 16 bits); TreeHist: 17 groups. Without ``epsilon`` (ε = 6 and 10)
    the 300 reports of the format tests discover values (a non-empty table), so the tests compare estimates,
    not empty tables.
    """
    return [
        ldp.PEM(epsilon=6.0 if epsilon is None else epsilon, max_length=2, top_k=3, eta=7),
        ldp.TreeHist(epsilon=10.0 if epsilon is None else epsilon, max_length=2, top_k=3),
    ]


def _mechanism_examples():
    """tests/conformance/mechanism_examples.py (the example spec of any declaration), one module per session."""
    import importlib.util
    import sys
    from pathlib import Path

    module = sys.modules.get("mechanism_examples")
    if module is None:
        path = Path(__file__).resolve().parent / "conformance" / "mechanism_examples.py"
        found = importlib.util.spec_from_file_location("mechanism_examples", path)
        assert found is not None and found.loader is not None
        module = importlib.util.module_from_spec(found)
        sys.modules["mechanism_examples"] = module
        found.loader.exec_module(module)
    return module


@_built_once
def every_spec_shape():
    """Every built-in mechanism, RAPPOR in each encoding: the list the format tests run over.

    The shapes listed here, then, for every built-in mechanism they leave out, the
    example spec the conformance suite derives from its constructor
    (tests/conformance/mechanism_examples.py): a new mechanism is covered with no
    edit here (tests/aggregator/test_io.py checks the whole registry is).
    """
    import ldp.registry

    subset = ldp.SubsetSelection(
        SMALL_DOMAIN, epsilon=1.0, omega=2
    )  # frequency_specs' ss has omega = 1 (GRR)
    from ldp.specs.key_value import KEY_VALUE_MECHANISMS
    from ldp.specs.ranges import RangeHaar, RangeHierarchy

    ranges = [RangeHierarchy(SMALL_DOMAIN, epsilon=1.0, branching=2), RangeHaar(SMALL_DOMAIN, epsilon=1.0)]
    key_value = [cls(SMALL_DOMAIN, 1.0, ell=1) for cls in KEY_VALUE_MECHANISMS.values()]
    shapes = [
        *multi_attribute_specs(),
        *frequency_specs(),
        subset,
        *rappor_specs(),
        *numeric_specs(),
        *heavy_hitter_specs(),
        *ranges,
        *key_value,
    ]
    listed = {spec.mechanism for spec in shapes}
    example_spec = _mechanism_examples().example_spec
    return shapes + [example_spec(d) for d in ldp.registry.BUILTIN_MECHANISMS if d.name not in listed]


@_built_once
def multi_attribute_specs():
    """Record specs of every split, with attributes of every report form: a value, a seed and bucket, bits, a number."""
    from ldp.specs.multiattr import MultiAttribute

    domain = list(SMALL_DOMAIN)
    mixed = [
        {"name": "olh", "mechanism": "olh", "domain": domain},
        {"name": "oue", "mechanism": "oue", "domain": domain},
        {"name": "num", "mechanism": "piecewise", "low": 0, "high": 1},
    ]
    grr = [{"name": f"g{i}", "mechanism": "grr", "domain": domain} for i in range(3)]
    return [
        MultiAttribute(mixed, 1.0),  # smp, k = 1
        MultiAttribute(mixed, 6.0, sample=2),
        MultiAttribute(mixed, 1.0, method="spl"),
        MultiAttribute(grr, 1.0, method="rsfd-grr"),
        MultiAttribute([{**a, "mechanism": "sue"} for a in grr], 1.0, method="rsfd-sue-z"),
        MultiAttribute([{**a, "mechanism": "oue"} for a in grr], 1.0, method="rsfd-oue-r"),
    ]


@pytest.fixture(params=frequency_specs(), ids=lambda s: s.mechanism)
def frequency_spec(request):
    return request.param


@pytest.fixture(params=rappor_specs(), ids=lambda s: f"{s.encoding}-{s.hash}-f{s.f}")
def rappor_spec(request):
    return request.param


@pytest.fixture(scope="module")
def scheduler():
    """Address of one in-process Dask cluster (2 workers, threads) shared by a module's engine tests.

    Per module, not per session: a cluster's heartbeats cost about 45 ms of CPU a second while it idles, and
    a session's cluster idled from its module's last test to the end of the session (starting one costs less).
    """
    import logging

    from dask import distributed

    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=False,
        # loopback, free ports: dashboard_address=None alone still listens on 0.0.0.0:8787
        dashboard_address="127.0.0.1:0",
        worker_dashboard_address="127.0.0.1:0",
        silence_logs=logging.ERROR,
    )
    yield cluster.scheduler_address
    cluster.close()


@pytest.fixture(scope="session")
def js_dist(tmp_path_factory):
    """js/ with its dependencies installed and dist/ built, once per session (tests/js_build.py).

    Skips where node or npm is absent (fails instead when ``CI`` is set); a failing build is an error.
    """
    import os

    from js_build import build_js

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's basetemp is a directory of the session's
        shared = shared.parent
    return build_js(shared)


@pytest.fixture(scope="session")
def kotlin_classpath(tmp_path_factory):
    """The Kotlin client (kotlin/) packaged once per session: the class path of its JAR and runtime dependencies.

    tests/kotlin_build.py; skips where java or mvn is absent (fails instead when ``CI`` is set); a failing
    build is an error.
    """
    import os

    from kotlin_build import build_kotlin

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's basetemp is a directory of the session's
        shared = shared.parent
    return build_kotlin(shared)


def sample_values(spec, n: int) -> list:
    """``n`` valid input values for ``spec`` (numbers inside a numeric range, cycling over a domain)."""
    if spec.report_kind == "numeric":
        return [0.05 + 0.9 * i / max(n - 1, 1) for i in range(n)]
    if hasattr(spec, "example_inputs"):  # inputs that are not domain values (sets of key-value pairs)
        return list(spec.example_inputs(n))
    if getattr(spec, "encoding", None) == "boolean":
        return [i % 3 == 0 for i in range(n)]
    if getattr(spec, "domain", None) is None:  # Bloom RAPPOR, heavy hitters: any string
        return [f"u{i % 5}" for i in range(n)]
    return [spec.domain[i % len(spec.domain)] for i in range(n)]


# -- report mutations: the compiled and batch checks against the rule-by-rule path --------------------

#: Values of every JSON type and the boundaries the field rules draw.
ODD_JSON_VALUES: list = [
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    15,
    16,
    63,
    64,
    2**31,
    2**32 - 1,
    2**32,
    2**63 - 1,
    2**63,
    2**64 - 1,
    -(2**63),
    -(2**63) - 1,
    0.0,
    1.0,
    0.5,
    -0.0,
    1e308,
    float("inf"),
    float("nan"),
    "",
    "a",
    "v1",
    "0",
    "1",
    "1.0",
    "\ud800",
    "caf\u00e9",
    "\u2028",
    "AAAA",
    "AA==",
    "AAA=",
    "AB==",
    "////",
    "AAAA\n",
    " AAAA",
    "A===",
    "AAAAAAAAAAAAAAAAAAAAAA==",
    [],
    [1],
    {},
    {"a": 1},
]


def report_variants(base):
    """Mutations of one real report's dict: each field replaced by values of every JSON type and boundary
    (:data:`ODD_JSON_VALUES`), keys added and removed, versions, groups, client ids, spellings a reader normalizes."""
    out: list = [base, [base], "report", None]
    names = [key for key in base if key not in ("v", "spec")]
    for name in [*names, "v", "spec"]:
        out += [{**base, name: value} for value in ODD_JSON_VALUES]
        out.append({key: value for key, value in base.items() if key != name})  # missing
    for name in names:
        value = base[name]
        if isinstance(value, str):
            out += [{**base, name: value.upper()}, {**base, name: value.lower()}, {**base, name: value + "="}]
            if value.endswith("=="):  # non-canonical trailing bits of the last group
                out.append({**base, name: value[:-3] + chr(ord(value[-3]) ^ 1) + "=="})
        if isinstance(value, int) and not isinstance(value, bool):
            out += [{**base, name: value + 1}, {**base, name: value - 1}, {**base, name: float(value)}]
            out += [{**base, name: str(value)}]
        if isinstance(value, float):
            out += [{**base, name: value + 1e-9}, {**base, name: int(value)}]
    out += [
        {**base, "spec": base["spec"].upper()},
        {**base, "v": 2},
        {**base, "v": 3},
        {**base, "v": 2, "group": "g1"},
        {**base, "group": "g1"},  # a group at version 1
        {**base, "v": 2, "group": ""},
        {**base, "v": 2, "group": "a\x01b"},
        {**base, "v": 2, "group": "x" * 257},
        {**base, "v": 2, "group": 7},
        {**base, "group": None},
        {**base, "client": "c1"},
        {**base, "client": 5},
        {**base, "unknown": 1},
        {**base, "seed": 1},
        {**base, "bits": "AA=="},
        {**base, "cohort": 0},
        {**base, "value": "a"},
        dict(reversed(list(base.items()))),
    ]
    return out


# -- collector stores: SQLite and a throwaway PostgreSQL cluster ----------------------------------


@pytest.fixture(scope="session")
def shared_collector(tmp_path_factory):
    """One ``ldp serve`` on a SQLite store (no rate limit) per session, shared by test_collector_server and
    test_upload (both in the xdist group ``collector_server``); each test makes its own tasks."""
    from collector_server import Server, store_path

    server = Server(store_path(tmp_path_factory.mktemp("collector")), "--rate-limit", "0")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_url():
    """URL of a database in one throwaway PostgreSQL cluster per test session (tests/postgres_cluster.py).

    Skips when no PostgreSQL server binaries are installed (``apt-get install postgresql``);
    any other failure to start the cluster is an error, not a skip.
    """
    from postgres_cluster import find_binaries, postgres_cluster

    if find_binaries() is None:
        reason = "no PostgreSQL binaries: initdb and pg_ctl are not in /usr/lib/postgresql/*/bin or on PATH"
        print(reason)
        pytest.skip(reason)
    with postgres_cluster() as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def store_url(request, tmp_path):
    """A fresh, empty store URL of each backend: a SQLite file in tmp_path, or a new PostgreSQL database.

    PostgreSQL's runs are in the slow set; the fast set's PostgreSQL test uses :func:`store_url_both_fast`.
    """
    yield from _fresh_store_url(request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url_both_fast(request, tmp_path):
    """:func:`store_url` with PostgreSQL's run in the fast set too: for the fast set's one PostgreSQL test."""
    yield from _fresh_store_url(request, tmp_path)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.slow)])
def served_store_url(request, tmp_path):
    """:func:`store_url` for tests that also run a server: PostgreSQL's run is in the slow set."""
    yield from _fresh_store_url(request, tmp_path)


def _fresh_store_url(request, tmp_path):
    if request.param == "sqlite":
        yield str(tmp_path / "store.db")
        return
    import uuid

    from postgres_cluster import create_database, drop_database

    cluster = request.getfixturevalue("postgres_url")
    name = f"test_{uuid.uuid4().hex}"
    yield create_database(cluster, name)
    drop_database(cluster, name)
