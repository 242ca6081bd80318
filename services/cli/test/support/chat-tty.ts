import { join } from "node:path";
import { afterEach } from "vitest";
import type { StackOptions } from "../../../../test/support/stack.js";
import { useStack } from "../../../../test/support/use-stack.js";
import { Tmux } from "./tmux.js";

/**
 * A stack, a tmux server per test (killed after it) and the environment a
 * `boxmaker` line in a pane runs with: the chat-on-a-terminal tests' fixture.
 */
export function useChatTty(prefix: string, opts: StackOptions = {}) {
  const t = useStack(prefix, opts);
  let tmux: Tmux | undefined;
  afterEach(async () => {
    await tmux?.kill();
    tmux = undefined;
    // A test that failed half-way leaves a turn waiting on its question
    // (holding the main slot) and its unused model answers queued in the
    // simulator: the next test would queue behind the one and be given the
    // others. A failure should stay in the test that had it.
    const { sessions } = await t.client.listSessions({});
    for (const s of sessions)
      if (s.state === "running" || s.state === "waiting") await t.client.cancelTurn({ sessionId: s.id });
    t.stack.sim.reset();
  });
  return {
    t,
    newTmux(): Tmux {
      tmux = new Tmux();
      return tmux;
    },
    env: () => ({
      BOXMAKER_SOCKET: t.stack.sockets.loopd,
      BOXMAKER_CHAT_HISTORY: join(t.dir, "chat_history"),
      NO_COLOR: undefined,
      FORCE_COLOR: undefined,
      TERM: "xterm-256color",
      // A pane shows what `show` and `export` print in full, to be read off the screen: no pager to quit
      // (the pager has its own tests, pager-tty.test.ts).
      BOXMAKER_PAGER: "",
    }),
    /** The user messages the last model request carried. */
    userMessages: () =>
      (t.stack.sim.completions.at(-1)!.body as { messages: { role: string; content: string }[] }).messages
        .filter((m) => m.role === "user")
        .map((m) => m.content),
  };
}
