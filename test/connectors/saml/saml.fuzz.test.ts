/**
 * The SAML POST binding under fuzzing (docs/reliability.md): SAMLResponse values that are random
 * text, garbled base64, random bytes, and the signed fixtures altered (characters changed, cut,
 * parts repeated or dropped, a DOCTYPE with entities put in front). Property: complete() either
 * signs alice in (only an alteration the signature does not cover can) or refuses with
 * SamlRefused and its person-facing message; never another error, never a hang.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import type { BrowserConnector } from '../../../connectors/connector.js';
import { saml } from '../../../connectors/saml/index.js';
import { REFUSED } from '../../../connectors/saml/errors.js';
import { fuzzOptions } from '../../helpers/fuzz.js';
import { openThroughType } from '../connector-suite.js';

const fixture = (name: string): string => readFileSync(new URL(`../../../fixtures/saml/${name}`, import.meta.url), 'utf8');
const CLOCK = JSON.parse(fixture('clock.json')) as { now: string; acs: string; idpIssuer: string; requestId: string };
const BASE = { ssoURL: 'https://idp.example.org/saml2/idp/SSOService.php', ca: fixture('idp.crt'), ssoIssuer: CLOCK.idpIssuer, usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups' };
const SIGNED = ['valid.xml', 'valid-assertion-signed.xml', 'valid-response-signed.xml', 'wrapped-response.xml', 'second-assertion.xml', 'comment-in-nameid.xml'].map(fixture);
const MESSAGES: readonly string[] = Object.values(REFUSED);
const ALICE = { userId: 'alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['admins', 'devs'] };

/** A signed fixture changed in one or a few places. */
const alteredXml = fc.tuple(fc.constantFrom(...SIGNED), fc.array(fc.tuple(fc.constantFrom('set', 'cut', 'repeat', 'drop', 'truncate'), fc.nat(), fc.nat({ max: 200 }), fc.string({ maxLength: 8 })), { minLength: 1, maxLength: 3 }))
  .map(([xml, edits]) => edits.reduce((text, [kind, at, length, insert]) => {
    const i = at % Math.max(1, text.length);
    if (kind === 'set') return text.slice(0, i) + insert + text.slice(i + insert.length);
    if (kind === 'cut') return text.slice(0, i) + text.slice(i + length);
    if (kind === 'repeat') return text.slice(0, i + length) + text.slice(i, i + length) + text.slice(i + length);
    if (kind === 'drop') return text.replace(/<saml:Assertion[\s\S]*?<\/saml:Assertion>/, '');
    return text.slice(0, i);
  }, xml));

const entityXml = fc.constantFrom(
  '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&c;</samlp:Response>',
  '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol">&x;</samlp:Response>',
  `<!DOCTYPE r [<!ENTITY a "b">]>${SIGNED[0] ?? ''}`,
  `${'<a>'.repeat(2000)}${'</a>'.repeat(2000)}`,
);

const samlResponse = fc.oneof(
  { weight: 4, arbitrary: alteredXml.map((xml) => Buffer.from(xml).toString('base64')) },
  { weight: 1, arbitrary: entityXml.map((xml) => Buffer.from(xml).toString('base64')) },
  { weight: 1, arbitrary: fc.string({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes).toString('base64')) },
  // Base64 of a signed response with characters outside the alphabet, or cut.
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...SIGNED), fc.nat(), fc.constantFrom('!', '%', ' ', '\n', '=', '-', '_')).map(([xml, at, ch]) => {
    const b64 = Buffer.from(xml).toString('base64');
    const i = at % b64.length;
    return b64.slice(0, i) + ch + b64.slice(i + 1);
  }) },
);

const params = fc.record({
  SAMLResponse: samlResponse,
  RelayState: fc.option(fc.string({ maxLength: 40 }), { nil: undefined }),
  repeat: fc.boolean(),
});

describe('saml connector under fuzzing', function () {
  this.timeout(120_000);
  let connector: BrowserConnector;

  before(() => {
    const opened = openThroughType(saml, BASE, {}, pino({ level: 'silent' }), { now: () => new Date(CLOCK.now) });
    if (opened.kind !== 'browser') throw new Error('saml is a browser connector');
    connector = opened;
  });

  it('signs alice in or refuses with SamlRefused and its message; never another error (300 cases, seed 3805)', async () => {
    const outcomes = { signedIn: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(params, fc.option(fc.constantFrom(CLOCK.requestId, 'other-id', ''), { nil: undefined }), async (p, saved) => {
        const form = new URLSearchParams({ SAMLResponse: p.SAMLResponse });
        if (p.repeat) form.append('SAMLResponse', p.SAMLResponse);
        if (p.RelayState !== undefined) form.set('RelayState', p.RelayState);
        try {
          const identity = await connector.complete(form, saved, { callbackUrl: CLOCK.acs, wantGroups: true, signal: AbortSignal.timeout(5_000) });
          outcomes.signedIn++;
          expect(identity).to.deep.include(ALICE);
        } catch (err: unknown) {
          expect((err as Error).name, String((err as Error).stack)).to.equal('SamlRefused');
          expect(MESSAGES).to.include((err as Error).message);
          outcomes.refused++;
        }
      }),
      fuzzOptions(3805, 300),
    );
    expect(outcomes.refused).to.be.greaterThan(200);
  });
});
