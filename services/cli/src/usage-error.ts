/** Bad input from the person at the keyboard: exit 2 with one line. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}
