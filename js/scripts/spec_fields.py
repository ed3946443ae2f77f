"""Write (or check) the TypeScript generated from the registry: ``js/src/specfields.ts``, ``registry.ts``, ``families.ts`` and ``catalog/*.ts``.

Usage::

    python js/scripts/spec_fields.py           # rewrite the files
    python js/scripts/spec_fields.py --check   # exit 1 when one is stale

The TypeScript client reads spec JSON as the Python specs do (``js/src/spec.ts``);
the field names, their kinds and their defaults are taken here from each
declared spec class (``ldp/registry.py``): the dataclass fields in order, the
kind from the field's type, the default from the constructor. A default of
None is a value the client must be given (the server calibrates it from ε),
unless the class lists the field in ``json_nullable`` (RAPPOR's sizes, derived
from its encoding); in a spec that states ε, such a field is one the server
calibrates from it (``CALIBRATED_FIELDS``, named in the error when missing). ``tests/core/test_registry.py`` fails when the committed file
differs from what this writes.

``registry.ts`` holds ``makeEncoder``, a switch from each mechanism with a
TypeScript encoder to its class: the one place the client lists mechanisms.
An encoder class says which mechanisms it encodes with a ``@mechanisms`` tag
in its doc comment, in its own module of ``js/src`` (which imports the shared
``encoder.ts``, never another encoder). It is built by its static
``create(spec, source, options)`` when it has one, else by ``new Class(spec,
source)``; ``registry.ts`` also re-exports every such class, so it is public
(``encoders.ts``, hence ``index.ts``) with no line of its own. A tag naming a mechanism the registry does not declare, or a
mechanism two classes claim, is an error. So a new mechanism with a
TypeScript client adds its module and reruns this script: no TypeScript list
is edited.

``families.ts`` re-exports every module of ``js/src`` with an
``@mechanisms``-tagged class, whole: a family's module is its public API (its
encoder and the helpers it exports), and ``index.ts`` re-exports ``families.ts``,
so a new family's module needs no line there either. A helper a family shares
only with its own tests is not exported.

``catalog/<family>.ts`` holds one ``MechanismEntry`` (``js/src/catalog.ts``)
per mechanism of a family: its spec fields, the fields the server calibrates,
its ε limit (the spec class's ``max_epsilon`` and ``max_epsilon_reason``), its
domain limit, whether its claim may be loose, and its family's privacy
function: the facts the claim check (``claimcheck.ts``) and the ledger
(``budget.ts``) read (its exact worst-case ratio; for a memoized mechanism its
permanent response's ratio and how many memo keys exist). A family is one
module of ``js/src/privacy/`` whose exported function names its mechanisms
with a ``@privacy`` tag in its doc comment; the same errors apply (a mechanism
the registry does not declare, or one two functions claim). A mechanism with
derived spec fields (RAPPOR's sizes) completes them in a ``@canonical``-tagged
function of its module there, the entry's ``complete``; a mechanism with a
``parts`` field (a composite spec) names ``readSpecParts`` of ``specparts.ts``,
the entry's ``readParts``, so only the entry points that load one bundle it. ``specfields.ts``
gathers every entry in ``CATALOG`` (and the tables read from it:
``SPEC_FIELDS``, ``CALIBRATED_FIELDS``, ``EPSILON_LIMITS``,
``DOMAIN_LIMITS``), for the main entry point (``spec.ts``,
``privacyregistry.ts``); an entry point that loads some families imports only
their entries (``frequency.ts``), so a bundler leaves the others out.
``catalog/names.ts`` lists every registered name (a loader over fewer
mechanisms names the main entry point for the others). A module left in
``catalog/`` by a family no longer tagged is removed (``--check`` reports it).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any

from ldp.registry import BUILTIN_MECHANISMS, MechanismDeclaration

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "js" / "src"
OUTPUT = SRC / "specfields.ts"
REGISTRY = SRC / "registry.ts"
FAMILIES = SRC / "families.ts"
CATALOG = SRC / "catalog"

#: A doc comment, then the exported class it documents.
_DOCUMENTED_CLASS = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*export\s+class\s+(\w+)", re.DOTALL)
_TAG = re.compile(r"@mechanisms\s+([^\n*]+)")
#: A doc comment, then the exported function it documents.
_DOCUMENTED_FUNCTION = re.compile(r"/\*\*((?:(?!\*/).)*)\*/\s*export\s+function\s+(\w+)", re.DOTALL)

#: Python field type (as annotated) -> the TypeScript normalizer kind.
KINDS = {
    "tuple[DomainValue, ...]": "domain",
    "tuple[DomainValue, ...] | None": "domain",
    "float": "float",
    "Fraction": "probability",
    "int": "integer",
    "str": "lowercase",
    "tuple[Spec, ...]": "parts",
}


def _ts_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        raise TypeError("a boolean spec default has no TypeScript field kind")
    if isinstance(value, int):
        return f"{value}n"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, tuple):
        return "[" + ", ".join(_ts_value(v) for v in value) + "]"
    raise TypeError(f"spec default {value!r} has no TypeScript form")


def spec_fields(cls: type, form: Any = None, missing: Any = None) -> list[tuple[str, str, Any]]:
    """(name, kind, default) of each field of a spec class: the default in ``form`` (TypeScript's by default),
    or ``missing`` for a field the client must be given (the Kotlin generator passes its own form and marker)."""
    form = _ts_value if form is None else form
    parameters = inspect.signature(cls.__init__).parameters
    nullable = getattr(cls, "json_nullable", frozenset())
    omitted = getattr(cls, "json_omitted", frozenset())  # fields the JSON form holds elsewhere (in its parts)
    out: list[tuple[str, str, Any]] = []
    for field in dataclasses.fields(cls):
        if field.name in omitted:
            continue
        kind = KINDS.get(str(field.type))
        if kind is None:
            raise TypeError(f"{cls.__name__}.{field.name}: no field kind for the type {field.type}")
        parameter = parameters.get(field.name)
        default = inspect.Parameter.empty if parameter is None else parameter.default
        if default is inspect.Parameter.empty or (default is None and field.name not in nullable):
            out.append((field.name, kind, missing))
        else:
            out.append((field.name, kind, form(default)))
    return out


def entry_name(mechanism: str) -> str:
    """The TypeScript name of a mechanism's catalog entry: its name in camelCase (``binary-rr`` -> ``binaryRr``)."""
    head, *rest = mechanism.split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _key(name: str) -> str:
    return name if name.isidentifier() else f'"{name}"'


def catalog_modules(src: Path = SRC) -> dict[str, list[str]]:
    """module of ``src/privacy/`` -> the mechanisms whose ``@privacy`` function it holds, in registry order."""
    functions = privacy_functions(src)
    modules: dict[str, list[str]] = {}
    for decl in BUILTIN_MECHANISMS:
        if decl.name in functions:
            modules.setdefault(functions[decl.name][0], []).append(decl.name)
    if "names" in modules:  # catalog/names.ts is the list of every mechanism
        raise SystemExit(
            "js/src/privacy/names.ts: rename it (catalog/names.ts lists the registered mechanisms)"
        )
    return modules


def render_catalog(module: str, src: Path = SRC) -> str:
    """The text of ``catalog/<module>.ts``: one ``MechanismEntry`` per mechanism of that privacy module."""
    functions = privacy_functions(src)
    canonical = tagged_functions("canonical", src)
    limits, domains = epsilon_limits(), domain_limits()
    declarations = {decl.name: decl for decl in BUILTIN_MECHANISMS}
    mechanisms = catalog_modules(src)[module]
    imports: dict[str, set[str]] = {}
    for name in mechanisms:
        for found in (functions.get(name), canonical.get(name)):
            if found is not None:
                imports.setdefault(found[0], set()).add(found[1])
    lines = [
        "// Generated by `python js/scripts/spec_fields.py` from the registry (ldp/registry.py), the Python spec",
        f"// classes and the `@privacy` and `@canonical` tags of js/src/privacy/{module}.ts: do not edit.",
        'import type { MechanismEntry } from "../catalog.js";',
    ]
    lines += [
        f'import {{ {", ".join(sorted(f))} }} from "../privacy/{m}.js";' for m, f in sorted(imports.items())
    ]
    entries = {name: spec_fields(declarations[name].load_spec()) for name in mechanisms}
    if any(kind == "parts" for fields in entries.values() for _, kind, _ in fields):
        lines.append('import { readSpecParts } from "../specparts.js";')
    for name in mechanisms:
        decl = declarations[name]
        fields = entries[name]
        lines += [
            "",
            f"/** {name}: its spec fields (Python dataclass order), limits and privacy function. */",
        ]
        lines += [f"export const {entry_name(name)}: MechanismEntry = {{", "  fields: {"]
        for field, kind, default in fields:
            value = f'["{kind}"]' if default is None else f'["{kind}", {default}]'
            lines.append(f"    {field}: {value},")
        lines.append("  },")
        if any(field == "epsilon" for field, _, _ in fields):
            calibrated = [f for f, _, default in fields if default is None and f in none_defaults(decl)]
            if calibrated:
                lines.append(f"  calibrated: [{', '.join(json.dumps(c) for c in calibrated)}],")
        if name in limits:
            limit, reason = limits[name]
            lines.append(f"  epsilonLimit: [{limit!r}, {json.dumps(reason, ensure_ascii=False)}],")
        if name in domains:
            size, reason = domains[name]
            lines.append(f"  domainLimit: [{size}n, {json.dumps(reason, ensure_ascii=False)}],")
        if not _claim_matches(decl):
            lines.append("  looseClaim: true,")
        lines.append(f"  privacy: {functions[name][1]},")
        if name in canonical:
            lines.append(f"  complete: {canonical[name][1]},")
        if any(kind == "parts" for _, kind, _ in fields):  # a composite spec's parts (specparts.ts)
            lines.append("  readParts: readSpecParts,")
        lines.append("};")
    lines.append("")
    return "\n".join(lines)


def render_names() -> str:
    """The text of ``catalog/names.ts``: every registered mechanism's name (a spec loader names the main entry
    point for one outside its catalog)."""
    lines = [
        "// Generated by `python js/scripts/spec_fields.py` from the registry (ldp/registry.py): do not edit.",
        "",
        "/** Every registered mechanism, in registry order (the main entry point loads each of them). */",
        "export const MECHANISMS: readonly string[] = [",
        *[f"  {json.dumps(decl.name)}," for decl in BUILTIN_MECHANISMS],
        "];",
        "",
    ]
    return "\n".join(lines)


def render(src: Path = SRC) -> str:
    """The text of ``specfields.ts``: ``CATALOG``, every family's entries, and the tables read from it."""
    modules = catalog_modules(src)
    declared = [decl.name for decl in BUILTIN_MECHANISMS]
    without = [name for name in declared if not any(name in names for names in modules.values())]
    if without:  # the TypeScript client refuses a spec it cannot check the claim of
        raise SystemExit(f"no @privacy function in js/src/privacy/ for: {', '.join(without)}")
    lines = [
        "// Generated by `python js/scripts/spec_fields.py` from the registry (ldp/registry.py): do not edit.",
        "// Every mechanism's entry (its family's module in catalog/, generated too), for the main entry point;",
        "// an entry point that loads some families only imports theirs (frequency.ts).",
        'import type { Catalog, MechanismEntry } from "./catalog.js";',
    ]
    lines += [
        f'import {{ {", ".join(sorted(entry_name(n) for n in names))} }} from "./catalog/{m}.js";'
        for m, names in sorted(modules.items())
    ]
    lines += [
        "",
        'export type { FieldKind, FieldSpec } from "./catalog.js";',
        "",
        "/** Every mechanism of the registry, in its order. */",
        "export const CATALOG: Catalog = {",
    ]
    for name in declared:
        entry = entry_name(name)
        lines.append(f"  {entry}," if entry == name else f"  {_key(name)}: {entry},")
    lines += [
        "};",
        "",
        "/** What each entry of CATALOG that has one holds. */",
        "function view<T>(pick: (entry: MechanismEntry) => T | undefined): Readonly<Record<string, T>> {",
        "  return Object.fromEntries(",
        "    Object.entries(CATALOG).flatMap(([name, entry]) => {",
        "      const value = pick(entry);",
        "      return value === undefined ? [] : [[name, value]];",
        "    }),",
        "  );",
        "}",
        "",
        "/** The fields of every mechanism's spec, in the Python dataclass order. */",
        "export const SPEC_FIELDS = view((entry) => entry.fields);",
        "/**",
        " * The fields the server calibrates from ε, per mechanism (a Python default",
        " * of None in a spec that states ε): a spec without them is not the server's.",
        " */",
        "export const CALIBRATED_FIELDS = view((entry) => entry.calibrated);",
        "/**",
        " * The largest ε each mechanism supports, and why: its Python spec class's",
        " * `max_epsilon` and `max_epsilon_reason` (`ldp/specs/limits.py`); none for",
        " * a mechanism whose limit depends on its parameters (checked by the server).",
        " */",
        "export const EPSILON_LIMITS = view((entry) => entry.epsilonLimit);",
        "/**",
        " * The largest domain each mechanism takes, and why: its Python spec class's",
        " * `max_domain_size` and `max_domain_reason`, checked before its family's checks.",
        " */",
        "export const DOMAIN_LIMITS = view((entry) => entry.domainLimit);",
        "",
    ]
    lines += [
        "/**",
        " * The sampling table of each numeric mechanism that has one (`ldp/numeric_wire.py`): `two-point`, which",
        " * follows from the spec, or the kind of the grid table the server builds (`rows`, `shift`). A numeric",
        " * mechanism left out samples from its spec alone (1BitMean).",
        " */",
        'export const NUMERIC_TABLES: Readonly<Record<string, "two-point" | "rows" | "shift">> = {',
    ]
    for name, kind in numeric_tables().items():
        lines.append(f"  {name if name.isidentifier() else json.dumps(name)}: {json.dumps(kind)},")
    lines += ["};", ""]
    return "\n".join(lines)


def numeric_tables() -> dict[str, str]:
    """Each registered numeric mechanism with a sampling table: the table's kind (an example spec's, ε = 1)."""
    from ldp.numeric_wire import has_table, numeric_table
    from ldp.specs import NUMERIC_MECHANISMS, numeric_spec

    out = {}
    for decl in BUILTIN_MECHANISMS:
        if decl.name in NUMERIC_MECHANISMS:
            spec = numeric_spec(decl.name, 1.0, 0.0, 1.0, delta=1e-5)
            if has_table(spec):
                out[decl.name] = numeric_table(spec)["kind"]
    return out


def none_defaults(decl: MechanismDeclaration) -> set[str]:
    """The constructor parameters of a declaration's spec class whose default is None."""
    parameters = inspect.signature(decl.load_spec().__init__).parameters
    return {name for name, parameter in parameters.items() if parameter.default is None}


def encoder_classes(src: Path = SRC) -> dict[str, tuple[str, str, bool]]:
    """mechanism -> (module, class, has a static ``create``) of every ``@mechanisms``-tagged class in ``src``."""
    found: dict[str, tuple[str, str, bool]] = {}
    for path in sorted(src.glob("*.ts")):
        if path == REGISTRY:
            continue
        text = path.read_text(encoding="utf-8")
        for match in _DOCUMENTED_CLASS.finditer(text):
            tag = _TAG.search(match[1])
            if tag is None:
                continue
            cls = match[2]
            has_create = re.search(
                rf"class\s+{cls}\b[^{{]*\{{(?:(?!\nexport\s).)*?\n  static create\(", text, re.DOTALL
            )
            for mechanism in tag[1].split():
                if mechanism in found:
                    other = found[mechanism]
                    raise SystemExit(
                        f"{mechanism}: encoded by both {other[1]} ({other[0]}.ts) and {cls} ({path.name})"
                    )
                found[mechanism] = (path.stem, cls, has_create is not None)
    return found


def composite_encoders(src: Path = SRC) -> set[str]:
    """Encoder classes of composite specs: their ``create`` takes a fourth parameter, ``parts``, the dispatcher."""
    found = set()
    for module, cls, _ in encoder_classes(src).values():
        text = (src / f"{module}.ts").read_text(encoding="utf-8")
        if re.search(
            r"static create\(\s*spec: Spec,\s*source: ByteSource,\s*options: EncoderOptions,\s*parts:", text
        ):
            found.add(cls)
    return found


def render_registry(src: Path = SRC) -> str:
    """The text of ``registry.ts``: ``makeEncoder``, a switch over the tagged encoder classes in registry order."""
    classes = encoder_classes(src)
    composite = composite_encoders(src)
    declared = checked_against_registry(classes, "@mechanisms")
    ordered = [name for name in declared if name in classes]
    without = [name for name in declared if name not in classes]
    by_class: dict[tuple[str, str, bool], list[str]] = {}
    for name in ordered:
        by_class.setdefault(classes[name], []).append(name)
    modules: dict[str, list[str]] = {}
    for module, cls, _ in by_class:
        modules.setdefault(module, []).append(cls)
    lines = [
        "// Generated by `python js/scripts/spec_fields.py` from the registry (ldp/registry.py) and the",
        "// `@mechanisms` tags of the encoder classes: do not edit.",
        'import type { Encoder, EncoderOptions } from "./encoder.js";',
        'import { cryptoSource } from "./random.js";',
        'import type { Spec } from "./spec.js";',
    ]
    lines += [f'import {{ {", ".join(sorted(c))} }} from "./{m}.js";' for m, c in sorted(modules.items())]
    lines += [
        "",
        "/**",
        " * The encoder of a frequency spec. RAPPOR takes the persistent `client`",
        " * (a fresh one when missing) and `shake`, the SHAKE-256 of its permanent",
        " * response (default: `defaultShake256`, Node's OpenSSL SHAKE-256 where the",
        " * runtime has it, else `jsShake256`: the same bytes); `source`",
        " * replaces the CSPRNG (tests only).",
        " * Numeric specs: `NumericEncoder` (numeric.ts), with the server's table.",
        f" * No encoder here for: {', '.join(without) if without else 'none'}.",
        " */",
        "export function makeEncoder(spec: Spec, options: EncoderOptions = {}): Encoder {",
        "  const source = options.source ?? cryptoSource;",
        "  switch (spec.mechanism) {",
    ]
    for (_, cls, has_create), names in by_class.items():
        lines += [f'    case "{name}":' for name in names]
        call = f"{cls}.create(spec, source, options)" if has_create else f"new {cls}(spec, source)"
        if cls in composite:  # a composite spec's encoder encodes its parts with this dispatcher
            call = f"{cls}.create(spec, source, options, (part) => makeEncoder(part, options))"
        lines.append(f"      return {call};")
    lines += ["  }", "  throw new RangeError(`no encoder for ${spec.mechanism} here`);", "}", ""]
    lines += [
        "/** The mechanisms `makeEncoder` encodes, in registry order (the others: `NumericEncoder`, with a table). */",
        "export const ENCODED_MECHANISMS: readonly string[] = [",
        *[f"  {json.dumps(name)}," for name in ordered],
        "];",
        "",
    ]
    lines += ["// every encoder class, public with makeEncoder (encoders.ts re-exports this module)"]
    lines += [f'export {{ {", ".join(sorted(c))} }} from "./{m}.js";' for m, c in sorted(modules.items())]
    lines += [""]
    return "\n".join(lines)


def render_families(src: Path = SRC) -> str:
    """The text of ``families.ts``: ``export *`` of every module with an ``@mechanisms``-tagged class, by name."""
    modules = sorted({module for module, _, _ in encoder_classes(src).values()})
    lines = [
        "// Generated by `python js/scripts/spec_fields.py` from the `@mechanisms` tags of the encoder classes:",
        "// do not edit. The public API of the mechanism families, which index.ts re-exports: every module of",
        "// a tagged encoder class, with all it exports.",
    ]
    lines += [f'export * from "./{module}.js";' for module in modules]
    lines += [""]
    return "\n".join(lines)


def checked_against_registry(found: dict[str, Any], tag: str) -> list[str]:
    """The declared mechanisms in registry order; a tag naming an undeclared mechanism is an error."""
    declared = [decl.name for decl in BUILTIN_MECHANISMS]
    unknown = sorted(set(found) - set(declared))
    if unknown:
        raise SystemExit(f"{tag} names a mechanism ldp/registry.py does not declare: {', '.join(unknown)}")
    return declared


def tagged_functions(tag: str, src: Path = SRC) -> dict[str, tuple[str, str]]:
    """mechanism -> (module, function) of every function in ``src/privacy/`` whose doc comment has ``@<tag>``."""
    pattern = re.compile(rf"@{tag}\s+([^\n*]+)")
    found: dict[str, tuple[str, str]] = {}
    for path in sorted((src / "privacy").glob("*.ts")):
        text = path.read_text(encoding="utf-8")
        for match in _DOCUMENTED_FUNCTION.finditer(text):
            names = pattern.search(match[1])
            if names is None:
                continue
            function = match[2]
            for mechanism in names[1].split():
                if mechanism in found:
                    other = found[mechanism]
                    raise SystemExit(
                        f"{mechanism}: @{tag} functions both {other[1]} (privacy/{other[0]}.ts) "
                        f"and {function} (privacy/{path.name})"
                    )
                found[mechanism] = (path.stem, function)
    checked_against_registry(found, f"@{tag}")
    return found


def privacy_functions(src: Path = SRC) -> dict[str, tuple[str, str]]:
    """mechanism -> (module, function) of every ``@privacy``-tagged function in ``src/privacy/``."""
    return tagged_functions("privacy", src)


def composite_functions(src: Path = SRC) -> set[str]:
    """The ``@privacy`` functions of composite specs: a second parameter takes the dispatcher for their parts."""
    found = set()
    for module, function in privacy_functions(src).values():
        text = (src / "privacy" / f"{module}.ts").read_text(encoding="utf-8")
        if re.search(rf"export\s+function\s+{function}\s*\(\s*\w+\s*:\s*JsonObject\s*,", text):
            found.add(function)
    return found


def epsilon_limits() -> dict[str, tuple[float, str]]:
    """mechanism -> (``max_epsilon``, ``max_epsilon_reason``) of each declared spec class with one limit.

    A class whose limit depends on its parameters (it overrides
    ``ExactPrivacySpec._epsilon_limit``: Laplace and Gaussian, per grid and δ)
    has no entry: its class-level ``max_epsilon`` is not the bound of every
    spec (Laplace on grid 256 takes ε up to 23, its ``max_epsilon`` is grid
    1's 13.16), and the server checks its ε when it builds the table.
    """
    from ldp.specs.base import ExactPrivacySpec

    out: dict[str, tuple[float, str]] = {}
    for decl in BUILTIN_MECHANISMS:
        cls = decl.load_spec()
        if not issubclass(cls, ExactPrivacySpec):
            continue  # no stated ε (RAPPOR): its ratios are checked against REPRESENTABLE_MAX_EPSILON
        if cls._epsilon_limit is not ExactPrivacySpec._epsilon_limit:
            continue
        out[decl.name] = (float(cls.max_epsilon), cls.max_epsilon_reason)
    return out


def domain_limits() -> dict[str, tuple[int, str]]:
    """mechanism -> (``max_domain_size``, ``max_domain_reason``) of each declared spec class with a domain limit."""
    out: dict[str, tuple[int, str]] = {}
    for decl in BUILTIN_MECHANISMS:
        cls = decl.load_spec()
        limit = getattr(cls, "max_domain_size", None)
        if limit is not None:
            out[decl.name] = (int(limit), str(cls.max_domain_reason))
    return out


def _claim_matches(decl: MechanismDeclaration) -> bool:
    """Whether a spec's stated ε must match what its probabilities give (``claim_matches_probabilities``)."""
    return bool(getattr(decl.load_spec(), "claim_matches_probabilities", True))


def write_or_check(files: dict[Path, str], command: str, argv: list[str] | None = None) -> int:
    """Write ``files`` (path → text), or with ``--check`` in ``argv`` name each stale one and return 1."""
    parser = argparse.ArgumentParser(description=f"write (or check) the files {command} generates")
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = [
            p for p, text in files.items() if (p.read_text(encoding="utf-8") if p.exists() else "") != text
        ]
        for path in stale:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            print(f"{shown} is stale: run {command}", file=sys.stderr)
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    files = {
        OUTPUT: render(),
        REGISTRY: render_registry(),
        FAMILIES: render_families(),
        CATALOG / "names.ts": render_names(),
        **{CATALOG / f"{module}.ts": render_catalog(module) for module in catalog_modules()},
    }
    extra = sorted(path for path in CATALOG.glob("*.ts") if path not in files)  # a family no longer tagged
    checking = "--check" in (sys.argv[1:] if argv is None else argv)
    if not checking:
        CATALOG.mkdir(exist_ok=True)
    status = write_or_check(files, "python js/scripts/spec_fields.py", argv)
    for path in extra:
        if checking:
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            print(f"{shown} is stale: run python js/scripts/spec_fields.py", file=sys.stderr)
        else:
            path.unlink()
    return 1 if checking and extra else status


if __name__ == "__main__":
    sys.exit(main())
