/**
 * The state part of `svc-server validate`: names the topology in force, and with a Redis one,
 * connects and says what it found, or why the server would not start on it (the same check
 * as the start's, state/index.ts).
 */
import type { Writable } from 'node:stream';
import { openState, StateStartError, type RedisTopology } from '../state/index.js';
import { describeTopology } from '../state/redis-topology.js';

/** 0 when the state backend is usable as configured, 1 otherwise (one line on `err`). */
export async function validateState(topology: RedisTopology | undefined, out: Writable, err: Writable): Promise<number> {
  if (topology === undefined) {
    out.write('state: in memory (not shared between replicas); give --redis, --redis-sentinel or --redis-cluster to share it\n');
    return 0;
  }
  let lines = '';
  // openState logs what it found at info; a warning means one Redis did not answer.
  const log = { info: (obj: unknown, msg?: string) => void (lines += `${typeof obj === 'string' ? obj : (msg ?? '')}\n`), warn: () => undefined };
  try {
    const state = await openState({ redis: topology, log });
    await state.close();
    const found = lines.split('\n').filter((l) => l.startsWith('state: '));
    if (found.length > 0) out.write(`${found.join('\n')}\n`);
    // One Redis that did not answer: the server would start and retry, validate says so.
    if (topology.kind === 'standalone' && !lines.includes('state: ')) {
      err.write(`state: ${describeTopology(topology)} does not answer; the server would start and keep retrying\n`);
      return 1;
    }
    return 0;
  } catch (e: unknown) {
    if (!(e instanceof StateStartError)) throw e;
    err.write(`${e.message}\n`);
    return 1;
  }
}
