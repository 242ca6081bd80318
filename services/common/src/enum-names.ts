import type { DescEnum } from "@bufbuild/protobuf";

/**
 * A proto enum's values by the names the session log, config and displays
 * use: each value's own name lower-cased (`ALLOWED` → "allowed"), read from
 * the generated descriptor, so a value added to the .proto has its name with
 * nothing else to keep in step. The zero value (UNSPECIFIED) reads as
 * `unspecifiedAs`, the name an old record or an unset field stands for.
 */
export function enumNames<N extends string>(
  desc: DescEnum,
  unspecifiedAs: N,
): { nameOf(value: number): N; valueOf(name: string): number } {
  const names = new Map<number, N>();
  const values = new Map<string, number>([[unspecifiedAs, 0]]);
  for (const v of desc.values) {
    if (v.number === 0) {
      names.set(0, unspecifiedAs);
      continue;
    }
    const name = v.localName.toLowerCase() as N;
    names.set(v.number, name);
    // A real value of the same name wins over the zero one ("main" is MAIN, not UNSPECIFIED).
    values.set(name, v.number);
  }
  return {
    nameOf: (value) => names.get(value) ?? unspecifiedAs,
    valueOf: (name) => values.get(name) ?? 0,
  };
}
