import { describe, expect, expectTypeOf, it } from "vitest";
import { ConfigError, MapOf, Nullable, parseConfig, type Static, StringEnum, Type } from "@boxmaker/common";

const schema = Type.Object(
  {
    socket: Type.String({ default: "/run/x.sock" }),
    label: Type.Optional(Type.String()),
    url: Nullable(Type.String()),
    level: StringEnum(["info", "debug"], { default: "info" }),
    enabled: Type.Boolean({ default: false }),
    limits: Type.Object({ max: Type.Integer({ default: 3 }) }, { additionalProperties: false, default: {} }),
    env: MapOf(Type.String(), { default: {} }),
    jobs: Type.Array(
      Type.Object({ id: Type.String(), note: Type.Optional(Type.String()) }, { additionalProperties: false }),
      { default: [] },
    ),
  },
  { additionalProperties: false },
);

describe("a config schema declared with TypeBox", () => {
  it("types what parseConfig returns: defaulted and required keys present, the rest optional, null where a file may say it", () => {
    expectTypeOf(parseConfig(schema, {})).toEqualTypeOf<Static<typeof schema>>();
    expectTypeOf<Static<typeof schema>>().toEqualTypeOf<{
      socket: string;
      level: "info" | "debug";
      enabled: boolean;
      limits: { max: number };
      env: Record<string, string>;
      jobs: { id: string; note?: string }[];
      label?: string;
      url?: string | null;
    }>();
    expect(parseConfig(schema, { jobs: [{ id: "a" }], url: null })).toEqual({
      socket: "/run/x.sock",
      level: "info",
      enabled: false,
      limits: { max: 3 },
      env: {},
      jobs: [{ id: "a" }],
      url: null,
    });
  });

  it("emits the JSON Schema keywords ajv knew before: enum, nullable and additionalProperties maps", () => {
    expect(JSON.parse(JSON.stringify(schema.properties.level))).toEqual({
      type: "string",
      enum: ["info", "debug"],
      default: "info",
    });
    expect(JSON.parse(JSON.stringify(schema.properties.url))).toEqual({ type: "string", nullable: true });
    expect(JSON.parse(JSON.stringify(schema.properties.env))).toEqual({
      type: "object",
      additionalProperties: { type: "string" },
      default: {},
    });
  });

  it("refuses a bad key in one line naming it", () => {
    expect(() => parseConfig(schema, { env: { A: 1 } })).toThrow(ConfigError);
    expect(() => parseConfig(schema, { env: { A: 1 } })).toThrow('config: key "env.A" must be string');
    expect(() => parseConfig(schema, { level: "loud" })).toThrow(
      'config: key "level" must be equal to one of the allowed values',
    );
    expect(() => parseConfig(schema, { jobs: [{}] })).toThrow('config: key "jobs.0.id" is required');
  });
});
