/**
 * The name a model's entry in inferproxy's contract table goes by: the
 * server's --alias when one was given (llama-server reports the model's path
 * as its alias otherwise), else the model file's name. The same key for
 * inferproxy choosing an entry and for `boxmaker contract accept` writing one,
 * so a model file moved to another directory keeps its entry.
 */
export function contractModelKey(props: { model_alias?: unknown; model_path?: unknown }): string {
  const path = typeof props.model_path === "string" ? props.model_path : "";
  const alias = typeof props.model_alias === "string" ? props.model_alias : "";
  if (alias && alias !== path) return alias;
  const name = path.slice(path.lastIndexOf("/") + 1);
  return name;
}
