/**
 * Starts and restarts standalone-provider.ts as a child process on a fixed port (its issuer
 * stays the same across restarts), and sees the paths it was asked for.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair } from 'jose';
import { freePort } from './peers.js';
import { ROOT } from './run.js';
import type { StandaloneConfig } from './standalone-provider.js';
import type { TestCa } from './test-ca.js';

export const STANDALONE_CLIENT_SECRET = 'standalone-provider-secret';

export interface StandaloneProvider {
  readonly issuer: string;
  /** Paths asked for since the first start, in order. */
  readonly requests: string[];
  /** Stops the process and starts it again with a new signing key first, the old ones still published. */
  restartWithNewKey(): Promise<void>;
  stop(): Promise<void>;
}

async function newKey(kid: string): Promise<Record<string, unknown>> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), alg: 'RS256', use: 'sig', kid };
}

export async function startStandaloneProvider(ca: TestCa, redirectUris: readonly string[], accounts: Readonly<Record<string, readonly string[]>>): Promise<StandaloneProvider> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-standalone-provider-'));
  const port = await freePort();
  const issuer = `https://127.0.0.1:${port}`;
  const requests: string[] = [];
  let keys = [await newKey('key-1')];
  let child: ChildProcess | undefined;

  async function start(): Promise<void> {
    const config: StandaloneConfig = { port, certPem: ca.certPem, keyPem: ca.keyPem, keys, clientSecret: STANDALONE_CLIENT_SECRET, redirectUris, accounts };
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(config), { mode: 0o600 });
    const proc = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/standalone-provider.ts', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    let stderr = '';
    proc.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve, reject) => {
      let buffered = '';
      proc.stdout?.on('data', (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines) {
          if (line.startsWith('request ')) requests.push(line.slice('request '.length));
          else if (line === `ready ${issuer}`) resolve();
        }
      });
      proc.once('exit', (code) => reject(new Error(`the standalone provider exited (${String(code)}) before it was ready: ${stderr}`)));
    });
  }

  async function stopChild(): Promise<void> {
    const running = child;
    child = undefined;
    if (running === undefined || running.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      running.once('exit', () => resolve());
      running.kill('SIGTERM');
    });
  }

  await start();
  return {
    issuer,
    requests,
    async restartWithNewKey() {
      await stopChild();
      keys = [await newKey(`key-${keys.length + 1}`), ...keys];
      await start();
    },
    async stop() {
      await stopChild();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
