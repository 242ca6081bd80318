import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";

/**
 * Which extended tools each session has been shown by find_tool (or handed by
 * a blob pointer). call_tool accepts only those: the model must have seen the
 * schema it is filling in. Kept in a JSON-lines file so a brokerd restart in
 * the middle of a session does not refuse a call the model was entitled to.
 */
export class Disclosure {
  private readonly bySession = new Map<string, Set<string>>();

  /** Without a path, disclosure lives in memory only (tests, benchmarks). */
  constructor(private readonly path?: string) {
    if (!path) return;
    mkdirSync(dirname(path), { recursive: true });
    if (!existsSync(path)) return;
    for (const line of readFileSync(path, "utf8").split("\n")) {
      if (!line) continue;
      try {
        const { session, names } = JSON.parse(line) as { session: string; names: string[] };
        this.remember(session, names);
      } catch {
        // A torn last line after a crash: that disclosure is simply asked for again.
      }
    }
  }

  disclose(session: string, names: Iterable<string>): void {
    const fresh = [...names].filter((n) => !this.has(session, n));
    if (fresh.length === 0) return;
    this.remember(session, fresh);
    if (this.path) appendFileSync(this.path, `${JSON.stringify({ session, names: fresh })}\n`);
  }

  has(session: string, name: string): boolean {
    return this.bySession.get(session)?.has(name) ?? false;
  }

  forget(session: string): void {
    this.bySession.delete(session);
  }

  private remember(session: string, names: Iterable<string>): void {
    let s = this.bySession.get(session);
    if (!s) {
      s = new Set();
      this.bySession.set(session, s);
    }
    for (const n of names) s.add(n);
  }
}
