import { Tokenizer } from "htmlparser2";

/**
 * What the model gets from a web page: readable text, not markup.
 *
 * Runs on htmlparser2's Tokenizer, not its Parser: the Parser keeps open
 * elements in an array it unshifts and searches on every tag, so 2 MiB of
 * `<div>` takes minutes. Here every token costs O(1) besides its own
 * characters and the output is joined once, so a page converts in time
 * linear in its length whatever its shape (unclosed tags, deep nesting,
 * endless attributes, comment and CDATA openers).
 */

/** Elements whose content is not text for a reader. */
const HIDDEN = new Set(["script", "style", "noscript", "template", "svg", "head"]);
const BLOCK_END = new Set([
  "p",
  "div",
  "section",
  "article",
  "header",
  "footer",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "ul",
  "ol",
  "table",
  "tr",
  "blockquote",
  "pre",
  "main",
  "nav",
]);

/** What opening these elements puts in the text. */
const OPEN_MARK = new Map([
  ["h1", "\n\n# "],
  ["h2", "\n\n## "],
  ["h3", "\n\n### "],
  ["h4", "\n\n#### "],
  ["h5", "\n\n##### "],
  ["h6", "\n\n###### "],
  ["li", "\n- "],
  ["br", "\n"],
  ["hr", "\n"],
]);

export function htmlToText(html: string): string {
  const out: string[] = [];
  /** Per hidden element, how many are open: text shows only when all are 0. */
  const hidden = new Map<string, number>();
  let hiddenOpen = 0;
  let title: string[] | undefined;
  let titleDone = false;
  let inTitle = false;
  let link: { href: string; text: string[] } | undefined;
  let tag = "";
  let href: string[] | undefined;
  let hrefDone = false;
  let inHref = false;

  const emit = (s: string) => {
    if (inTitle) title!.push(s);
    else if (hiddenOpen > 0) return;
    else if (link) link.text.push(s);
    else out.push(s);
  };
  /** Layout (newlines, list marks) never goes inside a link's text or into hidden content. */
  const layout = (s: string) => {
    if (!inTitle && hiddenOpen === 0 && !link) out.push(s);
  };
  const endLink = () => {
    if (!link) return;
    const inner = link.text.join("").trim();
    const h = link.href;
    out.push(inner && !h.startsWith("#") && !h.startsWith("javascript:") ? `${inner} (${h})` : inner);
    link = undefined;
  };
  const unhide = (name: string) => {
    const n = hidden.get(name) ?? 0;
    if (n > 0) {
      hidden.set(name, n - 1);
      hiddenOpen--;
    }
  };

  const opened = (selfClosing: boolean) => {
    const name = tag;
    const target = href?.join("");
    href = undefined;
    if (name === "title" && !titleDone && hiddenOpen === (hidden.get("head") ?? 0) && !selfClosing) {
      inTitle = true;
      title = [];
      return;
    }
    // A body starts where a head left unclosed ends.
    if (name === "body") while ((hidden.get("head") ?? 0) > 0) unhide("head");
    if (HIDDEN.has(name)) {
      if (!selfClosing) {
        hidden.set(name, (hidden.get(name) ?? 0) + 1);
        hiddenOpen++;
      }
      return;
    }
    if (hiddenOpen > 0 || inTitle) return;
    if (name === "a") {
      endLink();
      if (target !== undefined && !selfClosing) link = { href: target, text: [] };
      return;
    }
    const mark = OPEN_MARK.get(name);
    if (mark) layout(mark);
  };

  const closed = (name: string) => {
    if (name === "title" && inTitle) {
      inTitle = false;
      titleDone = true;
      return;
    }
    if (HIDDEN.has(name)) return unhide(name);
    if (hiddenOpen > 0) return;
    if (name === "a") return endLink();
    if (BLOCK_END.has(name)) layout("\n\n");
    else if (name === "td" || name === "th") layout("\t");
  };

  const tokenizer = new Tokenizer(
    { decodeEntities: true },
    {
      ontext: (start, end) => emit(html.slice(start, end)),
      ontextentity: (cp) => emit(String.fromCodePoint(cp)),
      onopentagname: (start, end) => {
        tag = html.slice(start, end).toLowerCase();
        hrefDone = false;
      },
      onattribname: (start, end) => {
        inHref = tag === "a" && !hrefDone && end - start === 4 && html.slice(start, end).toLowerCase() === "href";
        if (inHref) href = [];
      },
      onattribdata: (start, end) => {
        if (inHref) href!.push(html.slice(start, end));
      },
      onattribentity: (cp) => {
        if (inHref) href!.push(String.fromCodePoint(cp));
      },
      onattribend: () => {
        if (inHref) hrefDone = true;
        inHref = false;
      },
      onopentagend: () => opened(false),
      onselfclosingtag: () => opened(true),
      onclosetag: (start, end) => closed(html.slice(start, end).toLowerCase()),
      oncdata: () => {},
      oncomment: () => {},
      ondeclaration: () => {},
      onprocessinginstruction: () => {},
      onend: () => endLink(),
    },
  );
  tokenizer.write(html);
  tokenizer.end();

  // Whole-string passes rather than a split into lines: a page of a million short lines would
  // otherwise build a million-entry array twice.
  const text = out
    .join("")
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t\f\v\u00a0]+/g, " ")
    .replace(/ ?\n ?/g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
  const t = title
    ?.join("")
    .replace(/[\s\u00a0]+/g, " ")
    .trim();
  return t && !text.startsWith(t) ? `${t}\n\n${text}` : text;
}
