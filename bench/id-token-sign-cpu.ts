/**
 * The CPU of one RS256 ID token signature, as every refresh grant makes one (svc's provider and
 * oidc-provider alone alike): jose's CompactSign with a 2048-bit RSA key, as oidc-provider signs.
 * Prints the CPU per signature of the main thread and of the whole process, and the same for
 * node:crypto's synchronous sign in the same run: jose signs through WebCrypto, whose work runs on
 * libuv's thread pool, so it costs cores but not the event loop.
 * Usage: npx tsx bench/id-token-sign-cpu.ts [signatures, default 2000] [in flight, default 8]
 */
import { generateKeyPairSync, sign } from 'node:crypto';
import { CompactSign } from 'jose';

const SIGNATURES = Number(process.argv[2] ?? 2000);
const IN_FLIGHT = Number(process.argv[3] ?? 8);

const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
// An ID token's size: sub, the usual claims, a few groups, sid.
const payload = new TextEncoder().encode(JSON.stringify({
  iss: 'https://svc.example.org/api/idp', sub: 'corp:alice', aud: 'svc', exp: 1_900_000_000, iat: 1_800_000_000,
  auth_time: 1_800_000_000, at_hash: 'x'.repeat(22), sid: 'y'.repeat(43), email: 'alice@example.org', email_verified: true,
  name: 'Alice', preferred_username: 'alice', groups: ['admins', 'devs', 'ops'],
}));

interface Cost { readonly mainUs: number; readonly processUs: number; readonly wallUs: number }

async function measure(n: number, run: () => Promise<unknown>): Promise<Cost> {
  const thread0 = process.threadCpuUsage();
  const process0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let done = 0; done < n; done += IN_FLIGHT) await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, n - done) }, run));
  const thread1 = process.threadCpuUsage(thread0);
  const process1 = process.cpuUsage(process0);
  return {
    mainUs: (thread1.user + thread1.system) / n,
    processUs: (process1.user + process1.system) / n,
    wallUs: ((performance.now() - wall0) * 1000) / n,
  };
}

const jose = () => new CompactSign(payload).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(privateKey);
const synchronous = () => Promise.resolve(sign('sha256', payload, privateKey));

await measure(100, jose);
await measure(100, synchronous);
const viaJose = await measure(SIGNATURES, jose);
const viaSync = await measure(SIGNATURES, synchronous);
const fmt = (c: Cost) => `main thread ${c.mainUs.toFixed(0)} µs, whole process ${c.processUs.toFixed(0)} µs, wall ${c.wallUs.toFixed(0)} µs`;
console.log(`RS256 signatures, 2048-bit key, ${SIGNATURES} each, ${IN_FLIGHT} in flight, Node ${process.version}`);
console.log(`jose (WebCrypto, as oidc-provider): ${fmt(viaJose)} per signature`);
console.log(`node:crypto sign (synchronous):     ${fmt(viaSync)} per signature`);
console.log(`share of the signature's CPU off the event loop with jose: ${(100 * (1 - viaJose.mainUs / viaJose.processUs)).toFixed(0)} %`);
