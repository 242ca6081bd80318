import { Ajv, type ValidateFunction } from "ajv";
import { LOOP_TOOL } from "./loop-tool-names.js";
import { type Static, StringEnum, type TSchema, Type } from "./typed-schema.js";

/**
 * The arguments of the core tools loopd runs, declared once: brokerd puts the
 * schema in the tools array and checks calls against it; loopd reads a call
 * it got the go-ahead for with `parse…` below, typed from the same schema.
 * The bounds keep one update_plan small: the list is shown to a person on every change.
 */
export const updatePlanParameters = Type.Object(
  {
    items: Type.Array(
      Type.Object(
        {
          content: Type.String({ minLength: 1, maxLength: 300 }),
          status: StringEnum(["pending", "in_progress", "done"]),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 30 },
    ),
  },
  { additionalProperties: false },
);

export const spawnAgentParameters = Type.Object(
  { task: Type.String({ description: "The task, with all context the subagent needs" }) },
  { additionalProperties: false },
);

export type UpdatePlanArgs = Static<typeof updatePlanParameters>;
export type UpdatePlanItem = UpdatePlanArgs["items"][number];
export type SpawnAgentArgs = Static<typeof spawnAgentParameters>;

/** Name, description and parameters as the model reads them, one entry per tool. */
export const LOOP_TOOL_SPECS = {
  updatePlan: {
    name: LOOP_TOOL.updatePlan,
    description: "Keep a short task list: send the whole list on each change, each item pending, in_progress or done.",
    parameters: updatePlanParameters,
  },
  spawnAgent: {
    name: LOOP_TOOL.spawnAgent,
    description: "Run a subagent on a self-contained task; returns its final answer.",
    parameters: spawnAgentParameters,
  },
} as const;

/** A call's arguments as a typed value, or the one line that says why they are not. */
export type LoopToolArgs<T> = { ok: true; args: T } | { ok: false; problem: string };

/**
 * What the schema cannot say without changing the bytes the model reads
 * (the tools array is part of every prompt's cached prefix): a task or an item
 * of only spaces is empty. brokerd's spawn_agent plan refuses with this line too.
 */
export function spawnAgentProblem(args: SpawnAgentArgs): string | undefined {
  return args.task.trim() ? undefined : `${LOOP_TOOL.spawnAgent} needs a non-empty \`task\` string`;
}

function updatePlanProblem(args: UpdatePlanArgs): string | undefined {
  const blank = args.items.findIndex((i) => !i.content.trim());
  return blank < 0 ? undefined : `${LOOP_TOOL.updatePlan}: item ${blank + 1} needs a non-empty \`content\` string`;
}

// Its own instance: the config's fills defaults, which a call's arguments must not get.
const ajv = new Ajv({ allErrors: false, strict: true });
const validators = new WeakMap<TSchema, ValidateFunction>();

/** Text → value → schema → what the schema cannot say: the one way loopd reads these calls. */
function parseWith<T>(
  name: string,
  schema: TSchema,
  json: string,
  problem: (args: T) => string | undefined,
): LoopToolArgs<T> {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch {
    return { ok: false, problem: `${name}: the arguments are not a JSON object` };
  }
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(schema);
    validators.set(schema, validate);
  }
  if (!validate(value)) {
    const e = validate.errors![0]!;
    return {
      ok: false,
      problem: `${name}: ${e.instancePath.slice(1).replace(/\//g, ".") || "arguments"} ${e.message}`,
    };
  }
  const args = value as T;
  const bad = problem(args);
  return bad ? { ok: false, problem: bad } : { ok: true, args };
}

/** update_plan's arguments with each item's content trimmed (the list a person is shown). */
export function parseUpdatePlan(json: string): LoopToolArgs<UpdatePlanArgs> {
  const r = parseWith(LOOP_TOOL.updatePlan, updatePlanParameters, json, updatePlanProblem);
  if (!r.ok) return r;
  return { ok: true, args: { items: r.args.items.map((i) => ({ content: i.content.trim(), status: i.status })) } };
}

/** spawn_agent's arguments with the task trimmed. */
export function parseSpawnAgent(json: string): LoopToolArgs<SpawnAgentArgs> {
  const r = parseWith(LOOP_TOOL.spawnAgent, spawnAgentParameters, json, spawnAgentProblem);
  return r.ok ? { ok: true, args: { task: r.args.task.trim() } } : r;
}
