"""Commands import only what they need: ``ldp --help`` imports neither scipy nor pandas, nor does ``ldp encode``.

pyarrow's pandas shim imports pandas the first time an Arrow array is built
from Python objects or a compute function is given a Python scalar, when
pandas is installed; the report writers build their arrays through
:mod:`ldp.arrow_numpy`, so encoding and writing reports loads no pandas.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import ldp
from ldp.cli import SUBCOMMANDS, SUMMARIES, LazyGroup, cli

#: Run a command in a fresh interpreter; print the heavy top-level packages it imported.
_PROBE = """
import json, sys
from ldp.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
heavy = sorted({name.split(".")[0] for name in sys.modules} & {"scipy", "pandas"})
print(json.dumps(heavy))
"""


def _heavy_imports(args: list[str], cwd) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _grr_spec(tmp_path) -> Path:
    """A spec file for the probed commands, written in this process (what ``ldp spec grr`` writes)."""
    spec = tmp_path / "spec.json"
    spec.write_text(ldp.GRR(domain=("a", "b", "c"), epsilon=1.0).to_json())
    return spec


def test_help_lists_every_subcommand_without_importing_it(tmp_path):
    assert _heavy_imports(["--help"], tmp_path) == []


#: What ``ldp --help`` must not load: the numerical stack and every part of ldp beyond its errors and the CLI.
_NOT_FOR_HELP = {
    "numpy",
    "pandas",
    "pyarrow",
    "scipy",
    "ldp.specs",
    "ldp.report",
    "ldp.client",
    "ldp.aggregator",
}


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_imports_neither_numpy_nor_any_subcommand(tmp_path, args):
    """``ldp --help`` costs less than ``import numpy``: the ``ldp`` package loads its specs on first use."""
    probe = _PROBE.replace('{"scipy", "pandas"}', repr(_NOT_FOR_HELP)).replace(
        'name.split(".")[0]',
        '".".join(name.split(".")[:2]) if name.startswith("ldp.") else name.split(".")[0]',
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


@pytest.mark.slow
def test_package_names_load_on_first_use():
    """The lazily loaded names of ``ldp`` are the very objects their modules define."""
    code = (
        "import sys, ldp; assert 'ldp.specs' not in sys.modules; "
        "from ldp.specs import GRR; from ldp.report import Report; "
        "assert ldp.GRR is GRR and ldp.Report is Report; assert set(ldp.__all__) <= set(dir(ldp)); "
        "import pytest; pytest.raises(AttributeError, getattr, ldp, 'nope'); "
        "import ldp.specs.frequency as frequency; assert ldp.specs.frequency is frequency"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# Slow set: each probe below starts a fresh interpreter. The fast set's fresh-interpreter probe is
# test_help_lists_every_subcommand_without_importing_it above (the same _PROBE); nothing in one process can
# see what a command imports, so these stay in the slow set only (.ci/run runs it).
@pytest.mark.slow
@pytest.mark.parametrize("output", ["reports.jsonl", "reports.csv"])
def test_encode_imports_no_scipy(tmp_path, output):
    spec = _grr_spec(tmp_path)
    (tmp_path / "values.txt").write_text("a\nb\nc\na\n")
    args = ["encode", "--spec", str(spec), "values.txt", "-o", output]
    assert "scipy" not in _heavy_imports(args, tmp_path)
    assert (tmp_path / output).stat().st_size > 0


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
@pytest.mark.parametrize("limit", [30, 45, 80, 1000])
def test_listed_summary_is_the_commands_own(name, limit):
    """``ldp --help`` lists SUMMARIES; each must be what click takes from the command itself."""
    command = LazyGroup._load(name)
    listed = click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit)
    assert listed == command.get_short_help_str(limit)


def test_summaries_cover_the_subcommands():
    assert set(SUMMARIES) == set(SUBCOMMANDS)


@pytest.mark.slow  # a fresh interpreter: see test_encode_imports_no_scipy
def test_aggregate_of_report_files_imports_no_scipy_and_no_collector(tmp_path):
    """Frequency estimates need no scipy (normal quantiles from the standard library); files need no store."""
    spec = _grr_spec(tmp_path)
    (tmp_path / "values.txt").write_text("a\nb\nc\na\n" * 10)
    encoded = CliRunner().invoke(  # in this process: only the aggregate below is probed
        cli, ["encode", "--spec", str(spec), str(tmp_path / "values.txt"), "-o", str(tmp_path / "r.jsonl")]
    )
    assert encoded.exit_code == 0, encoded.output
    probe = _PROBE.replace('{"scipy", "pandas"}', '{"scipy", "ldp.collector"}').replace(
        'name.split(".")[0]',
        '".".join(name.split(".")[:2]) if name.startswith("ldp.") else name.split(".")[0]',
    )
    args = ["aggregate", "--spec", str(spec), "r.jsonl", "-o", "estimates.csv"]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "estimates.csv").read_text().count("\n") == 4  # header + 3 domain values


@pytest.mark.slow  # a fresh interpreter: see test_encode_imports_no_scipy
def test_the_collector_app_is_built_without_scipy_stats(tmp_path):
    """``ldp serve``'s app imports no scipy.stats (about 0.6 s of CPU at every start; before, the OpenAPI schema's
    import of RAPPOR's decode columns loaded it): frequency estimates need none, a RAPPOR decode loads it."""
    code = (
        "import sys\n"
        "import ldp.collector.serve_cli\n"
        "from ldp.collector.app import CollectorSettings, create_app\n"
        f"create_app(CollectorSettings(store={str(tmp_path / 'store.db')!r}, rate_limit=0))\n"
        "print('scipy.stats' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "False"


#: Modules ``ldp aggregate`` of a GRR CSV file has no use for: the other formats' readers, other families.
_NOT_FOR_A_GRR_CSV = (
    "pyarrow.parquet",
    "pyarrow.json",
    "pyarrow.dataset",
    "ldp.specs.numeric",
    "ldp.specs.sketch",
    "ldp.specs.subset",
    "ldp.aggregator.pem",
    "ldp.aggregator.sketch",
    "ldp.aggregator.numeric",
    "ldp.aggregator.subset",
    "ldp.aggregator.readers.jsonl",
    "ldp.aggregator.readers.parquet",
)


def test_aggregate_of_a_csv_file_imports_only_its_reader_and_its_family(tmp_path):
    """The packages ``ldp.specs`` and ``ldp.aggregator`` load their modules on first use (start-up, issue 28)."""
    spec = _grr_spec(tmp_path)
    (tmp_path / "r.csv").write_text(f"v,spec,value\n1,{ldp.load_spec(spec).fingerprint},a\n")
    probe = _PROBE.replace('{name.split(".")[0] for name in sys.modules}', "set(sys.modules)").replace(
        '{"scipy", "pandas"}', repr(set(_NOT_FOR_A_GRR_CSV))
    )
    args = ["aggregate", "--spec", str(spec), "r.csv", "-o", "estimates.csv"]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "estimates.csv").read_text().count("\n") == 4  # header + 3 domain values


def test_aggregate_of_a_parquet_file_imports_no_pyarrow_compute(tmp_path):
    """A Parquet file of RAPPOR or unary reports is read, validated, counted and its table written without
    :mod:`pyarrow.compute` (some 30-50 ms of CPU at start-up, its functions' docstrings built at import; issue 28):
    the fingerprint is compared on the column's dictionary, the writers import it for reports only."""
    spec_path = tmp_path / "spec.json"
    spec = ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4")
    spec_path.write_text(spec.to_json())
    code = (
        "import numpy as np\n"
        "from ldp.aggregator.writers import write_reports\n"
        "from ldp.client import encode_batch\n"
        "from ldp.specs import load_spec\n"
        f"spec = load_spec({str(spec_path)!r})\n"
        "write_reports(encode_batch(spec, ['a', 'b'] * 50, np.random.default_rng(0)), 'r.parquet', spec)\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True, capture_output=True)
    probe = _PROBE.replace('{name.split(".")[0] for name in sys.modules}', "set(sys.modules)").replace(
        '{"scipy", "pandas"}', '{"pyarrow.compute", "pandas", "scipy"}'
    )
    args = ["aggregate", "--spec", str(spec_path), "r.parquet", "-o", "estimates.csv"]
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "estimates.csv").read_text().count("\n") == 1 + 4 * 16  # header + (cohort, bit)


@pytest.mark.parametrize("user_value", [None, "28"])
def test_the_command_shortens_openblas_idle_spinning_unless_the_user_set_it(tmp_path, user_value):
    """``ldp`` sets OPENBLAS_THREAD_TIMEOUT before NumPy loads OpenBLAS, whose threads otherwise spin some 0.06 s
    of CPU in every command (issue 28); a value the user set is kept."""
    import os

    code = (
        "import os, sys\n"
        "from ldp.cli import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "import numpy\n"
        "print(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    if user_value is not None:
        env["OPENBLAS_THREAD_TIMEOUT"] = user_value
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == (user_value or "20")


def test_importing_the_aggregate_path_imports_no_pandas():
    """``import ldp`` and the modules of ``ldp aggregate`` (readers, writers, estimates) import no pandas.

    Running one does not either (:func:`test_aggregate_of_report_files_imports_no_pandas`).
    """
    code = (
        "import sys, ldp, ldp.cli, ldp.aggregator, ldp.aggregator.io, ldp.aggregator.writers, "
        "ldp.aggregator.estimates, ldp.aggregator.cli\n"
        "print('pandas' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert result.stdout.strip() == "False"


#: Run ``ldp aggregate`` on every file given (``SPEC:FILE`` pairs) in one fresh interpreter; print whether
#: pandas was imported (the exit status of each run is kept: 3 when a file holds rejects).
_AGGREGATE_PROBE = """
import json, sys
from ldp.cli import main
statuses = []
for pair in sys.argv[1:]:
    spec, path = pair.split(":")
    try:
        main(["aggregate", "--spec", spec, path, "--rejects", path + ".rejects.jsonl", "-o", path + ".estimates.csv"])
    except SystemExit as exc:
        statuses.append(exc.code or 0)
print(json.dumps({"pandas": "pandas" in sys.modules, "statuses": statuses}))
"""


def _report_files(tmp_path, names, formats) -> list[str]:
    """Report files of each named spec in each format, each with one bad line; ``SPEC:FILE`` pairs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    from ldp.aggregator.writers import write_reports
    from ldp.client import encode_batch

    specs = {
        "grr": ldp.GRR(domain=("a", "b", "c"), epsilon=1.0),
        "oue": ldp.OUE(domain=tuple("abcdefghij"), epsilon=1.0),
        "olh": ldp.OLH(domain=tuple("abcdefghij"), epsilon=1.0),
        "rappor": ldp.Rappor(num_bits=16, num_hashes=2, num_cohorts=4, f="1/2", p="1/4", q="3/4"),
    }
    pairs = []
    for name in names:
        spec = specs[name]
        spec_path = tmp_path / f"{name}.json"
        spec_path.write_text(spec.to_json())
        batch = encode_batch(spec, ["a", "b", "c"] * 20, np.random.default_rng(1))
        for fmt in formats:
            path = tmp_path / f"{name}.{fmt}"
            if fmt == "quoted":  # strings quoted, as pyarrow and R write CSV
                plain, path = tmp_path / f"{name}-plain.csv", tmp_path / f"{name}-quoted.csv"
                write_reports([batch], plain, spec)
                text = dict.fromkeys(
                    ("spec", "value", "bits"), pa.string()
                )  # a fingerprint may look like 1e5
                pa_csv.write_csv(
                    pa_csv.read_csv(plain, convert_options=pa_csv.ConvertOptions(column_types=text)), path
                )
            else:
                write_reports([batch], path, spec)
            if fmt == "jsonl":
                with path.open("a") as out:
                    out.write('{"v": 1, "spec": "0000000000000000"}\n')  # a report of another spec
            elif fmt in ("csv", "quoted"):
                header = path.read_text().splitlines()[0]
                with path.open("a") as out:
                    out.write("1,0000000000000000" + "," * (header.count(",") - 1) + "\n")
            pairs.append(f"{spec_path.name}:{path.name}")
    return pairs


def _aggregate_probe(tmp_path, pairs) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _AGGREGATE_PROBE, *pairs], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same_as_dataframe_csv(tmp_path, pairs) -> None:
    """Each estimates file is the CSV of the library's estimate DataFrame (default consistent view)."""
    from ldp.aggregator import make_aggregator
    from ldp.aggregator.io import read_reports
    from ldp.aggregator.views import default_consistency
    from ldp.specs import load_spec

    for pair in pairs:
        spec_name, name = pair.split(":")
        spec = load_spec(tmp_path / spec_name)
        accumulator = make_aggregator(spec)
        for chunk in read_reports([tmp_path / name], spec):
            accumulator.add_batch(chunk.batch)
        consistency = default_consistency(spec, with_candidates=False)
        expected = accumulator.estimate(0.95, consistency=consistency).to_csv(index=False)
        assert (tmp_path / f"{name}.estimates.csv").read_text() == expected, name


def test_aggregate_of_report_files_imports_no_pandas(tmp_path):
    """``ldp aggregate FILE -o estimates.csv`` reads, validates, rejects and writes without importing pandas.

    pyarrow imports pandas the first time a conversion asks its pandas shim
    (``pa.array``, ``Array.to_numpy``, a Python scalar to a compute
    function); the readers convert through the arrays' buffers
    (:mod:`ldp.arrow_numpy`) and the estimate table is written by :mod:`csv`.
    """
    pairs = _report_files(tmp_path, ["grr"], ["csv"])
    assert _aggregate_probe(tmp_path, pairs) == {"pandas": False, "statuses": [3]}  # 3: one reject
    assert "wrong_spec" in (tmp_path / "grr.csv.rejects.jsonl").read_text()
    _same_as_dataframe_csv(tmp_path, pairs)


@pytest.mark.slow  # a fresh interpreter over 16 files: see test_encode_imports_no_scipy
def test_aggregate_imports_no_pandas_for_frequency_oracles_and_rappor_in_every_format(tmp_path):
    pairs = _report_files(tmp_path, ["grr", "oue", "olh", "rappor"], ["parquet", "csv", "jsonl", "quoted"])
    result = _aggregate_probe(tmp_path, pairs)
    assert result["pandas"] is False
    assert result["statuses"] == [0 if pair.endswith(".parquet") else 3 for pair in pairs]
    _same_as_dataframe_csv(tmp_path, pairs)


#: Encode and write every spec shape in every report format, then say which heavy packages got imported.
_ENCODE_AND_WRITE = """
import dataclasses, json, pickle, sys
import numpy as np
from ldp.aggregator.writers import write_reports
from ldp.client import encode_batch
shapes = pickle.load(open(sys.argv[1], "rb"))
for i, (spec, values) in enumerate(shapes):
    batch = encode_batch(spec, values, np.random.default_rng(i))
    if i == 0:  # one batch with group keys (ldp encode --group-column), one row without
        keys = np.array(["v1.2"] * (len(batch) - 1) + [None], dtype=object)
        batch = dataclasses.replace(batch, groups=keys)
    for fmt in ("jsonl", "csv", "parquet"):
        assert write_reports(batch, f"{i}.{fmt}", spec) == len(values)
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & {"scipy", "pandas"})))
"""


@pytest.mark.slow  # every spec shape; test_ldp_encode_imports_neither_scipy_nor_pandas is the fast representative
def test_encoding_and_writing_reports_of_every_mechanism_imports_no_pandas(tmp_path):
    """``ldp encode``'s path (encoder, report writers in every format) never loads pandas (issue 28).

    pyarrow imports pandas the first time ``pa.array``/``pa.scalar`` or a compute function given a Python
    scalar asks its pandas shim about an object; the writers build their arrays through
    :mod:`ldp.arrow_numpy` instead. Every spec shape of the format tests is written in each format.
    """
    import pickle

    from conftest import every_spec_shape, sample_values

    shapes = [(spec, sample_values(spec, 20)) for spec in every_spec_shape()]
    (tmp_path / "shapes.pickle").write_bytes(pickle.dumps(shapes))
    proc = subprocess.run(
        [sys.executable, "-c", _ENCODE_AND_WRITE, "shapes.pickle"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert len(list(tmp_path.glob("*.parquet"))) == len(shapes)


#: ``ldp encode`` into each report format, in one fresh interpreter; then the heavy packages it imported.
_ENCODE_EACH_FORMAT = """
import json, sys
from ldp.cli import main
for out in ("r.jsonl", "r.csv", "r.parquet"):
    try:
        main(["encode", "--spec", sys.argv[1], "values.txt", "-o", out])
    except SystemExit as exc:
        assert exc.code in (0, None), exc.code
print(json.dumps(sorted({name.split(".")[0] for name in sys.modules} & {"scipy", "pandas"})))
"""


def test_ldp_encode_imports_neither_scipy_nor_pandas(tmp_path):
    spec = _grr_spec(tmp_path)
    (tmp_path / "values.txt").write_text("a\nb\na\n")
    proc = subprocess.run(
        [sys.executable, "-c", _ENCODE_EACH_FORMAT, str(spec)], cwd=tmp_path, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []
    assert all((tmp_path / out).stat().st_size > 0 for out in ("r.jsonl", "r.csv", "r.parquet"))
