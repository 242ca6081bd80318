/**
 * The conversations the template probe renders (template-probe.ts): Boxmaker's
 * tools array in brokerd's shape, the loop's growing conversation, and the other
 * message shapes Boxmaker sends. Markers ("Marker usera") let the probe find
 * each message in a rendering.
 */

export type ProbeMessage = Record<string, unknown> & { role: string };

/**
 * Boxmaker's tools array as brokerd builds it (the same `{type, function:
 * {name, description, parameters}}` shape and key order, core tools and the
 * two meta tools), cut to four: where a template puts the block and whether
 * it moves does not depend on how long it is, only what a move costs does.
 */
export const PROBE_TOOLS: readonly unknown[] = [
  {
    function: {
      description: "Read a text file in the workspace. Optional 1-based inclusive line range.",
      name: "read_file",
      parameters: {
        additionalProperties: false,
        properties: {
          path: { description: "Path relative to the workspace", type: "string" },
          start_line: { minimum: 1, type: "integer" },
          end_line: { minimum: 1, type: "integer" },
        },
        required: ["path"],
        type: "object",
      },
    },
    type: "function",
  },
  {
    function: {
      description: "Run a shell command in the workspace (sandboxed). May need a person's approval.",
      name: "run_command",
      parameters: {
        additionalProperties: false,
        properties: { command: { type: "string" }, timeout_ms: { minimum: 1, type: "integer" } },
        required: ["command"],
        type: "object",
      },
    },
    type: "function",
  },
  {
    function: {
      description: "Search the tools not listed here by what they do; returns names and schemas.",
      name: "find_tool",
      parameters: {
        additionalProperties: false,
        properties: { query: { type: "string" } },
        required: ["query"],
        type: "object",
      },
    },
    type: "function",
  },
  {
    function: {
      description: "Call a tool that find_tool returned, by name, with its arguments.",
      name: "call_tool",
      parameters: {
        additionalProperties: false,
        properties: { name: { type: "string" }, arguments: { type: "object" } },
        required: ["name", "arguments"],
        type: "object",
      },
    },
    type: "function",
  },
];

// Tool call ids: nine alphanumerics is the strictest form a template asks
// (Mistral's); what llama-server generates itself (32) is checked as a shape.
const ID_A = "bxprobe01";
const ID_B = "bxprobe02";
const SERVER_ID = "Q7bK2mX9pL4vR8nT1wY6zC3dF5gH0jS2";

const sys = (): ProbeMessage => ({ role: "system", content: "You are the probe. Marker sysmark." });
const user = (m: string): ProbeMessage => ({ role: "user", content: `Marker ${m}: what do the notes say?` });
const call = (id: string, name: string, args: string, reasoning?: string): ProbeMessage => ({
  role: "assistant",
  content: "",
  ...(reasoning ? { reasoning_content: reasoning } : {}),
  tool_calls: [{ id, type: "function", function: { name, arguments: args } }],
});
const result = (id: string, m: string): ProbeMessage => ({
  role: "tool",
  tool_call_id: id,
  content: `Marker ${m}: line one of the notes.`,
});
const answer = (m: string, reasoning?: string): ProbeMessage => ({
  role: "assistant",
  content: `Marker ${m}: the notes say one thing.`,
  ...(reasoning ? { reasoning_content: reasoning } : {}),
});

/**
 * The probe conversation, as Boxmaker's loop grows it: user → assistant with a
 * tool call → tool result → assistant → user, twice. Each request ends after a
 * user or tool message (REQUEST_ENDS). With `reasoning`, every assistant
 * message carries reasoning_content as a thinking model's do.
 */
export function probeConversation(reasoning: boolean): ProbeMessage[] {
  const r = (m: string) => (reasoning ? `Marker ${m}: I should look at the notes first.` : undefined);
  return [
    sys(),
    user("usera"),
    call(ID_A, "read_file", '{"path":"notes.txt"}', r("thinka")),
    result(ID_A, "toola"),
    answer("answera", r("thinkb")),
    user("userb"),
    call(ID_B, "find_tool", '{"query":"notes"}', r("thinkc")),
    result(ID_B, "toolb"),
    answer("answerb", r("thinkd")),
    user("userc"),
  ];
}

/** Indices (inclusive) of the last message of each request the loop would send. */
export const REQUEST_ENDS = [1, 3, 5, 7, 9];

/** The message shapes Boxmaker sends besides the probe conversation's, each as a conversation of its own. */
export function shapeConversations(): Array<{ shape: string; messages: ProbeMessage[] }> {
  return [
    {
      shape: "two user messages in a row (a turn cancelled before the reply)",
      messages: [sys(), user("usera"), user("userb")],
    },
    {
      shape: "a system message after the first (a note between turns)",
      messages: [sys(), user("usera"), answer("answera"), { role: "system", content: "Marker note." }, user("userb")],
    },
    {
      shape: "an assistant message with empty content",
      messages: [sys(), user("usera"), { role: "assistant", content: "" }, user("userb")],
    },
    {
      shape: "a tool call id as llama-server generates it (32 characters)",
      messages: [
        sys(),
        user("usera"),
        call(SERVER_ID, "read_file", '{"path":"notes.txt"}'),
        result(SERVER_ID, "toola"),
      ],
    },
    {
      shape: "two tool calls in one assistant message",
      messages: [
        sys(),
        user("usera"),
        {
          role: "assistant",
          content: "",
          tool_calls: [
            { id: ID_A, type: "function", function: { name: "read_file", arguments: '{"path":"a.txt"}' } },
            { id: ID_B, type: "function", function: { name: "read_file", arguments: '{"path":"b.txt"}' } },
          ],
        },
        result(ID_A, "toola"),
        result(ID_B, "toolb"),
      ],
    },
  ];
}
