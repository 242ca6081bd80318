/** The longest error text a person is shown; the whole text goes to the daemon log. */
export const MAX_SHOWN_ERROR_CHARS = 500;

/**
 * An error message cut to a readable length. The server can answer with
 * kilobytes (a whole rendered prompt in a parse error); the person sees the
 * start and where the rest is.
 */
export function cutForPerson(message: string, max = MAX_SHOWN_ERROR_CHARS): string {
  if (message.length <= max) return message;
  const rest = message.length - max;
  return `${message.slice(0, max).trimEnd()}… (${rest} more chars in the daemon log)`;
}
