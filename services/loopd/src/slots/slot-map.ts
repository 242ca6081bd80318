import { LLAMA_CONTRACT, slotMapFor, type SlotMap, type SlotRole } from "@boxmaker/common";

/** The roles' slots as loopd's config gives them: a role left out follows the server. */
export type GivenSlots = Partial<Record<SlotRole, number>>;

const ROLES: readonly SlotRole[] = ["main", "subagent", "scheduled"];

const range = (n: number) => (n === 1 ? "slot 0" : `slots 0..${n - 1}`);

/**
 * loopd's slot map held against the server's slot count (inferproxy's
 * self-test reads `total_slots` from /props). A role the config names keeps
 * its slot, and is refused in one line when the server lacks it; a role it
 * leaves out takes the slot stack-defaults' table gives for the count, so a
 * stack on a one- or two-slot server works with no map at all. Until the
 * count is known the production layout's is assumed. Pure: the count comes
 * from server-slots.ts.
 */
export class SlotMapCheck {
  /** The server's slot count; 0 until a self-test has read it. */
  private total = 0;

  constructor(private readonly given: GivenSlots) {}

  /** Takes the count a self-test read; whether it differs from the one held. */
  observe(totalSlots: number): boolean {
    if (totalSlots < 1 || totalSlots === this.total) return false;
    this.total = totalSlots;
    return true;
  }

  get serverSlots(): number {
    return this.total;
  }

  get map(): SlotMap {
    const derived = slotMapFor(this.total || LLAMA_CONTRACT.slots);
    return {
      main: this.given.main ?? derived.main,
      subagent: this.given.subagent ?? derived.subagent,
      scheduled: this.given.scheduled ?? derived.scheduled,
    };
  }

  /** The one line that refuses the configured map on this server; "" when it fits or the count is not known. */
  refusal(): string {
    for (const role of ROLES) {
      const line = this.roleRefusal(role);
      if (line) return line;
    }
    return "";
  }

  /**
   * Why a turn of a `role` session pinned to `slot` cannot run on this server;
   * "" when it can. A session keeps the slot it was created on: one created
   * when the server had more slots names a slot that is gone.
   */
  turnRefusal(role: SlotRole, slot: number): string {
    const mapLine = this.roleRefusal(role);
    if (mapLine) return mapLine;
    if (this.total === 0 || slot < this.total) return "";
    return `this session runs on slot ${slot}, but llama-server now has ${this.total} slot(s) (${range(this.total)}): start a new session`;
  }

  private roleRefusal(role: SlotRole): string {
    const slot = this.given[role];
    if (slot === undefined || this.total === 0 || slot < this.total) return "";
    return (
      `loopd's slots.${role} is slot ${slot}, but llama-server has ${this.total} slot(s) (${range(this.total)}): ` +
      `set slots.${role} below ${this.total}, or leave it out to follow the server`
    );
  }
}
