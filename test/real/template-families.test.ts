import { afterAll, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionEvent, Timings } from "@boxmaker/common";
import { InferService, createClient } from "@boxmaker/common";
import { doneOf, newSession, turn } from "../support/loop-client.js";
import { FAMILIES, familyModel, haveTemplateFamilies, type TemplateFamily } from "./support/template-models.js";
import { useRealStack } from "./support/use-real-stack.js";

/**
 * Five real chat-template families on a real llama-server, through the whole
 * stack: what inferproxy's template probe says of each, and the Σprompt_n over
 * the tokens truly new that six turns measure (as test/real/cache-reuse does).
 * Mistral Nemo renders its tools block (and its system message) with the last
 * user message, so every turn re-reads the prompt: the probe says so before
 * the first turn, and loopd warns within three follow-up requests.
 * DeepSeek V3.1 renders no tools: a turn with Boxmaker's tools is refused.
 */
interface Case {
  key: keyof typeof FAMILIES;
  probe: Record<string, unknown>;
  /** Turns run (0: refused); and whether the live warning must come. */
  turns: number;
  warns: boolean;
}

const CASES: Case[] = [
  {
    key: "qwen3",
    probe: { verdict: "ok", toolsRendered: true, prefixStable: true, toolsMove: false },
    turns: 6,
    warns: false,
  },
  // Llama 3.3 raises on two tool calls in one message ("only supports single tool-calls"): a warning, not a refusal.
  {
    key: "llama33",
    probe: { verdict: "warn", toolsRendered: true, prefixStable: true, toolsMove: false },
    turns: 6,
    warns: false,
  },
  {
    key: "granite4",
    probe: { verdict: "ok", toolsRendered: true, prefixStable: true, toolsMove: false },
    turns: 6,
    warns: false,
  },
  {
    key: "nemo",
    probe: { verdict: "warn", toolsRendered: true, prefixStable: false, toolsMove: true },
    turns: 6,
    warns: true,
  },
  { key: "deepseek31", probe: { verdict: "no_tools", toolsRendered: false }, turns: 0, warns: false },
];

/** Where the nemo case writes the corrected template `doctor --write-template` offers; the last describe serves it. */
const CORRECTED = join(tmpdir(), `bx-nemo-corrected-${process.pid}.jinja`);
afterAll(() => rmSync(CORRECTED, { force: true }));

/** Σprompt_n and Σ truly new over the follow-up requests, from the server's own timings. */
function reuse(timings: Timings[]): { promptN: number; fresh: number; ratio: number } {
  let promptN = 0;
  let fresh = 0;
  for (let k = 1; k < timings.length; k++) {
    const prev = timings[k - 1]!;
    const cur = timings[k]!;
    promptN += cur.promptN;
    fresh += cur.cacheN + cur.promptN - (prev.cacheN + prev.promptN + prev.predictedN - 1);
  }
  return { promptN, fresh, ratio: promptN / fresh };
}

describe.skipIf(!haveTemplateFamilies())("template families on a real llama-server", () => {
  for (const c of CASES) {
    const family: TemplateFamily = FAMILIES[c.key];
    describe(`${c.key} (${family.template})`, () => {
      const t = useRealStack(`bxr-tpl-${c.key}-`, {
        model: "answer",
        modelPath: familyModel(family),
        ctxSize: 3 * 8192,
      });

      it("the probe's verdict, then the cache through the stack", async () => {
        const infer = createClient(InferService, t.stack.sockets.inferproxy);
        const probe = (await infer.status({}, { timeoutMs: 30_000 }).finally(() => infer.close())).templateProbe!;
        expect(probe.ran, probe.error).toBe(true);
        expect(probe).toMatchObject(c.probe);

        const doctor = await t.stack.cli(["doctor", "--json"], { timeoutMs: 60_000 });
        expect(JSON.parse(doctor.stdout).template_probe.verdict).toBe(c.probe.verdict);
        expect(doctor.code).toBe(c.probe.verdict === "ok" ? 0 : 1);
        const status = await t.stack.cli(["status"], { timeoutMs: 60_000 });
        expect(status.stdout).toContain(probe.summary.replace(/ \(`boxmaker doctor` for the table\)$/, ""));

        if (c.key === "nemo") {
          // The probe offers a corrected template, and doctor writes it whole.
          expect(probe.correction).toMatchObject({ state: "available" });
          expect(probe.correction!.rules).toHaveLength(2);
          const wrote = await t.stack.cli(["doctor", "--write-template", CORRECTED], { timeoutMs: 60_000 });
          expect(wrote.code, wrote.stderr).toBe(0);
          expect(wrote.stdout).toContain(`wrote ${CORRECTED} (sha256 ${probe.correction!.templateSha256})`);
          expect(wrote.stdout).toContain(`--chat-template-file ${CORRECTED}`);
          const text = readFileSync(CORRECTED, "utf8");
          expect(createHash("sha256").update(text).digest("hex")).toBe(probe.correction!.templateSha256);
          const again = await t.stack.cli(["doctor", "--write-template", CORRECTED], { timeoutMs: 60_000 });
          expect(again.code).toBe(2);
          expect(again.stderr).toContain("exists: pass --force to replace it");
        } else {
          expect(probe.correction?.state ?? "").not.toBe("available");
        }

        if (c.turns === 0) {
          // The contract table takes no entry for a template the probe refuses, unless forced.
          const config = t.stack.daemons.get("inferproxy")!.configPath;
          const accept = await t.stack.cli(["contract", "accept", "--config", config], { timeoutMs: 60_000 });
          expect(accept.code).toBe(1);
          expect(accept.stderr).toContain("not accepted: the template probe refuses this template for tool use");
          expect(JSON.parse(readFileSync(config, "utf8")).contracts).toBeUndefined();
          const forced = await t.stack.cli(["contract", "accept", "--force", "--config", config], {
            timeoutMs: 60_000,
          });
          expect(forced.code, forced.stderr).toBe(0);
          expect(JSON.parse(readFileSync(config, "utf8")).contracts).toHaveLength(1);

          const refused = await t.stack.cli(["run", "say", "done"], { timeoutMs: 120_000 });
          const said = (refused.stdout + refused.stderr).trim().split("\n");
          expect(refused.code).not.toBe(0);
          const line = said.find((l) => l.includes("refused for tool use"));
          expect(line).toMatch(/renders no tools, so the model would never see read_file, find_tool, call_tool/);
          expect(line).toContain("--chat-template-file");
          console.log(
            `template ${family.template}: probe ${probe.verdict} — ${probe.summary}; turns refused for tool use`,
          );
          return;
        }

        const id = await newSession(t.client, `tpl-${c.key}`);
        const timings: Timings[] = [];
        const warnings: Array<{ turn: number; ev: SessionEvent }> = [];
        for (let i = 0; i < c.turns; i++) {
          const events = await turn(t.client, id, `Question ${i}: what does line ${i * 7} of the notes say?`);
          timings.push(doneOf(events).timings!);
          for (const ev of events) if (ev.event.case === "cacheWarning") warnings.push({ turn: i + 1, ev });
        }
        const r = reuse(timings);
        const session = (await t.client.getSession({ id })).session!;
        // loopd's own accounting is the same measurement.
        expect(session.cacheHealth?.requests).toBe(c.turns - 1);
        expect(Number(session.cacheHealth?.promptN)).toBe(r.promptN);
        expect(Number(session.cacheHealth?.newTokens)).toBe(r.fresh);
        console.log(
          `template ${family.template}: probe ${probe.verdict} (prefix-stable ${probe.prefixStable}, probe Σprompt_n/new ${probe.predictedReuseRatio.toFixed(2)}); ` +
            `through the stack over ${c.turns - 1} follow-ups Σprompt_n ${r.promptN} / new ${r.fresh} = ${r.ratio.toFixed(3)}` +
            (warnings.length ? `; warned at turn ${warnings[0]!.turn}` : ""),
        );
        if (c.warns) {
          expect(r.ratio).toBeGreaterThan(1.5);
          // One warning, within three follow-up requests (turns 2–4), naming the template.
          expect(warnings).toHaveLength(1);
          expect(warnings[0]!.turn).toBeLessThanOrEqual(4);
          const w = warnings[0]!.ev.event.value as { cause: string; message: string };
          expect(w.cause).toBe("template");
          expect(w.message).toContain("not prefix-stable");

          // As a person sees it in `chat`: the warning line within three follow-up turns.
          const chat = await t.stack.cli(["chat"], { input: "one\ntwo\nthree\nfour\n", timeoutMs: 180_000 });
          expect(chat.code, chat.stderr).toBe(0);
          expect(chat.stdout.match(/warning: prompt cache reuse fell/g)).toHaveLength(1);
        } else {
          expect(r.ratio).toBeLessThanOrEqual(1.02);
          expect(warnings).toEqual([]);
        }
      }, 400_000);
    });
  }
  // Mistral Nemo again, on the template the probe corrected: served by llama-server from --chat-template-file.
  describe("nemo with the corrected template (--chat-template-file)", () => {
    const t = useRealStack("bxr-tpl-nemofix-", {
      model: "answer",
      modelPath: familyModel(FAMILIES.nemo),
      ctxSize: 3 * 8192,
      extraArgs: ["--chat-template-file", CORRECTED],
    });

    it("the probe finds it prefix-stable, six turns reuse the cache, and no warning comes", async () => {
      const infer = createClient(InferService, t.stack.sockets.inferproxy);
      const probe = (await infer.status({}, { timeoutMs: 30_000 }).finally(() => infer.close())).templateProbe!;
      expect(probe).toMatchObject({ ran: true, toolsRendered: true, prefixStable: true, toolsMove: false });
      expect(probe.templateSha256).toBe(createHash("sha256").update(readFileSync(CORRECTED, "utf8")).digest("hex"));
      expect(probe.correction?.state ?? "").toBe("");

      const id = await newSession(t.client, "tpl-nemofix");
      const timings: Timings[] = [];
      const warnings: SessionEvent[] = [];
      for (let i = 0; i < 6; i++) {
        const events = await turn(t.client, id, `Question ${i}: what does line ${i * 7} of the notes say?`);
        timings.push(doneOf(events).timings!);
        for (const ev of events) if (ev.event.case === "cacheWarning") warnings.push(ev);
      }
      const r = reuse(timings);
      console.log(
        `template mistralai-Mistral-Nemo-Instruct-2407.jinja corrected: probe ${probe.verdict} (prefix-stable ${probe.prefixStable}, probe Σprompt_n/new ${probe.predictedReuseRatio.toFixed(2)}); ` +
          `through the stack over 5 follow-ups Σprompt_n ${r.promptN} / new ${r.fresh} = ${r.ratio.toFixed(3)}`,
      );
      expect(r.ratio).toBeLessThanOrEqual(1.05);
      expect(warnings).toEqual([]);
    }, 400_000);
  });
});
