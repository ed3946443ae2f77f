/**
 * The parts of a composite spec (a multi-attribute record's attributes),
 * read as specs: the reader of a `parts` field, which the generated catalog
 * entry of such a mechanism names (`MechanismEntry.readParts`), so that an
 * entry point loading no composite spec (`frequency.ts`) bundles none of it.
 */
import type { Catalog } from "./catalog.js";
import type { Json, JsonObject } from "./json.js";
import { canonicalFieldsIn } from "./specload.js";
import { fail } from "./text.js";

/**
 * A non-empty list of objects, each a spec of its own with a `name`, kept in
 * order. Each part is read as a spec of `catalog` (its fields and its own
 * claim checked) and held as the Python spec holds it: its canonical fields
 * with its `name`, without `format`.
 */
export function readSpecParts(v: Json, name: string, catalog: Catalog): Json {
  if (!Array.isArray(v) || v.length === 0) return fail(`${name} must be a non-empty list of spec objects`);
  return v.map((item, i) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) {
      return fail(`${name}[${i}] must be an object with 'name' and 'mechanism'`);
    }
    const { name: label, ...rest } = item as JsonObject;
    if (typeof label !== "string" || label.trim() === "") fail(`${name}[${i}] needs a non-empty 'name'`);
    let out: JsonObject;
    try {
      out = canonicalFieldsIn(catalog, rest);
    } catch (error) {
      // as Python's MultiAttribute names the attribute whose spec is refused
      if (!(error instanceof RangeError)) throw error;
      return fail(`multi-attribute: attribute '${(label as string).trim()}': ${error.message}`);
    }
    delete out.format;
    out.name = (label as string).trim();
    return out;
  });
}
