import { ConfigError, loadConfig, messageOf } from "@boxmaker/common";
import { loopdConfigSchema, type LoopdConfig } from "./config.js";
import { validateCron } from "./schedules.js";

/**
 * loopd's config as it starts on it: the schema, then what a schema cannot
 * say — each schedule's cron expression parses, and no two schedules share an
 * id. Checked before anything waits for a peer, so a bad schedule is refused
 * at start (and by `--check-config` at build) rather than when it would fire.
 */
export function loadLoopdConfig(path: string | undefined): LoopdConfig {
  const config = loadConfig(loopdConfigSchema, path);
  const source = path ?? "defaults";
  const ids = new Map<string, number>();
  config.schedules.forEach((s, i) => {
    const first = ids.get(s.id);
    if (first !== undefined) {
      throw new ConfigError(`${source}: key "schedules.${i}.id" is "${s.id}", the id of schedules.${first} too`);
    }
    ids.set(s.id, i);
    try {
      validateCron(s.cron);
    } catch (err) {
      throw new ConfigError(`${source}: key "schedules.${i}.cron": ${messageOf(err)}`, { cause: err });
    }
  });
  return config;
}
