/**
 * oidc-agent (Debian's oidc-agent-cli, 4.2.6), a command-line token agent nobody here wrote, with
 * svc's bundled provider as a public static client (issue 53). It sends `Authorization: Basic
 * base64("<client id>:")` on every request, its token poll and refresh naming the client there
 * only; svc takes that as no authentication (src/idp/public-client-basic.ts).
 * - The device flow through oidc-gen, the code approved by the test's own HTTP client as a
 *   logged-in person; then `oidc-token` gives an access token accepted at userinfo and an ID
 *   token that verifies against the JWKS, and `oidc-token --force-new` a refreshed one, accepted too.
 * - The code flow through oidc-gen, whose redirect listener on a loopback port gets the code.
 * The agent runs with its own socket and config dir in a temporary directory.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { approveDevice, IDENTITY, logInAt, startForeignIdp, userinfo, verifiedIdToken, type ForeignIdp } from '../helpers/foreign-idp.js';
import { runForeign, startForeign, type ForeignProcess } from '../helpers/foreign-process.js';
import { freePort } from '../helpers/peers.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

const CLIENT = 'oidc-agent';
const SCOPE = 'openid profile email offline_access';

describe('e2e: oidc-agent with the bundled identity provider (a public static client)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let idp: ForeignIdp;
  let agent: ForeignProcess;
  let env: Record<string, string>;
  let redirectPort: number;

  before(async function () {
    redirectPort = await freePort();
    idp = await startForeignIdp([{ id: CLIENT, name: 'oidc-agent', public: true, redirectURIs: [`http://localhost:${redirectPort}`] }]);
    const home = makeTempDir('oidc-agent-');
    mkdirSync(join(home, 'sock'));
    mkdirSync(join(home, 'config'));
    env = { HOME: home, TMPDIR: home, OIDC_CONFIG_DIR: join(home, 'config'), OIDC_SOCK: join(home, 'sock', 'agent.sock'), OIDC_ENCRYPTION_PW: 'agent-encryption-password' };
    agent = startForeign('oidc-agent', ['--console', '--log-stderr', '--no-autoload', '--always-allow-idtoken', `--socket-path=${env['OIDC_SOCK']}`], env);
    const socket = String(env['OIDC_SOCK']);
    for (let waited = 0; !existsSync(socket); waited += 50) {
      if (waited > 10_000) throw new Error(`oidc-agent made no socket:\n${agent.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  after(async function () {
    await agent?.stop();
    await idp?.close();
  });

  /** oidc-gen for an account `name` with the flow given; the rest of its questions answered by flags. */
  function oidcGen(name: string, flow: 'device' | 'code'): ForeignProcess {
    return startForeign('oidc-gen', [
      `--issuer=${idp.issuer}`, `--client-id=${CLIENT}`, '--client-secret=', `--flow=${flow}`, `--scope=${SCOPE}`,
      ...(flow === 'code' ? [`--redirect-uri=http://localhost:${redirectPort}`, '--no-scheme'] : []),
      '--pw-env', '--no-url-call', '--confirm-default', '--prompt=none', name,
    ], env);
  }

  async function oidcToken(...args: string[]): Promise<string> {
    const run = await runForeign('oidc-token', args, env);
    expect(run.code, run.output).to.equal(0);
    return run.stdout.trim();
  }

  /** What oidc-agent holds for `name` is what svc issued: userinfo answers its access token, a new one after a refresh. */
  async function expectTokens(name: string): Promise<void> {
    const first = await oidcToken(name);
    const firstInfo = await userinfo(idp.issuer, first);
    expect(firstInfo.status).to.equal(200);
    expect(firstInfo.claims).to.include({ preferred_username: IDENTITY.username, email: IDENTITY.email });
    const idToken = await oidcToken('--id-token', name);
    const claims = await verifiedIdToken(idp.issuer, idToken, CLIENT);
    expect(claims.sub).to.equal(firstInfo.claims['sub']);

    const refreshesBefore = idp.connector.refreshes();
    const second = await oidcToken('--force-new', name);
    expect(second).to.not.equal(first);
    expect(idp.connector.refreshes(), 'a refresh grant reached the connector').to.equal(refreshesBefore + 1);
    const secondInfo = await userinfo(idp.issuer, second);
    expect(secondInfo.status).to.equal(200);
    expect(secondInfo.claims['sub']).to.equal(firstInfo.claims['sub']);
  }

  it('completes the device flow with its Basic header of an empty secret; oidc-token gives a token and a refreshed one', async function () {
    const gen = oidcGen('svc-device', 'device');
    const uri = (await gen.waitFor(/visit:\s*\n(\S+)/))[1] as string;
    const code = (await gen.waitFor(/enter the code: (\S+)/))[1] as string;
    await approveDevice(uri, code);
    expect(await gen.exited(), gen.output()).to.equal(0);
    expect(gen.output()).to.include('Everything setup correctly!');
    await expectTokens('svc-device');
  });

  it('completes the code flow, its listener on a loopback port getting the code', async function () {
    const gen = oidcGen('svc-code', 'code');
    const authorization = (await gen.waitFor(new RegExp(`(${idp.issuer.replace(/[.]/g, '\\.')}/auth\\?\\S+)`)))[1] as string;
    const back = await logInAt(authorization, `http://localhost:${redirectPort}`);
    expect(back.searchParams.get('code')).to.be.a('string');
    expect(back.searchParams.get('iss')).to.equal(idp.issuer);
    const res = await fetch(back.href);
    expect(res.status, await res.text()).to.be.below(400);
    expect(await gen.exited(), gen.output()).to.equal(0);
    await expectTokens('svc-code');
  });
});
