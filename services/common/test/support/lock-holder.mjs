// Takes a state directory's lock in its own process and says how it went
// (process.send): { held: pid } and then stays until killed or told to
// release, or { refused: message, code, holderPid } and exits. With a start
// time (ms since the epoch) it spins until then first, so several holders
// started together ask for the lock in the same instant.
import { lockStateDir } from "@boxmaker/common";

const [dir, socket, at] = [process.argv[2], process.argv[3], Number(process.argv[4] ?? 0)];
while (Date.now() < at) {
  // the barrier: every contender leaves it at once
}
try {
  const lock = await lockStateDir(dir, { daemon: "lock-holder", socket, key: "state_dir" });
  process.send({ held: process.pid });
  process.on("message", (m) => {
    if (m === "release") {
      lock.release();
      process.send({ released: true });
    }
  });
} catch (err) {
  process.send({ refused: err.message, code: err.code, holderPid: err.holder?.pid });
  process.disconnect();
}
