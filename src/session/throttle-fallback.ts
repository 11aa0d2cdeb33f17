/**
 * Runs login-throttle operations on the shared state backend, or, while that is unreachable,
 * on this replica's memory: logins keep working when Redis is down (Argo CD users lost login
 * altogether, #4148). The switch is logged once per outage and shown in /metrics
 * (`svc_login_throttle_fallback` 1 while degraded, `svc_login_throttle_fallback_total`).
 * After a failure the backend is left alone for RETRY_AFTER_MS, so a login during an outage
 * does not wait for several failing Redis calls in a row. When the backend answers again, what
 * memory counted meanwhile is carried to it (`carryOver`) before the call that found it back
 * returns, so an outage gives no attempts back once it ends; should the carrying fail, the
 * backend counts as unreachable again and the next call that reaches it carries what is left.
 */
import type { Logger } from 'pino';
import { Counter, Gauge, type Registry } from 'prom-client';
import { createMemoryState } from '../state/memory.js';
import { StateUnavailable, type StateBackend } from '../state/state.js';

export const RETRY_AFTER_MS = 1_000;

export interface FallbackRunner {
  run<T>(op: (state: StateBackend) => Promise<T>): Promise<T>;
  readonly degraded: boolean;
  close(): Promise<void>;
}

export interface FallbackDeps {
  readonly state: StateBackend;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly registry: Registry;
  readonly now: () => number;
  /**
   * Names the metrics (`<metricPrefix>_fallback`, `<metricPrefix>_fallback_total`) and the log
   * lines, so that two throttles (local logins, the identity provider's form) report apart.
   */
  readonly metricPrefix?: string;
  /**
   * Adds what `memory` counted while the backend was away to `backend`, and forgets it in
   * `memory`, name by name (a name carried twice after a failure half-way is counted more, never less).
   */
  readonly carryOver?: (memory: StateBackend, backend: StateBackend) => Promise<void>;
}

export function createFallbackRunner({ state, log, registry, now, metricPrefix = 'svc_login_throttle', carryOver }: FallbackDeps): FallbackRunner {
  const gauge = new Gauge({
    name: `${metricPrefix}_fallback`,
    help: '1 while login throttling counts in this replica\'s memory because the state backend is unreachable',
    registers: [registry],
  });
  const fallbacks = new Counter({
    name: `${metricPrefix}_fallback_total`,
    help: 'Login throttle operations run in memory because the state backend was unreachable',
    registers: [registry],
  });
  gauge.set(0);
  const memory = state.kind === 'memory' ? state : createMemoryState({ now, log });
  let downUntil = 0;
  let degraded = false;

  function fellBack(err: unknown): void {
    fallbacks.inc();
    downUntil = now() + RETRY_AFTER_MS;
    if (degraded) return;
    degraded = true;
    gauge.set(1);
    log.warn({ err, throttle: metricPrefix }, 'login throttle: state backend unreachable; counting failed logins in this replica\'s memory');
  }

  /** Back on the backend (called while degraded): memory's counts carried to it first, by the first call that finds it back only. */
  async function recovered(): Promise<void> {
    degraded = false;
    gauge.set(0);
    log.info({ throttle: metricPrefix }, 'login throttle: state backend reachable again; counting failed logins there');
    if (carryOver === undefined) return;
    try {
      await carryOver(memory, state);
    } catch (err: unknown) {
      if (err instanceof StateUnavailable) return fellBack(err);
      // Not the backend: a fault of svc's. The call that found the backend back still answers.
      log.warn({ err, throttle: metricPrefix }, 'login throttle: what memory counted during the outage could not be carried to the state backend; those counts stay in this replica\'s memory');
    }
  }

  return {
    async run(op) {
      if (memory === state) return op(state);
      if (now() < downUntil) {
        fallbacks.inc();
        return op(memory);
      }
      try {
        const result = await op(state);
        if (degraded) await recovered();
        return result;
      } catch (err: unknown) {
        if (!(err instanceof StateUnavailable)) throw err;
        fellBack(err);
        return op(memory);
      }
    },
    get degraded() {
      return degraded;
    },
    async close() {
      if (memory !== state) await memory.close();
    },
  };
}
