/**
 * A config dir with local accounts for the accounts/session tests, and small HTTP helpers.
 * Passwords are bcrypt cost 4 here: the cost is read from the hash, so checks are fast and the
 * server code path is the same.
 */
import bcrypt from 'bcryptjs';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { configMap, secret, tempConfigDir } from './manifests.js';

export const SECRET_KEY = 'test-secret-key-0123456789abcdef';
export const PASSWORDS = { admin: 'admin-pass-1', alice: 'alice-pass-1', bob: 'bob-pass-12', carol: 'carol-pass-1', dave: 'dave-pass-12' } as const;

export interface FixtureOptions {
  readonly cm?: Record<string, string>;
  readonly rbac?: Record<string, string>;
  /** More svc-secret keys (a connector's password). */
  readonly secret?: Record<string, string>;
}

/** admin; alice (apiKey, login); bob (login); carol (apiKey only); dave (disabled). */
export function accountsConfigDir(options: FixtureOptions = {}): string {
  const hash = (p: string) => bcrypt.hashSync(p, 4);
  const mtime = '2020-01-01T00:00:00.000Z';
  const cm = {
    'users.session.duration': '2h',
    'accounts.alice': 'apiKey, login',
    'accounts.bob': 'login',
    'accounts.carol': 'apiKey',
    'accounts.dave': 'login',
    'accounts.dave.enabled': 'false',
    ...options.cm,
  };
  const secretText =
    '# svc-secret: kept in git by the operator; svc changes only the keys it must.\n' +
    secret('svc-secret', {
      'server.secretkey': SECRET_KEY,
      'admin.password': hash(PASSWORDS.admin),
      'admin.passwordMtime': mtime,
      'accounts.alice.password': hash(PASSWORDS.alice),
      'accounts.alice.passwordMtime': mtime,
      'accounts.bob.password': hash(PASSWORDS.bob),
      'accounts.carol.password': hash(PASSWORDS.carol),
      'accounts.dave.password': hash(PASSWORDS.dave),
      'operator.note': 'keep me', // an unrelated key that writes must not touch
      ...options.secret,
    }).replace('operator.note: keep me', 'operator.note: keep me # an operator comment');
  return tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', cm),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '', ...options.rbac }),
    'svc-secret.yaml': secretText,
  });
}

/** Rewrites svc-cm with extra/changed keys (as an operator editing the file). */
export function editConfigMap(dir: string, edit: (text: string) => string): void {
  const file = join(dir, 'svc-cm.yaml');
  writeFileSync(file, edit(readFileSync(file, 'utf8')));
}

export async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface Reply {
  readonly status: number;
  readonly body: Record<string, unknown>;
  readonly headers: Headers;
}

export async function call(base: string, method: string, path: string, options: { token?: string; body?: unknown; cookie?: string; origin?: string } = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers['authorization'] = `Bearer ${options.token}`;
  if (options.cookie !== undefined) headers['cookie'] = options.cookie;
  if (options.origin !== undefined) headers['origin'] = options.origin;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}) });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers };
}

export async function login(base: string, username: string, password: string): Promise<string> {
  const reply = await call(base, 'POST', '/api/v1/session', { body: { username, password } });
  if (reply.status !== 200) throw new Error(`login ${username}: ${reply.status} ${JSON.stringify(reply.body)}`);
  return String(reply.body['token']);
}
