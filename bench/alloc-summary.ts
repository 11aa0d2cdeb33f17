// Summarises a profile of bench/alloc-sampler.mjs: bytes allocated per request, by origin (svc's
// own code, undici, Node's internals) and the top allocation sites.
// Usage: node --import tsx bench/alloc-summary.ts PROFILE.json REQUESTS LABEL
import { readFileSync } from 'node:fs';

interface ProfileNode {
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}

const [file = '', requestsArg = '1', label = ''] = process.argv.slice(2);
const requests = Number(requestsArg);
const profile = JSON.parse(readFileSync(file, 'utf8')) as { head: ProfileNode };
const sites = new Map<string, number>();
const origins = new Map<string, number>();
let total = 0;

function originOf(url: string): string {
  if (url.includes('/node_modules/undici/')) return 'undici';
  if (url.includes('/node_modules/')) return 'other packages';
  if (url.includes('/dist/') || url.includes('/src/') || url.includes('/connectors/') || url.includes('/bench/')) return 'own code';
  if (url.startsWith('node:')) return 'node internals';
  return 'native (V8, C++)';
}

(function walk(node: ProfileNode): void {
  const { functionName, url, lineNumber } = node.callFrame;
  total += node.selfSize;
  const site = `${functionName || '(anonymous)'} ${url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(dist|src|connectors|bench)\//, '$1/')}:${lineNumber + 1}`;
  sites.set(site, (sites.get(site) ?? 0) + node.selfSize);
  const origin = originOf(url);
  origins.set(origin, (origins.get(origin) ?? 0) + node.selfSize);
  for (const child of node.children) walk(child);
})(profile.head);

const perRequest = (bytes: number): string => `${(bytes / requests).toFixed(0).padStart(6)} B`;
console.log(`${label}: ${perRequest(total).trim()} allocated per request (${requests} requests sampled)`);
for (const [origin, bytes] of [...origins].sort((a, b) => b[1] - a[1])) console.log(`  ${perRequest(bytes)}  ${origin}`);
console.log('  top sites:');
for (const [site, bytes] of [...sites].sort((a, b) => b[1] - a[1]).slice(0, 12)) console.log(`  ${perRequest(bytes)}  ${site}`);
