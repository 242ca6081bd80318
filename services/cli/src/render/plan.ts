import type { PlanItem } from "@boxmaker/common/client";
import type { Style } from "./style.js";
import { truncate } from "./text.js";

const MARK: Record<string, string> = { done: "✓", in_progress: "▸", pending: "○" };

/** The model's task list (update_plan) as a person reads it: one line per item, its status a mark. */
export function planLines(items: readonly Pick<PlanItem, "content" | "status">[], s: Style): string[] {
  const done = items.filter((i) => i.status === "done").length;
  return [
    s.cyan(`plan ${s.dim(`(${done}/${items.length} done)`)}`),
    ...items.map((i) => {
      const text = `${MARK[i.status] ?? "?"} ${truncate(i.content, 160)}`;
      return `  ${i.status === "done" ? s.dim(text) : i.status === "in_progress" ? s.bold(text) : text}`;
    }),
  ];
}

/** The list as Markdown task items, for export. */
export function planMarkdown(items: readonly Pick<PlanItem, "content" | "status">[]): string[] {
  return items.map(
    (i) =>
      `- [${i.status === "done" ? "x" : " "}] ${i.content.replace(/\n/g, " ")}${i.status === "in_progress" ? " *(in progress)*" : ""}`,
  );
}
