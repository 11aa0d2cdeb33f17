/**
 * svc with the bundled provider for the foreign clients' tests (test/e2e/idp-foreign-*.test.ts):
 * idp.config's staticClients as the test gives them, one password connector (a test double, in
 * process) with one user, and the person's side of a login driven by the test's own HTTP client:
 * the password form, the consent a public client's loopback redirect asks, the device page.
 * What a foreign client got is checked against the provider itself: the ID token's signature
 * against the JWKS, an access token at userinfo.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import YAML from 'yaml';
import type { Identity } from '../../connectors/connector.js';
import { devicePasswordForm } from './device-flow.js';
import { fakePasswordConnector, singleConnector, type FakePasswordConnector } from './fake-password-connector.js';
import { FormBrowser, isPage, type Page } from './form-browser.js';
import { configMap, secret, tempConfigDir } from './manifests.js';
import { freePort } from './peers.js';
import { startTestServer, type TestServer } from './server.js';

export const USER = { username: 'alice', password: 'alice-password-123' } as const;
export const IDENTITY: Identity = { userId: 'u-alice', username: 'alice', email: 'alice@example.org', emailVerified: true, groups: ['admins'] };

export interface ForeignIdp {
  readonly url: string;
  readonly issuer: string;
  readonly server: TestServer;
  /** The one connector: its refreshes() counts the refresh grants that reached it. */
  readonly connector: FakePasswordConnector;
  close(): Promise<void>;
}

/** `staticClients` as idp.config takes them; `secrets` join svc-secret (for `$<key>` references). */
export async function startForeignIdp(staticClients: readonly unknown[], secrets: Readonly<Record<string, string>> = {}): Promise<ForeignIdp> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const connectors = [{ type: 'ldap', id: 'directory', name: 'Directory', config: { host: 'ldap.invalid', userSearch: { baseDN: 'ou=people', username: 'uid', idAttr: 'uid' } } }];
  const dir = tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors, staticClients }) }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
    'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'foreign-clients-e2e-secret-key-0123456789', ...secrets }),
  });
  const connector = fakePasswordConnector({ [USER.username]: { password: USER.password, identity: IDENTITY } });
  try {
    const server = await startTestServer(dir, { port, idp: { connectors: () => singleConnector('directory', connector) } });
    return {
      url, issuer: `${url}/api/idp`, server, connector,
      async close() {
        await server.close(1000);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err: unknown) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function page(result: URL | Page, what: string): Page {
  if (!isPage(result)) throw new Error(`expected ${what}, got a redirect to ${result.href}`);
  return result;
}

/**
 * A person at the authorization URL: the password form, then (for a public client's loopback
 * redirect) the consent page answered Allow; returns the redirect back to `redirectPrefix`.
 */
export async function logInAt(authorizationUrl: string, redirectPrefix: string, browser = new FormBrowser()): Promise<URL> {
  const form = page(await browser.go(authorizationUrl, redirectPrefix), 'the password form');
  expect(form.html, form.html.slice(0, 400)).to.include('name="password"');
  let result = await browser.submit(form, { username: USER.username, password: USER.password }, redirectPrefix);
  if (isPage(result) && result.html.includes('name="decision"')) result = await browser.submit(result, { decision: 'allow' }, redirectPrefix);
  if (isPage(result)) throw new Error(`expected the redirect back, got ${result.status}: ${result.html.slice(0, 400)}`);
  return result;
}

/** A person approving a device code: the code typed on svc's device page, the device confirmed, logged in. */
export async function approveDevice(verificationUri: string, userCode: string): Promise<void> {
  const { browser, form } = await devicePasswordForm(verificationUri, userCode);
  const done = page(await browser.submit(form, { username: USER.username, password: USER.password }, 'about:'), 'the device page');
  expect(done.html).to.include('You are logged in on your device');
}

/** The ID token's claims, its signature checked against the provider's JWKS, with its issuer and audience. */
export async function verifiedIdToken(issuer: string, idToken: string, audience: string): Promise<JWTPayload> {
  const jwks = createRemoteJWKSet(new URL(`${issuer}/jwks`));
  const { payload } = await jwtVerify(idToken, jwks, { issuer, audience });
  return payload;
}

/** What userinfo answers to `accessToken` (status and claims). */
export async function userinfo(issuer: string, accessToken: string): Promise<{ status: number; claims: Record<string, unknown> }> {
  const res = await fetch(`${issuer}/me`, { headers: { authorization: `Bearer ${accessToken}` } });
  return { status: res.status, claims: res.ok ? ((await res.json()) as Record<string, unknown>) : {} };
}
