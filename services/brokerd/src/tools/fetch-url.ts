import type { IncomingMessage } from "node:http";
import type { LookupFunction } from "node:net";
import { type Address, canonicalDestination, destinationAddress, type Resolver } from "../policy/destination.js";
import { canonicalHost } from "../policy/hosts.js";
import { decide } from "../policy/rules.js";
import { Refused, ToolError } from "../errors.js";
import type { PlannedTool, ToolContext } from "../tool-table.js";
import { messageOf, Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";

// Not `import ... from "node:http"`: an ES import of node:http reads every export, and its
// lazy WebSocket and event getters load Node's bundled undici (~3 MB of an idle brokerd's
// heap) whether or not anything is ever fetched. The CommonJS exports are read on demand.
const http = process.getBuiltinModule("node:http");
const https = process.getBuiltinModule("node:https");

export interface FetchOptions {
  resolve?: Resolver;
}

function parseUrl(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ToolError(`"${raw}" is not a URL; give an absolute http:// or https:// URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new ToolError(`only http:// and https:// URLs can be fetched, not ${u.protocol}`);
  if (u.username || u.password) throw new ToolError("URLs with credentials (user:password@) are not fetched");
  return u;
}

/** The host as policy rules and allow_private_hosts see it: one spelling for every way of writing it. */
const hostOf = (u: URL) => canonicalHost(u.hostname);

/** fetch_url's side of the destination policy (policy/destination.ts, shared with the network proxy). */
const scopeOf = (allowPrivateHosts: readonly string[]) => ({
  allowPrivateHosts,
  who: "fetch_url reaches",
  allowKey: "brokerd's fetch_url.allow_private_hosts",
});

async function readLimited(res: IncomingMessage, max: number): Promise<{ body: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of res as AsyncIterable<Buffer>) {
    const room = max - n;
    if (c.length >= room) {
      chunks.push(c.subarray(0, room));
      res.destroy();
      return { body: Buffer.concat(chunks), truncated: true };
    }
    chunks.push(c);
    n += c.length;
  }
  return { body: Buffer.concat(chunks), truncated: false };
}

function get(u: URL, addr: Address, signal: AbortSignal): Promise<IncomingMessage> {
  // Pinned to the address the checks approved: a second resolution could answer differently (DNS rebinding).
  const lookup: LookupFunction = (_host, opts, cb) => {
    if (opts.all) cb(null, [addr]);
    else cb(null, addr.address, addr.family);
  };
  const req = (u.protocol === "https:" ? https.request : http.request)(u, {
    method: "GET",
    lookup,
    signal,
    headers: {
      "user-agent": "boxmaker-fetch_url/1",
      accept: "text/html,text/plain,application/json,*/*;q=0.5",
      "accept-encoding": "identity",
    },
  });
  return new Promise((resolve, reject) => {
    req.once("response", resolve);
    req.once("error", reject);
    req.end();
  });
}

export function makeFetchUrl(opts: FetchOptions = {}): PlannedTool {
  const resolve = opts.resolve;
  return defineTool({
    name: "fetch_url",
    description:
      "Fetch a public web page or file over http(s) and return it as readable text (HTML is converted). Subject to the operator's host policy; private and local addresses are refused.",
    parameters: Type.Object(
      { url: Type.String({ description: "an absolute http:// or https:// URL" }) },
      { additionalProperties: false },
    ),
    risk: "network",
    core: false,
    plan(args, ctx) {
      const first = parseUrl(args.url);
      return {
        paths: [],
        hosts: [hostOf(first)],
        preview: `fetch_url ${first.href}`,
        checks: { url: first.href },
        execute: () => fetchText(first, ctx, resolve),
      };
    },
  });
}

async function fetchText(first: URL, ctx: ToolContext, resolve: Resolver | undefined) {
  const cfg = ctx.config.fetch_url;
  // A timer cleared when the fetch ends: AbortSignal.timeout would fire anyway, long after.
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(), cfg.timeout_ms);
  const signal = AbortSignal.any([ctx.signal, limit.signal]);
  let u = first;
  const hops: string[] = [];
  try {
    for (let hop = 0; ; hop++) {
      const host = hostOf(u);
      if (hop > 0) {
        // A redirect to another host is a new fetch: the policy must allow it outright (there is nobody to ask mid-call).
        const d = decide(ctx.config.policy.rules, ctx.config.policy.defaults, {
          tool: "fetch_url",
          risk: "network",
          paths: [],
          hosts: [host],
        });
        if (d.effect !== "allow" && host !== hostOf(first)) {
          throw new ToolError(
            `refused: ${hops.at(-1)} redirects to ${u.href}, and the policy does not allow ${host} (${d.rule}); fetch that URL directly if it is needed`,
          );
        }
      }
      const addr = await destinationAddress(canonicalDestination(u.hostname), scopeOf(cfg.allow_private_hosts), {
        ...(resolve ? { resolve } : {}),
        signal,
        // The fetch's own limit (signal) started first and ends the lookup; this bound is the policy's.
        timeoutMs: cfg.timeout_ms,
      });
      const res = await get(u, addr, signal);
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        if (hop >= cfg.max_redirects)
          throw new ToolError(`refused: more than ${cfg.max_redirects} redirects (last to ${res.headers.location})`);
        hops.push(u.href);
        u = parseUrl(new URL(res.headers.location, u).href);
        continue;
      }
      const { body, truncated } = await readLimited(res, cfg.max_bytes);
      const type = String(res.headers["content-type"] ?? "");
      const raw = body.toString("utf8");
      const looksHtml = /html/i.test(type) || (!type && /^\s*<(!doctype html|html)/i.test(raw));
      if (
        !looksHtml &&
        !/^(text\/|application\/(json|xml|javascript|x-yaml|yaml))/i.test(type) &&
        type &&
        raw.includes("\u0000")
      ) {
        throw new ToolError(`${u.href} is ${type} (binary), not text; nothing to show`);
      }
      // htmlparser2 is loaded with the first HTML page, not by every brokerd.
      const text = looksHtml ? (await import("./html-text.js")).htmlToText(raw) : raw;
      const head = [
        `${u.href} — HTTP ${status}${type ? `, ${type.split(";")[0]}` : ""}, ${body.length} bytes${truncated ? ` (cut at the ${cfg.max_bytes}-byte limit)` : ""}` +
          (hops.length ? `; redirected from ${hops[0]}` : ""),
        "",
      ];
      return { text: `${head.join("\n")}${text}`, isError: status >= 400 };
    }
  } catch (err) {
    if (err instanceof ToolError || err instanceof Refused) throw err;
    if (ctx.signal.aborted) throw err;
    if (signal.aborted) throw new ToolError(`fetching ${u.href} took longer than ${cfg.timeout_ms} ms; gave up`);
    throw new ToolError(`fetching ${u.href} failed: ${messageOf(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

export const fetchUrl = makeFetchUrl();
