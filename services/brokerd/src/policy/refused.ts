/**
 * A hard refusal that no policy rule can turn into allow (outside the
 * workspace, a secret, a protected path, no sandbox). `rule` names the check
 * for the audit trail; the message is for the model and says what to do.
 */
export class Refused extends Error {
  override readonly name = "Refused";
  constructor(
    readonly rule: string,
    message: string,
  ) {
    super(message);
  }
}
