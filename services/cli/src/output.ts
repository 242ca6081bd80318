import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { jsonOf } from "./json.js";
import { printOut, writeJson } from "./render/terminal-safe.js";

/**
 * What a command prints under --json: a proto message in the CLI's one JSON
 * form (json.ts), a plain value, or a document the command composed itself
 * (one that embeds proto forms, made with the jsonOf it is handed).
 */
export type JsonForm = ProtoForm | { readonly value: unknown } | { readonly document: string };

interface ProtoForm {
  readonly schema: DescMessage;
  readonly message: MessageShape<DescMessage>;
}

/** A proto message's --json form; the message must be the schema's, which a bare object could not check. */
export function proto<D extends DescMessage>(schema: D, message: MessageShape<D>): JsonForm {
  return { schema, message: message as MessageShape<DescMessage> };
}

/**
 * The one printer of a command's result: with --json one JSON document on
 * stdout, else the text (which may be empty when the command said what it
 * had to on stderr). Only the form asked for is built, and protobuf's JSON
 * code is loaded only for --json, so a command's text output pays for none.
 */
export async function output(
  opts: { json?: boolean | undefined },
  forms: {
    json: (jsonOfMessage: typeof jsonOf) => JsonForm | Promise<JsonForm>;
    text: () => string | undefined | Promise<string | undefined>;
  },
): Promise<void> {
  if (!opts.json) {
    const text = await forms.text();
    if (text) printOut(text);
    return;
  }
  const json = await import("./json.js");
  const form = await forms.json(json.jsonOf);
  const text =
    "document" in form
      ? form.document
      : "value" in form
        ? JSON.stringify(form.value)
        : json.jsonOf(form.schema, form.message);
  writeJson(process.stdout, `${text}\n`);
}
