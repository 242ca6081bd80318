import { status as grpcStatus } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { Status } from "../src/status.js";

describe("Status", () => {
  it("is grpc-js's table of gRPC status codes, name for name and number for number", () => {
    const names = (t: object) => Object.keys(t).filter((k) => Number.isNaN(Number(k)));
    expect(names(Status).sort()).toEqual(names(grpcStatus).sort());
    for (const name of names(grpcStatus))
      expect(Status[name as keyof typeof Status], name).toBe(grpcStatus[name as keyof typeof grpcStatus]);
  });
});
