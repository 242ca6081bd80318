import { ConfigError } from "@boxmaker/common";

/**
 * What the model may not create or change, whatever the policy says, because a
 * program outside the sandbox later runs it or obeys it: git at the person's
 * next commit, a shell at the next login, an editor when the folder is opened,
 * a hook manager, an MCP client, the next session's system prompt.
 *
 * Globs as in policy/glob.ts (case-insensitive): a bare name matches at any
 * depth, `./x` only from the workspace root. Two tiers:
 *
 * - **refused**: never written by a file tool, read-only in the sandbox; what
 *   runs code with no person deciding to (git's internals, shell start-up files).
 * - **reviewed**: written by a file tool only with a person's approval of that
 *   exact change (always staged, whatever the rule or mode), read-only in the
 *   sandbox; what a person's tools obey but a person also edits on purpose.
 *
 * Operators add to either list (`protected_patterns`, `reviewed_patterns`);
 * removing a default needs it named in `unprotect`.
 */

/** Never written by the model. */
export const DEFAULT_PROTECTED_PATTERNS: readonly string[] = [
  // git: the whole directory, at any depth (a submodule's, a worktree's), and the files that
  // stand for one (`gitdir:`) or redirect it; Codex keeps .git read-only inside writable roots too.
  ".git",
  ".gitconfig",
  ".gitmodules",
  ".config/git",
  // Shells and the tools a login or a terminal starts.
  "./.bashrc",
  "./.bash_profile",
  "./.bash_login",
  "./.bash_logout",
  "./.bash_aliases",
  "./.profile",
  "./.zshrc",
  "./.zshenv",
  "./.zprofile",
  "./.zlogin",
  "./.zlogout",
  "./.cshrc",
  "./.tcshrc",
  "./.kshrc",
  "./.inputrc",
  "./.xprofile",
  "./.xinitrc",
  "./.xsession",
  "./.pam_environment",
  "./.config/fish",
  "./.config/environment.d",
  "./.config/autostart",
  "./.config/systemd",
  "./.local/bin",
  "./.local/share/applications",
  "./.vimrc",
  "./.exrc",
  "./.config/nvim",
  "./.emacs",
  "./.emacs.d",
  "./.tmux.conf",
  "./.wgetrc",
  "./.curlrc",
  "./.pythonrc",
  "./.cargo/config",
  "./.cargo/config.toml",
  "./.config/pip",
  "./.yarnrc",
  // Boxmaker's own project hooks: run only once a person trusts their exact content (`boxmaker hooks trust`).
  "./.boxmaker/hooks.json",
];

/** Written by the model only with a person's approval. */
export const DEFAULT_REVIEWED_PATTERNS: readonly string[] = [
  // Instructions every later session (Boxmaker's or another agent's) obeys.
  "AGENTS.md",
  "BOXMAKER.md",
  "CLAUDE.md",
  "GEMINI.md",
  ".boxmaker",
  ".claude",
  ".codex",
  ".cursor",
  ".cursorrules",
  ".windsurfrules",
  ".clinerules",
  ".github/copilot-instructions.md",
  ".mcp.json",
  // Editors: tasks and settings run when the folder is opened or a task is picked.
  ".vscode",
  ".idea",
  ".devcontainer",
  "*.code-workspace",
  ".direnv",
  // Hook managers and CI: code run at the next commit or push, with the repository's secrets.
  ".husky",
  ".githooks",
  ".pre-commit-config.yaml",
  "lefthook.yml",
  ".lefthook.yml",
  "lefthook-local.yml",
  ".overcommit.yml",
  ".lintstagedrc*",
  ".github/workflows",
  ".gitlab-ci.yml",
  // Package scripts run by the next install (postinstall) or a build tool's own configuration.
  "./package.json",
  ".yarnrc.yml",
  ".pnpmfile.cjs",
  "./.cargo",
  "./.config",
  "./.local",
  "./bin",
  // Build and container files a person runs next (`make`, `docker build`, `docker compose up`, `just`),
  // and the scripts they and CI call. At the root only: a build tree's generated Makefiles are not these.
  "./Makefile",
  "./makefile",
  "./GNUmakefile",
  "./Dockerfile",
  "./Dockerfile.*",
  "./Containerfile",
  "./docker-compose.yml",
  "./docker-compose.yaml",
  "./docker-compose.*.yml",
  "./compose.yml",
  "./compose.yaml",
  "./justfile",
  "./Justfile",
  "./Taskfile.yml",
  "./scripts",
];

/**
 * The operator's lists: the defaults, less what `unprotect` names (each must be
 * a default, so a typo cannot look like protection removed), plus additions.
 */
export function protectionOf(cfg: {
  protected_patterns: readonly string[];
  reviewed_patterns: readonly string[];
  unprotect: readonly string[];
}): { protected: string[]; reviewed: string[] } {
  const defaults = new Set([...DEFAULT_PROTECTED_PATTERNS, ...DEFAULT_REVIEWED_PATTERNS]);
  const unknown = cfg.unprotect.filter((g) => !defaults.has(g));
  if (unknown.length > 0)
    throw new ConfigError(
      `key "unprotect": ${unknown.map((g) => JSON.stringify(g)).join(", ")} ${unknown.length === 1 ? "is" : "are"} not a default protected path; it names only defaults to remove`,
    );
  const keep = (g: string) => !cfg.unprotect.includes(g);
  return {
    protected: [...DEFAULT_PROTECTED_PATTERNS.filter(keep), ...cfg.protected_patterns],
    reviewed: [...DEFAULT_REVIEWED_PATTERNS.filter(keep), ...cfg.reviewed_patterns],
  };
}
