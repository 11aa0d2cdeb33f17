/** Taking access away cuts the WebSockets it admitted, on a running server with a real backend. */
import { expect } from 'chai';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import YAML from 'yaml';
import { WebSocket, WebSocketServer } from 'ws';
import { call, login } from '../helpers/accounts-fixture.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { closeServer, listen } from './helpers.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const PASSWORD = 'correct horse battery staple';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const RULE = 'p, alice, extensions, *, */live, allow';

describe('extension proxy: open WebSockets lose their access with their token, account or rights', function () {
  cleanUpTempDirs();
  this.timeout(30_000);
  let backend: Server;
  let wss: WebSocketServer;
  let server: TestServer;
  let dir: string;
  let extensionConfig: string;

  const svcCm = (alice: Record<string, string>) => configMap('svc-cm', { 'extension.config': extensionConfig, 'accounts.alice': 'apiKey, login', ...alice });
  const rbacCm = (policy: string) => configMap('svc-rbac-cm', { 'policy.csv': policy, 'policy.default': '' });

  /** Replaces a file as an operator's editor does, and resolves once the server applied it. */
  async function rewrite(file: string, text: string): Promise<void> {
    const applied = new Promise<void>((resolve) => {
      const off = server.services.settings.onChange(() => {
        off();
        resolve();
      });
    });
    writeFileSync(join(dir, `.${file}.tmp`), text);
    renameSync(join(dir, `.${file}.tmp`), join(dir, file));
    await applied;
  }

  before(async () => {
    backend = createServer((_req, res) => res.writeHead(426).end());
    wss = new WebSocketServer({ noServer: true });
    backend.on('upgrade', (req: IncomingMessage, socket, head) => {
      wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (data) => ws.send(`echo: ${String(data)}`)));
    });
    const { url } = await listen(backend);
    extensionConfig = YAML.stringify({ extensions: [{ name: 'live', enabled: true, backend: { services: [{ url }] } }] });
    dir = tempConfigDir({
      'svc-cm.yaml': svcCm({}),
      'svc-rbac-cm.yaml': rbacCm(RULE),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'open-relays-test-key-0123456789abcdef', 'admin.password': HASH, 'accounts.alice.password': HASH }),
    });
    server = await startTestServer(dir);
  });

  after(async () => {
    wss.close();
    await server.close();
    await closeServer(backend);
    rmSync(dir, { recursive: true, force: true });
  });

  afterEach(async () => {
    // Every test starts from alice enabled, with her rule.
    const alice = server.services.settings.current().accounts.get('alice');
    if (alice?.enabled !== true || !alice.capabilities.includes('login')) await rewrite('svc-cm.yaml', svcCm({}));
    // A token of the second alice was disabled in is refused (iat has whole seconds): log in after it.
    if (alice?.enabled !== true) await new Promise((resolve) => setTimeout(resolve, 1000));
    if (!server.services.rights.can(['alice'], 'extensions', '*', '*/live')) await rewrite('svc-rbac-cm.yaml', rbacCm(RULE));
  });

  function open(token: string): Promise<WebSocket> {
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/v1/extensions/live/echo`, { headers: { authorization: `Bearer ${token}` } });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(ws));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`status ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  const closed = (ws: WebSocket): Promise<number> => new Promise((resolve) => ws.once('close', (code) => resolve(code)));

  function echo(ws: WebSocket, text: string): Promise<string> {
    return new Promise((resolve) => {
      ws.once('message', (data) => resolve(String(data)));
      ws.send(text);
    });
  }

  const aliceSession = () => login(server.url, 'alice', PASSWORD);

  /** What `promise` gives, or a failure naming `what` after `ms`. */
  async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: still open ${ms} ms after the change`)), ms);
    });
    try {
      return await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  it('cuts the relay of a session that logs out, and keeps relaying for another session', async () => {
    const [gone, kept] = [await aliceSession(), await aliceSession()];
    const [cut, other] = [await open(gone), await open(kept)];
    expect(await echo(cut, 'before')).to.equal('echo: before');
    const ended = closed(cut);
    expect((await call(server.url, 'DELETE', '/api/v1/session', { token: gone })).status).to.equal(200);
    expect(await ended).to.equal(1006); // cut without a close frame: svc does not parse frames
    expect(await echo(other, 'still here')).to.equal('echo: still here');
    other.close();
  });

  it('cuts the relay of an API token that is deleted', async () => {
    const session = await aliceSession();
    const created = await call(server.url, 'POST', '/api/v1/account/alice/token', { token: session, body: { id: 'relay' } });
    expect(created.status).to.equal(200);
    const ws = await open(String(created.body['token']));
    const ended = closed(ws);
    expect((await call(server.url, 'DELETE', '/api/v1/account/alice/token/relay', { token: session })).status).to.equal(200);
    await ended;
  });

  it('cuts relays when the account loses the capability its token needs, or is disabled', async () => {
    for (const [what, alice] of [['loses login', { 'accounts.alice': 'apiKey' }], ['is disabled', { 'accounts.alice.enabled': 'false' }]] as const) {
      if (what === 'is disabled') await rewrite('svc-cm.yaml', svcCm({}));
      const session = await aliceSession();
      const ws = await open(session);
      expect(await echo(ws, 'before'), what).to.equal('echo: before');
      const ended = closed(ws);
      await rewrite('svc-cm.yaml', svcCm(alice));
      // Cut by svc once the change is applied, not closed by the backend or ended by the test's timeout.
      expect(await within(ended, 5_000, `the relay of an account that ${what}`), what).to.equal(1006);
      expect(await open(session).then(() => 'open', (err: Error) => err.message), `a new relay once the account ${what}`).to.equal('status 401');
    }
  });

  it('cuts a relay once the rights rule that admitted it is gone, and keeps it through changes that keep it', async () => {
    const ws = await open(await aliceSession());
    await rewrite('svc-rbac-cm.yaml', rbacCm(`${RULE}\np, bob, extensions, *, */live, allow`));
    expect(await echo(ws, 'kept')).to.equal('echo: kept');
    const ended = closed(ws);
    await rewrite('svc-rbac-cm.yaml', rbacCm('p, bob, extensions, *, */live, allow'));
    await ended;
  });
});
