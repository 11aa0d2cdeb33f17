/**
 * The SAML connector against the signed responses of fixtures/saml/ (make-responses.cjs), with
 * the connector's clock pinned to the fixtures' `now`: the valid ones sign alice in; every
 * other one is refused with a person-facing message, and the reason is in the connector's log.
 */
import { readFileSync } from 'node:fs';
import { inflateRawSync } from 'node:zlib';
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import type { BrowserConnector, Identity, LoginContext } from '../../../connectors/connector.js';
import { saml } from '../../../connectors/saml/index.js';
import { openThroughType } from '../connector-suite.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../fixtures/saml/${name}`, import.meta.url), 'utf8');
const CLOCK = JSON.parse(fixture('clock.json')) as { now: string; acs: string; idpIssuer: string; requestId: string; otherRequestId: string };
const NOW = Date.parse(CLOCK.now);
const IDP_CERT = fixture('idp.crt');
const SSO_URL = 'https://idp.example.org/saml2/idp/SSOService.php';
const BASE = { ssoURL: SSO_URL, ca: IDP_CERT, ssoIssuer: CLOCK.idpIssuer, usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups' };

interface LogLine { readonly level: number; readonly msg: string; readonly reason?: string }

function open(raw: Record<string, unknown> = {}, nowMs = NOW): { connector: BrowserConnector; lines: LogLine[]; log: Logger } {
  const lines: LogLine[] = [];
  const log = pino({ level: 'trace' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
  const connector = openThroughType(saml, { ...BASE, ...raw }, {}, log, { now: () => new Date(nowMs) });
  if (connector.kind !== 'browser') throw new Error('saml is a browser connector');
  return { connector, lines, log };
}

const ctx = (wantGroups = true): LoginContext => ({ callbackUrl: CLOCK.acs, wantGroups, signal: AbortSignal.timeout(5_000) });
const posted = (xml: string, relayState = 'state-1'): URLSearchParams => new URLSearchParams({ SAMLResponse: Buffer.from(xml).toString('base64'), RelayState: relayState });

async function outcome(connector: BrowserConnector, xml: string, saved: string | undefined = CLOCK.requestId, wantGroups = true): Promise<{ identity?: Identity; error?: Error & { reason?: string } }> {
  try {
    return { identity: await connector.complete(posted(xml), saved, ctx(wantGroups)) };
  } catch (err: unknown) {
    return { error: err as Error };
  }
}

/** The refusal's message for a person and the warning line with its reason. */
async function refused(name: string, raw: Record<string, unknown> = {}, nowMs = NOW, saved: string = CLOCK.requestId): Promise<{ message: string; logged: string }> {
  const { connector, lines } = open(raw, nowMs);
  const { identity, error } = await outcome(connector, fixture(name), saved);
  expect(identity, `${name} signs nobody in`).to.equal(undefined);
  expect(error?.name, `${name}: ${String(error)}`).to.equal('SamlRefused');
  const warning = lines.find((line) => line.level === 40 && line.msg.startsWith('saml: response refused'));
  expect(warning, `${name}: a logged reason`).not.to.equal(undefined);
  expect(warning?.reason).to.equal(error?.reason);
  return { message: error?.message ?? '', logged: warning?.reason ?? '' };
}

describe('saml connector: responses', () => {
  for (const name of ['valid.xml', 'valid-assertion-signed.xml', 'valid-response-signed.xml']) {
    it(`signs alice in from ${name}, with her groups`, async () => {
      const { connector, lines } = open();
      const { identity, error } = await outcome(connector, fixture(name));
      expect(error).to.equal(undefined);
      expect(identity).to.deep.include({ userId: 'alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['admins', 'devs'] });
      expect(identity?.claims).to.deep.include({ nameID: 'alice' });
      expect(lines.map((l) => l.msg)).to.include('saml: response verified');
    });
  }

  const cases: ReadonlyArray<readonly [string, string, RegExp, RegExp]> = [
    ['an expired assertion', 'expired.xml', /expired or is not valid yet/, /NotOnOrAfter 2026-01-01T11:05:00Z has passed/],
    ['a wrong audience', 'wrong-audience.xml', /could not be verified/, /audience mismatch.*other-sp/],
    ['a wrong recipient', 'wrong-recipient.xml', /could not be verified/, /Recipient is https:\/\/other-sp\.example\.org\/acs, not https:\/\/svc/],
    ['a wrong destination', 'wrong-destination.xml', /could not be verified/, /Destination is https:\/\/other-sp\.example\.org\/acs/],
    ['an unsigned response', 'unsigned.xml', /could not be verified/, /^Invalid signature$/],
    ['a response tampered after signing', 'tampered.xml', /could not be verified/, /^Invalid signature$/],
    ['a response signed by another key', 'other-key.xml', /could not be verified/, /^Invalid signature$/],
    ['a response to another request', 'other-request.xml', /belongs to another login/, /answers request _5e1ec7ed0ddba11c0ffee0ddba11c0ffee000002, not this login's/],
    ['an unsolicited (IdP-initiated) response', 'unsolicited.xml', /was not started here/, /no InResponseTo\): unsolicited, IdP-initiated responses are refused/],
    ['an unsolicited assertion in a forged response naming this request', 'unsolicited-assertion.xml', /was not started here/, /assertion answers no request/],
    ['an assertion signed for another request in a forged response naming this one', 'other-request-assertion.xml', /belongs to another login/, /the assertion answers request _5e1ec7ed0ddba11c0ffee0ddba11c0ffee000002, not this login's _5e1ec7ed0ddba11c0ffee0ddba11c0ffee000001/],
    ['a comment injected into the signed NameID', 'comment-in-nameid.xml', /could not be verified/, /contains an XML comment/],
    ['a second, forged assertion', 'second-assertion.xml', /could not be verified/, /holds 2 assertions/],
    ['a signed Response wrapped in a forged one', 'wrapped-response.xml', /could not be verified/, /holds 2 <Response> elements/],
    ['a failed status from the IdP', 'status-failed.xml', /could not be verified/, /Responder error: Authentication failed/],
  ];
  for (const [what, name, message, reason] of cases) {
    it(`refuses ${what} (${name}) with a logged reason`, async () => {
      const refusal = await refused(name);
      expect(refusal.message).to.match(message);
      expect(refusal.logged).to.match(reason);
    });
  }

  it('refuses a valid response replayed for another login (another request ID)', async () => {
    const refusal = await refused('valid.xml', {}, NOW, CLOCK.otherRequestId);
    expect(refusal.logged).to.match(/answers request _5e1ec7ed0ddba11c0ffee0ddba11c0ffee000001, not this login's _5e1ec7ed0ddba11c0ffee0ddba11c0ffee000002/);
  });

  it('allows 30 s of clock skew either side of the window, and no more', async () => {
    // NotBefore is now-30 s, NotOnOrAfter now+300 s.
    for (const [offsetS, accepted] of [[-59, true], [-61, false], [329, true], [330, false]] as const) {
      const { connector } = open({}, NOW + offsetS * 1000);
      const { identity, error } = await outcome(connector, fixture('valid.xml'));
      expect(identity !== undefined, `at now${offsetS >= 0 ? '+' : ''}${offsetS} s: ${String(error?.reason)}`).to.equal(accepted);
    }
    expect((await refused('valid.xml', {}, NOW - 61_000)).logged).to.match(/NotBefore 2026-01-01T11:59:30Z is in the future/);
  });

  it('refuses a response from another issuer than ssoIssuer', async () => {
    expect((await refused('valid.xml', { ssoIssuer: 'https://idp.other.example/' })).logged).to.match(/issued by https:\/\/idp\.example\.org\/saml2\/idp\/metadata\.php, not ssoIssuer/);
  });

  it('expects entityIssuer as the audience when it is set', async () => {
    expect((await refused('valid.xml', { entityIssuer: 'urn:svc:sp' })).logged).to.match(/audience mismatch. Expected: urn:svc:sp/);
  });

  it('refuses a user in none of allowedGroups, saying so', async () => {
    const refusal = await refused('valid.xml', { allowedGroups: ['ops', 'sre'] });
    expect(refusal.message).to.match(/not a member of any group allowed to log in here/);
    expect(refusal.logged).to.equal('user alice is in none of allowedGroups (ops, sre); their groups: admins, devs');
  });

  it('keeps every group with allowedGroups, or only the allowed ones with filterGroups', async () => {
    const all = await outcome(open({ allowedGroups: ['devs'] }).connector, fixture('valid.xml'));
    expect(all.identity?.groups).to.deep.equal(['admins', 'devs']);
    const filtered = await outcome(open({ allowedGroups: ['devs'], filterGroups: true }).connector, fixture('valid.xml'));
    expect(filtered.identity?.groups).to.deep.equal(['devs']);
  });

  it('splits a groups attribute sent as one value on groupsDelim, as Dex does: no trimming, each group once', async () => {
    const split = await outcome(open({ groupsDelim: ';' }).connector, fixture('groups-one-value.xml'));
    expect(split.identity?.groups).to.deep.equal(['admins', 'devs', ' ops']);
    const whole = await outcome(open().connector, fixture('groups-one-value.xml'));
    expect(whole.identity?.groups).to.deep.equal(['admins;devs; ops;;devs']);
    // Several values are each split.
    expect((await outcome(open({ groupsDelim: 'd' }).connector, fixture('valid.xml'))).identity?.groups).to.deep.equal(['a', 'mins', 'evs']);
    // The split groups are the ones allowedGroups reads.
    const allowed = await outcome(open({ groupsDelim: ';', allowedGroups: ['devs'], filterGroups: true }).connector, fixture('groups-one-value.xml'));
    expect(allowed.identity?.groups).to.deep.equal(['devs']);
  });

  it('gives no groups to a client that did not ask for them', async () => {
    const { identity } = await outcome(open().connector, fixture('valid.xml'), CLOCK.requestId, false);
    expect(identity?.groups).to.deep.equal([]);
  });

  it('refuses an assertion without the configured attributes, naming those present', async () => {
    const refusal = await refused('valid.xml', { emailAttr: 'email' });
    expect(refusal.message).to.match(/did not send what this login needs/);
    expect(refusal.logged).to.equal("the assertion has no emailAttr attribute 'email'; attributes present: uid, mail, groups");
  });

  it('refuses what is not a SAML response at all, without crashing', async () => {
    const { connector, lines } = open();
    for (const params of [new URLSearchParams(), new URLSearchParams({ SAMLResponse: '!!!not base64' }), posted('<html/>'), posted('<samlp:Response'), posted('x'.repeat(600_000))]) {
      const error = await connector.complete(params, CLOCK.requestId, ctx()).then(() => undefined, (err: unknown) => err as Error);
      expect(error?.name).to.equal('SamlRefused');
    }
    expect(lines.filter((l) => l.msg.startsWith('saml: response refused'))).to.have.length(5);
  });

  it('with insecureSkipSignatureValidation, takes an unsigned response but still checks the rest', async () => {
    const raw = { ca: undefined, insecureSkipSignatureValidation: true };
    const { connector, lines } = open(raw);
    expect(lines.map((l) => l.msg).join('\n')).to.match(/insecureSkipSignatureValidation is on/);
    expect((await outcome(connector, fixture('unsigned.xml'))).identity?.userId).to.equal('alice');
    expect((await refused('expired.xml', raw)).logged).to.match(/has passed/);
    expect((await refused('other-request.xml', raw)).logged).to.match(/answers request/);
  });
});

describe('saml connector: requests and metadata', () => {
  it('sends the browser to ssoURL with an AuthnRequest whose ID is kept as saved, and the state as RelayState', async () => {
    const { connector } = open({ nameIDPolicyFormat: 'emailAddress' });
    const start = await connector.begin('the-state', ctx());
    if (start.via !== 'redirect') throw new Error('expected a redirect');
    const url = new URL(start.url);
    expect(`${url.origin}${url.pathname}`).to.equal(SSO_URL);
    expect(url.searchParams.get('RelayState')).to.equal('the-state');
    const request = inflateRawSync(Buffer.from(url.searchParams.get('SAMLRequest') ?? '', 'base64')).toString('utf8');
    expect(start.saved).to.match(/^_[0-9a-f]{40}$/);
    expect(request).to.include(`ID="${start.saved}"`);
    expect(request).to.include(`AssertionConsumerServiceURL="${CLOCK.acs}"`);
    expect(request).to.include('ProtocolBinding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"');
    expect(request).to.match(new RegExp(`<saml:Issuer[^>]*>${CLOCK.acs}</saml:Issuer>`));
    expect(request).to.include('Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress"');
    const again = await connector.begin('the-state', ctx());
    expect(again.saved).not.to.equal(start.saved);
  });

  it('describes svc as a service provider: entity id, HTTP-POST ACS, NameID format', async () => {
    const xml = await open().connector.metadata?.(CLOCK.acs);
    expect(xml).to.match(new RegExp(`entityID="${CLOCK.acs}"`));
    expect(xml).to.include(`Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="${CLOCK.acs}"`);
    expect(xml).to.include('urn:oasis:names:tc:SAML:2.0:nameid-format:persistent');
    expect(await open({ entityIssuer: 'urn:svc:sp' }).connector.metadata?.(CLOCK.acs)).to.include('entityID="urn:svc:sp"');
  });
});
