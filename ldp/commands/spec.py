"""``ldp spec``: write a mechanism spec as JSON and print its privacy."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from ldp.cli import OptionConflict, check_outputs_distinct, run_guarded
from ldp.errors import ParameterError, SpecError
from ldp.specs import FREQUENCY_MECHANISMS, NUMERIC_MECHANISMS, OLH, Rappor, best_frequency_mechanism
from ldp.specs.base import registered_specs, spec_class
from ldp.specs.limits import MAX_DOMAIN_SIZE
from ldp.textfile import read_utf8_text

__all__ = ["build_spec", "check_options", "parse_params", "spec"]

#: Every registered mechanism (the spec registry is the one list), plus "auto".
MECHANISMS = [
    *FREQUENCY_MECHANISMS,
    "auto",
    *(
        name
        for name in registered_specs()
        if name not in FREQUENCY_MECHANISMS and name not in NUMERIC_MECHANISMS
    ),
    *NUMERIC_MECHANISMS,
]


def _parse_domain(domain: str | None, domain_file: str | None, domain_size: int | None) -> tuple | None:
    given = [x is not None for x in (domain, domain_file, domain_size)]
    if sum(given) > 1:
        raise SpecError("give only one of --domain, --domain-file, --domain-size")
    if domain is not None:
        return tuple(v.strip() for v in domain.split(",") if v.strip() != "")
    if domain_file is not None:
        lines = read_utf8_text(domain_file, "--domain-file").splitlines()
        return tuple(line.strip() for line in lines if line.strip())
    if domain_size is not None:
        if domain_size < 1:
            raise SpecError(f"--domain-size must be >= 1, got {domain_size}")
        if domain_size > MAX_DOMAIN_SIZE:  # before building the tuple
            raise SpecError(
                f"--domain-size {domain_size:,} is above the limit of {MAX_DOMAIN_SIZE:,} values "
                "(the largest domain any frequency oracle accepts)"
            )
        return tuple(range(domain_size))
    return None


def parse_params(items: tuple[str, ...] | list[str]) -> dict[str, object]:
    """``NAME=VALUE`` texts of ``--param`` as a dict: VALUE read as JSON when it parses, else as text."""
    import json

    params: dict[str, object] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name.isidentifier():
            raise SpecError(f"--param {item!r}: expected NAME=VALUE, e.g. --param omega=4")
        if name in params:
            raise SpecError(f"--param {name} is given twice")
        if name in ("mechanism", "format", "epsilon", "domain"):
            raise SpecError(f"--param {name}: give it with its own option (--{name})")
        try:
            params[name] = json.loads(text)
        except ValueError:
            params[name] = text
    return params


def build_spec(
    mechanism: str,
    *,
    epsilon=None,
    domain=None,
    g=None,
    rappor=None,
    from_google=None,
    numeric=None,
    params=None,
    max_report_bits=None,
):
    """Build a spec from CLI-style options (pure; used by ``ldp spec``).

    ``params`` holds further spec parameters by field name (``--param``);
    ``max_report_bits`` limits ``auto`` to frequency oracles whose reports
    carry at most that many bits.
    """
    params = dict(params or {})
    name = mechanism.lower().replace("_", "-")
    if name not in MECHANISMS:
        raise SpecError(f"unknown mechanism {mechanism!r}; known: {', '.join(MECHANISMS)}")
    if max_report_bits is not None and name != "auto":
        raise SpecError(f"--max-report-bits applies to auto only (it chooses the mechanism), not {name}")
    if name not in FREQUENCY_MECHANISMS and name not in NUMERIC_MECHANISMS and name not in ("auto", "rappor"):
        return _registered_spec(name, epsilon, domain, params)
    numeric = {k: v for k, v in (numeric or {}).items() if v is not None}
    if name in NUMERIC_MECHANISMS or (name == "auto" and domain is None and numeric):
        from ldp.specs.numeric import numeric_spec

        if epsilon is None:
            raise SpecError(f"{name} needs --epsilon")
        if "low" not in numeric or "high" not in numeric:
            raise SpecError(f"{name} needs --low and --high (the range of the values)")
        if "delta" not in numeric and "delta" in _fields(NUMERIC_MECHANISMS.get(name)):
            raise SpecError(f"{name} needs --delta (the delta of (epsilon, delta)-LDP, e.g. --delta 1e-5)")
        chosen = NUMERIC_MECHANISMS.get(name)
        if "grid" in numeric and chosen is not None and not chosen.grid_applies({**numeric, **params}):
            raise SpecError(f"--grid does not apply to {name} with these parameters (it has no input grid)")
        return numeric_spec(name, epsilon, **numeric, **params)
    if numeric:
        verb = "applies" if len(numeric) == 1 else "apply"
        raise SpecError(
            f"--{', --'.join(numeric)} {verb} to numeric mechanisms ({', '.join(NUMERIC_MECHANISMS)})"
        )
    if name == "rappor":
        if from_google is not None:
            from ldp.google_params import read_google_params

            return read_google_params(from_google, hash=rappor.get("hash") or "md5")
        options = {k: v for k, v in rappor.items() if v is not None} | params
        encoding = options.get("encoding", "bloom")
        needed = ["f", "p", "q"] + (["num_bits", "num_hashes"] if encoding == "bloom" else [])
        missing = [f"--{name.replace('_', '-')}" for name in needed if name not in options]
        if missing:
            raise SpecError(f"rappor needs {', '.join(missing)} (or --from-google params.csv)")
        if encoding == "basic":
            if domain is None:
                raise SpecError("basic rappor needs --domain, --domain-file or --domain-size")
            options["domain"] = domain
        return Rappor(**options)
    if epsilon is None:
        raise SpecError(f"{name} needs --epsilon")
    if domain is None:
        if name == "binary-rr":
            domain = (0, 1)
        else:
            raise SpecError(f"{name} needs --domain, --domain-file or --domain-size")
    if name == "auto":
        name = best_frequency_mechanism(epsilon, len(domain), max_report_bits=max_report_bits)
    cls = FREQUENCY_MECHANISMS[name]
    if g is not None:
        if name != "olh":
            raise SpecError("--g applies to olh only")
        return OLH(domain=domain, epsilon=epsilon, g=g)
    if params:
        return cls.from_dict({"domain": list(domain), "epsilon": epsilon, **params})
    return cls(domain=domain, epsilon=epsilon)


def _registered_spec(name: str, epsilon, domain, params: dict[str, object]):
    """A registered spec of no family with options of its own, from ``--epsilon``, the domain and ``--param``."""
    cls = spec_class(name)
    fields = _fields(cls)
    data = dict(params)
    for option, value in (("epsilon", epsilon), ("domain", domain)):
        if value is None:
            continue
        if option not in fields:
            raise SpecError(
                f"--{option} does not apply to {name} (its parameters: {', '.join(sorted(fields))})"
            )
        data[option] = list(value) if option == "domain" else value
    import inspect

    required = [
        parameter.name
        for parameter in list(inspect.signature(cls).parameters.values())
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        and parameter.name not in data
    ]
    if required:
        raise SpecError(f"{name} needs {', '.join(f'--param {field}=...' for field in required)}")
    return cls.from_dict(data)


def _fields(cls) -> set[str]:
    """Field names of a spec class (empty for None)."""
    import dataclasses

    return {field.name for field in dataclasses.fields(cls)} if cls is not None else set()


def _given(options: dict[str, object]) -> list[str]:
    return [name for name, value in options.items() if value is not None]


def _refuse(options: list[str], why: str) -> None:
    if options:
        verb = "does" if len(options) == 1 else "do"
        raise OptionConflict(f"{', '.join(options)} {verb} not apply {why}")


def check_options(mechanism: str, *, epsilon, domain: dict, g, rappor: dict, numeric: dict) -> None:
    """Refuse options the chosen mechanism would silently ignore (a one-line usage error naming them).

    ``domain``, ``rappor`` and ``numeric`` map CLI option names (``--domain``,
    ``--num-bits``, ``--low``, ...) to their values (None when not given);
    ``rappor`` includes ``--from-google``.
    """
    name = mechanism.lower().replace("_", "-")
    domain_given, rappor_given, numeric_given = _given(domain), _given(rappor), _given(numeric)
    if name in NUMERIC_MECHANISMS or (name == "auto" and not domain_given and numeric_given):
        what = f"to {name} (a numeric mechanism" + (
            ")" if name != "auto" else ", chosen because --low/--high were given)"
        )
        _refuse(domain_given, f"{what}: it takes --low and --high instead")
        _refuse(rappor_given, f"{what}; rappor only")
        _refuse(["--g"] if g is not None else [], f"{what}; olh only")
        fields = _fields(NUMERIC_MECHANISMS.get(name))
        if name == "auto":  # auto picks a pure-epsilon mechanism; it may or may not use a grid
            _refuse(
                ["--delta"] if numeric["--delta"] is not None else [],
                "to auto, which picks a pure-epsilon mechanism; use gaussian for (epsilon, delta)-LDP",
            )
        else:
            if numeric["--grid"] is not None and "grid" not in fields:
                _refuse(["--grid"], f"to {name}, which has no input grid")
            if numeric["--delta"] is not None and "delta" not in fields:
                _refuse(
                    ["--delta"], f"to {name}, a pure-epsilon mechanism; use gaussian for (epsilon, delta)-LDP"
                )
        return
    if name == "rappor":
        from_google = rappor.get("--from-google")
        if from_google is not None:
            _refuse(
                [option for option in rappor_given if option not in ("--from-google", "--hash")],
                "with --from-google, which reads every RAPPOR parameter from the file (only --hash may be added)",
            )
            _refuse(
                domain_given,
                "with --from-google (Google's params describe Bloom-filter RAPPOR, which has no domain)",
            )
        elif rappor.get("--encoding") != "basic":
            _refuse(
                domain_given,
                f"to {rappor.get('--encoding') or 'bloom'} rappor (only --encoding basic takes a domain; "
                "Bloom-filter reports are decoded with ldp aggregate --candidates)",
            )
        _refuse(
            ["--epsilon"] if epsilon is not None else [],
            "to rappor: its privacy follows from --f, --p and --q (printed as epsilon_inf and epsilon_one)",
        )
        _refuse(["--g"] if g is not None else [], "to rappor (olh only)")
        _refuse(numeric_given, f"to rappor (numeric mechanisms only: {', '.join(NUMERIC_MECHANISMS)})")
        return
    _refuse(rappor_given, f"to {name} (rappor only)")


def _privacy_lines(spec) -> list[str]:
    lines = [f"mechanism: {spec.mechanism}   fingerprint: {spec.fingerprint}"]
    if getattr(spec, "report_kind", None) == "numeric":
        return lines + _numeric_lines(spec)
    if spec.memoized and hasattr(spec, "variance_star"):  # a longitudinal chain: ε₁ is its ε, ε∞ its memo's
        lines.append(
            f"epsilon: {spec.epsilon:.6g} (one report; achieved by the exact probabilities: "
            f"{spec.epsilon_achieved:.17g})"
        )
        lines.append(f"epsilon_inf (any number of reports of one value): {spec.epsilon_inf:.6g}")
        per_report = getattr(spec, "memo_report_epsilon", None)
        if per_report is not None and spec.memo_linear:  # the chains, LOLOHA: r reports cost min(r·ε′, ε∞)
            lines.append(
                f"lifetime: at most min(reports x {per_report:.6g}, {spec.memo_domain_size} memo keys x "
                f"{spec.epsilon_inf:.6g} = {spec.memo_domain_size * spec.epsilon_inf:.6g}) "
                "(docs/longitudinal/index.md)"
            )
        else:  # one memo per key, each at most ε∞
            lines.append(
                f"lifetime: at most {spec.memo_domain_size} memo keys x {spec.epsilon_inf:.6g} = "
                f"{spec.memo_domain_size * spec.epsilon_inf:.6g} (docs/longitudinal/index.md)"
            )
        lines.append(f"Var* (n * variance at small frequency, one round): {spec.variance_star:.6g}")
    elif spec.memoized:  # a permanent response: ε of any number of reports, and of one
        inf = (
            "inf (f = 0: no longitudinal protection)"
            if math.isinf(spec.epsilon_inf)
            else f"{spec.epsilon_inf:.6g}"
        )
        lines.append(f"epsilon_inf (any number of reports of one value): {inf}")
        if not hasattr(spec, "epsilon_achieved"):  # RAPPOR: ε₁ follows from f, p, q
            lines.append(f"epsilon_one (a single report): {spec.epsilon:.6g}")
        else:  # a memoized oracle with exact probabilities: its stated ε is ε₁, checked against them
            lines.append(
                f"epsilon: {spec.epsilon:.6g} (epsilon_one, a single report; achieved by the exact probabilities: "
                f"{spec.epsilon_achieved:.17g})"
            )
            values = getattr(spec, "memo_domain_size", None)
            if values is not None and not math.isinf(spec.epsilon_inf):
                lines.append(
                    f"lifetime epsilon (any values, any number of reports): {values} memo keys x epsilon_inf = "
                    f"{values * spec.epsilon_inf:.6g}"
                )
            lines.append(f"Var* (n * variance at small frequency): {spec.variance_star:.6g}")
    else:
        lines.append(
            f"epsilon: {spec.epsilon:.6g} (achieved by the exact probabilities: {spec.epsilon_achieved:.17g})"
        )
        if hasattr(spec, "variance_star"):  # a frequency oracle (not, e.g., a key-value mechanism)
            lines.append(f"Var* (n * variance at small frequency): {spec.variance_star:.6g}")
        attribute_epsilon = getattr(spec, "attribute_epsilon", None)  # multi-attribute records
        if attribute_epsilon is not None:
            lines.append(
                f"attribute_epsilon (two records that differ in one attribute): {attribute_epsilon:.6g} "
                "(docs/multi-attribute.md)"
            )
    return lines + _tradeoff_lines(spec)


def _numeric_lines(spec) -> list[str]:
    lines = []
    if spec.mechanism == "gaussian":
        lines.append(
            f"epsilon: {spec.epsilon:.6g}, delta: {spec.delta:.6g} "
            f"(delta achieved on the grid: {spec.delta_achieved:.6g}; sigma {spec.sigma:.6g} on [-1, 1], "
            f"mu-GDP with mu = {spec.gdp_mu:.6g})"
        )
    else:
        lines.append(
            f"epsilon: {spec.epsilon:.6g} (achieved by the exact probabilities: {spec.epsilon_achieved:.17g})"
        )
    if spec.memoized:  # memoized responses (1BitMean with alpha-point rounding): the longitudinal bound
        lines.append(
            f"epsilon_inf (any number of reports of one memo key): {spec.epsilon_inf:.6g}; "
            f"memo keys: {spec.memo_domain_size} (lifetime at most {spec.memo_domain_size} x epsilon_inf)"
        )
    grid = getattr(spec, "grid", None)
    if grid is not None:
        lines.append(
            f"grid: {grid} steps over [{spec.low:g}, {spec.high:g}] (resolution {(spec.high - spec.low) / grid:.6g})"
        )
    sd = (spec.worst_case_variance**0.5) * spec.half_width
    lines.append(f"worst-case std of one report: {sd:.6g} (value units); mean SE ~ {sd:.6g}/sqrt(n)")
    return lines + _tradeoff_lines(spec)


def _tradeoff_lines(spec) -> list[str]:
    """The per-report trade-off summary: the smallest GDP μ that bounds the exact curve."""
    from ldp.privacy.mechanisms import tradeoff_summary

    try:
        summary = tradeoff_summary(spec)
    except ParameterError:  # no curve for this mechanism (gaussian: its mu is printed above)
        return []
    bounded = "its exact curve" if summary["exact"] else "f_(eps,0) at its achieved epsilon"
    lines = [f"trade-off: one report is {summary['gdp_mu']:.6g}-GDP (tightest mu bounding {bounded})"]
    if "gdp_mu_inf" in summary:
        lines.append(
            f"trade-off: all reports of one memo key (its permanent response) are {summary['gdp_mu_inf']:.6g}-GDP"
        )
    return lines


@click.command("spec")
@click.argument("mechanism", type=click.Choice(MECHANISMS, case_sensitive=False))
@click.option("--epsilon", type=float, help="Privacy parameter (frequency oracles).")
@click.option("--domain", help="Comma-separated domain values, e.g. a,b,c.")
@click.option("--domain-file", type=click.Path(dir_okay=False), help="File with one domain value per line.")
@click.option("--domain-size", type=int, help="Domain = the integers 0..D-1.")
@click.option("--g", type=int, help="OLH hash range (default: the best integer near e^epsilon + 1).")
@click.option("--num-bits", type=int, help="RAPPOR: Bloom filter bits k.")
@click.option("--num-hashes", type=int, help="RAPPOR: hash functions h.")
@click.option("--num-cohorts", type=int, help="RAPPOR: cohorts m.")
@click.option("--f", "f_", help="RAPPOR: PRR probability f (exact decimal or a/b).")
@click.option("--p", "p_", help="RAPPOR: IRR P[1 | 0].")
@click.option("--q", "q_", help="RAPPOR: IRR P[1 | 1].")
@click.option(
    "--hash", "hash_", type=click.Choice(["mmh3", "md5"]), help="RAPPOR Bloom hashing (md5 = Google's)."
)
@click.option("--encoding", type=click.Choice(["bloom", "basic", "boolean"]), help="RAPPOR encoding.")
@click.option("--from-google", type=click.Path(dir_okay=False), help="RAPPOR: read Google's params.csv.")
@click.option("--low", type=float, help="Numeric mechanisms: smallest value (smaller ones are clipped).")
@click.option("--high", type=float, help="Numeric mechanisms: largest value (larger ones are clipped).")
@click.option("--grid", type=int, help="Numeric grid mechanisms: input grid steps (default 256).")
@click.option("--delta", type=float, help="Gaussian: delta of (epsilon, delta)-LDP.")
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=VALUE",
    help="Any other spec parameter by its name (repeatable), e.g. --param omega=4; VALUE is read as JSON "
    "when it parses, else as text.",
)
@click.option(
    "--max-report-bits",
    type=click.IntRange(min=1),
    help="auto: choose among the frequency oracles whose reports carry at most this many bits.",
)
@click.option(
    "-o", "--output", type=click.Path(dir_okay=False), help="Write the spec here (default: stdout)."
)
def spec(
    mechanism,
    epsilon,
    domain,
    domain_file,
    domain_size,
    g,
    num_bits,
    num_hashes,
    num_cohorts,
    f_,
    p_,
    q_,
    hash_,
    encoding,
    from_google,
    low,
    high,
    grid,
    delta,
    params,
    max_report_bits,
    output,
):
    """Write a mechanism spec (JSON) and print its privacy on stderr.

    \b
    Examples:
      ldp spec grr --epsilon 1 --domain a,b,c -o grr.json
      ldp spec olh --epsilon 2 --domain-size 1024 -o olh.json
      ldp spec auto --epsilon 1 --domain-file values.txt
      ldp spec auto --epsilon 1 --domain-size 1024 --max-report-bits 16
      ldp spec rappor --num-bits 128 --num-hashes 2 --num-cohorts 64 --f 0.5 --p 0.5 --q 0.75
      ldp spec rappor --from-google params.csv -o rappor.json
      ldp spec piecewise --epsilon 1 --low 0 --high 100 -o pm.json
      ldp spec auto --epsilon 2 --low 0 --high 3600       (numeric: best by worst-case variance)
      ldp spec gaussian --epsilon 1 --delta 1e-5 --low 0 --high 1
    """

    check_options(
        mechanism,
        epsilon=epsilon,
        g=g,
        domain={"--domain": domain, "--domain-file": domain_file, "--domain-size": domain_size},
        rappor={
            "--num-bits": num_bits,
            "--num-hashes": num_hashes,
            "--num-cohorts": num_cohorts,
            "--f": f_,
            "--p": p_,
            "--q": q_,
            "--hash": hash_,
            "--encoding": encoding,
            "--from-google": from_google,
        },
        numeric={"--low": low, "--high": high, "--grid": grid, "--delta": delta},
    )

    def body():
        check_outputs_distinct(
            [("--domain-file", domain_file), ("--from-google", from_google)], [("-o", output)]
        )
        values = _parse_domain(domain, domain_file, domain_size)
        rappor = {
            "num_bits": num_bits,
            "num_hashes": num_hashes,
            "num_cohorts": num_cohorts,
            "f": f_,
            "p": p_,
            "q": q_,
            "hash": hash_,
            "encoding": encoding,
        }
        numeric = {"low": low, "high": high, "grid": grid, "delta": delta}
        built = build_spec(
            mechanism,
            epsilon=epsilon,
            domain=values,
            g=g,
            rappor=rappor,
            from_google=from_google,
            numeric=numeric,
            params=parse_params(params),
            max_report_bits=max_report_bits,
        )
        text = built.to_json(indent=2) + "\n"
        if output:
            from ldp.atomic import atomic_output

            with atomic_output(output) as temporary:  # an existing spec is replaced whole or not at all
                try:
                    Path(temporary).write_text(text, encoding="utf-8")
                except OSError as exc:
                    raise ParameterError(f"cannot write {output!r}: {exc.strerror or exc}") from None
        else:
            sys.stdout.write(text)
        for line in _privacy_lines(built):
            click.echo(line, err=True)

    run_guarded(body)
