import { describe, expect, it } from "vitest";
import { slotSaveAnswer } from "../src/supervisor/parking-probe.js";
import { contractRefusal } from "../src/supervisor/readiness.js";
import { loopdConfig } from "../src/supervisor/configs.js";
import { layoutFor } from "../src/supervisor/layout.js";

describe("the slot-save probe of `up`", () => {
  it("reads llama-server's answers to an unknown slot action", () => {
    // Recorded from llama-server b1-80fb11a: without --slot-save-path, then with it.
    const off = {
      error: {
        code: 501,
        message: "This server does not support slots action. Start it with `--slot-save-path`",
        type: "not_supported_error",
      },
    };
    const on = { error: { code: 400, message: "Invalid action", type: "invalid_request_error" } };
    expect(slotSaveAnswer(501, off)).toEqual({ works: false, why: "the server was started without --slot-save-path" });
    expect(slotSaveAnswer(400, on).works).toBe(true);
    expect(slotSaveAnswer(404, "Not Found")).toEqual({
      works: false,
      why: "the server answered a slot probe with 404",
    });
    expect(slotSaveAnswer(500, { error: { message: "boom" } }).works).toBe(false);
  });

  it("writes loopd's parking switch from the probe for a server up did not start", () => {
    const layout = layoutFor("/tmp/bx-run", "/tmp/bx-state");
    const s = { workspaceRoots: ["/w"], sandbox: { mode: "none" as const }, logLevel: "info" };
    const socket = { kind: "socket" as const, path: "/run/llama.sock" };
    expect(loopdConfig(layout, socket, s).parking).toEqual({ enabled: false });
    expect(loopdConfig(layout, socket, s, true).parking).toEqual({ enabled: true });
    expect(loopdConfig(layout, { kind: "llama-sim" }, s).parking).toEqual({ enabled: true });
  });

  it("a contract refusal names --accept-server-contract", () => {
    expect(contractRefusal(["n_ctx_per_slot 32768 != 131072"])).toMatch(
      /n_ctx_per_slot 32768 != 131072.*--accept-server-contract/,
    );
  });
});
