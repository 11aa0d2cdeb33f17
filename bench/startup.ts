/**
 * Time from process start to the first 200 on /healthz, on a missing config dir (first start,
 * which writes the stores and hashes the admin password) and on an existing one; the compiled
 * server (what `npm start` runs) beside the same code run through tsx. Needs `npm run build`.
 * Target: first start under 1.5 s.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/peers.js';

const RUNS = 5;

async function timeToHealthy(args: string[], configDir: string): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const child = spawn(process.execPath, [...args, '--config', configDir, '--listen', `127.0.0.1:${port}`], { stdio: 'ignore' });
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false);
      if (ok) return performance.now() - start;
      if (performance.now() - start > 30_000) throw new Error('server did not become healthy in 30 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('close', r));
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

if (!existsSync('dist/src/commands/svc-server.js')) {
  console.error('run `npm run build` first');
  process.exit(1);
}
const variants: [string, string[]][] = [
  ['compiled (npm start)', ['dist/src/commands/svc-server.js']],
  ['tsx (source)', ['--import', 'tsx', 'src/commands/svc-server.ts']],
];
console.log(`time to first /healthz 200, median of ${RUNS} runs (${process.version}, load ${(await import('node:os')).loadavg()[0]!.toFixed(2)})`);
for (const [name, args] of variants) {
  const first: number[] = [];
  const again: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const root = mkdtempSync(join(tmpdir(), 'svc-startup-'));
    const dir = join(root, 'config');
    first.push(await timeToHealthy(args, dir));
    again.push(await timeToHealthy(args, dir));
    rmSync(root, { recursive: true, force: true });
  }
  console.log(`${name.padEnd(22)} first start ${median(first).toFixed(0).padStart(5)} ms   existing config ${median(again).toFixed(0).padStart(5)} ms   (target < 1500 ms: ${median(first) < 1500 ? 'met' : 'NOT met'})`);
}
