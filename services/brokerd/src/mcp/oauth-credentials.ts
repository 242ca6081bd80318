import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import type { OAuthDiscoveryState } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

/** What brokerd keeps for one OAuth-protected server between restarts. */
export interface StoredCredentials {
  client?: OAuthClientInformationMixed;
  tokens?: OAuthTokens;
  /** The authorization server and resource metadata found by discovery. */
  discovery?: OAuthDiscoveryState;
}

/**
 * One server's OAuth credentials as a file of brokerd's state directory
 * (mode 0600 in a 0700 directory): never in the Nix store, never in a log,
 * and, the state directory being a protected path, never readable by a tool
 * or a sandboxed command. Written whole and renamed, so a crash leaves the
 * old file or the new one.
 */
export class CredentialFile {
  readonly path: string;

  constructor(dir: string, server: string) {
    // Server names are config keys; the file name must still be one path component.
    this.path = join(dir, `${encodeURIComponent(server)}.json`);
  }

  read(): StoredCredentials {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch {
      return {};
    }
    try {
      const v = JSON.parse(text) as unknown;
      return v && typeof v === "object" ? (v as StoredCredentials) : {};
    } catch {
      // A damaged file is a lost login, not a crash: the person logs in again.
      return {};
    }
  }

  update(change: (c: StoredCredentials) => StoredCredentials): void {
    const next = change(this.read());
    const dir = join(this.path, "..");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
    const tmp = `${this.path}.${process.pid}.tmp`;
    const fd = openSync(tmp, "w", 0o600);
    try {
      writeSync(fd, `${JSON.stringify(next)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.path);
  }

  /** Forgets everything; false when there was nothing. */
  remove(): boolean {
    const had = Object.keys(this.read()).length > 0;
    rmSync(this.path, { force: true });
    return had;
  }
}
