import { defineConfig } from "vitest/config";
import { fileURLToPath } from "node:url";

const src = (p: string) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  resolve: {
    // Unit tests run against the TypeScript sources; end-to-end tests spawn the
    // built daemons from dist/ (npm test builds first).
    alias: {
      "@boxmaker/common/client": src("./services/common/src/client.ts"),
      "@boxmaker/common/lite": src("./services/common/src/lite.ts"),
      "@boxmaker/common": src("./services/common/src/index.ts"),
      "@boxmaker/llama-sim": src("./test/llama-sim/src/index.ts"),
    },
  },
  test: {
    include: ["services/*/test/**/*.test.ts", "test/**/*.test.ts"],
    // test/bench holds benchmarks (never run here) and the bench runner's own test (run.test.ts).
    exclude: ["**/node_modules/**", "**/dist/**", "test/bench/**/*.bench.*"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    globalSetup: ["./test/support/skip-summary.ts"],
  },
});
