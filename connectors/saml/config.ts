/**
 * The `saml` connector's config: Dex's keys (dex.md §2.2), checked strictly. Differences from
 * Dex: `redirectURI` is refused (the ACS URL is always `<url>/api/idp/callback`), and `ca` is PEM
 * text or a secret reference to it, never a file path (`caData` stays base64 PEM, as in Dex).
 * There is no `rootCA`: svc never connects to the IdP, the browser carries both messages.
 */
import { z } from 'zod';
import type { ParseInput } from '../connector.js';
import { base64PemCertificates, flag, httpUrl, isSet, parseTypeConfig, pemCertificates, text, textList, type CrossCheck } from '../config-schema.js';

/** The NameID formats Dex accepts, by full URN; a config may give the last part alone. */
export const NAME_ID_FORMATS = [
  'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:X509SubjectName',
  'urn:oasis:names:tc:SAML:1.1:nameid-format:WindowsDomainQualifiedName',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:encrypted',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:entity',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:kerberos',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent',
  'urn:oasis:names:tc:SAML:2.0:nameid-format:transient',
] as const;

export type NameIdFormat = (typeof NAME_ID_FORMATS)[number];

/** Dex's default: a stable, opaque id per user at the IdP. */
export const DEFAULT_NAME_ID_POLICY_FORMAT: NameIdFormat = 'urn:oasis:names:tc:SAML:2.0:nameid-format:persistent';

/** The full URN for a full or short (`persistent`, `emailAddress`) format; undefined when unknown. */
export function nameIdFormat(value: string): NameIdFormat | undefined {
  return NAME_ID_FORMATS.find((format) => format === value || format.endsWith(`:${value}`));
}

const nameIdPolicyFormat = z.string().transform((value, ctx) => {
  const format = nameIdFormat(value);
  if (format !== undefined) return format;
  ctx.addIssue({ code: 'custom', message: `not a NameID format: one of ${NAME_ID_FORMATS.map((f) => f.split(':').at(-1)).join(', ')}, or its full URN` });
  return z.NEVER;
});

export const samlConfigSchema = z.strictObject({
  /** The IdP's SSO endpoint; the browser is sent there with the AuthnRequest (HTTP-Redirect binding). */
  ssoURL: httpUrl,
  /** The IdP's signing certificates (PEM), trusted directly. */
  ca: pemCertificates.optional(),
  /** The same as base64 PEM. */
  caData: base64PemCertificates.optional(),
  insecureSkipSignatureValidation: flag.default(false),
  /** Sent as the AuthnRequest's Issuer and expected as the Audience. */
  entityIssuer: text.optional(),
  /** The IdP's entity id: every Issuer of the response (Response and Assertion) must be this. */
  ssoIssuer: text.optional(),
  usernameAttr: text,
  emailAttr: text,
  groupsAttr: text.optional(),
  /** Set when the IdP sends all groups as one value: it is split on this. */
  groupsDelim: text.optional(),
  /** The user must be in at least one of these. */
  allowedGroups: textList.optional(),
  /** With allowedGroups: keep only the allowed groups. */
  filterGroups: flag.default(false),
  nameIDPolicyFormat: nameIdPolicyFormat.default(DEFAULT_NAME_ID_POLICY_FORMAT),
});

export type SamlConfig = Readonly<z.output<typeof samlConfigSchema>>;

const checkSamlConfig: CrossCheck = (raw, at) => {
  const ca = isSet(raw, 'ca');
  const caData = isSet(raw, 'caData');
  if (ca && caData) at.add(['caData'], 'cannot be combined with ca: set one of them');
  if (!ca && !caData && raw['insecureSkipSignatureValidation'] !== true) {
    at.add([], 'ca or caData is required (the certificates that sign the IdP responses), unless insecureSkipSignatureValidation: true');
  }
  if (isSet(raw, 'groupsDelim') && !isSet(raw, 'groupsAttr')) at.add(['groupsDelim'], 'needs groupsAttr: it splits that attribute');
};

/** The checked config, or undefined after reporting every problem to `input.at`. */
export function parseSamlConfig(input: ParseInput): SamlConfig | undefined {
  return parseTypeConfig(samlConfigSchema, input, checkSamlConfig);
}
