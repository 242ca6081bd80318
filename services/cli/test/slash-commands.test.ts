// Chat's slash commands come from one list: /help, chat's --help, the names a
// custom command may not take and the dispatch. These tests hold each of them
// to that list, and the dispatch to never sending a built-in's line to the model.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { create } from "@bufbuild/protobuf";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LoopService } from "@boxmaker/common/client";
import type { LoopClient } from "../src/connection.js";
import { findCommands } from "../src/custom-commands.js";
import { styleFor } from "../src/render/style.js";
import { builtinHelp, builtinSlashList, builtinSlashNames } from "../src/slash-builtins.js";
import { runSlashCommand } from "../src/slash-commands.js";
import { runCli } from "../../../test/support/stack.js";

let dir: string;
let ws: string;
const savedConfigHome = process.env.XDG_CONFIG_HOME;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "bx-slash-"));
  ws = join(dir, "ws");
  mkdirSync(join(dir, "config", "boxmaker", "commands"), { recursive: true });
  mkdirSync(join(ws, ".boxmaker", "commands"), { recursive: true });
  writeFileSync(join(dir, "config", "boxmaker", "commands", "greet.md"), "---\narguments: name\n---\nHello $name.\n");
  process.env.XDG_CONFIG_HOME = join(dir, "config");
});
afterAll(() => {
  if (savedConfigHome === undefined) delete process.env.XDG_CONFIG_HOME;
  else process.env.XDG_CONFIG_HOME = savedConfigHome;
  rmSync(dir, { recursive: true, force: true });
});
afterEach(() => vi.restoreAllMocks());

/** A loopd that answers every call with its empty reply (status names the workspace) and records the calls. */
function fakeClient(): { client: LoopClient; calls: string[] } {
  const calls: string[] = [];
  const client: Record<string, unknown> = { close: () => undefined };
  for (const m of LoopService.methods) {
    client[m.localName] = async () => {
      calls.push(m.localName);
      return m.localName === "status" ? create(m.output, { broker: { workspaceRoots: [ws] } }) : create(m.output);
    };
  }
  return { client: client as unknown as LoopClient, calls };
}

/** What the handlers write to stderr, kept from the test's own output. */
function captureStderr(): { text: () => string } {
  let text = "";
  vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
    text += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString();
    return true;
  });
  return { text: () => text };
}

const style = styleFor({ isTTY: false } as NodeJS.WriteStream);

describe("chat's slash commands", () => {
  it("/help lists chat's own commands, one a line, in one column", () => {
    expect(builtinHelp()).toBe(`commands:
  /help          this list
  /status        the stack's health, slots and pending proposals
  /tools         the tools the model always has
  /proposals     what waits for a decision in this session
  /compact       fold older turns into a summary now (a new epoch)
  /cancel        cancel this session's running turn (e.g. one started elsewhere)
  /edit [TEXT]   write the message in $VISUAL/$EDITOR, starting from TEXT (also Ctrl-G)
  /mode [M]      show or set the permission mode: read-only, ask, auto-edit, auto
  /exit          quit (also Ctrl-D)
a message may span lines: paste it, or put it between two lines holding only """`);
  });

  it("chat --help names every command /help lists, and no other", async () => {
    const listed = [...builtinHelp().matchAll(/^ {2}(\/\S+)/gm)].map((m) => m[1]);
    expect(listed.length).toBeGreaterThan(5);
    const r = await runCli(["chat", "--help"]);
    expect(r.code).toBe(0);
    const line = r.stdout.split("\n").find((l) => l.startsWith("/help "));
    expect(line).toBe(`${builtinSlashList()}; /NAME ARGS`);
    expect(line?.replace(/; \/NAME ARGS$/, "").split(" ")).toEqual(listed);
  });

  it("a custom command file named for any of chat's own commands or their aliases is not used", () => {
    const names = [...builtinSlashNames(), "hooks"].filter((n) => /^[a-z]/.test(n));
    expect(names).toEqual(expect.arrayContaining(["help", "exit", "quit", "mode", "hooks"]));
    const wsDir = mkdtempSync(join(dir, "ws-"));
    mkdirSync(join(wsDir, ".boxmaker", "commands"), { recursive: true });
    for (const n of names) writeFileSync(join(wsDir, ".boxmaker", "commands", `${n}.md`), `take over /${n}`);
    const set = findCommands([wsDir], { XDG_CONFIG_HOME: join(dir, "nowhere"), HOME: join(dir, "nowhere") });
    expect(set.commands).toEqual([]);
    expect(set.skipped.map((k) => k.why).sort()).toEqual(names.map((n) => `/${n} is a built-in command`).sort());
  });

  it("/help also lists the custom commands, with their origin", async () => {
    const { client } = fakeClient();
    const err = captureStderr();
    const outcome = await runSlashCommand("/help", { client, sessionId: undefined, style, note: () => undefined });
    expect(outcome).toEqual({ kind: "done" });
    expect(err.text()).toContain(`${builtinHelp()}\n`);
    expect(err.text()).toMatch(
      /custom commands \(their prompt is sent; see `boxmaker commands`\):\n {2}\/greet <name>/,
    );
  });

  it("a built-in's line never reaches the model; a custom one's sends its prompt; anything else is unknown", async () => {
    const builtins = builtinSlashNames();
    const word = fc.oneof(
      fc.constantFrom(...builtins, "greet"),
      fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,12}$/),
      fc.constantFrom("Help", "help2", "exits", "modes", "?x", "greet-"),
    );
    const rest = fc.oneof(
      fc.constant(""),
      fc.string({ maxLength: 20 }).map((s) => ` ${s.replace(/^\s+/, "")}`),
    );
    // The editor /edit opens: one that saves the file as it was given.
    vi.stubEnv("VISUAL", "");
    vi.stubEnv("EDITOR", "true");
    await fc.assert(
      fc.asyncProperty(word, rest, fc.constantFrom("", "  ", "\t"), async (w, args, pad) => {
        const { client, calls } = fakeClient();
        const notes: string[] = [];
        captureStderr();
        const line = `${pad}/${w}${args}`;
        let outcome: Awaited<ReturnType<typeof runSlashCommand>>;
        try {
          outcome = await runSlashCommand(line, {
            client,
            sessionId: "s-1",
            style,
            note: (t) => void notes.push(t),
            mode: { current: undefined },
          });
        } catch (err) {
          // Only /mode with a word that is no mode refuses, before it calls anything.
          expect(w).toBe("mode");
          expect(calls).toEqual([]);
          expect(String(err)).toMatch(/is not a mode/);
          return;
        }
        // Nothing a slash line does sends a message or starts a turn.
        expect(calls.filter((c) => /^(send|createSession|follow)$/.test(c))).toEqual([]);
        if (w === "exit" || w === "quit") expect(outcome).toEqual({ kind: "quit" });
        // /edit sends what the editor saved (here `true`, which keeps the text given): chat sends it, as the person wrote it.
        else if (w === "edit")
          expect(outcome).toEqual(args.trim() ? { kind: "send", text: args.trim() } : { kind: "done" });
        else if (builtins.includes(w)) expect(outcome).toEqual({ kind: "done" });
        else if (w === "greet") expect(outcome.kind).toBe("send");
        else {
          expect(outcome).toEqual({ kind: "unknown" });
          // Looking for a custom command asks loopd for the workspace roots, nothing more.
          expect(calls).toEqual(["status"]);
        }
      }),
      { numRuns: 300 },
    );
    vi.unstubAllEnvs();
  });
});
