import { describe } from "vitest";
import { configSchema as schema } from "../src/config.js";
import { itMatchesTheRecordedSchema } from "../../../test/support/schema-documents.js";

// The schema as it was written out by hand before it was declared with TypeBox: fixtures/config-schema-before-typebox.json.
describe("inferproxy's config schema, declared with TypeBox", () => {
  itMatchesTheRecordedSchema(schema, new URL("./fixtures/config-schema-before-typebox.json", import.meta.url));
});
