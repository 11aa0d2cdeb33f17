/**
 * `npm run bench:key-objects`: what an HMAC or a cipher costs on the request paths that use a
 * derived key (the identity provider's id refs, sealed records, the provider's cookie
 * signatures), each against the same operation with a key object, and beside it the same
 * operation with the raw key that Node 24 checks by trying it as a KeyObject and a CryptoKey,
 * two thrown errors a call (src/lib/secret-key.ts). Printed as ratios measured in the same run,
 * so the host's speed cancels out; the goal is below 2 x (about one operation with a key object),
 * where a raw key costs 3-10 x.
 */
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync } from 'node:crypto';
import { createIdRefs } from '../src/idp/storage/adapter-keys.js';
import { createCookieKeys } from '../src/lib/cookie-keys.js';
import { createSealer } from '../src/lib/sealed.js';
import { costRatio } from './cpu-cost.js';

const GOAL = 2;

interface Figure {
  readonly name: string;
  readonly svc: number;
  readonly rawKey: number;
}

function idRefs(): Figure {
  const id = 'AbCdEf0123456789AbCdEf0123456789AbCdEf01234';
  const ref = createIdRefs('server-key-0123456789');
  const raw = Buffer.from(hkdfSync('sha256', 'server-key-0123456789', 'svc-idp', 'svc idp-record-id v1', 32));
  const keyObject = createSecretKey(raw);
  const reference = () => createHmac('sha256', keyObject).update(id, 'utf8').digest('base64url');
  return { name: 'id ref (HMAC-SHA256)', svc: costRatio(() => ref(id), reference), rawKey: costRatio(() => createHmac('sha256', raw).update(id, 'utf8').digest('base64url'), reference) };
}

function sealedRecords(): Figure {
  const sealer = createSealer('key-one-0123456789', 'idp-account');
  const plain = JSON.stringify({ connectorId: 'corp', identity: { userId: 'u'.repeat(40), groups: ['g'.repeat(200)] } });
  const raw = Buffer.alloc(32, 7);
  const key = createSecretKey(raw);
  const iv = Buffer.alloc(12, 1);
  const sealed = sealer.seal(plain, 'sub');
  const roundTrip = (k: Buffer | typeof key) => () => {
    const cipher = createCipheriv('aes-256-gcm', k, iv);
    Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const decipher = createDecipheriv('aes-256-gcm', k, iv).setAuthTag(cipher.getAuthTag());
    decipher.update(Buffer.from(sealed, 'base64url'));
    try {
      decipher.final();
    } catch {
      // another text under the same tag: refused, as expected
    }
  };
  return { name: 'sealed record (AES-256-GCM seal + open)', svc: costRatio(() => sealer.open(sealer.seal(plain, 'sub'), 'sub'), roundTrip(key)), rawKey: costRatio(roundTrip(raw), roundTrip(key)) };
}

function cookieSignatures(): Figure {
  const keys = createCookieKeys(['new-key-0123456789']);
  const data = '_session=AbCdEf0123456789';
  const digest = keys.sign(data);
  const raw = 'new-key-0123456789';
  const key = createSecretKey(Buffer.from(raw));
  const reference = () => createHmac('sha1', key).update(data, 'utf8').digest('base64url');
  return { name: 'cookie signature check (HMAC-SHA1)', svc: costRatio(() => keys.index(data, digest), reference), rawKey: costRatio(() => createHmac('sha1', raw).update(data, 'utf8').digest('base64url'), reference) };
}

let failed = false;
for (const figure of [idRefs(), sealedRecords(), cookieSignatures()]) {
  const met = figure.svc < GOAL;
  failed ||= !met;
  console.log(`${figure.name.padEnd(42)} svc ${figure.svc.toFixed(2)} x  raw key ${figure.rawKey.toFixed(2)} x  (1 = the operation with a key object; goal < ${GOAL} x) ${met ? 'met' : 'NOT MET'}`);
}
process.exitCode = failed ? 1 : 0;
