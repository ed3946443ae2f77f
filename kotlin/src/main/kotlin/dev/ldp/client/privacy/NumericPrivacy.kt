package dev.ldp.client.privacy

import dev.ldp.client.Fraction
import dev.ldp.client.JsonObject
import dev.ldp.client.MechanismPrivacy
import dev.ldp.client.PrivacyFields

/**
 * Duchi's mechanism and stochastic rounding send one of two values, the likelier with p > 1/2: ratio
 * p/(1 − p) (the port of `js/src/privacy/numeric.ts`; `ldp/specs/numeric.py`).
 *
 * @privacy duchi stochastic-rounding
 */
public fun binaryNumericPrivacy(fields: JsonObject): MechanismPrivacy =
    MechanismPrivacy.fresh(PrivacyFields.odds(PrivacyFields.keep(fields, Fraction.of(1L, 2L), "1/2")))

/**
 * The grid mechanisms: their probabilities are a table the server computes, not spec fields, so their
 * ratio is checked when an encoder is given the table ([dev.ldp.client.mechanisms.NumericTable.checkClaim]);
 * here only the stated ε is checked.
 *
 * @privacy piecewise hybrid laplace gaussian
 */
@Suppress("UNUSED_PARAMETER")
public fun gridPrivacy(fields: JsonObject): MechanismPrivacy = MechanismPrivacy.fresh(null)
