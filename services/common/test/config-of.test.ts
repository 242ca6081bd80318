import { describe, expect, expectTypeOf, it } from "vitest";
import { parseConfig, type ConfigOf } from "@boxmaker/common";

const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    socket: { type: "string", default: "/run/x.sock" },
    label: { type: "string" },
    url: { type: "string", nullable: true },
    level: { type: "string", enum: ["info", "debug"], default: "info" },
    enabled: { type: "boolean", default: false },
    limits: {
      type: "object",
      additionalProperties: false,
      properties: { max: { type: "integer", default: 3 } },
      required: [],
      default: {},
    },
    jobs: {
      type: "array",
      default: [],
      items: {
        type: "object",
        additionalProperties: false,
        properties: { id: { type: "string" }, note: { type: "string" } },
        required: ["id"],
      },
    },
  },
  required: [],
} as const;

type Config = ConfigOf<typeof schema>;

describe("ConfigOf", () => {
  it("types what parseConfig returns: defaults and required keys present, the rest optional", () => {
    expectTypeOf<Config>().toEqualTypeOf<{
      socket: string;
      level: "info" | "debug";
      enabled: boolean;
      limits: { max: number };
      jobs: { id: string; note?: string }[];
      label?: string;
      url?: string | null;
    }>();
    const c = parseConfig<Config>(schema, { jobs: [{ id: "a" }] });
    expect(c).toEqual({
      socket: "/run/x.sock",
      level: "info",
      enabled: false,
      limits: { max: 3 },
      jobs: [{ id: "a" }],
    });
  });
});
