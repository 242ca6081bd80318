export type BlockKind = "log" | "source" | "json" | "diff" | "prose";

const LOG_LINE =
  /^\s*(\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[?\d\d:\d\d:\d\d|\[\s*\d+\.\d+\]|[A-Z][a-z]{2} [ \d]\d \d\d:\d\d|\[?(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|FATAL|CRITICAL)\]?[\s:])/;
const SOURCE_LINE =
  /^\s*(import\s|export\s|from\s\S+\simport|#include|package\s|using\s|(pub(\(crate\))?\s+)?(fn|struct|enum|impl|trait|mod)\s|def\s|class\s|(async\s+)?function\b|(const|let|var)\s+\w+\s*=|(public|private|protected|static)\s|interface\s|type\s+\w+\s*=|func\s|\}|\{$|\/\/|\/\*|\*\s|#!)/;

/** Labels a block by sampling its lines; cheap even for megabytes. */
export function detectKind(text: string, lines: readonly string[]): BlockKind {
  const head = text.trimStart();
  if (/^(diff --git |--- \S|Index: )/m.test(text.slice(0, 4096)) && /^@@ /m.test(text)) return "diff";
  if (head.startsWith("{") || head.startsWith("[")) {
    try {
      JSON.parse(text);
      return "json";
    } catch {
      // JSON lines or a log line starting with "[": decided below.
    }
  }
  const step = Math.max(1, Math.floor(lines.length / 2000));
  let n = 0;
  let log = 0;
  let src = 0;
  for (let i = 0; i < lines.length; i += step) {
    const l = lines[i]!;
    if (!l.trim()) continue;
    n++;
    if (LOG_LINE.test(l)) log++;
    else if (SOURCE_LINE.test(l) || /[;{}]\s*$/.test(l)) src++;
  }
  if (!n) return "prose";
  if (log / n > 0.3) return "log";
  if (src / n > 0.3) return "source";
  return "prose";
}
