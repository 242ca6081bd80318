import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigError, contractModelKey, Status } from "@boxmaker/common";
import { startLlamaSim, type LlamaSim } from "@boxmaker/llama-sim";
import { checkContractTable, chooseContract } from "../src/server-check/contract-table.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { templateSha256 } from "../src/server-check/self-test.js";
import { collect, startStack, userMessages, type Stack } from "./support/stack.js";

const DEFAULT = { template_sha256: "0".repeat(64), n_ctx_per_slot: 131072, total_slots: 3 };
const entry = (model: string, sha = "a".repeat(64)) => ({
  model,
  template_sha256: sha,
  n_ctx_per_slot: 32768,
  total_slots: 2,
  probe_verdict: "ok" as const,
});

describe("the contract table, pure", () => {
  it("keys a model by its --alias, else its file's name, wherever the file lives", () => {
    expect(
      contractModelKey({ model_path: "/srv/models/qwen3-30b.gguf", model_alias: "/srv/models/qwen3-30b.gguf" }),
    ).toBe("qwen3-30b.gguf");
    expect(contractModelKey({ model_path: "/srv/models/qwen3-30b.gguf", model_alias: "coder" })).toBe("coder");
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), { minLength: 1, maxLength: 5 }), (parts) => {
        const path = `/${parts.join("/")}`;
        const moved = `/elsewhere${path}`;
        expect(contractModelKey({ model_path: path, model_alias: path })).toBe(parts.at(-1));
        expect(contractModelKey({ model_path: moved, model_alias: moved })).toBe(parts.at(-1));
      }),
    );
  });

  it("holds a server to its model's entry, and any other model to `contract`", () => {
    const cfg = { contract: DEFAULT, contracts: [entry("alpha.gguf"), entry("beta.gguf", "b".repeat(64))] };
    const beta = chooseContract({ model_path: "/m/beta.gguf", model_alias: "/m/beta.gguf" }, cfg);
    expect(beta).toMatchObject({ entry: "beta.gguf", modelKey: "beta.gguf" });
    expect(beta.contract).toEqual({ template_sha256: "b".repeat(64), n_ctx_per_slot: 32768, total_slots: 2 });
    const other = chooseContract({ model_path: "/m/gamma.gguf" }, cfg);
    expect(other).toMatchObject({ entry: "", modelKey: "gamma.gguf", known: ["alpha.gguf", "beta.gguf"] });
    expect(other.contract).toBe(DEFAULT);
  });

  it("refuses two entries for one model", () => {
    expect(() => checkContractTable([entry("a"), entry("b"), entry("a")], "/etc/boxmaker/inferproxy.json")).toThrow(
      new ConfigError('/etc/boxmaker/inferproxy.json: key "contracts" has two entries for model "a"; keep one'),
    );
  });
});

let s: Stack | undefined;
const extra: LlamaSim[] = [];
afterEach(async () => {
  for (const x of extra.splice(0)) await x.close();
  await s?.close();
  s = undefined;
});

async function until<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await f();
    if (ok(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("inferproxy with a contract table", () => {
  it("serves each model the table has an entry for, swapped on the same socket without a restart; refuses one it has not", async () => {
    const betaTemplate = "{{ messages }}";
    // What the simulator reports of itself, per model: each its own entry.
    const probe = await startLlamaSim({ socketPath: join(tmpdir(), `bx-ct-${process.pid}.sock`), nCtx: 32768 });
    const alpha = { model: "alpha.gguf", ...probe.contract };
    await probe.close();
    const beta = {
      model: "beta.gguf",
      template_sha256: templateSha256(betaTemplate),
      n_ctx_per_slot: 16384,
      total_slots: alpha.total_slots,
    };
    s = await startStack({
      sim: { modelPath: "/models/alpha.gguf" },
      config: { health_poll_ms: 600_000, contract: DEFAULT, contracts: [alpha, beta] },
    });
    let st = await s.client.status({});
    expect(st.selfTest).toMatchObject({ ran: true, passed: true, modelKey: "alpha.gguf", contractEntry: "alpha.gguf" });
    s.sim.enqueue({ content: "from alpha" });
    expect((await collect(s.client, { slot: 0, messagesJson: userMessages() })).final!.content).toBe("from alpha");

    // The operator loads beta: same socket, inferproxy not restarted.
    await s.sim.close();
    const b = await startLlamaSim({
      socketPath: s.llamaSocket,
      chatTemplate: betaTemplate,
      nCtx: 16384,
      modelPath: "/models/beta.gguf",
    });
    extra.push(b);
    b.enqueue({ content: "from beta" });
    expect((await collect(s.client, { slot: 0, messagesJson: userMessages() })).final!.content).toBe("from beta");
    st = await s.client.status({});
    expect(st.selfTest).toMatchObject({ passed: true, contractEntry: "beta.gguf", expectedNCtx: 16384 });

    // A third model the table does not know is held to `contract`, and the refusal says which entries exist.
    await b.close();
    extra.pop();
    const g = await startLlamaSim({ socketPath: s.llamaSocket, modelPath: "/models/gamma.gguf" });
    extra.push(g);
    g.enqueue({ content: "never sent" });
    const r = await collect(s.client, { slot: 0, messagesJson: userMessages() });
    expect(r.error?.status).toBe(Status.FAILED_PRECONDITION);
    st = await until(
      () => s!.client.status({}),
      (x) => x.selfTest?.modelKey === "gamma.gguf",
    );
    expect(st.selfTest).toMatchObject({ passed: false, contractEntry: "" });
    expect(st.selfTest!.mismatches).toContain(
      'model: contracts has no entry for "gamma.gguf" (it has "alpha.gguf", "beta.gguf"), so it is held to contract',
    );
    expect(g.completions).toHaveLength(0);
  });
});
