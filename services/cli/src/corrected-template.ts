import type { TemplateProbe } from "@boxmaker/common/client";
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "./errors.js";

/**
 * `boxmaker doctor --write-template FILE` (exit 1 when there is nothing to write, 2 when FILE exists): the corrected template inferproxy's
 * probe judged, written whole (its sha256 is what the contract will record)
 * and only ever complete: a temporary file beside FILE, then a link (no
 * --force: fails if FILE appeared meanwhile) or a rename (--force).
 */
export function writeCorrectedTemplate(probe: TemplateProbe | undefined, file: string, force: boolean): string {
  const c = probe?.correction;
  if (!probe?.ran) throw new Error("the template probe has not run yet: nothing to write (is llama-server up?)");
  if (c?.state !== "available") {
    throw new Error(
      c?.state === "unavailable"
        ? `no corrected template: ${c.reason}`
        : "the served template needs no correction (the probe found it prefix-stable)",
    );
  }
  const path = resolve(file);
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(tmp, "wx", 0o644);
  try {
    writeSync(fd, c.template);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    if (force) renameSync(tmp, path);
    else linkSync(tmp, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new UsageError(`${path} exists: pass --force to replace it`);
    throw err;
  } finally {
    if (!force) unlinkSync(tmp);
  }
  return [
    `wrote ${path} (sha256 ${c.templateSha256})`,
    ...c.rules.map((r) => `  - ${r}`),
    `  the probe on it: prefix-stable, Σprompt_n/new ${c.predictedReuseRatio.toFixed(2)}× (the served template: ${probe.predictedReuseRatio.toFixed(2)}×)`,
    "next:",
    `  1. start llama-server with --chat-template-file ${path} (NixOS: services.boxmaker.llamaServer.chatTemplateFile = "${path}";)`,
    "  2. boxmaker contract accept   (the contract records the new template's sha256), then restart inferproxy",
    "",
  ].join("\n");
}
