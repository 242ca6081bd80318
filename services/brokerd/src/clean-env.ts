/** Only what a build needs; nothing of brokerd's own environment (tokens, sockets) leaks in. */
export const CLEAN_ENV: Readonly<Record<string, string>> = {
  PATH: "/run/current-system/sw/bin:/usr/local/bin:/usr/bin:/bin",
  HOME: "/tmp",
  LANG: "C.UTF-8",
  TERM: "dumb",
};
