import { describe, expect, it } from "vitest";
import { SYSTEM, chunks, req, useSimClients } from "./sim-fixtures.js";

const client = useSimClients();

/** What a request to the simulator comes to: its status, or the errno of a connection that went nowhere. */
async function outcome(p: Promise<{ status: number }>): Promise<number | string> {
  try {
    return (await p).status;
  } catch (err) {
    const e = err as { code?: string; cause?: { code?: string } };
    return e.cause?.code ?? e.code ?? String(err);
  }
}

describe("a scripted crash: the process dies mid-generation and comes back", () => {
  it("drops the stream after N tokens, refuses while down, loads, and comes back with every cache empty", async () => {
    const c = await client();
    const prompt = [SYSTEM, { role: "user" as const, content: "word ".repeat(3000) }];
    // Fill slot 1's cache first: a restart loses it too.
    c.sim.enqueue({ content: "kept" }, 1);
    expect((await c.stream(req(prompt, { id_slot: 1 }))).status).toBe(200);
    expect(c.sim.slotTokens(1).length).toBeGreaterThan(3000);

    c.sim.enqueue({
      content: ["one", " two", " three", " four"],
      crashAfterTokens: 2,
      crashDownMs: 400,
      crashLoadingMs: 300,
    });
    const seen: string[] = [];
    const broken = await c
      .stream(req(prompt), (p) => void seen.push(p))
      .then(
        () => "ended",
        (err: unknown) => (err as Error).message,
      );
    // Not a polite end: the socket went away after the second token, without a finish_reason or [DONE].
    expect(broken).not.toBe("ended");
    const content = chunks(seen).flatMap((x) =>
      typeof x.choices?.[0]?.delta.content === "string" ? [x.choices[0].delta.content] : [],
    );
    // What was written just before the socket went is not always flushed, as with a killed process.
    expect("one two".startsWith(content.join(""))).toBe(true);
    expect(seen).not.toContain("[DONE]");
    expect(c.sim.restarts).toBe(1);

    // Down: nothing listens on the socket.
    expect(await outcome(c.send("GET", "/health"))).toMatch(/^E[A-Z]+/);
    await c.sim.whenUp();
    // Up again, having loaded; both slots start from nothing, as a new llama-server process does.
    expect(await outcome(c.send("GET", "/health"))).toBe(200);
    expect(c.sim.slotTokens(0)).toEqual([]);
    expect(c.sim.slotTokens(1)).toEqual([]);
    c.sim.enqueue({ content: "back" });
    const again = await c.stream(req(prompt));
    const p0 = chunks(again.events).find((x) => x.prompt_progress)!.prompt_progress!;
    expect(p0.cache).toBe(0);
    expect(again.events.at(-1)).toBe("[DONE]");
  });

  it("is 503 while loading after a restart, then 200", async () => {
    const c = await client();
    const up = c.sim.restart({ downMs: 0, loadingMs: 1_000 });
    // Listening again once the down time is over, but loading: every endpoint answers 503.
    let status: number | string = "";
    for (let i = 0; i < 100 && status !== 503; i++) {
      status = await outcome(c.send("GET", "/health"));
      if (status !== 503) await new Promise((r) => setTimeout(r, 20));
    }
    expect(status).toBe(503);
    await up;
    expect(await outcome(c.send("GET", "/health"))).toBe(200);
  });
});
