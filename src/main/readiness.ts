/**
 * Readiness (`/readyz`): the configuration is loaded with what tokens need and no switch that
 * turns something off was refused (config/disabling-switches.ts), and the state backend
 * answers. Liveness (`/healthz`) stays a bare "the process serves": a Redis outage must take a
 * replica out of the load balancer, not get it restarted.
 */
import { refusedSwitchesReason } from '../config/disabling-switches.js';
import type { Readiness } from '../http/routes/health.js';
import type { Services } from './services.js';

/** A state backend slower than this counts as not answering. */
export const READINESS_PING_TIMEOUT_MS = 1_000;

export function createReadiness(services: Pick<Services, 'settings' | 'state' | 'store'>): Readiness {
  return async function readiness() {
    const configuration = services.settings.current().serverSecretKey === undefined
      ? 'svc-secret has no server.secretkey: tokens cannot be issued or verified'
      : (refusedSwitchesReason(services.settings.problems()) ?? 'ok');
    // Only the Kubernetes store can lose its source; it then serves its last good configuration.
    const store = services.store.connected?.() === false ? 'the Kubernetes API does not answer; serving the last good configuration' : 'ok';
    const state = await pingWithin(services, READINESS_PING_TIMEOUT_MS);
    return { ready: configuration === 'ok' && store === 'ok' && state === 'ok', checks: { configuration, store, state } };
  };
}

async function pingWithin(services: Pick<Services, 'state'>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`the ${services.state.kind} state backend did not answer within ${ms} ms`), ms);
  });
  try {
    return await Promise.race([
      services.state.ping().then(
        () => 'ok',
        (err: unknown) => `the ${services.state.kind} state backend does not answer: ${err instanceof Error ? err.message : String(err)}`,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
