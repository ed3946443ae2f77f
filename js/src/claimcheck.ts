/**
 * The privacy claim of canonical spec fields checked against their privacy
 * facts (`claim.ts` describes the checks): no catalog here, so an entry
 * point that loads some families only (`specload.ts` with its catalog)
 * bundles no other family's privacy module.
 */
import { REPRESENTABLE_MAX_EPSILON, checkEpsilonLimit, checkRatio, statedEpsilon } from "./epsilon.js";
import { epsilonOfRatio } from "./exact.js";
import { floatText } from "./float.js";
import type { JsonObject } from "./json.js";
import type { MechanismPrivacy } from "./privacyfields.js";
import { fail } from "./text.js";

/** The facts of a spec's fields (`facts`); a RangeError when null (this client has no privacy module for the mechanism). */
export function factsOrRefuse(fields: JsonObject, facts: MechanismPrivacy | null): MechanismPrivacy {
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
 * Check canonical spec fields against their privacy facts (`catalogPrivacy`):
 * ε finite, positive and within its limit, the probabilities in their ranges,
 * and the claim against their exact ratio.
 * Throws a RangeError naming what is wrong.
 */
export function checkClaimFacts(fields: JsonObject, given: MechanismPrivacy | null): void {
  const mechanism = String(fields.mechanism);
  const facts = factsOrRefuse(fields, given);
  // the per-report claim (a memoized mechanism's ε₁); RAPPOR states none (ε₁, ε∞ follow from f, p, q)
  let statesOne = false;
  for (const name of ["epsilon", "epsilon_one"]) {
    if (!(name in fields) || (name === "epsilon_one" && fields[name] === null)) continue;
    statesOne = true;
    const epsilon = statedEpsilon(fields, name === "epsilon" ? facts : {}, name); // ε₁'s limit: the representable one
    if (facts.ratio !== null) checkRatio(mechanism, epsilon, facts.ratio, facts.claimMatches !== false, name);
  }
  if (!isMemoized(facts)) return;
  const permanent = facts.permanentRatio ?? null;
  if ("epsilon_inf" in fields && fields.epsilon_inf !== null) {
    const epsilonInf = statedEpsilon(fields, {}, "epsilon_inf");
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
