import type { Static, TSchema } from "@boxmaker/common";
import type { Risk } from "../config-types.js";
import type { Plan, PlannedTool, ToolContext } from "../tool-table.js";

interface ToolSpec<P extends TSchema> {
  name: string;
  description: string;
  /** A TypeBox schema: the JSON Schema the model sees and ajv checks, and the type `plan` gets. */
  parameters: P;
  risk: Risk;
  /** Default true: in the epoch's tools array. */
  core?: boolean;
  /** Default builtin. */
  kind?: PlannedTool["kind"];
  /** Default builtin. */
  origin?: string;
  selfCapped?: boolean;
  // A property, not a method: a method's parameters are compared both ways, so a plan typed
  // narrower or wider than its schema would pass unnoticed.
  plan: (args: Static<P>, ctx: ToolContext) => Promise<Plan> | Plan;
}

/** A tool brokerd plans and runs, its arguments typed by its schema. */
export function defineTool<P extends TSchema>(spec: ToolSpec<P>): PlannedTool {
  const { plan, core = true, kind = "builtin", origin = "builtin", ...rest } = spec;
  return {
    ...rest,
    core,
    kind,
    origin,
    // The one place arguments meet their type: planCall runs only after ajv accepted them
    // against `parameters`, the schema Static<P> is read from.
    plan: (args, ctx) => plan(args as Static<P>, ctx),
  };
}
