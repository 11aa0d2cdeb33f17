/**
 * An editor of svc-cm points LDAP connectors at a listener of theirs and names svc's own keys as
 * the bind password (`$server.secretkey`, `$admin.password`, `$svc-initial-admin-secret:password`,
 * `$svc-secret:server.secretkey`, `$idp.signingKeys`). The listener is a plain TCP server that
 * records every byte an LDAP bind sends it. Each of those connectors must be refused (a
 * configuration problem naming the key, in the server's log) and never used, so no bind reaches
 * the listener with any of the values; a connector with a configuration key of its own (the
 * positive control) binds there with its password, which shows the listener would have caught one.
 */
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import YAML from 'yaml';
import { waitFor } from '../helpers/accounts-fixture.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { idpSvcAddress } from '../helpers/idp-svc.js';
import { idpConfigDir, secret } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'own-secrets-e2e-server-key-0123456789';
const INITIAL_PASSWORD = 'own-secrets-e2e-initial-admin-pw';
const READER_PASSWORD = 'own-secrets-e2e-reader-pw';
const ADMIN_HASH = bcrypt.hashSync('own-secrets-e2e-admin-pw', 4);

/** The bind password each refused connector names, by connector id. */
const OWN: Readonly<Record<string, string>> = {
  'server-key': '$server.secretkey',
  'server-key-named': '$svc-secret:server.secretkey',
  'admin-hash': '$admin.password',
  'initial-admin': '$svc-initial-admin-secret:password',
  'signing-keys': '$idp.signingKeys',
};

/** Records what every connection sends, then closes it: a bind is in the first bytes. */
async function capturingListener(): Promise<{ server: Server; port: number; received: () => string }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      socket.destroy();
    });
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return { server, port: address.port, received: () => Buffer.concat(chunks).toString('latin1') };
}

/** A key of the Secret in `text`, from stringData or (base64) data. */
function storedValue(text: string, key: string): string {
  const doc = YAML.parse(text) as { data?: Record<string, string>; stringData?: Record<string, string> };
  const plain = doc.stringData?.[key];
  if (plain !== undefined) return plain;
  const encoded = doc.data?.[key];
  if (encoded === undefined) throw new Error(`svc-secret has no ${key}`);
  return Buffer.from(encoded, 'base64').toString('utf8');
}

function connector(id: string, port: number, bindPW: string): Record<string, unknown> {
  return {
    type: 'ldap', id, name: id,
    config: { host: `127.0.0.1:${port}`, insecureNoSSL: true, bindDN: 'cn=reader,dc=example,dc=org', bindPW, userSearch: { baseDN: 'ou=people,dc=example,dc=org', username: 'uid', idAttr: 'uid' } },
  };
}

describe("e2e: an editor of svc-cm cannot have svc send its own secrets to the editor's LDAP host", function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let listener: Awaited<ReturnType<typeof capturingListener>>;
  let svc: TestServer;
  let dir: string;
  let url: string;

  before(async function () {
    listener = await capturingListener();
    const at = await idpSvcAddress();
    url = at.url;
    const control = connector('control', listener.port, '$ldap.bindPW');
    const configDir = (connectors: Record<string, unknown>[]) => idpConfigDir({
      url, connectors, extensions: [], backendUrl: 'http://127.0.0.1:9', policy: '',
      secrets: { 'server.secretkey': SECRET_KEY, 'admin.password': ADMIN_HASH, 'ldap.bindPW': READER_PASSWORD },
    });
    dir = configDir([control]);
    await writeFile(join(dir, 'svc-initial-admin-secret.yaml'), secret('svc-initial-admin-secret', { password: INITIAL_PASSWORD }));
    // The refused connectors come as an edit of a running replica: one started on them would serve nothing (main/start-gate.ts).
    svc = await startTestServer(dir, { port: at.port });
    const edited = configDir([control, ...Object.entries(OWN).map(([id, ref]) => connector(id, listener.port, ref))]);
    try {
      await writeFile(join(dir, '.svc-cm.tmp'), await readFile(join(edited, 'svc-cm.yaml'), 'utf8'));
      await rename(join(dir, '.svc-cm.tmp'), join(dir, 'svc-cm.yaml'));
    } finally {
      await rm(edited, { recursive: true, force: true });
    }
    await waitFor(() => svc.services.settings.problems().length === Object.keys(OWN).length, 'the edit with the refused connectors to apply');
  });

  after(async function () {
    await svc?.close(1000);
    listener?.server.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** Tries a login through connector `id` as a browser without script would; the page it ends on. */
  async function tryLogin(browser: FormBrowser, uid: string, id: string): Promise<number> {
    const res = await browser.request(`${url}/api/idp/interaction/${uid}/connector/${id}`);
    const html = await res.text();
    if (res.status !== 200) return res.status;
    const done = await browser.submit({ url: res.url, status: res.status, html }, { username: 'bob', password: 'bob-pw' }, `${url}/auth/callback`);
    return isPage(done) ? done.status : 302;
  }

  it('reports each refused reference, uses none of those connectors, and no bind carries any of their values', async function () {
    const rp = await svcWebClient(url, SECRET_KEY);
    const { href } = await authorizationRequest(rp, `${url}/auth/callback`, 'openid');
    const browser = new FormBrowser();
    const chooser = await browser.go(href, `${url}/auth/callback`);
    if (!isPage(chooser)) throw new Error('expected the login page');
    const uid = /\/interaction\/([^/?]+)/.exec(chooser.url)?.[1] ?? '';
    expect(chooser.html, 'the chooser offers the control connector').to.contain('/connector/control');

    const statuses: Record<string, number> = {};
    for (const id of ['control', ...Object.keys(OWN)]) statuses[id] = await tryLogin(browser, uid, id);

    const received = listener.received();
    expect(received, 'the control connector bound at the listener').to.contain(READER_PASSWORD);
    const signingKeys = storedValue(await readFile(join(dir, 'svc-secret.yaml'), 'utf8'), 'idp.signingKeys');
    const privateParts = (JSON.parse(signingKeys) as { jwk: { d: string } }[]).map((k) => k.jwk.d);
    for (const value of [SECRET_KEY, ADMIN_HASH, INITIAL_PASSWORD, ...privateParts]) expect(received).not.to.contain(value);
    for (const id of Object.keys(OWN)) {
      expect(statuses[id], `connector ${id} is not offered`).to.equal(404);
      expect(chooser.html).not.to.contain(`/connector/${id}"`);
    }

    const logged = svc.logs();
    for (const [id, ref] of Object.entries(OWN)) {
      const [secretName, key] = ref.includes(':') ? ref.slice(1).split(':') : ['svc-secret', ref.slice(1)];
      const index = ['control', ...Object.keys(OWN)].indexOf(id);
      expect(logged, id).to.contain(`configuration problem: svc-cm: idp.config: connectors[${index}].config.bindPW: references key '${key}' of Secret '${secretName}', which svc keeps for itself`);
    }
  });
});
