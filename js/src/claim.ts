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
 * (`mechanismPrivacy`, generated in `privacyregistry.ts` from the modules'
 * `@privacy` tags): this module names no mechanism. A spec whose mechanism
 * has no privacy module in this client is refused (its claim cannot be
 * checked).
 *
 * Numeric grid tables (piecewise, hybrid, Laplace) come from the server; their
 * ratio is checked when an encoder is given one (`checkTableClaim`, next to
 * the numeric encoder in numeric.ts).
 */
import type { Fraction } from "./fraction.js";
import { REPRESENTABLE_MAX_EPSILON, checkEpsilonLimit, checkRatio, statedClaim, statedEpsilon } from "./epsilon.js";
import { epsilonOfRatio } from "./exact.js";
import { floatText } from "./float.js";
import type { JsonObject } from "./json.js";
import type { MechanismPrivacy } from "./privacyfields.js";
import { mechanismPrivacy } from "./privacyregistry.js";
import { fail } from "./text.js";

export { CLAIM_TOLERANCE, checkRatio } from "./epsilon.js";
export type { MechanismPrivacy } from "./privacyfields.js";
export { EPSILON_LIMITS, mechanismPrivacy } from "./privacyregistry.js";

/** The privacy facts of canonical spec fields; a RangeError for a mechanism this client has no privacy module for. */
export function privacyFacts(fields: JsonObject): MechanismPrivacy {
  const facts = mechanismPrivacy(fields);
  if (facts === null) {
    fail(`${String(fields.mechanism)}: this client cannot check its privacy claim (it has no privacy module for it): update the client`);
  }
  return facts;
}

/** Whether facts are a memoized mechanism's (its permanent response bounds any number of reports of one memo key). */
export function isMemoized(facts: MechanismPrivacy): boolean {
  return facts.permanentRatio !== undefined;
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
  const mechanism = String(fields.mechanism);
  const facts = privacyFacts(fields);
  // the per-report claim (a memoized mechanism's ε₁); RAPPOR states none (ε₁, ε∞ follow from f, p, q)
  let statesOne = false;
  for (const name of ["epsilon", "epsilon_one"]) {
    if (!(name in fields) || (name === "epsilon_one" && fields[name] === null)) continue;
    statesOne = true;
    const epsilon = name === "epsilon" ? statedEpsilon(fields, facts) : statedClaim(fields, name);
    if (facts.ratio !== null) checkRatio(mechanism, epsilon, facts.ratio, facts.claimMatches !== false, name);
  }
  if (!isMemoized(facts)) return;
  const permanent = facts.permanentRatio ?? null;
  if ("epsilon_inf" in fields && fields.epsilon_inf !== null) {
    const epsilonInf = statedClaim(fields, "epsilon_inf");
    if (permanent === null) {
      fail(`${mechanism} states epsilon_inf=${floatText(epsilonInf)} but its permanent response is not randomized: epsilon_inf is unbounded`);
    }
    checkRatio(mechanism, epsilonInf, permanent, true, "epsilon_inf");
  } else if (permanent !== null) {
    checkEpsilonLimit(mechanism, "epsilon_inf", epsilonOfRatio(permanent), REPRESENTABLE_MAX_EPSILON, UNSTATED_WHY);
  }
  // no stated ε₁ (RAPPOR): ln of the exact ratio must be certifiable, as Python's `_check_epsilon_limits`
  if (!statesOne && facts.ratio !== null) {
    checkEpsilonLimit(mechanism, "epsilon_one", epsilonOfRatio(facts.ratio), REPRESENTABLE_MAX_EPSILON, UNSTATED_WHY);
  }
}

const UNSTATED_WHY = "e^epsilon must be a finite double to certify the claim; it follows from the spec's probabilities";
