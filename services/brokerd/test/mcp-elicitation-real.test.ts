// MCP elicitation against the real server-everything from npm: a server asks the person
// during a tool call (form and URL modes, and the -32042 error path); brokerd routes the
// question to its session's watcher and the answer back, and never into the tool result's
// model-facing path beyond what the server itself returns.
import { ElicitationAction, ElicitationMode } from "@boxmaker/common";
import { describe, expect, it } from "vitest";
import type { DeskEvent } from "../src/mcp/elicitation-desk.js";
import { EVERYTHING, node, useMcpRig } from "./mcp-real-support.js";

const m = useMcpRig();

const everything = {
  mcp_servers: {
    ev: {
      transport: "stdio",
      command: node,
      args: [EVERYTHING, "stdio"],
      sandbox: false,
      connect_timeout_ms: 15_000,
      // A short silence limit: the person's time at a question must not count against it.
      timeout_ms: 1500,
      tools: {
        "trigger-elicitation-request": { risk: "read" },
        "trigger-url-elicitation": { risk: "read" },
      },
    },
  },
};

/** The next question asked of `session`'s person. */
async function nextQuestion(session: string, callId = ""): Promise<Extract<DeskEvent, { case: "asked" }>["value"]> {
  const ac = new AbortController();
  try {
    for await (const e of m.r.broker.mcp.questions.watch(session, callId, ac.signal))
      if (e.case === "asked") return e.value;
  } finally {
    ac.abort();
  }
  throw new Error("the watch ended without a question");
}

describe("MCP elicitation with server-everything (stdio)", () => {
  it("a form question reaches the session's person, a bad answer is refused with the field named, a good one reaches the server", async () => {
    await m.start(everything);
    await m.r.broker.mcp.settled();
    expect(m.r.broker.table.get("ev.trigger-elicitation-request")).toBeDefined();
    const asked = nextQuestion("s1");
    const call = m.viaCallTool("ev.trigger-elicitation-request", {}, "s1");
    const q = await asked;
    expect(q.mode).toBe(ElicitationMode.FORM);
    expect(q.server).toBe("ev");
    expect(q.tool).toBe("trigger-elicitation-request");
    expect(q.message).toContain("Please provide inputs");
    // Longer than the call's 1.5 s silence limit: the clock stands still while a person is asked.
    await new Promise((r) => setTimeout(r, 2500));
    const desk = m.r.broker.mcp.questions;
    expect(() => desk.answer("s2", q.id, ElicitationAction.ACCEPT, "{}")).toThrow(/no open question/);
    expect(() =>
      desk.answer("s1", q.id, ElicitationAction.ACCEPT, JSON.stringify({ name: "Ada", integer: 500 })),
    ).toThrow(/"Integer": at most 100/);
    expect(() => desk.answer("s1", q.id, ElicitationAction.ACCEPT, JSON.stringify({ name: "Ada", bogus: 1 }))).toThrow(
      /"bogus" is not a field/,
    );
    desk.answer(
      "s1",
      q.id,
      ElicitationAction.ACCEPT,
      JSON.stringify({ name: "Ada Lovelace", check: true, integer: 7 }),
    );
    const out = await call;
    expect(out.isError).toBe(false);
    expect(out.content).toContain("Ada Lovelace");
    expect(desk.size).toBe(0);
  }, 60_000);

  it("declined and dismissed questions say so to the server; a question nobody answers is cancelled when its call ends", async () => {
    await m.start(everything);
    await m.r.broker.mcp.settled();
    for (const [action, word] of [
      [ElicitationAction.DECLINE, "decline"],
      [ElicitationAction.CANCEL, "cancel"],
    ] as const) {
      const asked = nextQuestion("s1");
      const call = m.viaCallTool("ev.trigger-elicitation-request", {}, "s1");
      m.r.broker.mcp.questions.answer("s1", (await asked).id, action, "");
      expect((await call).content).toContain(word);
    }
  }, 60_000);

  it("a page to open (URL mode) is shown with its URL, and the error path (-32042) asks first and sends the call again", async () => {
    await m.start(everything);
    await m.r.broker.mcp.settled();
    const desk = m.r.broker.mcp.questions;
    let asked = nextQuestion("s1");
    let call = m.viaCallTool("ev.trigger-url-elicitation", { url: "https://example.org/sign-in?x=1" }, "s1");
    let q = await asked;
    expect(q.mode).toBe(ElicitationMode.URL);
    expect(q.url).toBe("https://example.org/sign-in?x=1");
    desk.answer("s1", q.id, ElicitationAction.ACCEPT, "");
    expect((await call).content).toContain("User completed the URL elicitation flow");

    asked = nextQuestion("s1");
    call = m.viaCallTool("ev.trigger-url-elicitation", { url: "https://example.org/pay", errorPath: true }, "s1");
    q = await asked;
    expect(q.beforeRetry).toBe(true);
    expect(q.url).toBe("https://modelcontextprotocol.io");
    // The call is sent again, and the server then asks its own page on the request path
    // (a watch begins with the questions open: the first one is answered before it).
    desk.answer("s1", q.id, ElicitationAction.ACCEPT, "");
    const again = await nextQuestion("s1");
    expect(again.url).toBe("https://example.org/pay");
    desk.answer("s1", again.id, ElicitationAction.ACCEPT, "");
    const res = await call;
    expect(res.content).toContain("User completed the URL elicitation flow");

    // Declined on the error path: the model is told a person was asked, not the page.
    asked = nextQuestion("s1");
    call = m.viaCallTool("ev.trigger-url-elicitation", { url: "https://example.org/other", errorPath: true }, "s1");
    desk.answer("s1", (await asked).id, ElicitationAction.DECLINE, "");
    const refused = await call;
    expect(refused.isError).toBe(true);
    expect(refused.content).toContain("needs the operator to finish a step in their browser");
    expect(refused.content).toContain("the operator declined");
    expect(refused.content).not.toContain("modelcontextprotocol.io");
  }, 60_000);

  it("a page that would mislead a person (credentials before the host, not http) is declined without asking", async () => {
    await m.start(everything);
    await m.r.broker.mcp.settled();
    for (const url of ["https://bank.example@evil.example/login", "javascript:alert(1)", "file:///etc/passwd"]) {
      const out = await m.viaCallTool("ev.trigger-url-elicitation", { url }, "s1");
      expect(out.content, url).toContain("declined");
    }
    expect(m.r.broker.mcp.questions.size).toBe(0);
  }, 60_000);
});
