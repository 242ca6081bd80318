import { lookup as dnsLookup } from "node:dns/promises";
import type { IncomingMessage } from "node:http";
import { isIP, type LookupFunction } from "node:net";
import { canonicalHost } from "../policy/hosts.js";
import { isPrivateAddress } from "../policy/public-address.js";
import { decide } from "../policy/rules.js";
import { ToolError } from "../errors.js";
import type { PlannedTool, ToolContext } from "../tool-table.js";
import { messageOf, Type } from "@boxmaker/common";
import { defineTool } from "./define-tool.js";

type Resolver = (host: string, signal: AbortSignal) => Promise<{ address: string; family: number }[]>;

// Not `import ... from "node:http"`: an ES import of node:http reads every export, and its
// lazy WebSocket and event getters load Node's bundled undici (~3 MB of an idle brokerd's
// heap) whether or not anything is ever fetched. The CommonJS exports are read on demand.
const http = process.getBuiltinModule("node:http");
const https = process.getBuiltinModule("node:https");

// The address judgement is shared with the network proxy; fetch_url's tests import it from here.
export { isPrivateAddress };

const systemResolver: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

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

/**
 * `lookup` runs getaddrinfo on libuv's thread pool, which cannot be cancelled: the answer is
 * abandoned at the fetch's time limit (or the call's cancel) instead of waited for, so a slow
 * or silent DNS server cannot hold the call past timeout_ms.
 */
function bounded<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * The address to connect to: every address the name resolves to must be
 * public, unless the host is explicitly allowed; the one checked is the one
 * connected to (no second lookup a rebinding DNS could answer differently).
 */
async function checkedAddress(
  host: string,
  allowPrivate: readonly string[],
  resolve: Resolver,
  signal: AbortSignal,
): Promise<{ address: string; family: number }> {
  const allowed = allowPrivate.map(canonicalHost).includes(host);
  const addrs = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await bounded(resolve(host, signal), signal).catch((err: Error) => {
        if (signal.aborted) throw err; // the time limit or a cancel, reported as such by the caller
        throw new ToolError(`cannot resolve ${host}: ${err.message}`);
      });
  if (!addrs.length) throw new ToolError(`cannot resolve ${host}: no addresses`);
  const bad = addrs.find((a) => isPrivateAddress(a.address));
  if (bad && !allowed) {
    throw new ToolError(
      `refused: ${host} resolves to ${bad.address}, a private, loopback or link-local address; fetch_url only reaches public addresses ` +
        `(an operator can allow the host in brokerd's fetch_url.allow_private_hosts)`,
    );
  }
  return addrs[0]!;
}

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

function get(u: URL, addr: { address: string; family: number }, signal: AbortSignal): Promise<IncomingMessage> {
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
  const resolve = opts.resolve ?? systemResolver;
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

async function fetchText(first: URL, ctx: ToolContext, resolve: Resolver) {
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
      const addr = await checkedAddress(host, cfg.allow_private_hosts, resolve, signal);
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
    if (err instanceof ToolError) throw err;
    if (ctx.signal.aborted) throw err;
    if (signal.aborted) throw new ToolError(`fetching ${u.href} took longer than ${cfg.timeout_ms} ms; gave up`);
    throw new ToolError(`fetching ${u.href} failed: ${messageOf(err)}`, { cause: err });
  } finally {
    clearTimeout(timer);
  }
}

export const fetchUrl = makeFetchUrl();
