// The systemd install section of docs/operations.md as the tier runs it: its
// ```sh blocks in order, each a script of its own, as the docs tell the reader
// to paste them. The one line the tier cannot run as written is the clone
// (it names a placeholder URL): the tier puts the checkout under test in
// /opt/boxmaker itself and replaces that line, and nothing else, with a no-op.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { repoRoot } from "../support/stack.js";

export interface ShBlock {
  /** 1-based line of the opening fence in docs/operations.md. */
  line: number;
  text: string;
}

const HEADING = /^## Install\b.*\bsystemd\b/;
const CLONE = /^(\s*)sudo git clone \S+ \/opt\/boxmaker(?=\s|$)/;

/** BOXMAKER_TIER_DOCS runs the tier on a draft of the document instead. */
const DOCS = process.env.BOXMAKER_TIER_DOCS ?? join(repoRoot, "docs", "operations.md");

/** The ```sh blocks between the install heading and the next heading of any level (code fences tracked). */
export function installBlocks(markdown = readFileSync(DOCS, "utf8")): ShBlock[] {
  const lines = markdown.split("\n");
  const start = lines.findIndex((l) => HEADING.test(l));
  if (start < 0) throw new Error("docs/operations.md has no `## Install … systemd` heading");
  const blocks: ShBlock[] = [];
  let open: (ShBlock & { lang: string }) | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const l = lines[i]!;
    const fence = /^```(\S*)\s*$/.exec(l);
    if (open) {
      if (fence && fence[1] === "") {
        if (open.lang === "sh") blocks.push({ line: open.line, text: open.text });
        open = undefined;
      } else open.text += `${l}\n`;
    } else if (fence) open = { line: i + 1, lang: fence[1]!, text: "" };
    else if (/^#{1,6} /.test(l)) break;
  }
  if (blocks.length === 0) throw new Error("the install section of docs/operations.md has no ```sh block");
  return blocks;
}

/** The blocks with the clone line made a no-op; fails loudly if the docs no longer clone that way. */
export function runnableBlocks(blocks: ShBlock[]): ShBlock[] {
  let clones = 0;
  const out = blocks.map((b) => ({
    line: b.line,
    text: b.text
      .split("\n")
      .map((l) => {
        if (!CLONE.test(l)) return l;
        clones++;
        return l.replace(CLONE, "$1: the systemd tier put the checkout in /opt/boxmaker");
      })
      .join("\n"),
  }));
  if (clones !== 1)
    throw new Error(
      `expected one \`sudo git clone URL /opt/boxmaker\` line in the install section, found ${clones}: update test/systemd/install-section.ts to how the docs now fetch the source`,
    );
  return out;
}
