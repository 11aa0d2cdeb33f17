/**
 * A SAML response svc will not sign anyone in with. The message is for the person at the login
 * page (no host, no XML, no attribute values); `reason` is for the operator and goes to the
 * connector's log, where it says which check failed and with what.
 */
import { SvcError } from '../../src/errors.js';

export class SamlRefused extends SvcError {
  readonly code = 'unauthenticated';

  constructor(message: string, readonly reason: string) {
    super(message);
  }
}

/** The person-facing messages, one per kind of refusal. */
export const REFUSED = {
  unverified: "the identity provider's answer could not be verified: go back to the application and log in again; if it keeps happening, tell your administrator",
  unsolicited: 'this login was not started here (the identity provider sent an answer nobody asked for): go back to the application and log in from there',
  otherRequest: 'this answer of the identity provider belongs to another login: go back to the application and log in again',
  expired: "the identity provider's answer has expired or is not valid yet: log in again; if it keeps happening, the clocks of the two servers differ",
  incomplete: 'the identity provider did not send what this login needs (a user name or an email address): tell your administrator',
  notAllowed: 'you are not a member of any group allowed to log in here: ask your administrator for access',
} as const;
