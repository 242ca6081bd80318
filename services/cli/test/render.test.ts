import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ProposalSchema } from "@boxmaker/common/client";
import { thinkingCapText } from "../src/render/turn-event-text.js";
import { oneLinePreview } from "../src/commands/proposals.js";
import { preview } from "../src/in-place-approval.js";
import { styleFor } from "../src/render/style.js";

const plain = styleFor({ isTTY: false } as NodeJS.WriteStream, { NO_COLOR: "1" });

describe("CLI rendering", () => {
  it("explains the thinking cap in words, including a reply that finished before the stop request", () => {
    expect(thinkingCapText(10, true, "")).toBe(
      "thinking cap: reasoning stopped after 10 tokens (the thinking budget); the model answers now",
    );
    expect(thinkingCapText(10, false, "no active completion for this id")).toMatch(
      /^thinking cap of 10 tokens reached, but the reply had already finished .* nothing was cut$/,
    );
    expect(thinkingCapText(10, false, "HTTP 500")).toContain("refused to stop reasoning (HTTP 500)");
  });

  it("previews a proposal in one line: the file and its change size, or the command", () => {
    const diff = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1,2 @@\n-old\n+new\n+more\n";
    expect(oneLinePreview("edit_file", diff, "{}")).toBe("x.txt (+2 -1)");
    expect(oneLinePreview("run_command", "npm test\n", "{}")).toBe("npm test");
    expect(oneLinePreview("run_command", `${"x".repeat(100)}`, "{}")).toHaveLength(70);
  });

  it("shows the first lines of a long diff and says how many more there are", () => {
    const body = Array.from({ length: 30 }, (_, i) => `+line ${i + 1}`).join("\n");
    const p = create(ProposalSchema, {
      id: "p-1",
      sessionId: "s",
      tool: "write_file",
      state: "pending",
      preview: `+++ b/f\n${body}`,
    });
    const out = preview(p, plain, 20);
    expect(out).toContain("+line 19");
    expect(out).not.toContain("+line 20\n");
    expect(out).toContain("… 11 more lines (d shows them all)");
    expect(preview(p, plain, 40)).toContain("+line 30");
  });
});
