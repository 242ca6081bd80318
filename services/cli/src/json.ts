import { toJsonString, type DescMessage, type MessageShape } from "@bufbuild/protobuf";

/**
 * The one JSON form of every message the CLI prints: proto field names
 * (snake_case, as in the .proto and docs/cli.md) and every field present,
 * so scripts never have to guess whether a missing key means false or 0.
 */
export function jsonOf<D extends DescMessage>(schema: D, msg: MessageShape<D>): string {
  return toJsonString(schema, msg, { useProtoFieldName: true, alwaysEmitImplicit: true });
}
