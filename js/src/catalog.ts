/**
 * What the client knows of a mechanism's spec, one entry per mechanism
 * (`MechanismEntry`): its fields, the fields the server calibrates from ε,
 * its ε and domain limits, and its family's privacy function. The entries
 * are generated per family in `catalog/` (`python js/scripts/spec_fields.py`,
 * from the registry and the `@privacy` and `@canonical` tags of `privacy/`),
 * so an entry point imports only the families it loads: `specfields.ts`
 * gathers every one (the main entry), `frequency.ts` the frequency oracles
 * and RAPPOR. A `Catalog` maps mechanism names to entries; the spec loader
 * (`specload.ts`) and the claim check take one. This module names no
 * mechanism.
 */
import type { Json, JsonObject } from "./json.js";
import { type MechanismPrivacy, checkDomainLimit, checkStatedEpsilons } from "./privacyfields.js";

/** How a spec field is read (`specload.ts` has one normalizer per kind). */
export type FieldKind = "domain" | "float" | "probability" | "integer" | "lowercase" | "parts";
/** A field: its kind, and its default when the JSON omits it (no default: required). */
export type FieldSpec = readonly [FieldKind] | readonly [FieldKind, bigint | number | string | null | readonly (bigint | string)[]];

/** The privacy facts of the spec of canonical fields; `parts` gives a composite spec's parts' facts (same catalog). */
export type EntryPrivacy = (fields: JsonObject, parts: (fields: JsonObject) => MechanismPrivacy | null) => MechanismPrivacy;

/** One mechanism, as its Python spec class declares it (generated in `catalog/`). */
export interface MechanismEntry {
  /** The spec's fields, in the Python dataclass order. */
  readonly fields: Readonly<Record<string, FieldSpec>>;
  /** The fields the server calibrates from ε (a Python default of None in a spec that states ε). */
  readonly calibrated?: readonly string[];
  /** The largest ε, and why (`max_epsilon`, `max_epsilon_reason`); none when it depends on the parameters. */
  readonly epsilonLimit?: readonly [number, string];
  /** The largest domain, and why (`max_domain_size`, `max_domain_reason`). */
  readonly domainLimit?: readonly [bigint, string];
  /** The stated ε may exceed what the probabilities give (`claim_matches_probabilities` is False). */
  readonly looseClaim?: boolean;
  /** The family's `@privacy` function (its constructor's range checks, then the facts). */
  readonly privacy?: EntryPrivacy;
  /** The family's `@canonical` function: completes derived fields in place (RAPPOR's sizes). */
  readonly complete?: (out: JsonObject) => void;
  /**
   * The reader of a `parts` field (a composite spec's parts, each a spec of
   * the same catalog): `readSpecParts` of `specparts.ts`, in the entry of
   * every mechanism with such a field, so no other entry point bundles it.
   */
  readonly readParts?: (value: Json, name: string, catalog: Catalog) => Json;
}

/** Mechanism name → entry: the mechanisms an entry point loads. */
export type Catalog = Readonly<Record<string, MechanismEntry>>;

/** The catalog's entry of a mechanism (own properties only), or undefined. */
export function entryOf(catalog: Catalog, mechanism: string): MechanismEntry | undefined {
  return Object.prototype.hasOwnProperty.call(catalog, mechanism) ? catalog[mechanism] : undefined;
}

/**
 * The privacy facts of canonical spec fields (`MechanismPrivacy`: the exact
 * worst-case ratio of one report and, for a memoized mechanism, of its
 * permanent response, and how many memo keys exist; the largest ε the
 * mechanism supports), from its family's module in `privacy/`, after the
 * domain limit, the stated ε and the range checks of the spec's constructor
 * (a RangeError naming what is wrong); null for a mechanism with no entry,
 * or no privacy function, in the catalog.
 */
export function catalogPrivacy(catalog: Catalog, fields: JsonObject): MechanismPrivacy | null {
  const mechanism = String(fields.mechanism);
  const entry = entryOf(catalog, mechanism);
  if (entry?.domainLimit !== undefined) checkDomainLimit(fields, ...entry.domainLimit);
  checkStatedEpsilons(fields);
  if (entry?.privacy === undefined) return null;
  const facts = entry.privacy(fields, (part) => catalogPrivacy(catalog, part));
  const claims = entry.looseClaim ? { ...facts, claimMatches: false } : facts;
  const limit = entry.epsilonLimit;
  return limit === undefined ? claims : { ...claims, maxEpsilon: limit[0], maxEpsilonReason: limit[1] };
}

/**
 * Complete a mechanism's derived fields in canonical fields, in place, with
 * the checks of the Python spec's constructor (its entry's `complete`, the
 * `@canonical` function of its module in `privacy/`; most mechanisms derive none).
 */
export function catalogComplete(catalog: Catalog, out: JsonObject): void {
  entryOf(catalog, String(out.mechanism))?.complete?.(out);
}
