import { ErrorCode, type McpError } from "@modelcontextprotocol/sdk/types.js";
import { BLOB_READERS } from "../result-cap.js";
import type { ToolText } from "../tool-table.js";
import { cleanText } from "./clean-text.js";

type ContentItem = { type: string; [k: string]: unknown };

/**
 * An MCP tool result as text for the model. `isError` is advisory: servers
 * have answered failures with isError false and an error text, so the content
 * goes back verbatim either way and is_error only carries the flag through.
 */
/** Stores a text as a blob and returns its sha256 (the broker's blob store). */
export type StoreBlob = (text: string) => string;

/** A media type as the server gave it when it is one, else the generic one: it goes into a data: URL and the model's text. */
const MEDIA_TYPE = /^[\w.+-]{1,64}\/[\w.+-]{1,128}$/;

/**
 * A store that remembers whether it stored anything: a result pointing at a
 * blob names read_blob, which the session may then call without find_tool.
 */
export function noticingStore(store: StoreBlob | undefined): { store?: StoreBlob; discloses(): readonly string[] } {
  let stored = false;
  return {
    ...(store
      ? {
          store: (t: string) => {
            stored = true;
            return store(t);
          },
        }
      : {}),
    discloses: () => (stored ? BLOB_READERS : []),
  };
}

/**
 * Binary content (an image, audio, a blob resource) as one line of text the
 * model and the operator can reach: stored whole as a `data:` URL blob, with
 * the pointer in the result. Without a store it is only described.
 */
export function binaryToText(kind: string, mime: unknown, data: unknown, store?: StoreBlob, uri?: string): string {
  const type = typeof mime === "string" && MEDIA_TYPE.test(mime) ? mime : "application/octet-stream";
  const b64 = typeof data === "string" ? data : "";
  const size = Math.floor((b64.replace(/=+$/, "").length * 3) / 4);
  const what = `${kind}${uri ? ` ${cleanText(uri, 2048)}` : ""}: ${type}, ${size} bytes`;
  if (!store || !b64) return `[${what}, not shown]`;
  const ref = `blob:sha256:${store(`data:${type};base64,${b64}`)}`;
  return `[${what}, stored as ${ref} (one line, a data: URL); read it with call_tool({"name": "read_blob", "arguments": {"blob": "${ref}"}})]`;
}

export function resultToText(
  res: { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown },
  blobStore?: StoreBlob,
): ToolText {
  const noticed = noticingStore(blobStore);
  const store = noticed.store;
  const parts: string[] = [];
  const content = Array.isArray(res.content) ? (res.content as ContentItem[]) : [];
  for (const c of content) {
    if (c.type === "text" && typeof c.text === "string") parts.push(c.text);
    else if (c.type === "image" || c.type === "audio") parts.push(binaryToText(c.type, c.mimeType, c.data, store));
    else if (c.type === "resource" && c.resource && typeof c.resource === "object") {
      const r = c.resource as { uri?: string; text?: string; blob?: string; mimeType?: string };
      parts.push(typeof r.text === "string" ? r.text : binaryToText("resource", r.mimeType, r.blob, store, r.uri));
    } else if (c.type === "resource_link")
      parts.push(`[resource link: ${String(c.uri ?? "")}; read it with read_resource]`);
    else parts.push(JSON.stringify(c));
  }
  if (parts.length === 0 && res.structuredContent !== undefined) parts.push(JSON.stringify(res.structuredContent));
  if (parts.length === 0 && res.toolResult !== undefined) parts.push(JSON.stringify(res.toolResult));
  const discloses = noticed.discloses();
  return {
    text: parts.length ? parts.join("\n") : "(the tool returned no content)",
    isError: res.isError === true,
    ...(discloses.length ? { discloses } : {}),
  };
}

const CODE_NAMES: Record<number, string> = {
  [ErrorCode.MethodNotFound]: "method or tool not found",
  [ErrorCode.InvalidParams]: "invalid arguments",
  [ErrorCode.InvalidRequest]: "invalid request",
  [ErrorCode.InternalError]: "the server failed internally",
  [ErrorCode.ParseError]: "parse error",
};

/** A JSON-RPC error from a live server, as a tool error the model can act on. */
export function rpcErrorToText(server: string, tool: string, err: McpError): ToolText {
  const what = CODE_NAMES[err.code] ?? `error ${err.code}`;
  const hint =
    err.code === ErrorCode.MethodNotFound
      ? " The server no longer offers this tool; call find_tool to see what is available."
      : err.code === ErrorCode.InvalidParams
        ? " Check the arguments against the schema find_tool returned."
        : "";
  return {
    text: `MCP server "${server}" refused ${tool} with JSON-RPC error ${err.code} (${what}): ${err.message.replace(/^(MCP error -?\d+: )+/, "")}.${hint}`,
    isError: true,
  };
}
