/**
 * The privacy claim of a spec, checked against its exact probabilities as
 * the Python specs check it (`ExactPrivacySpec._check_claim` in
 * `ldp/specs/base.py`, each mechanism's `privacy_ratio`):
 *
 * - the probabilities must honour the stated ε: their exact worst-case ratio
 *   max P[y|x]/P[y|x′] is at most e^ε, certified (rational arithmetic, and
 *   e^ε bounded below by a correctly rounded exp times 1 − 2^-50);
 * - where the spec stores both ε and its probabilities, the stated e^ε may
 *   exceed that ratio by a relative 1e-9 at most (an edited ε is noticed);
 * - ε is finite, > 0, and at most the mechanism's limit (`ldp/specs/limits.py`);
 * - a memoized mechanism's stated ε∞ (`epsilon_inf`) is checked in the same
 *   way against the exact ratio of its permanent response.
 *
 * A spec whose probabilities give ε = 4 while it states ε = 1 would be
 * encoded at 4 and charged 1 by the budget: it is refused here, before any
 * encoder exists. The two comparisons allow Python's `math.exp` to be one
 * unit in the last place off the correctly rounded e^ε (so the client never
 * refuses a spec the server accepted), and stay certified: the bound used is
 * still below the real e^ε.
 *
 * The facts come from the module of the mechanism's family in `privacy/`
 * (`mechanismPrivacy` of `privacyregistry.ts`, over the entries generated in
 * `catalog/` from the modules' `@privacy` tags): this module names no
 * mechanism. The checks themselves are `claimcheck.ts`'s, given the facts,
 * so a loader over a few families' entries (`specload.ts`) makes them
 * without bundling the others. A spec whose mechanism
 * has no privacy module in this client is refused (its claim cannot be
 * checked).
 *
 * Numeric grid tables (piecewise, hybrid, Laplace) come from the server; their
 * ratio is checked when an encoder is given one (`checkTableClaim`, next to
 * the numeric encoder in numeric.ts).
 */
import type { Fraction } from "./fraction.js";
import { checkClaimFacts, factsOrRefuse } from "./claimcheck.js";
import type { JsonObject } from "./json.js";
import type { MechanismPrivacy } from "./privacyfields.js";
import { mechanismPrivacy } from "./privacyregistry.js";

export { CLAIM_TOLERANCE, checkRatio } from "./epsilon.js";
export { isMemoized } from "./claimcheck.js";
export type { MechanismPrivacy } from "./privacyfields.js";
export { EPSILON_LIMITS, mechanismPrivacy } from "./privacyregistry.js";

/** The privacy facts of canonical spec fields; a RangeError for a mechanism this client has no privacy module for. */
export function privacyFacts(fields: JsonObject): MechanismPrivacy {
  return factsOrRefuse(fields, mechanismPrivacy(fields));
}

/**
 * The exact worst-case ratio max P[y|x]/P[y|x′] of a spec's probabilities
 * (Python's `privacy_ratio`), after the range checks of its constructor; null
 * for mechanisms whose ratio is not in the spec (the grid mechanisms' tables
 * come from the server) or that this client has no privacy module for.
 */
export function privacyRatio(fields: JsonObject): Fraction | null {
  return mechanismPrivacy(fields)?.ratio ?? null;
}

/**
 * Check canonical spec fields: ε finite, positive and within its limit, the
 * probabilities in their ranges, and the claim against their exact ratio.
 * Throws a RangeError naming what is wrong.
 */
export function checkClaim(fields: JsonObject): void {
  checkClaimFacts(fields, mechanismPrivacy(fields));
}
