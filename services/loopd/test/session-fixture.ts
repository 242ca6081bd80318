import { afterEach, beforeEach } from "vitest";
import { SessionStore } from "../src/sessions/session-store.js";
import type { Session } from "../src/sessions/session.js";
import { silentLog } from "./fakes.js";
import { tempDir } from "../../../test/support/tmp.js";

/** A SessionStore in a fresh temp dir with one main session: made before each test, closed after it. */
export function sessionPerTest(): { readonly session: Session; readonly store: SessionStore } {
  let tmp: ReturnType<typeof tempDir>;
  let store: SessionStore;
  let session: Session;
  beforeEach(() => {
    tmp = tempDir();
    store = new SessionStore(tmp.dir, silentLog);
    session = store.create({ role: "main", title: "t", parentId: "", slot: 0, systemJson: "{}", toolsJson: "[]" });
  });
  afterEach(() => {
    store.closeAll();
    tmp.cleanup();
  });
  return {
    get session() {
      return session;
    },
    get store() {
      return store;
    },
  };
}
