/**
 * The faults the soak injects, each as production sees it, and the window in which failures are
 * blamed on it: from its start until it is over (the peer back, the process ready) plus a grace
 * for what was in flight and for clients to notice. A failure outside every window breaks an
 * invariant.
 */
import { appendFileSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Rig } from './rig.js';

export type FaultName =
  | 'svc-kill-9' | 'sentinel-failover' | 'redis-primary-kill-9' | 'slapd-stopped' | 'backend-resets'
  | 'config-garbage' | 'disk-full' | 'rolling-restart';

export const FAULTS: readonly FaultName[] = ['svc-kill-9', 'sentinel-failover', 'redis-primary-kill-9', 'slapd-stopped', 'backend-resets', 'config-garbage', 'disk-full', 'rolling-restart'];

export interface Window {
  readonly fault: FaultName;
  readonly from: number;
  /** When the fault was over, before the grace. */
  readonly over: number;
  readonly to: number;
  /** What happened, for the report. */
  readonly note: string;
}

/** After a fault is over: requests in flight finish, clients and the state connection notice. */
const GRACE_MS = 10_000;

/** One fault, `holdMs` long where its length is ours to choose; resolves with a note once it is over. */
async function inject(rig: Rig, fault: FaultName, holdMs: number, round: number): Promise<string> {
  switch (fault) {
    case 'svc-kill-9': {
      const victim = rig.svc[round % 2]!;
      await victim.kill9();
      await sleep(Math.min(holdMs, 5_000));
      await victim.start();
      return `${victim.name} killed and started again`;
    }
    case 'sentinel-failover': {
      const to = await rig.redis.failover();
      await rig.redis.awaitReplicated(60_000);
      return `primary now on ${to}`;
    }
    case 'redis-primary-kill-9': {
      const old = await rig.redis.primaryPort();
      await rig.redis.kill(old);
      const to = await rig.redis.awaitPrimaryOtherThan(old, 60_000);
      await rig.redis.start(old);
      await rig.redis.awaitReplicated(60_000);
      return `primary ${old} killed; ${to} promoted; ${old} back as a replica`;
    }
    case 'slapd-stopped': {
      await rig.slapd.stop();
      await sleep(Math.min(holdMs, 20_000));
      await rig.restartSlapd();
      return `slapd stopped for ${Math.round(Math.min(holdMs, 20_000) / 1000)} s`;
    }
    case 'backend-resets': {
      rig.backend.resetting = true;
      await sleep(Math.min(holdMs, 10_000));
      rig.backend.resetting = false;
      return 'the backend cut its streams mid-body';
    }
    case 'config-garbage': {
      const file = join(rig.configDir, 'svc-rbac-cm.yaml');
      const good = readFileSync(file, 'utf8');
      writeFileSync(file, 'kind: ConfigMap\ndata: [this is {not yaml\n\u0000\u0001garbage');
      await sleep(Math.min(holdMs, 5_000));
      writeFileSync(file, good);
      return 'svc-rbac-cm.yaml replaced by garbage, then restored';
    }
    case 'disk-full': {
      if (!rig.tmpfs) return 'skipped: this machine cannot mount a tmpfs (no file-size limit can be set on a running process)';
      const filler = join(rig.configDir, '.filler');
      try {
        // Fill the file system to its last byte: every write svc tries now fails with ENOSPC.
        for (;;) appendFileSync(filler, Buffer.alloc(64 << 10));
      } catch {
        // full
      }
      await sleep(Math.min(holdMs, 10_000));
      rmSync(filler, { force: true });
      return 'the config dir\'s file system full, then freed';
    }
    case 'rolling-restart': {
      for (const svc of rig.svc) {
        await svc.terminate();
        await svc.start();
      }
      return 'SIGTERM and start, one process after the other';
    }
  }
}

export async function runFault(rig: Rig, fault: FaultName, holdMs: number, round: number): Promise<Window> {
  const from = Date.now();
  let note: string;
  try {
    note = await inject(rig, fault, holdMs, round);
  } catch (err: unknown) {
    note = `the fault itself failed: ${err instanceof Error ? err.message : String(err)}`;
  }
  const over = Date.now();
  return { fault, from, over, to: over + GRACE_MS, note };
}
