// One error model: a caller branches on an RpcError's numeric `status` and on
// `details.reason` (an ErrorReason), nothing else. Before errors.proto the
// facts travelled as a string map, and callers told errors apart by a key
// being there (`"n_ctx" in err.details`), by a string value
// (`details.reason === "prefix_unknown"`), by the domain code copied beside
// the status (`errorCode === …`) or by the status's name. No source file
// under services/ may do any of that again. Each way, a regular expression
// over the file's text:
// Generated code (src/gen), build output and dependencies are not looked at.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { patternFindings, sourceFiles } from "../../../test/support/source-scan.js";
import { repoRoot } from "../../../test/support/stack.js";

const BRANCHES: Record<string, RegExp> = {
  "a key tested with in": /["'`][\w-]+["'`]\s+in\s+[\w.?!]*details\b/,
  "details indexed by a string": /\bdetails\s*\??\.?\[\s*["'`]/,
  "a detail compared with a string": /\bdetails\??\.\w+\s*[!=]==?\s*["'`]/,
  "the copied errorCode": /\berrorCode\s*[!=]==?/,
  "a status by its name":
    /\b(codeName|statusName)\s*[!=]==?|\bcode\s*[!=]==?\s*["'`](UNAVAILABLE|DEADLINE_EXCEEDED|INVALID_ARGUMENT|FAILED_PRECONDITION|RESOURCE_EXHAUSTED|NOT_FOUND|CANCELLED|INTERNAL|ABORTED|UNIMPLEMENTED|PERMISSION_DENIED)["'`]/,
  "a status read from a domain code": /\.code\s*[!=]==?\s*Status\./,
};

const findings = patternFindings(BRANCHES);

describe("one error model", () => {
  it("the check sees each way callers branched on errors before errors.proto", () => {
    expect(findings('return err.status === Status.FAILED_PRECONDITION && "n_ctx" in err.details;')).toEqual([
      "a key tested with in",
    ]);
    expect(findings("const raw = err.details['resume_after_seq'];")).toEqual(["details indexed by a string"]);
    expect(findings('if (e.details?.["reason"]) retry();')).toEqual(["details indexed by a string"]);
    expect(findings('err.details.reason === "prefix_unknown"')).toEqual(["a detail compared with a string"]);
    expect(findings("if (e.details?.errno !== 'ENOENT') throw e;")).toEqual(["a detail compared with a string"]);
    expect(findings('if (err.errorCode === "LOG_WRITE_FAILED") return;')).toEqual(["the copied errorCode"]);
    expect(findings('e.statusName === "UNAVAILABLE" ? 6 : 1')).toEqual(["a status by its name"]);
    expect(findings('exitCode = e.value.code === "UNAVAILABLE" ? 6 : 1;')).toEqual(["a status by its name"]);
    expect(findings("if (err.code === Status.UNAVAILABLE) retry();")).toEqual(["a status read from a domain code"]);
    // What the one model is: the numeric status, the typed reason, facts read as values.
    expect(
      findings(
        "err.status === Status.FAILED_PRECONDITION && err.details.reason === ErrorReason.CONTEXT_OVERFLOW;" +
          " recordPromptCount(s, err.details.nPromptTokens); if (e.code === 'ENOENT') return;" +
          " return { code: e.statusName, reason: cutForPerson(e.message) };",
      ),
    ).toEqual([]);
  });

  it("no source file under services/ branches on an error any other way than status and reason", () => {
    const files = [...sourceFiles(join(repoRoot, "services"))]
      .map((f) => relative(repoRoot, f))
      .filter((f) => f.split("/")[2] === "src");
    // The walk reached the callers that used to branch on strings, so an empty result means something.
    expect(files).toContain("services/loopd/src/model-requests/completion.ts");
    expect(files).toContain("services/cli/src/turn-stream.ts");
    const found = files.flatMap((f) =>
      findings(readFileSync(join(repoRoot, f), "utf8")).map((what) => `${f}: ${what}`),
    );
    expect(found).toEqual([]);
  });
});
