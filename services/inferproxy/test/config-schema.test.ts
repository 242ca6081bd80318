import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { configSchema as schema } from "../src/config.js";
import { canonicalSchema, expectSameVerdicts } from "../../../test/support/schema-documents.js";

// The schema as it was written out by hand before it was declared with TypeBox.
const before = JSON.parse(
  readFileSync(new URL("./fixtures/config-schema-before-typebox.json", import.meta.url), "utf8"),
);

describe("inferproxy's config schema, declared with TypeBox", () => {
  it("is the hand-written schema it replaced, up to key order and defaulted keys listed as required", () => {
    expect(canonicalSchema(JSON.parse(JSON.stringify(schema)))).toEqual(canonicalSchema(before));
  });

  it("accepts, fills and refuses 600 generated files exactly as the hand-written schema did", () => {
    const { accepted, refused } = expectSameVerdicts(before, schema, 600);
    // Both verdicts occur, so the comparison is not between two schemas that refuse everything.
    expect(accepted).toBeGreaterThan(30);
    expect(refused).toBeGreaterThan(30);
  });
});
