/**
 * Which extended tools each session has been shown by find_tool (or handed by
 * a blob pointer). call_tool accepts only those: the model must have seen the
 * schema it is filling in. In memory: after a restart the model is told to
 * call find_tool again, which costs one round trip and no correctness.
 */
export class Disclosure {
  private readonly bySession = new Map<string, Set<string>>();

  disclose(session: string, names: Iterable<string>): void {
    let s = this.bySession.get(session);
    if (!s) this.bySession.set(session, (s = new Set()));
    for (const n of names) s.add(n);
  }

  has(session: string, name: string): boolean {
    return this.bySession.get(session)?.has(name) ?? false;
  }

  forget(session: string): void {
    this.bySession.delete(session);
  }
}
