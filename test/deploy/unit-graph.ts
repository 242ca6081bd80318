// A model of how systemd orders the jobs of one transaction over the units in
// deploy/systemd, enough to answer "which jobs does this job wait for": the
// question behind "does `systemctl stop boxmaker.target` return only once the
// stack is down". The rules, from systemd's job.c and target.c (v252):
//   - an ordering (A Before= B, or B After= A) makes B's start wait for A's,
//     and A's stop wait for B's: stop jobs run in the reverse of start order;
//   - a target is also After= every unit it Wants=/Requires=, unless that
//     unit is already ordered after the target (systemd skips the default
//     dependency rather than create a loop);
//   - stopping a unit also stops the units that are PartOf=, BindsTo= or
//     Requires= it; starting one also starts what it Wants=/Requires=/BindsTo=.
import { readdirSync } from "node:fs";
import { readUnit, unitDir, type Unit } from "./unit-file.js";

export interface UnitGraph {
  names: string[];
  /** X -> the units X is ordered before (X starts first, stops last). */
  before: Map<string, Set<string>>;
  /** What a start of X pulls in. */
  pulls: Map<string, Set<string>>;
  /** X -> the units that stop when X stops. */
  stopsWith: Map<string, Set<string>>;
}

const words = (u: Unit, section: string, key: string): string[] =>
  (u.get(section)?.get(key) ?? []).flatMap((v) => v.split(/\s+/)).filter(Boolean);

const addTo = (m: Map<string, Set<string>>, k: string, v: string) => {
  const s = m.get(k) ?? new Set<string>();
  s.add(v);
  m.set(k, s);
};

/** The graph of the plain units, optionally with some units' texts changed (to show the model tells broken from fixed). */
export function unitGraph(edit: (name: string, unit: Unit) => Unit = (_, u) => u): UnitGraph {
  const names = readdirSync(unitDir).filter((n) => /\.(service|target)$/.test(n));
  const units = new Map(names.map((n) => [n, edit(n, readUnit(n))]));
  const before = new Map<string, Set<string>>();
  const pulls = new Map<string, Set<string>>();
  const stopsWith = new Map<string, Set<string>>();
  for (const [n, u] of units) {
    for (const a of words(u, "Unit", "After")) addTo(before, a, n);
    for (const b of words(u, "Unit", "Before")) addTo(before, n, b);
    for (const key of ["Wants", "Requires", "BindsTo"]) for (const w of words(u, "Unit", key)) addTo(pulls, n, w);
    for (const key of ["PartOf", "BindsTo", "Requires"]) for (const p of words(u, "Unit", key)) addTo(stopsWith, p, n);
  }
  // Targets' default dependencies, after the explicit ones are known.
  for (const [n, u] of units) {
    if (!n.endsWith(".target") || words(u, "Unit", "DefaultDependencies").includes("no")) continue;
    for (const w of [...words(u, "Unit", "Wants"), ...words(u, "Unit", "Requires")]) {
      if (!before.get(n)?.has(w)) addTo(before, w, n);
    }
  }
  return { names, before, pulls, stopsWith };
}

const closure = (start: string, next: (n: string) => Iterable<string>): Set<string> => {
  const seen = new Set<string>([start]);
  const todo = [start];
  while (todo.length) {
    for (const m of next(todo.pop()!)) {
      if (seen.has(m)) continue;
      seen.add(m);
      todo.push(m);
    }
  }
  return seen;
};

export interface Transaction {
  jobs: Set<string>;
  /** job -> the jobs it waits for, directly. */
  waitsFor: Map<string, Set<string>>;
}

/** The jobs `systemctl start|stop unit` enqueues, and which waits for which. */
export function transaction(g: UnitGraph, kind: "start" | "stop", unit: string): Transaction {
  const jobs = closure(unit, (n) => (kind === "start" ? g.pulls : g.stopsWith).get(n) ?? []);
  const waitsFor = new Map<string, Set<string>>();
  for (const a of jobs) {
    for (const b of g.before.get(a) ?? []) {
      if (!jobs.has(b)) continue;
      // a Before b: b's start waits for a's; a's stop waits for b's.
      if (kind === "start") addTo(waitsFor, b, a);
      else addTo(waitsFor, a, b);
    }
  }
  return { jobs, waitsFor };
}

/** Every job `job` waits for, directly or through others. */
export function waitsForAll(t: Transaction, job: string): Set<string> {
  const all = closure(job, (n) => t.waitsFor.get(n) ?? []);
  all.delete(job);
  return all;
}

/** An ordering cycle among the transaction's jobs, as the list of jobs on it, or undefined. */
export function cycle(t: Transaction): string[] | undefined {
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (n: string): string[] | undefined => {
    if (state.get(n) === "done") return undefined;
    if (state.get(n) === "open") return path.slice(path.indexOf(n));
    state.set(n, "open");
    path.push(n);
    for (const m of t.waitsFor.get(n) ?? []) {
      const c = visit(m);
      if (c) return c;
    }
    path.pop();
    state.set(n, "done");
    return undefined;
  };
  for (const j of t.jobs) {
    const c = visit(j);
    if (c) return c;
  }
  return undefined;
}
