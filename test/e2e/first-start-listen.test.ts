/**
 * The first start on another port than the default: svc-cm's url is written from --listen, the
 * start line names listen and url apart, and an SSO login (LDAP connector, real slapd) added
 * afterwards comes back to this listener. A url that points at another loopback port is warned about.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { waitFor } from '../helpers/accounts-fixture.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { secret } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { ROOT, entryArgs, SERVER_ENTRY } from '../helpers/run.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const FIXTURES = fileURLToPath(new URL('../../fixtures/', import.meta.url));

interface Running {
  readonly child: ChildProcess;
  logs(): string;
}

async function startSvc(dir: string, port: number): Promise<Running> {
  const child = spawn(process.execPath, [...entryArgs(SERVER_ENTRY), '--config', dir, '--listen', `127.0.0.1:${port}`], {
    cwd: ROOT, env: { ...process.env, SVC_REDIS_URL: '', SVC_LISTEN: '' },
  });
  let logs = '';
  child.stdout?.on('data', (d: Buffer) => (logs += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (logs += d.toString()));
  const deadline = Date.now() + 20_000;
  while (!logs.includes('svc listening')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL'); // not left running (with its config dir) when the test gives up on it
      throw new Error(`svc did not start: ${logs}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, logs: () => logs };
}

async function stop(running: Running | undefined): Promise<void> {
  if (running === undefined || running.child.exitCode !== null) return;
  running.child.kill('SIGTERM');
  await new Promise((r) => running.child.once('close', r));
}

function logLine(logs: string, msg: string): Record<string, unknown> {
  const line = logs.split('\n').find((l) => l.includes(`"msg":"${msg}`));
  if (line === undefined) throw new Error(`no log line '${msg}' in: ${logs}`);
  return JSON.parse(line) as Record<string, unknown>;
}

describe('e2e: the first start with --listen on another port', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let slapd: Peer;
  let ldapPort: number;
  let root: string;
  let running: Running | undefined;

  before(async function () {
    ldapPort = await freePort();
    slapd = await startPeer('start-slapd.sh', [String(ldapPort)], { LDAPS: '0', USERS_LDIF: join(FIXTURES, 'ldap', 'ldap-connector.ldif') });
    root = makeTempDir('svc-first-listen-');
  });

  afterEach(async () => stop(running));

  after(async function () {
    await slapd?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it('writes url from --listen, logs listen and url apart, and an SSO login then comes back to this port', async function () {
    const dir = join(root, 'config');
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    running = await startSvc(dir, port);
    const cm = YAML.parse(readFileSync(join(dir, 'svc-cm.yaml'), 'utf8')) as { data: Record<string, string> };
    expect(cm.data['url']).to.equal(url);
    expect(logLine(running.logs(), 'svc listening')).to.deep.include({ listen: url, url });
    expect(running.logs()).to.not.include('will not reach svc');
    await stop(running);

    // The operator turns on LDAP single sign-on, keeping the url the first start wrote.
    cm.data['idp.config'] = YAML.stringify({ connectors: [{ type: 'ldap', id: 'corp', name: 'Corp directory', config: { ...ldapConnectorConfig(ldapPort), bindPW: '$ldap-reader:bindPW' } }] });
    writeFileSync(join(dir, 'svc-cm.yaml'), YAML.stringify(cm));
    writeFileSync(join(dir, 'ldap-reader.yaml'), secret('ldap-reader', { bindPW: 'readerpw' }));
    running = await startSvc(dir, port);

    const browser = new FormBrowser();
    const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
    const landed = await browser.submit(form, { username: 'bob', password: 'bob123' }, `${url}/apps`);
    expect(landed, 'back at return_url on this listener').to.be.instanceOf(URL);
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp`, displayName: 'bob' });
    // The login's log line names the person, beside the opaque sub. The process writes it before
    // the redirect, but its stdout reaches this process on its own time: wait for the line.
    await waitFor(() => running?.logs().includes('"msg":"SSO login"') === true, "the 'SSO login' log line");
    expect(logLine(running.logs(), 'SSO login')).to.deep.include({ sub: info['username'], name: 'bob' });
  });

  it('warns at start when url is on loopback but on another port than --listen', async function () {
    const dir = join(root, 'moved');
    const first = await freePort();
    running = await startSvc(dir, first);
    await stop(running);
    const second = await freePort();
    running = await startSvc(dir, second);
    const warning = logLine(running.logs(), `url http://127.0.0.1:${first} is on loopback`);
    expect(warning).to.deep.include({ level: 40, listen: `http://127.0.0.1:${second}`, url: `http://127.0.0.1:${first}` });
  });
});
