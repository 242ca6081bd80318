import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { htmlToText } from "../../src/tools/html-text.js";

/** A document tree of visible words (v<n>) and words that must never show (HIDDEN<n>), with its rendering. */
type Node = { html: string; visible: string[]; hidden: string[] };
function docArb(): fc.Arbitrary<Node> {
  const word = (p: string) => fc.nat({ max: 9999 }).map((n) => `${p}${n}`);
  const text = word("v").map((w): Node => ({ html: ` ${w} `, visible: [w], hidden: [] }));
  const { node } = fc.letrec<{ node: Node }>((tie) => ({
    node: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      text,
      fc
        .tuple(
          fc.constantFrom("p", "div", "b", "span", "li", "h2", "td", "section", "blockquote", "em"),
          fc.array(tie("node"), { maxLength: 4 }),
        )
        .map(
          ([tag, kids]): Node => ({
            html: `<${tag} class="x">${kids.map((k) => k.html).join("")}</${tag}>`,
            visible: kids.flatMap((k) => k.visible),
            hidden: kids.flatMap((k) => k.hidden),
          }),
        ),
      fc
        .tuple(fc.constantFrom("script", "style", "noscript", "template", "svg"), word("HIDDEN"))
        .map(([tag, w]): Node => ({ html: `<${tag}>${w} <b>${w}</b></${tag}>`, visible: [], hidden: [w] })),
      fc
        .tuple(word("v"), fc.constantFrom("https://e.org/x?a=1&amp;b=2", "/rel", "#top"))
        .map(([w, href]): Node => ({ html: ` <a href="${href}">${w}</a> `, visible: [w], hidden: [] })),
      word("HIDDEN").map((w): Node => ({ html: `<!-- ${w} -->`, visible: [], hidden: [w] })),
    ),
  }));
  return node;
}

/** Fragments attackers build pages from: unclosed tags, openers that never close, entities, deep nesting. */
const evilFragment = fc.constantFrom(
  "<a ",
  "<a href=",
  '<a href="',
  "<div>",
  "</b>",
  "<p>",
  "<li>",
  "<!--",
  "<![CDATA[",
  "<!",
  "<?",
  "<",
  "</",
  "&",
  "&#",
  "&#x",
  "&amp;",
  "<svg><title>",
  "<script>",
  "<table><td>",
  "<h1>",
  "x",
  " ",
  "\n",
  '"',
  "=",
);

describe("htmlToText", () => {
  it("keeps what fetch_url showed before: title, headings, links, lists, tables, entities, nothing hidden", () => {
    const page =
      "<html><head><title>Demo</title><style>p{}</style></head><body><h1>Hello &amp; welcome</h1>" +
      "<p>First <b>para</b> with <a href='https://example.org/x'>a link</a>.</p><script>evil()</script>" +
      "<ul><li>one</li><li>two</li></ul><table><tr><td>a</td><td>b</td></tr></table><p>x<br>y</p></body></html>";
    expect(htmlToText(page)).toBe(
      "Demo\n\n# Hello & welcome\n\nFirst para with a link (https://example.org/x).\n\n- one\n- two\n\na b\n\nx\ny",
    );
    expect(htmlToText("<p>a&nbsp;&lt;b&gt; &#x41;&#66;</p>")).toBe("a <b> AB");
    expect(htmlToText('<a href="#top">top</a> <a href="javascript:x()">js</a> <a href=/r>rel</a>')).toBe(
      "top js rel (/r)",
    );
    // A head left open ends where the body starts.
    expect(htmlToText("<html><head><title>T</title><body><p>shown</p>")).toBe("T\n\nshown");
  });

  it("shows every visible word in order and no hidden one (generated documents)", () => {
    let runs = 0;
    fc.assert(
      fc.property(fc.array(docArb(), { minLength: 1, maxLength: 6 }), (nodes) => {
        runs++;
        const out = htmlToText(`<html><body>${nodes.map((n) => n.html).join("")}</body></html>`);
        const words = out.split(/[^A-Za-z0-9]+/).filter((w) => /^v\d+$/.test(w));
        expect(words).toEqual(nodes.flatMap((n) => n.visible));
        for (const h of nodes.flatMap((n) => n.hidden)) expect(out).not.toContain(h);
      }),
      { numRuns: 400 },
    );
    expect(runs).toBe(400);
  });

  it("converts 2 MiB hostile pages in time linear in their length (generated pages)", () => {
    const MiB = 1024 * 1024;
    const times: number[] = [];
    fc.assert(
      fc.property(fc.array(evilFragment, { minLength: 1, maxLength: 5 }), (parts) => {
        const unit = parts.join("");
        const page = unit.repeat(Math.ceil((2 * MiB) / unit.length)).slice(0, 2 * MiB);
        const t0 = performance.now();
        const out = htmlToText(page);
        times.push(performance.now() - t0);
        expect(out.length).toBeLessThanOrEqual(page.length);
      }),
      { numRuns: 40 },
    );
    // A quadratic pass over 2 MiB takes minutes; a linear one tens of milliseconds. The bound is generous.
    const worst = Math.max(...times);
    console.log(`html-text: 40 generated 2 MiB pages, worst ${Math.round(worst)} ms`);
    expect(worst).toBeLessThan(1500);
    for (const [name, page] of [
      ["<a ", "<a ".repeat((2 * MiB) / 3)],
      ["<div>", "<div>".repeat((2 * MiB) / 5)],
      ["attribute", `<a href="${"x".repeat(2 * MiB)}">y</a>`],
    ] as const) {
      const t0 = performance.now();
      htmlToText(page);
      const ms = performance.now() - t0;
      console.log(`html-text: 2 MiB of ${name} in ${Math.round(ms)} ms`);
      expect(ms).toBeLessThan(1500);
    }
  });
});
