import type { InferStatusResponseSchema } from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { ServerState } from "./server-check/health-monitor.js";
import type { Props, SelfTestResult } from "./server-check/self-test.js";
import type { TemplateProbeResult } from "./template-probe/template-probe.js";

export type StatusInit = MessageInitShape<typeof InferStatusResponseSchema>;

/** Who holds a slot's lock ("" for nobody) and how many requests wait for it. */
interface SlotHolding {
  slot: number;
  heldBy: string;
  waiting: number;
}

/** What Status reports, gathered by the service; plain data so the report is a pure function of it. */
export interface StatusFacts {
  state: ServerState;
  /** Whether the last self-test is about the server that answers now (HealthMonitor.verified). */
  verified: boolean;
  selfTest: SelfTestResult;
  props: Props | undefined;
  upstream: string;
  /** The contract's slot count, for when the server has not said its own. */
  totalSlots: number;
  /** The body of `GET /slots`, when the server answered it. */
  slotsBody: unknown;
  templateProbe?: TemplateProbeResult;
  throughput: { generationTokensPerS: number; prefillTokensPerS: number; requests: number };
  holding(slot: number): Pick<SlotHolding, "heldBy" | "waiting">;
}

interface ServerSlot {
  id?: number;
  n_ctx?: number;
  is_processing?: boolean;
}

export function statusReport(f: StatusFacts): StatusInit {
  const props = f.props;
  const n = props?.total_slots ?? f.totalSlots;
  const serverSlots = new Map<number, ServerSlot>();
  if (Array.isArray(f.slotsBody)) {
    for (const s of f.slotsBody as ServerSlot[]) {
      if (typeof s.id === "number") serverSlots.set(s.id, s);
    }
  }
  const ids = new Set<number>([...Array(n).keys(), ...serverSlots.keys()]);
  // A self-test is about the server that answered it: while the server is down or loading,
  // nothing has been checked, whatever the last result was.
  const last = f.selfTest;
  const st = f.verified ? last : { ...last, ran: false, passed: false, mismatches: [], acceptCommand: "" };
  return {
    serverState: f.state,
    buildInfo: props?.build_info ?? "",
    model: props?.model_alias ?? props?.model_path ?? "",
    upstream: f.upstream,
    throughput: f.throughput,
    selfTest: { ...st, checkedAtUnixMs: BigInt(st.checkedAtUnixMs) },
    ...(f.templateProbe
      ? { templateProbe: { ...f.templateProbe, probedAtUnixMs: BigInt(f.templateProbe.probedAtUnixMs) } }
      : {}),
    slots: [...ids]
      .sort((a, b) => a - b)
      .map((id) => {
        const s = serverSlots.get(id);
        const h = f.holding(id);
        return {
          id,
          nCtx: s?.n_ctx ?? props?.default_generation_settings?.n_ctx ?? 0,
          isProcessing: s?.is_processing ?? false,
          heldBy: h.heldBy,
          waiting: h.waiting,
        };
      }),
  };
}
