/**
 * OpenTelemetry traces (issue 55), on svc-server as an operator runs it (two cluster workers,
 * Redis, the bundled provider on a real slapd, one echo backend) exporting to a stand-in OTLP
 * receiver over http/protobuf: an SSO login and a proxied request that a trusted proxy sends with
 * one traceparent are one trace, with the login's LDAP and Redis spans under the requests' server
 * spans and the backend called with the proxy span's traceparent; a client that is not a trusted
 * proxy starts no trace of its own choosing; each worker exports its own spans; log and audit
 * lines carry the ids; http/json is exported too. Every span received goes through the suite's secret check (audit-capture.ts).
 */
import { randomBytes } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { Agent, fetch as undiciFetch } from 'undici';
import { registerAuditSecret } from '../audit-capture.js';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { corpLdapConnector, LDAP_BIND_SECRETS, startLdapDirectory, type LdapDirectory } from '../helpers/ldap-directory.js';
import { SvcTokenBrowser } from '../helpers/ldap-idp-svc.js';
import { isPage } from '../helpers/form-browser.js';
import { idpConfigDir, toolsAndSecretPolicy } from '../helpers/manifests.js';
import { SPAN_KIND, startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { cleanRedisEnv, fresh, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'tracing-e2e-secret-key-0123456789';
/** The front proxy svc trusts; the tests' other requests come from 127.0.0.1. */
const PROXY_ADDRESS = '127.0.0.2';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** A browser whose requests leave from `localAddress` with `traceparent`, and that shows its cookies' values. */
class TracedBrowser extends SvcTokenBrowser {
  constructor(localAddress: string, traceparent: string) {
    const agent = new Agent({ localAddress });
    super(((input: string, init: RequestInit = {}) => undiciFetch(input, {
      ...(init as unknown as Parameters<typeof undiciFetch>[1]),
      dispatcher: agent,
      headers: { ...(init.headers as Record<string, string>), traceparent },
    })) as unknown as typeof globalThis.fetch);
  }

  cookieValues(): string[] {
    return this.cookieHeader().split('; ').map((c) => c.slice(c.indexOf('=') + 1)).filter((v) => v !== '');
  }
}

/** Waits up to 15 s for a line of `svc`'s log to match. */
async function waitForLog(svc: ServerProcess, line: RegExp): Promise<void> {
  const until = Date.now() + 15_000;
  while (!line.test(svc.logTail())) {
    if (Date.now() > until) throw new Error(`no log line matched ${String(line)}; the log ends:\n${svc.logTail().slice(-2_000)}`);
    await sleep(50);
  }
}

describe('e2e: OpenTelemetry traces to an OTLP receiver', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let receiver: OtlpReceiver;
  let directory: LdapDirectory;
  let backend: Backend;
  let redis: RedisPeer;
  let dir: string;
  let svc: ServerProcess;
  let url: string;
  /** The svc.token of the first test's login. */
  let token = '';

  before(async function () {
    receiver = await startOtlpReceiver();
    directory = await startLdapDirectory();
    backend = await echoBackend('tools');
    redis = await startRedis();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    dir = idpConfigDir({
      url, backendUrl: backend.url, connectors: [corpLdapConnector(directory)], extensions: ['tools'],
      policy: toolsAndSecretPolicy('devs', 'admins'), secrets: { 'server.secretkey': SECRET_KEY, ...LDAP_BIND_SECRETS },
    });
    svc = await startServerProcess(dir, 2, cleanRedisEnv({
      SVC_REDIS_URL: redis.url,
      SVC_TRUSTED_PROXIES: PROXY_ADDRESS,
      SVC_ACCESS_LOG: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_SERVICE_NAME: 'svc-e2e',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    }), port);
  });

  after(async function () {
    await svc?.stop();
    await redis?.stop();
    await backend?.close();
    await directory?.stop();
    await receiver?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const byId = (spans: readonly ReceivedSpan[]) => new Map(spans.map((s) => [s.spanId, s]));
  /** The chain of parents from `span` up to its trace's root (which may be a remote parent not received). */
  function ancestors(span: ReceivedSpan, spans: readonly ReceivedSpan[]): ReceivedSpan[] {
    const index = byId(spans);
    const chain: ReceivedSpan[] = [];
    for (let at = index.get(span.parentSpanId); at !== undefined; at = index.get(at.parentSpanId)) chain.push(at);
    return chain;
  }

  it('makes one trace of an SSO login through slapd and a proxied request sent by a trusted proxy, and gives the backend its traceparent', async function () {
    const traceId = hex(16);
    const clientSpan = hex(8);
    const browser = new TracedBrowser(PROXY_ADDRESS, `00-${traceId}-${clientSpan}-01`);
    const form = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(form)) throw new Error(`expected the password form, got a redirect to ${form.href}`);
    const landed = await browser.submit(form, { username: 'bob', password: 'bob123' }, `${url}/apps`);
    expect(landed, 'back at return_url').to.be.instanceOf(URL);
    for (const value of browser.cookieValues()) registerAuditSecret(value);
    token = browser.token();
    const answer = await browser.request(`${url}/api/v1/extensions/tools/x`);
    expect(answer.status).to.equal(200);
    const echo = await answer.json() as { headers: Record<string, string> };

    const proxySpan = (s: ReceivedSpan) => s.traceId === traceId && s.kind === SPAN_KIND.client && s.attributes['svc.extension'] === 'tools';
    await receiver.waitFor((spans) => spans.some(proxySpan) && spans.some((s) => s.traceId === traceId && s.attributes['svc.ldap.stage'] === 'user-bind'), 'the proxy span and the user bind');
    const trace = receiver.spans.filter((s) => s.traceId === traceId);

    // The backend was called with the proxy span's id, in the client's trace.
    const proxied = trace.find(proxySpan) as ReceivedSpan;
    expect(echo.headers['traceparent']).to.equal(`00-${traceId}-${proxied.spanId}-01`);
    expect(proxied.name).to.equal('GET');
    const [proxyServer] = ancestors(proxied, trace);
    expect(proxyServer?.name).to.equal('GET /api/v1/extensions/:name');
    expect(proxyServer?.kind).to.equal(SPAN_KIND.server);

    // Every server span of the login and the proxy hangs from the trusted proxy's span.
    const servers = trace.filter((s) => s.kind === SPAN_KIND.server);
    expect(servers.length, 'a server span per request').to.be.greaterThan(3);
    for (const server of servers) {
      expect(server.parentSpanId, server.name).to.equal(clientSpan);
      expect(server.name, 'named after its route').to.match(/^(GET|POST) \//);
    }

    // The login's directory work, each under a server span of the trace.
    const stages = trace.filter((s) => s.name.startsWith('ldap.')).map((s) => `${s.name} ${String(s.attributes['svc.ldap.stage'])}`);
    expect(stages).to.include.members(['ldap.bind service-bind', 'ldap.search user-search', 'ldap.bind user-bind', 'ldap.search group-search']);
    for (const ldap of trace.filter((s) => s.name.startsWith('ldap.'))) {
      expect(ancestors(ldap, trace).at(-1)?.kind, `${ldap.name}'s root`).to.equal(SPAN_KIND.server);
    }
    // Redis commands of the requests, named after the command, with no key.
    const commands = trace.filter((s) => s.attributes['db.system.name'] === 'redis');
    expect(commands.length, 'Redis spans').to.be.greaterThan(0);
    for (const command of commands) {
      expect(command.name).to.match(/^[A-Z]+$/);
      expect(command.attributes).to.have.keys(['db.system.name', 'db.operation.name']);
    }
    expect(trace.every((s) => s.resource['service.name'] === 'svc-e2e')).to.equal(true);

    // The access lines and the login's audit event carry the trace's id.
    expect(svc.logTail()).to.contain(`"trace.id":"${traceId}"`);
    expect(svc.logTail()).to.match(new RegExp(`"log.logger":"audit".*"trace":\\{"id":"${traceId}"\\}`));
  });

  it('starts a new trace for a traceparent from a client that is not a trusted proxy', async function () {
    const chosen = hex(16);
    expect(token, 'the first test logged in').to.not.equal('');
    const answer = await undiciFetch(`${url}/api/v1/extensions/tools/x`, { headers: { traceparent: `00-${chosen}-${hex(8)}-01`, cookie: `svc.token=${token}` } });
    expect(answer.status).to.equal(200);
    const echo = await answer.json() as { headers: Record<string, string> };
    await receiver.waitFor((spans) => spans.some((s) => s.kind === SPAN_KIND.server && s.name === 'GET /api/v1/extensions/:name' && s.parentSpanId === '' && s.attributes['network.peer.address'] === '127.0.0.1'), 'a root server span');
    expect(receiver.spans.filter((s) => s.traceId === chosen)).to.deep.equal([]);
    expect(echo.headers['traceparent']).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/).and.not.contain(chosen);
    // Spelt in any case, the client's trace headers are replaced, not sent beside svc's.
    const raw = await new Promise<{ headers: Record<string, string> }>((resolve, reject) => {
      const req = httpRequest(`${url}/api/v1/extensions/tools/x`, { headers: { TraceParent: `00-${chosen}-${hex(8)}-01`, TRACESTATE: 'chosen=1', Cookie: `svc.token=${token}` } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve(JSON.parse(body) as { headers: Record<string, string> }));
      });
      req.on('error', reject).end();
    });
    expect(raw.headers['traceparent']).to.match(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/).and.not.contain(chosen);
    expect(raw.headers).to.not.have.property('tracestate');
  });

  it('has each worker export its own spans', async function () {
    for (let i = 0; i < 8; i++) expect((await fresh(url, 'GET', '/healthz')).status).to.equal(200);
    await receiver.waitFor((spans) => new Set(spans.filter((s) => s.name === 'GET /healthz').map((s) => s.resource['process.pid'])).size === 2, 'health checks from both workers');
  });

  it('says once in its log that exports fail while the OTLP endpoint is down, without the error\'s words, and how many spans it dropped once they are sent again', async function () {
    const port = await freePort();
    const down = await startServerProcess(dir, 1, cleanRedisEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_EXPORTER_OTLP_TIMEOUT: '2000' }));
    let collector: Server | undefined;
    try {
      for (let i = 0; i < 3; i++) expect((await fresh(down.url, 'GET', '/healthz')).status).to.equal(200);
      await waitForLog(down, /an export to the OTLP endpoint failed/);
      const failed = down.logTail().split('\n').filter((line) => line.includes('an export to the OTLP endpoint failed'));
      expect(failed, 'one warning for the outage').to.have.length(1);
      expect(failed[0]).to.include('"reason":"Error ECONNREFUSED"').and.not.include(`127.0.0.1:${port}`);
      // The export belongs to no request: the line carries no request's trace ids.
      expect(failed[0]).to.not.match(/"trace":|"span":/);
      collector = createServer((req, res) => req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end()));
      await new Promise<void>((resolve) => collector!.listen(port, '127.0.0.1', resolve));
      for (let i = 0; i < 3; i++) await fresh(down.url, 'GET', '/healthz');
      await waitForLog(down, /"droppedSpans":[1-9]\d*.*spans are sent again/);
    } finally {
      await down.stop();
      await new Promise((resolve) => (collector === undefined ? resolve(undefined) : collector.close(resolve)));
    }
  });

  it('exports over http/protobuf by default, and over http/json when OTEL_EXPORTER_OTLP_PROTOCOL says so', async function () {
    expect(new Set(receiver.contentTypes)).to.deep.equal(new Set(['application/x-protobuf']));
    const json = await startServerProcess(dir, 1, cleanRedisEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_SERVICE_NAME: 'svc-json', OTEL_BSP_SCHEDULE_DELAY: '100' }));
    try {
      expect((await fresh(json.url, 'GET', '/healthz')).status).to.equal(200);
      await receiver.waitFor((spans) => spans.some((s) => s.resource['service.name'] === 'svc-json' && s.name === 'GET /healthz'), 'the JSON exporter\'s span');
      expect(receiver.contentTypes).to.include('application/json');
    } finally {
      await json.stop();
    }
  });
});
