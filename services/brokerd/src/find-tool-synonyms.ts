/**
 * Words people and models use for the same action or object, so "rename a
 * file" finds move_file and "make a folder" finds create_directory. Kept
 * small on purpose: each group is a word family seen in real tool lists, and
 * a synonym match counts for less than the word itself (see find-tool.ts).
 */
export const SYNONYM_GROUPS: readonly (readonly string[])[] = [
  ["add", "sum", "plus", "total", "addition"],
  ["add", "create", "make", "new", "insert"],
  ["read", "get", "fetch", "retrieve", "load", "open", "view", "cat", "contents", "content"],
  ["show", "display", "print", "view", "see"],
  ["write", "save", "store", "put", "overwrite"],
  ["edit", "modify", "change", "update", "replace", "patch", "alter"],
  ["delete", "remove", "erase", "drop", "rm", "unlink", "destroy"],
  ["move", "rename", "mv", "relocate"],
  ["copy", "duplicate", "cp", "clone"],
  ["list", "ls", "enumerate", "browse"],
  ["directory", "folder", "dir", "directories"],
  ["file", "document", "doc"],
  ["search", "find", "grep", "query", "lookup", "locate", "match", "matching", "pattern", "glob"],
  ["image", "picture", "photo", "png", "jpeg", "jpg", "screenshot"],
  ["audio", "sound", "wav", "mp3"],
  ["echo", "repeat", "parrot", "back"],
  ["environment", "env", "variable", "variables"],
  ["compress", "gzip", "zip", "archive"],
  ["info", "information", "metadata", "stat", "stats", "details", "attributes", "size", "modified", "modification"],
  ["tree", "hierarchy", "structure", "recursive", "recursively", "nested"],
  ["long", "slow", "lengthy", "lasting"],
  ["progress", "status", "percent"],
  ["message", "text", "string"],
  ["issue", "ticket", "bug"],
  ["run", "execute", "trigger", "invoke", "start", "launch"],
  ["number", "integer", "numeric", "digit"],
  ["url", "link", "uri", "address", "web"],
  ["resource", "resources", "attachment"],
  ["log", "logging", "logs"],
  ["allowed", "permitted", "accessible"],
];

/** Words that say nothing about which tool is meant. */
export const STOPWORDS = new Set(
  "a an the to of for in on at by with and or from into onto this that these those it its is are be me my our your i we you please want need some any all two one can could would should how what which do does give using use via".split(
    " ",
  ),
);
