import { availableParallelism } from "node:os";
import { Slots } from "./slots.js";

/**
 * The regex searches brokerd runs off its thread — grep_blob over a blob,
 * search_files over the workspace — share one bound. Each is a worker thread
 * reading a whole blob or tree: thirty grep_blob at once on two cores once
 * stalled brokerd for 19 s at 2.3 GB, and thirty search_files walked a big
 * tree back to back on the event loop. At most two run at a time, and never
 * so many that the event loop is left without a core (one on a two-core
 * machine: two busy workers there still delayed the loop by 450 ms); eight
 * more wait their turn without having read anything, and the rest are
 * refused at once.
 */
export const searchSlots = new Slots(Math.max(1, Math.min(2, availableParallelism() - 1)), 8);
