/**
 * The SAML 2.0 connector proper, over @node-saml/node-saml (loaded only through ./lazy.ts). svc
 * is the service provider: the ACS is `<url>/api/idp/callback` (HTTP-POST binding) and the SP
 * entity id `entityIssuer`, by default the ACS URL.
 *
 * begin() sends the browser to `ssoURL` with an AuthnRequest (HTTP-Redirect binding, RelayState =
 * the transaction's state); the request ID is `saved`, kept server-side, single use. complete()
 * takes the posted SAMLResponse and, in order: refuses wrapping shapes (./document.ts); refuses a
 * Response that answers no request or another one, or names another Destination; has node-saml
 * verify the signature of the Response or of the Assertion against `ca` (one of the two must be
 * signed) and the Audience; then checks the signed assertion's InResponseTo, Recipient and time
 * windows itself (./assertion.ts) and builds the identity (./identity.ts). Every refusal is a
 * SamlRefused whose reason is logged here.
 */
import { randomBytes } from 'node:crypto';
import { generateServiceProviderMetadata, SAML, ValidateInResponseTo, type Profile, type SamlConfig as NodeSamlConfig } from '@node-saml/node-saml';
import type { ConnectorDeps, Identity, LoginContext } from '../connector.js';
import { checkAssertion } from './assertion.js';
import type { SamlConfig } from './config.js';
import { responseShape } from './document.js';
import { REFUSED, SamlRefused } from './errors.js';
import { identityOf, type Attributes } from './identity.js';
import { inSpan } from '../../src/tracing/spans.js';

/** A SAMLResponse larger than this (base64) is refused unread; real ones are a few KiB. */
const MAX_RESPONSE_CHARS = 512 * 1024;
const CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** node-saml with access to its assertion reader, for `insecureSkipSignatureValidation` alone. */
class UncheckedSaml extends SAML {
  read(assertionXml: string, responseXml: string): Promise<{ profile: Profile | null }> {
    return this.processValidlySignedAssertionAsync(assertionXml, responseXml, null);
  }
}

export class SamlConnector {
  private readonly certs: string[];

  constructor(
    private readonly config: SamlConfig,
    private readonly deps: ConnectorDeps,
  ) {
    this.certs = [...(config.ca ?? config.caData ?? '').matchAll(CERTIFICATE)].map((m) => m[0]);
  }

  async begin(state: string, ctx: LoginContext): Promise<{ via: 'redirect'; url: string; saved: string }> {
    // An xs:ID starts with a letter or '_'.
    const id = `_${randomBytes(20).toString('hex')}`;
    const url = await this.saml(ctx.callbackUrl, () => id).getAuthorizeUrlAsync(state, undefined, {});
    return { via: 'redirect', url, saved: id };
  }

  async complete(params: URLSearchParams, saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    try {
      const identity = await this.verify(params, saved, ctx);
      this.deps.log.info({ user: identity.username, groups: identity.groups.length }, 'saml: response verified');
      return identity;
    } catch (err: unknown) {
      if (isRefusal(err)) {
        this.deps.log.warn({ reason: err.reason }, `saml: response refused: ${err.reason}`);
        throw err;
      }
      const reason = err instanceof Error ? err.message : String(err);
      this.deps.log.warn({ reason }, `saml: response refused: ${reason}`);
      throw new SamlRefused(REFUSED.unverified, reason);
    }
  }

  metadata(callbackUrl: string): string {
    return generateServiceProviderMetadata({
      issuer: this.entityId(callbackUrl), callbackUrl, identifierFormat: this.config.nameIDPolicyFormat, wantAssertionsSigned: true,
    });
  }

  private async verify(params: URLSearchParams, saved: string | undefined, ctx: LoginContext): Promise<Identity> {
    const encoded = params.get('SAMLResponse');
    if (encoded === null || encoded === '') throw new SamlRefused(REFUSED.unverified, 'the callback carries no SAMLResponse');
    if (encoded.length > MAX_RESPONSE_CHARS) throw new SamlRefused(REFUSED.unverified, `the SAMLResponse is larger than ${MAX_RESPONSE_CHARS} characters`);
    if (saved === undefined) throw new SamlRefused(REFUSED.otherRequest, 'the login transaction holds no request ID');
    const xml = Buffer.from(encoded, 'base64').toString('utf8');
    const shape = responseShape(xml);
    if ('refused' in shape) throw new SamlRefused(REFUSED.unverified, shape.refused);

    const acs = ctx.callbackUrl;
    const inResponseTo = shape.response.get('InResponseTo');
    if (inResponseTo === undefined) throw new SamlRefused(REFUSED.unsolicited, 'the Response answers no request (no InResponseTo): unsolicited, IdP-initiated responses are refused');
    if (inResponseTo !== saved) throw new SamlRefused(REFUSED.otherRequest, `the Response answers request ${inResponseTo}, not this login's ${saved}`);
    const destination = shape.response.get('Destination');
    if (destination !== undefined && destination !== acs) throw new SamlRefused(REFUSED.unverified, `the Response's Destination is ${destination}, not ${acs}`);
    const ssoIssuer = this.config.ssoIssuer;
    const stranger = shape.issuers.find((issuer) => issuer !== ssoIssuer);
    if (ssoIssuer !== undefined && stranger !== undefined) throw new SamlRefused(REFUSED.unverified, `the response is issued by ${stranger}, not ssoIssuer ${ssoIssuer}`);

    const profile = this.config.insecureSkipSignatureValidation ? await this.readUnchecked(xml, acs) : await this.readSigned(encoded, acs);
    checkAssertion(profile.getAssertion?.(), { requestId: saved, acs, now: this.deps.now() });
    return identityOf(this.config, profile.nameID, (profile.attributes ?? {}) as Attributes, ctx.wantGroups);
  }

  /** Signature (Response or Assertion, against `ca`), one assertion, Audience, status: node-saml. */
  private async readSigned(encoded: string, acs: string): Promise<Profile> {
    const { profile } = await inSpan('saml.validate', {}, () => this.saml(acs).validatePostResponseAsync({ SAMLResponse: encoded }));
    if (profile === null) throw new SamlRefused(REFUSED.unverified, 'the response holds no assertion');
    return profile;
  }

  private async readUnchecked(xml: string, acs: string): Promise<Profile> {
    const assertion = /<(?:[A-Za-z_][\w.-]*:)?Assertion[\s>][\s\S]*<\/(?:[A-Za-z_][\w.-]*:)?Assertion>/.exec(xml)?.[0];
    if (assertion === undefined) throw new SamlRefused(REFUSED.unverified, 'the response holds no assertion');
    const { profile } = await new UncheckedSaml(this.options(acs)).read(assertion, xml);
    if (profile === null) throw new SamlRefused(REFUSED.unverified, 'the response holds no assertion');
    return profile;
  }

  private entityId(acs: string): string {
    return this.config.entityIssuer ?? acs;
  }

  private saml(acs: string, generateUniqueId?: () => string): SAML {
    return new SAML({ ...this.options(acs), ...(generateUniqueId !== undefined ? { generateUniqueId } : {}) });
  }

  private options(acs: string): NodeSamlConfig {
    return {
      // insecureSkipSignatureValidation without ca: node-saml wants a certificate it never uses then.
      idpCert: this.certs.length > 0 ? this.certs : 'unused',
      issuer: this.entityId(acs),
      audience: this.entityId(acs),
      callbackUrl: acs,
      entryPoint: this.config.ssoURL,
      identifierFormat: this.config.nameIDPolicyFormat,
      // One of the two must be signed: node-saml checks the assertion whenever the Response is not.
      wantAuthnResponseSigned: false,
      wantAssertionsSigned: false,
      // Times and InResponseTo are checked in ./assertion.ts against the connector's clock.
      acceptedClockSkewMs: -1,
      validateInResponseTo: ValidateInResponseTo.never,
      disableRequestedAuthnContext: true,
    };
  }
}

/** By name: under the test runner a dynamically imported module can be a second copy. */
function isRefusal(err: unknown): err is SamlRefused {
  return err instanceof Error && err.name === 'SamlRefused' && typeof (err as Partial<SamlRefused>).reason === 'string';
}
