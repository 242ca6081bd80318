// What costs next to nothing to load: the error base, the stack's shared
// facts, backoff and the package version. The CLI imports these on its start-up
// path; everything that needs gRPC or protobuf comes from "./client" lazily.
export * from "./boxmaker-error.js";
export * from "./stack-defaults.js";
export * from "./backoff.js";
export { packageVersion } from "./version.js";
export * from "./permission-mode.js";
export { runnableLineTest } from "./runnable-lines.js";
export { contractModelKey } from "./contract-model.js";
export * from "./elicitation-form.js";
