/**
 * The checks svc makes itself on the assertion whose signature node-saml verified (its parsed
 * form, `profile.getAssertion()`): the bearer confirmation answers this login's request
 * (InResponseTo), was meant for svc's ACS (Recipient), and is in its time window, as are the
 * Conditions, all against the connector's clock with a bounded skew. node-saml's own time checks
 * are off because they read the system clock, which tests cannot pin.
 */
import { REFUSED, SamlRefused } from './errors.js';

/** How far the two clocks may disagree (Dex's allowedClockDrift). */
export const CLOCK_SKEW_MS = 30_000;
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';

/** xml2js output as node-saml parses it (explicitCharkey, prefixes stripped). */
type Node = { readonly $?: Readonly<Record<string, string>>; readonly _?: string; readonly [child: string]: unknown };

export interface AssertionExpectations {
  /** The AuthnRequest ID this login sent (the transaction's `saved`). */
  readonly requestId: string;
  /** svc's ACS URL. */
  readonly acs: string;
  readonly now: Date;
}

function children(node: Node | undefined, name: string): Node[] {
  const value = node?.[name];
  return Array.isArray(value) ? (value as Node[]) : [];
}

/** Throws SamlRefused unless the assertion is for this request, for svc, and current. */
export function checkAssertion(parsed: unknown, expect: AssertionExpectations): void {
  const assertion = (parsed as { Assertion?: Node } | null)?.Assertion;
  if (assertion === undefined) throw new SamlRefused(REFUSED.unverified, 'the signed content holds no assertion');
  const subject = children(assertion, 'Subject')[0];
  const bearers = children(subject, 'SubjectConfirmation').filter((c) => c.$?.['Method'] === BEARER);
  const data = bearers.flatMap((c) => children(c, 'SubjectConfirmationData')).map((d) => d.$ ?? {});
  if (data.length === 0) throw new SamlRefused(REFUSED.unverified, 'the assertion has no bearer SubjectConfirmationData');
  const answering = data.filter((d) => d['InResponseTo'] !== undefined);
  if (answering.length === 0) throw new SamlRefused(REFUSED.unsolicited, 'the assertion answers no request (no InResponseTo): unsolicited, IdP-initiated responses are refused');
  const mine = answering.filter((d) => d['InResponseTo'] === expect.requestId);
  if (mine.length === 0) throw new SamlRefused(REFUSED.otherRequest, `the assertion answers request ${String(answering[0]?.['InResponseTo'])}, not this login's ${expect.requestId}`);
  const forAcs = mine.filter((d) => d['Recipient'] === expect.acs);
  if (forAcs.length === 0) throw new SamlRefused(REFUSED.unverified, `the assertion's Recipient is ${String(mine[0]?.['Recipient'] ?? '(none)')}, not ${expect.acs}`);
  const confirmation = forAcs[0] ?? {};
  if (confirmation['NotOnOrAfter'] === undefined) throw new SamlRefused(REFUSED.unverified, 'the bearer SubjectConfirmationData has no NotOnOrAfter');
  checkWindow('SubjectConfirmationData', confirmation['NotBefore'], confirmation['NotOnOrAfter'], expect.now);

  const conditions = children(assertion, 'Conditions');
  if (conditions.length !== 1) throw new SamlRefused(REFUSED.unverified, `the assertion has ${conditions.length} Conditions; one is expected`);
  checkWindow('Conditions', conditions[0]?.$?.['NotBefore'], conditions[0]?.$?.['NotOnOrAfter'], expect.now);
}

function checkWindow(where: string, notBefore: string | undefined, notOnOrAfter: string | undefined, now: Date): void {
  const at = now.getTime();
  if (notBefore !== undefined) {
    const from = instant(where, 'NotBefore', notBefore);
    if (at + CLOCK_SKEW_MS < from) throw new SamlRefused(REFUSED.expired, `${where} NotBefore ${notBefore} is in the future (now ${now.toISOString()}, skew ${CLOCK_SKEW_MS / 1000} s)`);
  }
  if (notOnOrAfter !== undefined) {
    const until = instant(where, 'NotOnOrAfter', notOnOrAfter);
    if (at - CLOCK_SKEW_MS >= until) throw new SamlRefused(REFUSED.expired, `${where} NotOnOrAfter ${notOnOrAfter} has passed (now ${now.toISOString()}, skew ${CLOCK_SKEW_MS / 1000} s)`);
  }
}

function instant(where: string, name: string, value: string): number {
  // xs:dateTime as SAML requires it: UTC, 'Z', optional fraction.
  const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z$/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new SamlRefused(REFUSED.unverified, `${where} ${name} is not a UTC xs:dateTime: ${value}`);
  return ms;
}
