import { boundBytes } from "../log-rotation-plan.js";
import type { LogFileSize } from "../log-files.js";
import type { StackLogs } from "../stack-record.js";
import { formatBytes } from "./disk.js";
import type { Style } from "./style.js";

/** What `status` knows of the daemons' logs: the files `up` rotates, or (no `up` record of this stack) the journal. */
export type LogsReport = { kind: "up"; logs: StackLogs; sizes: LogFileSize[] } | { kind: "journal" };

/**
 * The rows of status's logs section: each log's size against the limit it is
 * rotated at, its older files, and the flags that set the limit, so the
 * operator reads and sets them in one place.
 */
export function logRows(r: LogsReport, s: Style): string[][] {
  if (r.kind === "journal")
    return [
      [
        "journal",
        `no boxmaker up record of this stack here: under systemd the daemons log to the journal, which journald's own limits bound ${s.dim("(journalctl --disk-usage; SystemMaxUse= in journald.conf)")}`,
      ],
    ];
  const { logs } = r;
  const limit = formatBytes(logs.maxBytes);
  const rows = r.sizes.map((f) => [
    f.name,
    `${formatBytes(f.bytes)} of ${limit}${f.older ? `; ${f.older} older file${f.older === 1 ? "" : "s"}, ${formatBytes(f.olderBytes)}` : ""}`,
  ]);
  const kept =
    logs.keep === 0
      ? "emptied, nothing kept"
      : `moved to .1${logs.keep > 1 ? ` … .${logs.keep}` : ""}${logs.compress && logs.keep > 1 ? " (.2 on gzip-compressed)" : ""}, the oldest deleted`;
  rows.push([
    "rotation",
    `past ${limit} a log is ${kept}: at most ${formatBytes(boundBytes(logs))} a process ${s.dim("(boxmaker up --log-max-size, --log-keep, --no-log-compress)")}`,
  ]);
  rows.push(["dir", logs.dir]);
  return rows;
}
