// The entry point for clients such as the CLI: the wire (generated code),
// the one gRPC client and typed errors; no config validation, logging or
// daemon lifecycle (ajv and pino cost start-up time a CLI feels). All three
// services' descriptors: loop.proto imports broker.proto and infer.proto, so
// LoopService's cannot be built without theirs.
export * from "./errors.js";
export * from "./tool-decision.js";
export type * from "./service-client.js";
export * from "./gen/boxmaker/v1/infer_pb.js";
export * from "./gen/boxmaker/v1/broker_pb.js";
export * from "./gen/boxmaker/v1/loop_pb.js";
export * from "./gen/boxmaker/v1/errors_pb.js";
export * from "./gen/boxmaker/v1/elicitation_pb.js";
export * from "./gen/boxmaker/v1/mcp_login_pb.js";
export { packageVersion } from "./version.js";
export * from "./stack-defaults.js";
export * from "./backoff.js";
export { createClient, type ClientOptions } from "./grpc-client.js";
export { LOOP_TOOL } from "./loop-tool-names.js";
