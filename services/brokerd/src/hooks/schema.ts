import { Nullable, type Static, Type } from "@boxmaker/common";

/**
 * The `hooks` object, for brokerd's config and for a project's hook file: one
 * TypeBox declaration gives the schema ajv checks and the types the hooks code
 * reads (types.ts). A project file cannot say `unsandboxed`: whatever a person
 * trusts there runs in bwrap.
 */
const hookFields = {
  /** Shown in the audit line and in the note the model reads; defaults to `<event>[i]`. */
  name: Nullable(Type.String({ minLength: 1, maxLength: 64 })),
  /** `/bin/sh -c` line; the event's JSON is on its stdin. */
  command: Type.String({ minLength: 1, maxLength: 16_384 }),
  /** Tool-name globs (pre_tool, post_tool) or notification kinds (notification) the hook fires for; unset: every one. */
  match: Nullable(Type.Array(Type.String({ minLength: 1 }))),
  timeout_ms: Type.Integer({ minimum: 1, maximum: 600_000, default: 30_000 }),
  /** Output beyond this is dropped (and counted in the audit line). */
  output_cap_bytes: Type.Integer({ minimum: 1, maximum: 1024 * 1024, default: 8 * 1024 }),
};

const operatorHook = Type.Object(
  {
    ...hookFields,
    /** Operator hooks only: run as brokerd's user outside bwrap (a push to a phone needs the network). */
    unsandboxed: Type.Boolean({ default: false }),
  },
  { additionalProperties: false },
);
const projectHook = Type.Object(hookFields, { additionalProperties: false });

/** The five events, each a list of hooks (a key per event, so each is typed). */
function eventsOf<T extends typeof operatorHook | typeof projectHook>(hook: T) {
  const list = Nullable(Type.Array(hook));
  return Type.Object(
    { session_start: list, pre_tool: list, post_tool: list, turn_end: list, notification: list },
    { additionalProperties: false, default: {} },
  );
}

export const operatorHooksSchema = eventsOf(operatorHook);
export const projectHooksSchema = eventsOf(projectHook);

export type HookSpec = Static<typeof operatorHook>;
export type HooksConfig = Static<typeof operatorHooksSchema>;
export type ProjectHooksConfig = Static<typeof projectHooksSchema>;
