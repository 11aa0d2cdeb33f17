/**
 * `svc login --github-actions` and `--subject-token-file` as a CI job and a pod run them: the
 * real CLI process against a real svc, the runner's token endpoint and the Kubernetes issuer
 * being the HTTPS stand-ins (their test CA given to the CLI as NODE_EXTRA_CA_CERTS, as a runner
 * image would have it in its trust store). The stored token then answers `svc account can-i`.
 */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { startFakeGithubActions, type FakeGithubActions } from '../helpers/fake-github-actions.js';
import { startFakeKubernetesIssuer, type FakeKubernetesIssuer } from '../helpers/fake-kubernetes-issuer.js';
import { runEntry, type RunResult, CLI_ENTRY } from '../helpers/run.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { AUDIENCE, MAIN, MAIN_SUBJECT, workloadConfigDir } from '../helpers/workload-setup.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';


describe('e2e: svc login as a workload (GitHub Actions, Kubernetes)', function () {
  cleanUpTempDirs();
  this.timeout(90_000);
  let github: FakeGithubActions;
  let kubernetes: FakeKubernetesIssuer;
  let backend: Backend;
  let server: TestServer;
  let dir: string;
  let home: string;
  let caFile: string;

  before(async () => {
    [github, kubernetes, backend] = await Promise.all([startFakeGithubActions(), startFakeKubernetesIssuer(), echoBackend('echo')]);
    dir = workloadConfigDir(github, kubernetes, backend.url);
    server = await startTestServer(dir, { env: {} });
    home = makeTempDir('svc-home-workload-');
    caFile = join(home, 'runner-ca.pem');
    writeFileSync(caFile, github.caPem);
  });

  after(async () => {
    await server?.close(1000);
    await Promise.all([github?.close(), kubernetes?.close(), backend?.close()]);
    for (const d of [dir, home]) if (d !== undefined) rmSync(d, { recursive: true, force: true });
  });

  function svc(args: readonly string[], env: Record<string, string> = {}, stdin?: string): Promise<RunResult> {
    return runEntry(CLI_ENTRY, args, { PATH: process.env['PATH'], HOME: home, ...env }, stdin);
  }

  it('svc login --github-actions asks the runner for a token for the audience and exchanges it; can-i then uses the stored token', async () => {
    const runner = { ...github.runnerEnv(MAIN), NODE_EXTRA_CA_CERTS: caFile };
    const login = await svc(['login', server.url, '--github-actions', '--audience', AUDIENCE], runner);
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stdout).to.equal(`'${MAIN_SUBJECT}' logged in successfully (token valid for 900s)\nContext '${server.url}' updated\n`);

    const yes = await svc(['account', 'can-i', 'get', 'extensions', '*/tools']);
    expect(yes.code, yes.stderr).to.equal(0);
    expect(yes.stdout).to.equal('yes\n');
    const no = await svc(['account', 'can-i', 'get', 'extensions', '*/secret']);
    expect(no.stdout).to.equal('no\n');
  });

  it('without --audience the runner is asked for the server URL, which this server does not accept: one line naming the check', async () => {
    const result = await svc(['login', server.url, '--github-actions'], { ...github.runnerEnv(MAIN), NODE_EXTRA_CA_CERTS: caFile });
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.equal("svc: check 'aud' failed: the token's audience is none of those workload issuer 'github' accepts\n");
  });

  it('outside a job (no runner variables) says what is missing', async () => {
    const result = await svc(['login', server.url, '--github-actions']);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.equal("svc: ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: run in a GitHub Actions job with 'permissions: id-token: write'\n");
  });

  it('a pod exchanges its projected service account token through --subject-token-file, and the file cannot be used twice', async () => {
    const tokenFile = join(home, 'sa-token');
    writeFileSync(tokenFile, `${await kubernetes.token({ namespace: 'ci', serviceAccount: 'builder' }, AUDIENCE)}\n`);
    const login = await svc(['login', server.url, '--subject-token-file', tokenFile]);
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stdout).to.equal(`'workload:k8s:builder' logged in successfully (token valid for 3600s)\nContext '${server.url}' updated\n`);
    expect((await svc(['account', 'can-i', 'get', 'extensions', '*/tools'])).stdout).to.equal('yes\n');

    const again = await svc(['login', server.url, '--subject-token-file', tokenFile]);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.equal("svc: check 'replay' failed: this subject token was exchanged before; a subject token is exchanged at most once\n");
  });

  it('reads the token from stdin with -, or from SVC_SUBJECT_TOKEN', async () => {
    const fromStdin = await svc(['login', server.url, '--subject-token-file', '-'], {}, await kubernetes.token({ namespace: 'ci', serviceAccount: 'builder' }, AUDIENCE));
    expect(fromStdin.code, fromStdin.stderr).to.equal(0);
    expect(fromStdin.stdout).to.include("'workload:k8s:builder' logged in successfully");

    const fromEnv = await svc(['login', server.url], { SVC_SUBJECT_TOKEN: await kubernetes.token({ namespace: 'ci', serviceAccount: 'builder' }, AUDIENCE) });
    expect(fromEnv.code, fromEnv.stderr).to.equal(0);
    expect(fromEnv.stdout).to.include("'workload:k8s:builder' logged in successfully");
  });

  it('refuses a file that holds no JWT without sending it', async () => {
    const tokenFile = join(home, 'not-a-token');
    writeFileSync(tokenFile, 'hello world\n');
    const result = await svc(['login', server.url, '--subject-token-file', tokenFile]);
    expect(result.code).to.equal(1);
    expect(result.stderr).to.equal(`svc: '${tokenFile}' does not hold a JWT (three base64url parts separated by dots)\n`);
  });
});
