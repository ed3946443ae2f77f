/**
 * Mechanism specs: reading spec JSON, its canonical form and fingerprint,
 * for every registered mechanism (the main entry point's `loadSpec`).
 *
 * The client never calibrates probabilities from ε (that uses libm's `exp`;
 * one ulp changes the fingerprint): it reads the server's spec, with its
 * exact fractions, and checks the fingerprint. Every spec is checked as the
 * Python specs check themselves (`claim.ts`): its probabilities must give
 * the ε it states, so the budget charges what a report really costs.
 *
 * The reading itself is `specload.ts`'s, over a catalog of mechanisms: here
 * every mechanism's (`CATALOG`, generated in `specfields.ts`); an entry point
 * that loads some families only (`frequency.ts`) passes its own catalog.
 */
import type { JsonObject } from "./json.js";
import { CATALOG } from "./specfields.js";
import { type Spec, canonicalFieldsIn, checkedSpecIn, loadSpecIn, mechanismNameIn } from "./specload.js";

export {
  SPEC_FORMAT,
  type Spec,
  fingerprintOf,
  fingerprintOfTag,
  specDomain,
  specFloat,
  specFraction,
  specInt,
} from "./specload.js";

/** The registered mechanism name: lowercase, `-` not `_`. */
export function mechanismName(name: string): string {
  return mechanismNameIn(CATALOG, name);
}

/** Canonical fields of a spec object: known fields, their types, and the privacy claim against the exact probabilities. */
export function canonicalFields(data: JsonObject): JsonObject {
  return canonicalFieldsIn(CATALOG, data);
}

/**
 * Load a spec from JSON text or a parsed object: known fields, canonical form,
 * fingerprint, and the privacy claim checked against the exact probabilities.
 * With `expectedFingerprint` (16 hex digits; an ETag's quotes and `W/` are
 * removed), refuse a spec whose canonical form does not have it. Passing
 * `null` (a header the page could not read) is refused with the reason: pass
 * `undefined`, or omit it, only when the spec's origin is trusted otherwise.
 * The returned spec is frozen.
 */
export function loadSpec(source: string | JsonObject, expectedFingerprint?: string | null): Spec {
  return loadSpecIn(CATALOG, source, expectedFingerprint);
}

/**
 * `spec` if `loadSpec` made it; otherwise (an object built by hand) its
 * fields loaded again, which must give the same canonical JSON and
 * fingerprint. Every encoder and the ledger call it, so no entry point skips
 * the checks of `loadSpec`.
 */
export function checkedSpec(spec: Spec): Spec {
  return checkedSpecIn(CATALOG, spec);
}
