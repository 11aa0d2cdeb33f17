/**
 * `npm run bench:soak -- [--duration 10m] [--json FILE]`: svc under a paced mixed load for the
 * duration (default 10 minutes; an hour for the published figures), with faults injected on a
 * schedule (each fault once per cycle; a cycle per 10 minutes, so each at least twice in 20),
 * then the invariants checked. The duration is a least: each fault starts at its share of the
 * run but no sooner than MIN_SPACING_MS after the one before is over, holds at least MIN_HOLD_MS,
 * and the load goes on COOLDOWN_MS after the last is over; so a short duration (the suite's `60s`)
 * runs every fault once, back to back, and lasts as long as they take. Prints, per phase and kind of request, counts by outcome; per
 * fault, the requests that failed and for how long; each process's RSS and its slope; and each
 * invariant. Exits 1 naming every invariant broken. docs/reliability.md has the hour's table.
 */
import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import YAML from 'yaml';
import { FAULTS, runFault, type Window } from './faults.js';
import { RATES, startLoad, type Kind, type Ledger, type Outcome } from './load.js';
import { liveHeapMb } from './live-heap.js';
import type { MemoryLimit } from './memory-limit.js';
import { descriptors, heapMb, persistentKeys, rssMb, slopeMbPerHour, type Descriptors, type Heap, type RssSample } from './measure.js';
import type { ClientConnections } from './balancer.js';
import { secretText, startRig, type Rig, type SvcProcess } from './rig.js';
import { editPolicy } from './edit.js';

const { values } = parseArgs({ options: { duration: { type: 'string', default: '10m' }, json: { type: 'string' }, 'svc-c-memory': { type: 'string' } } });

function parseDuration(text: string): number {
  const match = /^(\d+)(s|m|h)$/.exec(text);
  if (match === null) throw new Error(`--duration: '${text}' is not a duration such as 180s, 10m or 1h`);
  return Number(match[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[match[2] as 's' | 'm' | 'h'];
}

function parseMiB(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const mb = Number(text);
  if (!Number.isInteger(mb) || mb < 64) throw new Error(`--svc-c-memory: '${text}' is not a number of MiB of 64 or more`);
  return mb;
}

const DURATION_MS = parseDuration(values.duration ?? '10m');
/** `--svc-c-memory MiB`: svc-c runs under that memory limit, as in a container (not set: no limit). */
const SVC_C_MEMORY_MB = parseMiB(values['svc-c-memory']);
const WARMUP_MS = 15_000;
/** Steady load after the last fault is over, before the invariants are checked. */
const COOLDOWN_MS = 20_000;
const CYCLE_MS = 10 * 60_000;
/**
 * A fault lasts at least this long where its length is ours to choose, whatever the slot: the
 * load's slowest kind a fault cuts, the 10 MB upload through the resetting backend, comes every
 * 5 s, and the faults that cap their hold at 5 s (svc-kill-9, config-garbage) keep it.
 */
const MIN_HOLD_MS = 5_000;
/**
 * From one fault's end (the process ready, the peer back) to the next's start, in a run too short
 * for the slots: a fault starting on the heels of the last would meet a state the last left half
 * recovered, which the long runs, where the faults are minutes apart, never show. The windows may
 * overlap in their grace; each is still judged from its own start.
 */
const MIN_SPACING_MS = 5_000;
/** Descriptors a process may hold above its idle level at the start once the load is over. */
const DESCRIPTOR_SLACK = 10;
/** A slope judged only over runs long enough for it to mean anything. */
const SLOPE_JUDGED_FROM_MS = 30 * 60_000;
/**
 * What RSS after a full collection may grow. RSS between collections is not judged: with memory
 * to spare, V8 lets its heap grow far past what is live, by heuristics a burst moves (a
 * collection through the inspector took svc-c from 242 MB to 164 MB in the eleventh run), so its
 * slope over an hour ran from 13 to 43 MB/h on the same svc. What a collection leaves is the
 * floor a leak raises, JS or native.
 */
const MAX_FLOOR_MB_PER_HOUR = 30;
/** The collection gives freed pages back on a background thread: RSS is read this long after. */
const FLOOR_SETTLE_MS = 1_000;
/**
 * A process's first 15 minutes are its warm-up, left out of the judged slopes: V8 compiles and
 * sizes its heap, and the token caches fill to their steady size (a token unused for 10 minutes
 * leaves them). The RSS slope after the first 5 minutes is printed beside it, as runs before the
 * eighth judged it.
 */
const RSS_WARMUP_MS = 15 * 60_000;
const RSS_EARLY_WARMUP_MS = 5 * 60_000;
/** The JS heap is read from /metrics once a minute: often enough for a slope, too seldom to weigh on what it measures. */
const HEAP_EVERY_MS = 60_000;
/** The live heap (after a full collection) of the process no fault touches, every 3 minutes: 15 samples after its warm-up in an hour. */
const LIVE_HEAP_EVERY_MS = 3 * 60_000;
/**
 * What the live heap may grow after the warm-up: the revoked-token list grows by design until its
 * first entries expire (users.session.duration, 2 h here; about 0.5 MB an hour at the soak's
 * rate), and the leak the sixth run found grew about 30 MB/h. A third of that is judged a leak.
 */
const MAX_LIVE_HEAP_MB_PER_HOUR = 10;
/**
 * Keys without expiry that svc keeps by design: the shared lists every replica loads whole
 * (docs/state.md): revoked tokens, accounts seen disabled; and the provider's key material.
 */
const PERSISTENT_BY_DESIGN = [/^(svc:)?revoked-tokens$/, /^(svc:)?account-disabled-at$/, /^(svc:)?idp:/];

interface Invariant {
  readonly name: string;
  readonly held: boolean;
  readonly detail: string;
}

function windowOf(outcome: Outcome, windows: readonly Window[]): Window | undefined {
  return windows.find((w) => outcome.at >= w.from && outcome.at <= w.to);
}

async function status(base: string, token: string): Promise<number> {
  const res = await fetch(`${base}/api/v1/account/alice`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
  await res?.arrayBuffer();
  return res?.status ?? 0;
}

/** The ids in svc-secret's `accounts.alice.tokens`, read as svc reads it (stringData, or base64 data). */
function storedTokenIds(text: string): Set<string> {
  const manifest = YAML.parse(text) as { stringData?: Record<string, string>; data?: Record<string, string> };
  const raw = manifest.stringData?.['accounts.alice.tokens'] ?? (manifest.data?.['accounts.alice.tokens'] !== undefined ? Buffer.from(manifest.data['accounts.alice.tokens'], 'base64').toString('utf8') : '[]');
  return new Set((JSON.parse(raw) as { id: string }[]).map((t) => t.id));
}

async function tokenInvariants(rig: Rig, ledger: Ledger): Promise<Invariant[]> {
  const stored = storedTokenIds(secretText(rig));
  const missing = [...ledger.liveTokens.keys()].filter((id) => !stored.has(id));
  const notWorking: string[] = [];
  const notRefused: string[] = [];
  for (const svc of rig.all) {
    for (const [id, token] of ledger.liveTokens) if ((await status(svc.url, token)) !== 200) notWorking.push(`${id} on ${svc.name}`);
    for (const [id, token] of ledger.deletedTokens) if ((await status(svc.url, token)) !== 401) notRefused.push(`token ${id} on ${svc.name}`);
    for (const [i, token] of ledger.loggedOut.entries()) if ((await status(svc.url, token)) !== 401) notRefused.push(`logged-out session #${i} on ${svc.name}`);
  }
  return [
    { name: 'every API token answered as created is in svc-secret', held: missing.length === 0, detail: `${ledger.liveTokens.size} live tokens; missing: ${missing.join(', ') || 'none'}` },
    { name: 'every API token answered as created works on every process', held: notWorking.length === 0, detail: notWorking.slice(0, 10).join(', ') || 'all work' },
    { name: 'every deleted token and logged-out session is refused on every process', held: notRefused.length === 0, detail: `${ledger.deletedTokens.size} deleted, ${ledger.loggedOut.length} logged out; accepted: ${notRefused.slice(0, 10).join(', ') || 'none'}` },
  ];
}

function table(rows: readonly (readonly string[])[]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`).join('\n');
}

function phaseReport(outcomes: readonly Outcome[], windows: readonly Window[]): string {
  const phases = new Map<string, Map<Kind, { ok: number; failed: number }>>();
  for (const o of outcomes) {
    const w = windowOf(o, windows);
    const phase = w === undefined ? 'steady' : `${w.fault} @${Math.round((w.from - outcomes[0]!.at) / 1000)}s`;
    const kinds = phases.get(phase) ?? new Map<Kind, { ok: number; failed: number }>();
    phases.set(phase, kinds);
    const c = kinds.get(o.kind) ?? { ok: 0, failed: 0 };
    kinds.set(o.kind, c);
    if (o.ok) c.ok++;
    else c.failed++;
  }
  const kinds = Object.keys(RATES) as Kind[];
  const rows: string[][] = [['phase', ...kinds]];
  for (const [phase, counts] of phases) rows.push([phase, ...kinds.map((k) => {
    const c = counts.get(k);
    return c === undefined ? '-' : c.failed === 0 ? String(c.ok) : `${c.ok} ok / ${c.failed} failed`;
  })]);
  return table(rows);
}

function faultReport(outcomes: readonly Outcome[], windows: readonly Window[]): string {
  const rows: string[][] = [['fault', 'at', 'lasted', 'failed requests by kind', 'failing for', 'what happened', 'first failures']];
  const t0 = outcomes[0]?.at ?? 0;
  for (const w of windows) {
    const failed = outcomes.filter((o) => !o.ok && o.at >= w.from && o.at <= w.to);
    const byKind = new Map<Kind, number>();
    for (const o of failed) byKind.set(o.kind, (byKind.get(o.kind) ?? 0) + 1);
    const span = failed.length === 0 ? '-' : `${((failed.at(-1)!.at - failed[0]!.at) / 1000).toFixed(1)} s`;
    const details = [...new Set(failed.map((o) => `${o.kind}: ${o.detail}`))].slice(0, 3).join('; ');
    rows.push([w.fault, `${Math.round((w.from - t0) / 1000)} s`, `${((w.over - w.from) / 1000).toFixed(1)} s`, [...byKind].map(([k, n]) => `${k} ${n}`).join(', ') || 'none', span, w.note, details]);
  }
  return table(rows);
}

/** Failures outside every window, per kind: a count and the first three of each (one kind must not hide another). */
function outsideReport(outside: readonly Outcome[], started: number): string {
  const byKind = new Map<Kind, Outcome[]>();
  for (const o of outside) byKind.set(o.kind, [...(byKind.get(o.kind) ?? []), o]);
  return [...byKind].map(([kind, list]) => `${kind} ${list.length}: ${list.slice(0, 3).map((o) => `at ${Math.round((o.at - started) / 1000)} s ${o.detail}`).join('; ')}`).join(' | ');
}

/** How the balancer's client connections ended; its cuts near a failure outside the windows say which side reset it. */
function connectionReport(connections: ClientConnections, started: number): string {
  const cuts = connections.cuts.map((c) => `  - at ${Math.round((c.at - started) / 1000)} s: ${c.reason}`);
  return [
    `closed by the client first: ${connections.byClient}; by the balancer, idle or at shutdown: ${connections.idleClosed}; cut: ${connections.cut}`,
    ...cuts,
  ].join('\n');
}

/** Samples grouped by process life (`name pid N`), each group in the order sampled. */
function byLife<T extends { readonly process: string }>(samples: readonly T[]): Map<string, T[]> {
  const lives = new Map<string, T[]>();
  for (const sample of samples) {
    const life = lives.get(sample.process);
    if (life === undefined) lives.set(sample.process, [sample]);
    else life.push(sample);
  }
  return lives;
}

/**
 * The slope of one life's samples after its warm-up, and the invariant on it once the life lasts
 * long enough after the warm-up for a slope to mean anything.
 */
function judgeSlope(life: string, what: string, all: readonly RssSample[], bornAt: number, limit: number, digits: number): { slope?: number; invariant?: Invariant } {
  const judged = all.filter((x) => x.at >= bornAt + RSS_WARMUP_MS);
  if (judged.length < 2) return {};
  const slope = slopeMbPerHour(judged);
  const span = judged.at(-1)!.at - judged[0]!.at;
  if (span < SLOPE_JUDGED_FROM_MS) return { slope };
  return {
    slope,
    invariant: {
      name: `${life}: ${what} does not grow (slope ≤ ${limit} MB/h after its first ${RSS_WARMUP_MS / 60_000} min)`,
      held: slope <= limit,
      detail: `${slope.toFixed(1)} MB/h over ${Math.round(span / 60_000)} min, ${judged[0]!.mb.toFixed(digits)} → ${judged.at(-1)!.mb.toFixed(digits)} MB`,
    },
  };
}

/** A process run under a memory limit was never killed for memory (a kill also ends its life early, which the other invariants see). */
function memoryLimitInvariant(name: string, limit: MemoryLimit): Invariant {
  const kills = limit.oomKills();
  const peak = limit.peakMb();
  return { name: `${name}: never killed for memory under its ${limit.limitMb} MiB limit`, held: kills === 0, detail: `out-of-memory kills: ${kills ?? 'unknown'}; most held: ${peak === undefined ? 'unknown' : `${peak.toFixed(0)} MB`}` };
}

/** What each full collection of the process that takes the inspector left: its live heap, and its RSS a second later (the floor under V8's heap sizing). */
interface Collected {
  readonly liveHeaps: RssSample[];
  readonly floors: RssSample[];
}

/** A full collection of `svc`, then its live heap, and its RSS once V8 has given back what the collection freed. */
async function collect(svc: SvcProcess, inspectPort: number, into: Collected): Promise<void> {
  const pid = svc.pid;
  if (pid === undefined) return;
  const live = await liveHeapMb(inspectPort);
  if (live === undefined) return;
  const life = `${svc.name} pid ${String(pid)}`;
  into.liveHeaps.push({ at: Date.now(), process: life, mb: live });
  await sleep(FLOOR_SETTLE_MS);
  const floor = rssMb(pid);
  if (floor !== undefined) into.floors.push({ at: Date.now(), process: life, mb: floor });
}

/**
 * Each life's RSS, printed with its slopes; and, for the process that takes the inspector, the
 * live heap and the RSS after each full collection, judged.
 */
function memoryReport(rss: readonly RssSample[], collected: Collected, started: number): { rssRows: string[][]; liveRows: string[][]; invariants: Invariant[] } {
  const invariants: Invariant[] = [];
  const rssRows: string[][] = [['process', 'samples', 'first MB', 'last MB', 'max MB', 'slope MB/h after 5 min', 'slope MB/h after 15 min']];
  for (const [name, all] of byLife(rss)) {
    const after = (ms: number): RssSample[] => all.filter((x) => x.at >= all[0]!.at + ms);
    const afterEarly = after(RSS_EARLY_WARMUP_MS);
    const early = afterEarly.length >= 2 ? afterEarly : all;
    const settled = after(RSS_WARMUP_MS);
    rssRows.push([name, String(all.length), all[0]!.mb.toFixed(0), all.at(-1)!.mb.toFixed(0), Math.max(...all.map((s) => s.mb)).toFixed(0), slopeMbPerHour(early).toFixed(1), settled.length >= 2 ? slopeMbPerHour(settled).toFixed(1) : '-']);
  }
  const liveRows: string[][] = [['process', 'what', 'samples', 'first MB', 'last MB', 'MB/h after 15 min (judged)', 'MB at each sample, by minute of the run']];
  const series = [
    { what: 'live JS heap (after a full collection)', samples: collected.liveHeaps, limit: MAX_LIVE_HEAP_MB_PER_HOUR },
    { what: 'RSS after a full collection', samples: collected.floors, limit: MAX_FLOOR_MB_PER_HOUR },
  ];
  for (const { what, samples, limit } of series) {
    for (const [name, all] of byLife([...samples].sort((a, b) => a.at - b.at))) {
      // Only svc-c takes the inspector, and it lives the whole run: its warm-up counts from the run's start.
      const { slope, invariant } = judgeSlope(name, what, all, started, limit, 1);
      const each = all.map((x) => `${Math.round((x.at - started) / 60_000)}: ${x.mb.toFixed(1)}`).join(', ');
      liveRows.push([name, what, String(all.length), all[0]!.mb.toFixed(1), all.at(-1)!.mb.toFixed(1), slope?.toFixed(1) ?? '-', each]);
      if (invariant !== undefined) invariants.push(invariant);
    }
  }
  return { rssRows, liveRows, invariants };
}

interface HeapSample {
  readonly at: number;
  readonly process: string;
  readonly heap: Heap;
}

/** Each life's JS heap: used and total (what V8 holds for it), first and last, and their slopes after the warm-up. Not judged: it says what a growing RSS is made of. */
function heapReport(samples: readonly HeapSample[]): string {
  const lives = byLife(samples);
  const rows: string[][] = [['process', 'samples', 'used MB', 'used MB/h after 15 min', 'total MB', 'total MB/h after 15 min', 'external MB']];
  for (const [name, all] of lives) {
    const judged = all.filter((x) => x.at >= all[0]!.at + RSS_WARMUP_MS);
    const slope = (part: 'used' | 'total'): string => (judged.length >= 2 ? slopeMbPerHour(judged.map((x) => ({ at: x.at, process: name, mb: x.heap[part] }))).toFixed(1) : '-');
    const span = (part: keyof Heap): string => `${all[0]!.heap[part].toFixed(0)} → ${all.at(-1)!.heap[part].toFixed(0)}`;
    rows.push([name, String(all.length), span('used'), slope('used'), span('total'), slope('total'), span('external')]);
  }
  return table(rows);
}

async function main(): Promise<number> {
  const rig = await startRig({ svcCMemoryMb: SVC_C_MEMORY_MB });
  const rss: RssSample[] = [];
  const heaps: HeapSample[] = [];
  const windows: Window[] = [];
  let load: ReturnType<typeof startLoad> | undefined;
  try {
    const idle = new Map<string, Descriptors | undefined>(rig.all.map((s) => [s.name, s.pid === undefined ? undefined : descriptors(s.pid)]));
    // Sentinel's replica must be caught up first: writes that wait for a replica fail until it is.
    await rig.redis.awaitReplicated(60_000);
    const keysBefore = await persistentKeys(rig.redis);
    const edits = editPolicy(rig);
    load = startLoad(rig, edits.step);
    const sampler = setInterval(() => {
      for (const s of rig.all) {
        const mb = s.pid === undefined ? undefined : rssMb(s.pid);
        if (mb !== undefined) rss.push({ at: Date.now(), process: `${s.name} pid ${String(s.pid)}`, mb });
      }
    }, 5_000);
    const heapSampler = setInterval(() => {
      for (const s of rig.all) {
        const pid = s.pid;
        if (pid !== undefined) void heapMb(s.url).then((heap) => heap !== undefined && heaps.push({ at: Date.now(), process: `${s.name} pid ${String(pid)}`, heap }));
      }
    }, HEAP_EVERY_MS);
    const collected: Collected = { liveHeaps: [], floors: [] };
    const liveHeapSampler = setInterval(() => {
      for (const s of rig.all) if (s.inspectPort !== undefined) void collect(s, s.inspectPort, collected);
    }, LIVE_HEAP_EVERY_MS);
    const started = Date.now();
    await sleep(WARMUP_MS);
    const cycles = Math.max(1, Math.floor(DURATION_MS / CYCLE_MS));
    const slot = Math.max(0, DURATION_MS - WARMUP_MS - COOLDOWN_MS) / (cycles * FAULTS.length);
    const holdMs = Math.max(MIN_HOLD_MS, slot * 0.4);
    for (let cycle = 0; cycle < cycles; cycle++) {
      for (const [i, fault] of FAULTS.entries()) {
        const slotStart = started + WARMUP_MS + (cycle * FAULTS.length + i) * slot;
        const last = windows.at(-1);
        await sleep(Math.max(0, slotStart - Date.now(), last === undefined ? 0 : last.over + MIN_SPACING_MS - Date.now()));
        process.stderr.write(`${new Date().toISOString()} fault ${fault}\n`);
        const window = await (fault === 'config-garbage' ? edits.exclusive(() => runFault(rig, fault, holdMs, cycle)) : runFault(rig, fault, holdMs, cycle));
        windows.push(window);
        process.stderr.write(`${new Date().toISOString()}   ${window.note}\n`);
      }
    }
    await sleep(Math.max(0, started + DURATION_MS - Date.now(), windows.at(-1)!.over + COOLDOWN_MS - Date.now()));
    await load.stop();
    clearInterval(sampler);
    clearInterval(heapSampler);
    clearInterval(liveHeapSampler);
    // Keep-alive connections close after 5 s idle; the state connections settle.
    await sleep(8_000);
    const outcomes = load.ledger.outcomes.sort((a, b) => a.at - b.at);
    const outside = outcomes.filter((o) => !o.ok && windowOf(o, windows) === undefined);
    const invariants: Invariant[] = [
      ...(await tokenInvariants(rig, load.ledger)),
      { name: 'no request failed outside a fault\'s window', held: outside.length === 0, detail: outsideReport(outside, started) || `${outcomes.length} requests` },
    ];
    for (const s of rig.all) {
      const before = idle.get(s.name);
      const after = s.pid === undefined ? undefined : descriptors(s.pid);
      const held = before !== undefined && after !== undefined && after.fds <= before.fds + DESCRIPTOR_SLACK && after.sockets <= before.sockets + DESCRIPTOR_SLACK;
      invariants.push({ name: `${s.name}: file descriptors and sockets back to their idle level`, held, detail: `idle ${JSON.stringify(before)}, after ${JSON.stringify(after)}` });
    }
    const keysAfter = await persistentKeys(rig.redis);
    const grown = [...keysAfter].filter((k) => !keysBefore.has(k) && !PERSISTENT_BY_DESIGN.some((p) => p.test(k)));
    for (const s of rig.all) if (s.memoryLimit !== undefined) invariants.push(memoryLimitInvariant(s.name, s.memoryLimit));
    invariants.push({ name: 'no Redis key without expiry left by the load', held: grown.length === 0, detail: `${keysBefore.size} before, ${keysAfter.size} after; new: ${grown.slice(0, 10).join(', ') || 'none'}` });
    const memory = memoryReport(rss, collected, started);
    invariants.push(...memory.invariants);
    const errors = rig.all.flatMap((s) => [...s.errors].map(([msg, n]) => {
      const samples = (s.errorSamples.get(msg) ?? []).map((x) => `  - at ${Math.round((x.at - started) / 1000)} s: ${x.line}`);
      return [`${s.name}: ${msg} (${n})`, ...samples].join('\n');
    }));
    process.stdout.write(`# svc soak: ${values.duration}, ${new Date(started).toISOString()}, ${rig.tmpfs ? 'config dir on a tmpfs' : 'no tmpfs: disk-full skipped'}${SVC_C_MEMORY_MB === undefined ? '' : `, svc-c limited to ${SVC_C_MEMORY_MB} MiB`}\n\n`);
    process.stdout.write(`## Requests per phase and kind (ok, or ok / failed)\n\n${phaseReport(outcomes, windows)}\n\n`);
    process.stdout.write(`## Faults\n\n${faultReport(outcomes, windows)}\n\n`);
    process.stdout.write(`## RSS\n\n${table(memory.rssRows)}\n\n`);
    process.stdout.write(`## JS heap (from each process's /metrics, once a minute; not judged)\n\n${heaps.length === 0 ? 'no sample' : heapReport(heaps.sort((a, b) => a.at - b.at))}\n\n`);
    process.stdout.write(`## Live JS heap (after a full collection, every ${LIVE_HEAP_EVERY_MS / 60_000} minutes)\n\n${memory.liveRows.length === 1 ? 'no sample' : table(memory.liveRows)}\n\n`);
    process.stdout.write(`## The balancer's client connections\n\n${connectionReport(rig.balancer.clientConnections, started)}\n\n`);
    process.stdout.write(`## Errors the processes logged\n\n${errors.join('\n') || 'none'}\n\n`);
    process.stdout.write(`## Invariants\n\n${invariants.map((i) => `- ${i.held ? 'held' : 'BROKEN'}: ${i.name} (${i.detail})`).join('\n')}\n`);
    if (values.json !== undefined) writeFileSync(values.json, JSON.stringify({ duration: values.duration, started, windows, invariants, outcomes: outcomes.length, rss: memory.rssRows, liveHeap: memory.liveRows, clientConnections: rig.balancer.clientConnections }, null, 2));
    const broken = invariants.filter((i) => !i.held);
    if (broken.length > 0) process.stderr.write(`\nsoak: ${broken.length} invariant(s) broken: ${broken.map((i) => i.name).join('; ')}\n`);
    return broken.length === 0 ? 0 : 1;
  } finally {
    await load?.stop();
    await rig.stop();
  }
}

process.exitCode = await main().catch((err: unknown) => {
  process.stderr.write(`soak: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  return 2;
});
