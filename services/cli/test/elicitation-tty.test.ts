import { describe, expect, it } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Tmux } from "./support/tmux.js";
import { useChatTty } from "./support/chat-tty.js";
import { requires } from "../../../test/support/requirements.js";

const EVERYTHING = join(
  fileURLToPath(new URL("../../../node_modules/@modelcontextprotocol/", import.meta.url)),
  "server-everything/dist/index.js",
);

/**
 * An MCP server's questions for the person (elicitation), through the whole
 * stack: the simulated model calls a tool of the real server-everything, the
 * server asks during the call, and the person answers in chat's terminal.
 * The answers reach the server; the model reads only the tool's result.
 */
describe.skipIf(!requires("MCP elicitation on a terminal (pty tests)", ["tmux"]))(
  "an MCP server asks the person during a tool call",
  () => {
    const c = useChatTty("bxq-", {
      brokerd: {
        mcp_servers: {
          ev: {
            transport: "stdio",
            command: process.execPath,
            args: [EVERYTHING, "stdio"],
            sandbox: false,
            connect_timeout_ms: 15_000,
            tools: {
              "trigger-elicitation-request": { risk: "read" },
              "trigger-url-elicitation": { risk: "read" },
            },
          },
        },
      },
    });
    const t = c.t;

    /** The model finds the tool, calls it with `args`, then answers `final`. */
    async function modelCalls(tool: string, args: Record<string, unknown>, final: string): Promise<void> {
      // The server connects in the background after brokerd is ready.
      for (let i = 0; i < 60; i++) {
        const out = await t.stack.cli(["tools", "--json"]);
        if (out.stdout.includes(`ev.${tool}`)) break;
        await new Promise((r) => setTimeout(r, 250));
      }
      t.stack.sim.enqueue({
        toolCalls: [{ id: "c-find", name: "find_tool", arguments: JSON.stringify({ query: tool }) }],
      });
      t.stack.sim.enqueue({
        toolCalls: [
          { id: "c-ask", name: "call_tool", arguments: JSON.stringify({ name: `ev.${tool}`, arguments: args }) },
        ],
      });
      t.stack.sim.enqueue({ content: final });
    }

    /** The tool result the model was sent for the call that asked. */
    const toolResultSent = () => {
      const msgs = (
        t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string; tool_call_id?: string }[] }
      ).messages;
      return msgs.find((m) => m.role === "tool" && m.tool_call_id === "c-ask")?.content ?? "";
    };

    it("asks a form field by field, says what is wrong with an answer, and sends the filled form to the server", async () => {
      await modelCalls("trigger-elicitation-request", {}, "Thanks, got your details.");
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "fill in the form");
      const asked = await tmux.waitFor(chat, (s) => s.includes("String (required)"), "the first field", 30_000);
      expect(asked).toContain('MCP server "ev" asks you · during trigger-elicitation-request');
      expect(asked).toContain("Please provide inputs for the following fields:");
      expect(asked).toContain("Your answers go to the server, not to the model.");
      expect(asked).toContain("Your full, legal name");

      let screens = 1;
      const answer = async (label: string, text: string) => {
        await tmux.waitFor(chat, (s) => s.split(label).length > screens, `the field "${label}"`);
        await tmux.type(chat, text);
      };
      await tmux.type(chat, "Ada Lovelace");
      await answer("Boolean (optional", "y");
      await answer("String with default (optional", "");
      await answer("String with email format (optional", "not-an-email");
      await tmux.waitFor(chat, (s) => s.includes("not an email address"), "the email's problem");
      await tmux.type(chat, "ada@example.org");
      await answer("String with uri format (optional", "");
      await answer("String with date format (optional", "");
      await answer("Integer (optional", "500");
      await tmux.waitFor(chat, (s) => s.includes("at most 100"), "the integer's problem");
      await tmux.type(chat, "7");
      await answer("Number in range 1-1000 (optional", "");
      await answer("Untitled Single Select Enum (optional", "2");
      await answer("Untitled Multiple Select Enum (optional", "1, 3");
      await answer("Titled Single Select Enum (optional", "");
      await answer("Titled Multiple Select Enum (optional", "");
      await answer("Legacy Titled Single Select Enum (optional", "2");
      screens = 0;
      const summary = await tmux.waitFor(chat, (s) => s.includes("send? [y]es"), "the last question");
      expect(summary).toContain("Untitled Multiple Select Enum: Guitar, Violin");
      expect(summary).toContain("Integer: 7");
      await tmux.keys(chat, "y");
      await tmux.waitFor(chat, (s) => s.includes("Thanks, got your details."), "the model's answer", 30_000);

      const result = toolResultSent();
      expect(result).toContain("- Name: Ada Lovelace");
      expect(result).toContain("- Email: ada@example.org");
      expect(result).toContain("- Favorite Integer: 7");
      expect(result).toContain('"untitledSingleSelectEnum": "Rachel"');
      expect(result).toContain('"legacyTitledEnum": "pet-2"');
      // The question itself never reaches the model: only what the server put in its result.
      const sent = JSON.stringify(t.stack.sim.completions.map((r) => r.body));
      expect(sent).not.toContain("Your answers go to the server");
      expect(sent).not.toContain("Your full, legal name");
      await tmux.keys(chat, "C-d");
    }, 120_000);

    it("Ctrl-C at a field dismisses the question and the turn goes on with the server's answer to that", async () => {
      await modelCalls("trigger-elicitation-request", {}, "Understood, no details.");
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()));
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "fill in the form");
      await tmux.waitFor(chat, (s) => s.includes("String (required)"), "the first field", 30_000);
      await tmux.keys(chat, "C-c");
      const after = await tmux.waitFor(chat, (s) => s.includes("Understood, no details."), "the turn's end", 30_000);
      expect(after).not.toContain("cancelling the turn");
      expect(toolResultSent()).toContain("User cancelled the elicitation dialog");
      await tmux.keys(chat, "C-d");
    }, 120_000);

    it("shows a page to open with its whole URL and host, and tells the server the person agreed", async () => {
      const url = "https://login.example.org/device?code=WDJB-MJHT&state=abc";
      await modelCalls("trigger-url-elicitation", { url, message: "Sign in to continue." }, "Signed in, carrying on.");
      const tmux = c.newTmux();
      const chat = await tmux.start(Tmux.cliLine(["chat"], c.env()), { columns: 40, rows: 40 });
      await tmux.waitFor(chat, (s) => s.includes("Ctrl-D quits"), "the chat prompt");
      await tmux.type(chat, "sign me in");
      const asked = await tmux.waitFor(chat, (s) => s.includes("[c]ancel"), "the page question", 30_000);
      expect(asked).toContain("Sign in to continue.");
      // Folded at 40 columns, nothing of it cut.
      expect(asked.replace(/\n│ ↪ /g, "")).toContain(url);
      expect(asked).toContain("host: login.example.org");
      expect(asked).toContain("Boxmaker does not open it");
      await tmux.keys(chat, "y");
      await tmux.waitFor(chat, (s) => s.includes("Signed in, carrying on."), "the model's answer", 30_000);
      expect(toolResultSent()).toContain("User completed the URL elicitation flow");
      await tmux.keys(chat, "C-d");
    }, 120_000);

    it("run without a terminal to ask on dismisses the question at once and says so", async () => {
      await modelCalls("trigger-elicitation-request", {}, "Nobody was there.");
      const out = await t.stack.cli(["run", "fill in the form"]);
      expect(out.code).toBe(0);
      expect(out.stderr).toContain('MCP server "ev" asks you · during trigger-elicitation-request');
      expect(out.stderr).toContain("no terminal here to answer on");
      expect(out.stdout).toContain("Nobody was there.");
      expect(toolResultSent()).toContain("User cancelled the elicitation dialog");
    }, 60_000);
  },
);
