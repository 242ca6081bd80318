import pc from "picocolors";

export type Style = ReturnType<typeof pc.createColors>;

/** Colour only on a terminal and never when NO_COLOR is set (https://no-color.org). */
export function styleFor(stream: NodeJS.WriteStream, env: NodeJS.ProcessEnv = process.env): Style {
  const enabled = Boolean(stream.isTTY) && !("NO_COLOR" in env) && env.TERM !== "dumb";
  return pc.createColors(enabled || "FORCE_COLOR" in env);
}
