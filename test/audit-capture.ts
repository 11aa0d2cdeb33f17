/**
 * Mocha root hook plugin (.mocharc.json `require`): no secret appears in any audit line the suite
 * produces. Every test server's trail (helpers/server.ts) and every collecting trail
 * (helpers/audit.ts) appends its lines, as the sink would write them, to one capture file per
 * process (SVC_TEST_AUDIT_CAPTURE, set here when unset); so parallel runs check per process.
 * After each root suite (each file, in parallel mode) the lines are checked and the file emptied:
 *
 * - no known secret: the fixtures' passwords and keys, every string a test registers with
 *   registerAuditSecret(), the password literals of the test sources (`password: '…'` (not `passwordMtime`, a time) and the
 *   like, six characters or more), and every bearer token and session cookie presented to a
 *   server running in this process (read from the request's headers);
 * - no shape of a secret: a JWT, a bcrypt hash, a PEM block;
 * - every line matches docs/audit.schema.json.
 *
 * Every span a stand-in OTLP receiver gets (helpers/otlp-receiver.ts) goes through the same two
 * searches (known secrets, shapes of secrets), from a capture file of its own.
 */
import { appendFileSync, existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { Server, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { toEcs } from '../src/audit/ecs.js';
import type { AuditEvent, AuditTrail } from '../src/audit/trail.js';
import { LOGIN_REASONS } from '../src/session/login-outcomes.js';
import { PASSWORDS, SECRET_KEY } from './helpers/accounts-fixture.js';
import { validAuditLine } from './helpers/audit-schema.js';

/** A directory for the capture files (one per process: parallel workers inherit the variable); the system's temp dir by default. */
export const CAPTURE_VARIABLE = 'SVC_TEST_AUDIT_CAPTURE';
const captureFile = (): string => join(process.env[CAPTURE_VARIABLE] ?? tmpdir(), `svc-audit-capture-${process.pid}.ndjson`);

// Shared through globalThis: the plugin may be loaded once by mocha and once more by a test's import.
const SHARED = Symbol.for('svc.test.audit-capture');
type Shared = { secrets: Set<string>; literals?: string[] };
const shared: Shared = ((globalThis as Record<symbol, Shared | undefined>)[SHARED] ??= (() => {
  writeFileSync(captureFile(), '', { mode: 0o600 });
  return { secrets: new Set<string>([...Object.values(PASSWORDS), SECRET_KEY]) };
})());
const { secrets } = shared;
/** Too short or too common to tell a leak from a word (`wrong-password` is also a login reason). */
const MIN_SECRET_LENGTH = 6;
const NOT_SECRETS = new Set<string>(LOGIN_REASONS);

/** A value a test uses that must never reach an audit line. */
export function registerAuditSecret(value: string): void {
  if (value.length >= MIN_SECRET_LENGTH && !NOT_SECRETS.has(value)) secrets.add(value);
}

/** One event, as the sink writes it, appended to this process's capture file. */
export function captureAuditEvent(event: AuditEvent): void {
  appendFileSync(captureFile(), `${JSON.stringify(toEcs(event, Date.now(), { name: 'svc', version: 'test' }))}\n`);
}

/** A trail that writes to the capture file only: what a test server gets when its test gives none. */
export const CAPTURE_TRAIL: AuditTrail = { record: captureAuditEvent };

// Tokens presented to in-process servers: opaque ones (the provider's access and refresh tokens) have no shape to match.
const patched = Symbol.for('svc.test.audit-capture.emit');
if (!(patched in Server.prototype)) {
  const originalEmit = Server.prototype.emit;
  Object.defineProperty(Server.prototype, patched, { value: true });
  Server.prototype.emit = function emitSeeingTokens(this: Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'request') learnTokens(args[0] as IncomingMessage);
    return originalEmit.apply(this, [event, ...args] as Parameters<typeof originalEmit>);
  } as typeof Server.prototype.emit;
}

function learnTokens(req: IncomingMessage): void {
  const auth = req.headers.authorization;
  if (auth !== undefined) registerAuditSecret(auth.replace(/^(Bearer|Basic)\s+/i, ''));
  const cookie = req.headers.cookie;
  if (cookie !== undefined) for (const m of cookie.matchAll(/(?:^|;\s*)svc\.token=([^;]+)/g)) registerAuditSecret(m[1] as string);
}

/** Password-like literals of the test sources, read once. */
function literalSecrets(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts')) {
        for (const m of readFileSync(path, 'utf8').matchAll(/(?:password(?!Mtime)\w*|passwd|clientSecret|client_secret)['"]?\s*[:=]\s*'([^'\n]+)'/gi)) found.push(m[1] as string);
      }
    }
  };
  walk(fileURLToPath(new URL('.', import.meta.url)));
  return found;
}

const SHAPES: readonly [string, RegExp][] = [
  ['a JWT', /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*/],
  ['a bcrypt hash', /\$2[aby]\$\d\d\$/],
  ['a PEM block', /-----BEGIN /],
];

/** Every problem of the captured lines; the capture file is emptied. */
export function checkCapturedAudit(): string[] {
  return [...checkCaptured(captureFile(), 'an audit line', validAuditLine), ...checkCaptured(spanCaptureFile(), 'a span', () => undefined)];
}

function checkCaptured(file: string, where: string, valid: (line: string) => void): string[] {
  if (!existsSync(file)) return [];
  const text = readFileSync(file, 'utf8');
  writeFileSync(file, '');
  if (text === '') return [];
  if (shared.literals === undefined) {
    shared.literals = literalSecrets();
    for (const l of shared.literals) registerAuditSecret(l);
  }
  const problems: string[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    try {
      valid(line);
    } catch (err: unknown) {
      problems.push((err as Error).message);
    }
    for (const [what, shape] of SHAPES) if (shape.test(line)) problems.push(`${what} in ${where}: ${line}`);
    for (const secret of secrets) if (line.includes(secret)) problems.push(`a secret the tests used (${secret.length} characters, starting '${secret.slice(0, 2)}') in ${where}: ${line}`);
  }
  return problems;
}

/** The spans a stand-in OTLP receiver got in this process (helpers/otlp-receiver.ts), checked as the audit lines are. */
const spanCaptureFile = (): string => join(process.env[CAPTURE_VARIABLE] ?? tmpdir(), `svc-span-capture-${process.pid}.ndjson`);

/** One exported span, as the receiver read it (JSON), for the secret search after the file. */
export function captureSpan(line: string): void {
  appendFileSync(spanCaptureFile(), `${line}\n`, { mode: 0o600 });
}

export const mochaHooks = {
  afterAll(this: unknown): void {
    const problems = checkCapturedAudit();
    if (problems.length > 0) throw new Error(`audit trail check: ${problems.length} problem(s):\n${problems.slice(0, 20).join('\n')}`);
  },
};
