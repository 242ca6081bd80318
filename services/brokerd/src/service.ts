import type { BrokerService, ImplOf } from "@boxmaker/common";
import type { Broker } from "./broker.js";
import { hookRpcs } from "./hooks/wire.js";
import type { ProposalRecord } from "./staging.js";
import type { ChangeRecord } from "./checkpoints.js";
import type { ToolDef } from "./tool-table.js";
import type { DeskEvent } from "./mcp/elicitation-desk.js";
import { finishLogin, logout, startLogin } from "./mcp/server-logins.js";
import { stableStringify } from "./tools-array.js";

const summary = (t: ToolDef, score = 0) => ({
  name: t.name,
  description: t.description,
  parametersJson: stableStringify(t.parameters),
  risk: t.risk,
  core: t.core,
  score,
});

const fileChange = (c: ChangeRecord, diff: string) => ({
  id: c.id,
  sessionId: c.session_id,
  callId: c.call_id,
  tool: c.tool,
  proposalId: c.proposal_id,
  path: c.rel,
  absPath: c.abs,
  appliedUnixMs: BigInt(c.applied_unix_ms),
  undoneUnixMs: BigInt(c.undone_unix_ms ?? 0),
  diff,
  created: c.before_sha256 === "",
});

const proposal = (p: ProposalRecord) => ({
  id: p.id,
  sessionId: p.session_id,
  callId: p.call_id,
  tool: p.tool,
  argumentsJson: p.arguments_json,
  preview: p.preview,
  state: p.state,
  rule: p.rule,
  createdUnixMs: BigInt(p.created_unix_ms),
  result: p.result,
});

const askedOnWire = (q: Extract<DeskEvent, { case: "asked" }>["value"]) => ({
  id: q.id,
  sessionId: q.sessionId,
  callId: q.callId,
  server: q.server,
  tool: q.tool,
  mode: q.mode,
  message: q.message,
  requestedSchemaJson: q.requestedSchema === undefined ? "" : JSON.stringify(q.requestedSchema),
  url: q.url ?? "",
  beforeRetry: q.beforeRetry ?? false,
  expiresAtUnixMs: BigInt(q.expiresAtUnixMs),
});

/** The wire mapping only; every decision lives in Broker. */
export function brokerService(broker: Broker): ImplOf<typeof BrokerService> {
  return {
    getTools: () => ({
      toolsJson: broker.toolsArray.json,
      toolsSha256: broker.toolsArray.sha256,
      coreToolNames: broker.toolsArray.names,
    }),
    callTool: (req, ctx) =>
      broker.call(
        {
          sessionId: req.sessionId,
          callId: req.callId,
          name: req.name,
          argumentsJson: req.argumentsJson,
          mode: req.mode,
        },
        ctx.signal,
      ),
    searchTools: async (req, ctx) => ({
      core: broker.table.core().map((t) => summary(t)),
      matches: broker.search(req.query, req.limit || 10).map((r) => summary(r.tool, r.score)),
      prompts: req.includePrompts ? await broker.mcp.prompts(ctx.signal) : [],
    }),
    listProposals: (req) => ({ proposals: broker.listProposals(req.sessionId, req.includeDecided).map(proposal) }),
    decideProposal: async (req) => ({
      proposal: proposal(await broker.decideProposal(req.id, req.approve, req.reason)),
    }),
    withdrawProposals: (req) => ({ proposals: broker.withdrawProposals(req.ids, req.reason).map(proposal) }),
    brokerStatus: () => ({ ...broker.status(), workspaceRoots: broker.config.workspace_roots }),
    async *watchElicitations(req, ctx) {
      for await (const e of broker.mcp.questions.watch(req.sessionId, req.callId, ctx.signal)) {
        yield e.case === "asked"
          ? { event: { case: "asked", value: askedOnWire(e.value) } }
          : { event: { case: "ended", value: e.value } };
      }
    },
    answerElicitation: (req) => {
      broker.mcp.questions.answer(req.sessionId, req.id, req.action, req.contentJson);
      return {};
    },
    startMcpLogin: async (req) => {
      const r = await startLogin(broker.mcp, req.server);
      return { authorizationUrl: r.url ?? "", redirectUri: r.redirectUri, status: r.url ? "" : r.status };
    },
    finishMcpLogin: async (req) => ({ status: await finishLogin(broker.mcp, req.server, req.callback) }),
    mcpLogout: (req) => ({ removed: logout(broker.mcp, req.server) }),
    ...hookRpcs(broker.hooks),
    putBlob: (req) => {
      const r = broker.putBlob(req.sessionId, req.text);
      return { sha256: r.hash, bytes: BigInt(r.bytes), existed: r.existed };
    },
    pinBlobs: (req) => broker.blobs.pin(req.owner, req.sha256),
    listChanges: (req) => ({ changes: broker.listChanges(req.sessionId).map(({ c, diff }) => fileChange(c, diff)) }),
    undoChanges: (req) => ({
      results: broker.undoChanges(req.sessionId, req.last, req.force).map((o) => ({
        change: fileChange(o.change, ""),
        result: o.result,
        message: o.message,
      })),
    }),
    blobStat: () => {
      const s = broker.blobs.stat();
      return {
        blobs: s.blobs,
        bytes: BigInt(s.bytes),
        capBytes: BigInt(s.capBytes),
        pinned: s.pinned,
        evicted: BigInt(s.evicted),
        evictedBytes: BigInt(s.evictedBytes),
      };
    },
  };
}
