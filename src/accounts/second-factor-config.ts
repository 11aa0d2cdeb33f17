/**
 * Reads an account's second factor from svc-secret (`mfa.<name>.totp`, `.recoveryCodes`,
 * `.passkeys`, second-factor-keys.ts). A value that does not parse is a problem of the
 * account, as an unreadable token list is: the account keeps its last good version (config.ts).
 */
import type { ScopedSink } from '../config/problems.js';
import type { PasskeyRecord, SecondFactorSettings } from './account.js';
import { secondFactorKeys } from './second-factor-keys.js';

/** The factor as stored, or undefined after reporting what does not parse. */
export function parseSecondFactor(name: string, secret: Readonly<Record<string, string>>, sink: ScopedSink): SecondFactorSettings | undefined {
  const keys = secondFactorKeys(name);
  const totp = secret[keys.totp];
  const recovery = parseList(secret[keys.recoveryCodes], sink, keys.recoveryCodes, (item) => (typeof item === 'string' && item !== '' ? item : undefined), 'a JSON list of strings');
  const passkeys = parseList(secret[keys.passkeys], sink, keys.passkeys, passkeyRecord, 'a JSON list of {id, name, publicKey, counter, createdAt, transports?}');
  if (recovery === undefined || passkeys === undefined) return undefined;
  return { ...(totp !== undefined && totp !== '' ? { totpSealed: totp } : {}), recoveryHashes: recovery, passkeys };
}

function parseList<T>(text: string | undefined, sink: ScopedSink, key: string, item: (raw: unknown) => T | undefined, want: string): T[] | undefined {
  if (text === undefined || text.trim() === '') return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    sink.add([key], `is not JSON (want ${want})`);
    return undefined;
  }
  if (!Array.isArray(raw)) {
    sink.add([key], `must be ${want}`);
    return undefined;
  }
  const out: T[] = [];
  for (const [i, value] of raw.entries()) {
    const parsed = item(value);
    if (parsed === undefined) {
      sink.add([key, i], `must be an entry of ${want}`);
      return undefined;
    }
    out.push(parsed);
  }
  return out;
}

function passkeyRecord(raw: unknown): PasskeyRecord | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const r = raw as Record<string, unknown>;
  if (typeof r['id'] !== 'string' || typeof r['name'] !== 'string' || typeof r['publicKey'] !== 'string') return undefined;
  if (typeof r['counter'] !== 'number' || typeof r['createdAt'] !== 'number') return undefined;
  const transports = r['transports'];
  if (transports !== undefined && (!Array.isArray(transports) || !transports.every((t) => typeof t === 'string'))) return undefined;
  return {
    id: r['id'],
    name: r['name'],
    publicKey: r['publicKey'],
    counter: r['counter'],
    createdAt: r['createdAt'],
    ...(transports !== undefined ? { transports: transports as string[] } : {}),
  };
}
