/**
 * Streams 1 GiB up and 1 GiB down through the extension proxy and prints the svc process's peak
 * RSS growth over its idle RSS (target < 64 MiB: bodies are streamed, never buffered).
 * svc runs as its own process (svc-server, one worker); the backend and the client run here.
 * Usage: node --import tsx bench/stream-1gib.ts [MiB=1024]
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import bcrypt from 'bcryptjs';
import { request } from 'undici';
import { freePort } from '../test/helpers/peers.js';

const MIB = 1024 * 1024;
const total = Number(process.argv[2] ?? '1024') * MIB;
const chunk = Buffer.alloc(256 * 1024, 0x61);
const root = fileURLToPath(new URL('..', import.meta.url));

function source(bytes: number): Readable {
  let left = bytes;
  return new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const piece = left >= chunk.length ? chunk : chunk.subarray(0, left);
      left -= piece.length;
      this.push(piece);
    },
  });
}

const backend = createServer((req, res) => {
  if (req.method === 'PUT') {
    let received = 0;
    req.on('data', (c: Buffer) => (received += c.length));
    req.on('end', () => res.end(String(received)));
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
  source(total).pipe(res);
});
await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
const backendPort = (backend.address() as AddressInfo).port;

const dir = mkdtempSync(join(tmpdir(), 'svc-stream-'));
const hash = bcrypt.hashSync('stream-password', 4);
// One file per store: a store defined in another file is refused (docs/config-store.md).
writeFileSync(join(dir, 'svc-cm.yaml'), `apiVersion: v1
kind: ConfigMap
metadata: { name: svc-cm }
data:
  extension.config: |
    extensions:
      - { name: bulk, enabled: true, backend: { services: [ { url: "http://127.0.0.1:${backendPort}" } ] } }
`);
writeFileSync(join(dir, 'svc-rbac-cm.yaml'), `apiVersion: v1
kind: ConfigMap
metadata: { name: svc-rbac-cm }
data: {}
`);
writeFileSync(join(dir, 'svc-secret.yaml'), `apiVersion: v1
kind: Secret
metadata: { name: svc-secret, labels: { app.kubernetes.io/part-of: svc } }
stringData:
  server.secretkey: stream-secret-key-0123456789abcdef0123
  admin.password: '${hash}'
`);
const svcPort = await freePort();
const svc = spawn(process.execPath, ['--import', 'tsx', 'src/commands/svc-server.ts', '--config', dir, '--listen', `127.0.0.1:${svcPort}`, '--workers', '1'], {
  cwd: root,
  env: { ...process.env, SVC_LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const base = `http://127.0.0.1:${svcPort}`;
for (let i = 0; i < 100; i++) {
  if (await fetch(`${base}/healthz`).then((r) => r.ok, () => false)) break;
  await new Promise((r) => setTimeout(r, 100));
}
const login = await fetch(`${base}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password: 'stream-password' }) });
const { token } = (await login.json()) as { token: string };
const headers = { authorization: `Bearer ${token}` };

function rss(): number {
  const line = readFileSync(`/proc/${svc.pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:')) ?? '';
  return Number(/(\d+)/.exec(line)?.[1] ?? '0') * 1024;
}
// Warm-up through the same path (code loaded, JIT, pools) so the growth measures the streams.
for (let i = 0; i < 20; i++) {
  const warm = await request(`${base}/api/v1/extensions/bulk/upload`, { method: 'PUT', headers, body: source(4 * MIB) });
  await warm.body.text();
}
await new Promise((r) => setTimeout(r, 500));
const idle = rss();
let peak = idle;
const sampler = setInterval(() => (peak = Math.max(peak, rss())), 20);

let start = performance.now();
const up = await request(`${base}/api/v1/extensions/bulk/upload`, { method: 'PUT', headers: { ...headers, 'content-length': String(total) }, body: source(total) });
const received = Number(await up.body.text());
const upSeconds = (performance.now() - start) / 1000;
start = performance.now();
const down = await request(`${base}/api/v1/extensions/bulk/download`, { headers });
let downloaded = 0;
for await (const c of down.body) downloaded += (c as Buffer).length;
const downSeconds = (performance.now() - start) / 1000;
clearInterval(sampler);

const mib = (n: number): string => (n / MIB).toFixed(1);
console.log(`upload   ${mib(received)} MiB in ${upSeconds.toFixed(1)} s (${mib(received / upSeconds)} MiB/s), status ${up.statusCode}`);
console.log(`download ${mib(downloaded)} MiB in ${downSeconds.toFixed(1)} s (${mib(downloaded / downSeconds)} MiB/s), status ${down.statusCode}`);
console.log(`svc RSS idle ${mib(idle)} MiB, peak ${mib(peak)} MiB, growth ${mib(peak - idle)} MiB (target < 64 MiB)`);
svc.kill('SIGTERM');
backend.close();
rmSync(dir, { recursive: true, force: true });
if (received !== total || downloaded !== total) process.exitCode = 1;
