// Timed pacing for the simulated server: the delays a script asks for, cut short by a client leaving.

/** Resolves after ms, or early when the signal aborts. 0 ms still yields to the event loop. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal?.aborted) return resolve();
    let timer: NodeJS.Timeout | undefined;
    let immediate: NodeJS.Immediate | undefined;
    const done = () => {
      if (timer) clearTimeout(timer);
      if (immediate) clearImmediate(immediate);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    if (ms > 0) timer = setTimeout(done, ms);
    else immediate = setImmediate(done);
    signal?.addEventListener("abort", done, { once: true });
  });
}
