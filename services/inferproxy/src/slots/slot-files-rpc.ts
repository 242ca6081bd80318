import type { SlotFilesRequest, SlotFilesResponseSchema } from "@boxmaker/common";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SlotFiles, SlotFilesListing } from "./slot-files.js";

type SlotFilesInit = MessageInitShape<typeof SlotFilesResponseSchema>;

/** SlotFiles: erase what was named (if anything), then list what is left. */
export async function slotFilesReply(files: SlotFiles, req: SlotFilesRequest): Promise<SlotFilesInit> {
  if (req.erase.length === 0) return wire(await files.list(), 0);
  const r = await files.erase(req.erase);
  return wire(r, r.erased);
}

function wire(l: SlotFilesListing, erased: number): SlotFilesInit {
  return {
    managed: l.managed,
    dir: l.dir,
    unmanagedReason: l.unmanagedReason,
    files: l.files.map((f) => ({ filename: f.filename, bytes: BigInt(f.bytes), usedUnixMs: BigInt(f.usedMs) })),
    totalBytes: BigInt(l.totalBytes),
    capBytes: BigInt(l.capBytes),
    erased,
  };
}
