import { afterEach, describe, expect, it } from "vitest";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/stack.js";
import { tempDir } from "../support/tmp.js";
import { templateSha256OfFile } from "../support/chat-template-hash.js";
import { RealLlama, haveRealLlama } from "./support/real-llama.js";

/**
 * The NixOS module computes the template_sha256 of `llamaServer.chatTemplateFile`
 * at evaluation (nix/lib.nix templateFileSha256) so inferproxy's contract follows
 * the file. That is only true if it is what a real llama-server reports for the
 * same bytes: held here, for the files whose endings differ.
 */
describe.skipIf(!haveRealLlama("--chat-template-file against a real llama-server"))(
  "real llama-server: the template_sha256 of a --chat-template-file",
  () => {
    let llama: RealLlama | undefined;
    let tmp: ReturnType<typeof tempDir> | undefined;
    afterEach(async () => {
      await llama?.close();
      tmp?.cleanup();
    }, 30_000);

    it.each(["two-newlines.jinja", "crlf.jinja", "no-newline.jinja"])(
      "%s",
      async (file) => {
        const path = join(repoRoot, "test", "fixtures", "chat-templates", file);
        tmp = tempDir("bxr-tpl-");
        llama = await new RealLlama({
          model: "answer",
          socketPath: join(tmp.dir, "llama.sock"),
          parallel: 1,
          ctxSize: 2048,
          extraArgs: ["--chat-template-file", path],
        }).start();
        const props = await llama.get("/props");
        const served = createHash("sha256")
          .update(props.body.chat_template as string, "utf8")
          .digest("hex");
        expect(served).toBe(templateSha256OfFile(readFileSync(path, "utf8")));
      },
      90_000,
    );
  },
);
