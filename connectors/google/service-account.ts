/**
 * A Google service account's JSON key file (the one the Cloud console downloads), read from its
 * text: what the JWT grant of ./access-token.ts needs and nothing else. The key is checked when
 * the configuration is parsed, so a truncated paste or a key of another kind fails `validate`
 * and not a login. A message never quotes the file: it holds a private key.
 */
import { createPrivateKey, type KeyObject } from 'node:crypto';

/** Where Google's key files send the grant (their `token_uri`) when the file names none. */
export const DEFAULT_TOKEN_URI = 'https://oauth2.googleapis.com/token';

export interface ServiceAccountKey {
  /** The service account: the JWT's `iss`. */
  readonly clientEmail: string;
  /** PKCS#8 PEM of an RSA key: signs the JWT (RS256). */
  readonly privateKeyPem: string;
  /** The JWT header's `kid`, when the file names it. */
  readonly privateKeyId?: string;
  /** The token endpoint: the JWT's `aud` and where it is exchanged. */
  readonly tokenUri: string;
}

export type KeyReading = { readonly ok: true; readonly key: ServiceAccountKey } | { readonly ok: false; readonly problem: string };

const field = (doc: Readonly<Record<string, unknown>>, name: string): string | undefined => {
  const value = doc[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
};

function rsaKey(pem: string): KeyObject | undefined {
  try {
    const key = createPrivateKey(pem);
    return key.asymmetricKeyType === 'rsa' ? key : undefined;
  } catch {
    return undefined;
  }
}

/** The key file's fields, or the sentence saying what is wrong with it (never its content). */
export function readServiceAccountKey(text: string): KeyReading {
  const wrong = (why: string): KeyReading => ({ ok: false, problem: `must be the content of a service account's JSON key file: ${why}` });
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return wrong('it is not JSON (a file path is not taken: put the file itself in a Secret)');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return wrong('it is not a JSON object');
  const entries = doc as Readonly<Record<string, unknown>>;
  if (entries['type'] !== 'service_account') return wrong('its "type" is not "service_account"');
  const clientEmail = field(entries, 'client_email');
  if (clientEmail === undefined || !clientEmail.includes('@')) return wrong('it has no "client_email"');
  const privateKeyPem = field(entries, 'private_key');
  if (privateKeyPem === undefined || rsaKey(privateKeyPem) === undefined) return wrong('its "private_key" is not an RSA private key in PEM');
  const tokenUri = field(entries, 'token_uri') ?? DEFAULT_TOKEN_URI;
  if (!URL.canParse(tokenUri) || !/^https?:$/.test(new URL(tokenUri).protocol)) return wrong('its "token_uri" is not an http(s) URL');
  const privateKeyId = field(entries, 'private_key_id');
  return { ok: true, key: { clientEmail, privateKeyPem, tokenUri, ...(privateKeyId !== undefined ? { privateKeyId } : {}) } };
}
