// The light entry point for clients such as the CLI: the wire (generated
// code), a gRPC client on node:http2 rather than grpc-js, and typed errors;
// no config validation, logging or daemon lifecycle (ajv, pino and grpc-js
// cost start-up time a CLI feels).
export * from "./errors.js";
export * from "./tool-decision.js";
export type * from "./service-client.js";
export * from "./gen/boxmaker/v1/infer_pb.js";
export * from "./gen/boxmaker/v1/broker_pb.js";
export * from "./gen/boxmaker/v1/loop_pb.js";
export { packageVersion } from "./version.js";
export * from "./stack-defaults.js";
export * from "./backoff.js";
export { createHttp2Client } from "./http2-client.js";
