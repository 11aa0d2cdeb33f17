/**
 * docs/quickstart.md followed step by step: its `bash` blocks, in order, run as one bash script
 * from the repository's checkout (as the page says), each command as written. What the test
 * substitutes, and nothing else:
 * - the values of the port variables of its first block (PORT, HELLO_PORT, IN_CLUSTER_PORT,
 *   PROD_PORT, LDAP_PORT): free ports, as this machine runs other servers;
 * - HOME: a temporary directory, so the CLI's config file is the test's own.
 * The whole process group is stopped at the end, whatever happened.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/peers.js';
import { ROOT } from '../helpers/run.js';

const PORT_VARIABLES = ['PORT', 'HELLO_PORT', 'IN_CLUSTER_PORT', 'PROD_PORT', 'LDAP_PORT'];

/** The fenced `bash` blocks of a Markdown text, in order. */
export function bashBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

describe('e2e: docs/quickstart.md, step by step', function () {
  this.timeout(240_000);
  let home: string;

  before(() => (home = mkdtempSync(join(tmpdir(), 'svc-quickstart-home-'))));
  after(() => rmSync(home, { recursive: true, force: true }));

  it('runs every bash block in order, and each step shows what the page says', async function () {
    const blocks = bashBlocks(readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8'));
    expect(blocks.length).to.be.greaterThanOrEqual(7);
    let script = blocks.join('\n');
    for (const name of PORT_VARIABLES) {
      const line = new RegExp(`^${name}=\\d+`, 'm');
      expect(script, `the quick start sets ${name}`).to.match(line);
      script = script.replace(line, `${name}=${await freePort()}`);
    }
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { cwd: ROOT, env: { ...process.env, HOME: home, SVC_REDIS_URL: '' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    let code: number | null;
    try {
      // 'exit', not 'close': the servers the page starts in the background hold the pipes open.
      code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    } finally {
      try {
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch {
        // the group has ended
      }
    }
    expect(code, `${stdout}\n${stderr}`).to.equal(0);
    expect(stdout).to.include('"msg":"svc listening"');
    expect(stdout).to.match(/Username: admin\n/);
    expect(stdout).to.include('hello from the backend: /greeting as alice');
    expect(stdout).to.match(/^prod$/m);
    expect(stdout).to.match(/"issuer":"http:\/\/127\.0\.0\.1:\d+\/api\/idp"/);
  });
});
