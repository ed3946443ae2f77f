/**
 * The privacy dispatch of the main entry point: `mechanismPrivacy` and
 * `completeFields` over every mechanism's entry (`CATALOG`, generated in
 * `specfields.ts` from the per-family modules of `catalog/`). An entry point
 * that loads some families only (`frequency.ts`) builds its own catalog and
 * calls `catalogPrivacy` with it, so it bundles no other family's module.
 */
import { catalogComplete, catalogPrivacy } from "./catalog.js";
import type { JsonObject } from "./json.js";
import type { MechanismPrivacy } from "./privacyfields.js";
import { CATALOG } from "./specfields.js";

export { DOMAIN_LIMITS, EPSILON_LIMITS } from "./specfields.js";

/**
 * The privacy facts of canonical spec fields (`MechanismPrivacy`: the exact
 * worst-case ratio of one report and, for a memoized mechanism, of its
 * permanent response, and how many memo keys exist; the largest ε the
 * mechanism supports), from its family's module in `privacy/`, after the
 * range checks of the spec's constructor (a RangeError naming what is
 * wrong); null for a mechanism with no privacy module in this client.
 */
export function mechanismPrivacy(fields: JsonObject): MechanismPrivacy | null {
  return catalogPrivacy(CATALOG, fields);
}

/**
 * Complete a mechanism's derived fields in canonical fields, in place, with
 * the checks of the Python spec's constructor (the `@canonical` function of
 * its module in `privacy/`; most mechanisms derive none).
 */
export function completeFields(out: JsonObject): void {
  catalogComplete(CATALOG, out);
}
