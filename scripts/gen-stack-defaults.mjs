// Writes nix/stack-defaults.json from services/common/src/stack-defaults.ts
// (built into dist by `tsc -b`): Nix cannot import TypeScript.
import { writeFileSync } from "node:fs";
import { stackDefaultsJson } from "../services/common/dist/stack-defaults.js";

writeFileSync(new URL("../nix/stack-defaults.json", import.meta.url), stackDefaultsJson());
