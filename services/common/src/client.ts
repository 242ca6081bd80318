// The light entry point for clients such as the CLI: the wire (generated
// code), the gRPC adapter and typed errors, without config validation,
// logging or daemon lifecycle (ajv and pino cost start-up time a CLI feels).
export * from "./errors.js";
export * from "./tool-decision.js";
export * from "./grpc-client.js";
export type * from "./service-client.js";
export * from "./gen/boxmaker/v1/infer_pb.js";
export * from "./gen/boxmaker/v1/broker_pb.js";
export * from "./gen/boxmaker/v1/loop_pb.js";
export { packageVersion } from "./version.js";
export * from "./stack-defaults.js";
export * from "./backoff.js";
