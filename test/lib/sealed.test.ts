import { expect } from 'chai';
import { createCipheriv, createDecipheriv, hkdfSync } from 'node:crypto';
import { createSealer } from '../../src/lib/sealed.js';

const KEY = 'key-one-0123456789';
/** The construction, written out apart from svc: HKDF-SHA256 key, AES-256-GCM, iv | tag | ciphertext, base64url. */
const derived = Buffer.from(hkdfSync('sha256', KEY, 'svc-sso', 'svc idp-account v1', 32));
function sealByHand(plain: string, aad: string): string {
  const iv = Buffer.alloc(12, 7);
  const cipher = createCipheriv('aes-256-gcm', derived, iv).setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
}
function openByHand(sealed: string, aad: string): string {
  const raw = Buffer.from(sealed, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', derived, raw.subarray(0, 12)).setAAD(Buffer.from(aad));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}
/** CPU µs per call of `f`, best of three rounds. */
function cpuPerCall(f: () => unknown, n = 3000): number {
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const start = process.cpuUsage();
    for (let i = 0; i < n; i++) f();
    const used = process.cpuUsage(start);
    best = Math.min(best, (used.user + used.system) / n);
  }
  return best;
}

describe('sealed values', () => {
  it('open what was sealed with the same key and purpose, and nothing else', () => {
    const sealer = createSealer('key-one-0123456789', 'login-state');
    const sealed = sealer.seal('{"state":"s"}');
    expect(sealed).to.not.include('state');
    expect(sealer.open(sealed)).to.equal('{"state":"s"}');
    expect(createSealer('key-two-0123456789', 'login-state').open(sealed)).to.equal(undefined);
    expect(createSealer('key-one-0123456789', 'refresh-token').open(sealed)).to.equal(undefined);
    const middle = Math.floor(sealed.length / 2);
    const altered = `${sealed.slice(0, middle)}${sealed[middle] === 'A' ? 'B' : 'A'}${sealed.slice(middle + 1)}`;
    expect(sealer.open(altered)).to.equal(undefined);
    expect(sealer.open('')).to.equal(undefined);
    expect(sealer.seal('x')).to.not.equal(sealer.seal('x'));
  });

  it('open a value sealed with a context only with that context', () => {
    const sealer = createSealer('key-one-0123456789', 'idp-account');
    const sealed = sealer.seal('{"user":"root"}', 'sub-root');
    expect(sealer.open(sealed, 'sub-root')).to.equal('{"user":"root"}');
    expect(sealer.open(sealed, 'sub-mallory')).to.equal(undefined);
    expect(sealer.open(sealed)).to.equal(undefined);
    expect(sealer.open(sealer.seal('x'), 'sub-root')).to.equal(undefined);
  });

  it('keep the format: a value sealed by hand opens, and a sealed value opens by hand (values stored before stay readable)', () => {
    const sealer = createSealer(KEY, 'idp-account');
    const plain = '{"user":"root","groups":["a","ü"]}';
    expect(sealer.open(sealByHand(plain, 'idp-account\0sub-root'), 'sub-root')).to.equal(plain);
    expect(openByHand(sealer.seal(plain, 'sub-root'), 'idp-account\0sub-root')).to.equal(plain);
    expect(openByHand(sealer.seal(''), 'idp-account')).to.equal('');
  });

  it('never use an IV twice, across many draws of the IV pool', () => {
    const sealer = createSealer(KEY, 'login-state');
    const ivs = new Set<string>();
    for (let i = 0; i < 3000; i++) ivs.add(Buffer.from(sealer.seal('x'), 'base64url').subarray(0, 12).toString('hex'));
    expect(ivs.size).to.equal(3000);
  });

  it('remembering opened values changes no answer: another context, no context, an altered or another key\'s value', () => {
    const sealer = createSealer(KEY, 'idp-account', { rememberOpened: 10 });
    const sealed = sealer.seal('{"user":"root"}', 'sub-root');
    const bare = sealer.seal('{"user":"root"}');
    for (let i = 0; i < 2; i++) {
      expect(sealer.open(sealed, 'sub-root')).to.equal('{"user":"root"}');
      expect(sealer.open(sealed, 'sub-mallory')).to.equal(undefined);
      expect(sealer.open(sealed)).to.equal(undefined);
      expect(sealer.open(bare)).to.equal('{"user":"root"}');
      expect(sealer.open(bare, '')).to.equal(undefined);
      expect(sealer.open(`${sealed.slice(0, -2)}AA`, 'sub-root')).to.equal(undefined);
    }
    expect(createSealer('key-two-0123456789', 'idp-account', { rememberOpened: 10 }).open(sealed, 'sub-root')).to.equal(undefined);
    // Past the bound, the oldest are forgotten and opened again: the same answer.
    const many = Array.from({ length: 30 }, (_, i) => sealer.seal(`v${i}`, 'c'));
    for (let round = 0; round < 2; round++) many.forEach((v, i) => expect(sealer.open(v, 'c')).to.equal(`v${i}`));
  });

  it('open a remembered value without decrypting it again (at most half the CPU of an open)', () => {
    const plain = createSealer(KEY, 'idp-record-id');
    const remembering = createSealer(KEY, 'idp-record-id', { rememberOpened: 10 });
    const sealed = plain.seal('x'.repeat(43), 'idp:Grant:ref');
    expect(cpuPerCall(() => remembering.open(sealed, 'idp:Grant:ref'))).to.be.below(cpuPerCall(() => plain.open(sealed, 'idp:Grant:ref')) / 2);
  });
});
