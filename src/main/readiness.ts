/**
 * Readiness (`/readyz`): whether this replica can serve. It can when it applied what its store
 * holds, whole (start-gate.ts: a replica that started on a bad value is not ready, naming it),
 * the configuration is loaded with what tokens need and no switch that turns something off was
 * refused (config/disabling-switches.ts), and its configuration source answers. Liveness (`/healthz`)
 * stays a bare "the process serves". Anyone may read /readyz, so a configuration problem shows
 * as its store, key and category (start-gate.ts publicProblem), never its value: the log has that.
 *
 * The state backend is reported but never fails readiness: with Redis down svc serves in
 * degraded mode (logins, throttling in memory, tokens verified), and every replica shares the
 * same Redis, so failing readiness on it took every pod out of the Service at once and made a
 * Redis outage a full outage (issue 52). A degraded state backend shows as `state: "degraded: …"`
 * in the body, `svc_state_backend_connected 0` in /metrics and a warning in the log; the alert
 * is written on the metric (docs/operations.md).
 */
import { refusedSwitchesReason } from '../config/disabling-switches.js';
import type { Readiness } from '../http/routes/health.js';
import type { Services } from './services.js';
import { publicProblem } from './start-gate.js';

/**
 * A state backend slower than this counts as degraded. Under Kubernetes' default probe timeout
 * (1 s), so that a slow Redis never makes the probe itself time out, which would fail it.
 */
export const READINESS_PING_TIMEOUT_MS = 500;

/**
 * `notServing`: why this replica serves nothing yet (its start gate, then its features being
 * built), or undefined once it serves.
 */
export function createReadiness(services: Pick<Services, 'settings' | 'state' | 'store'>, notServing: () => string | undefined = () => undefined): Readiness {
  return async function readiness() {
    const configuration = notServing() ?? (services.settings.current().serverSecretKey === undefined
      ? 'svc-secret has no server.secretkey: tokens cannot be issued or verified'
      : (refusedSwitchesReason(services.settings.problems(), publicProblem) ?? 'ok'));
    // Only the Kubernetes store can lose its source; it then serves its last good configuration.
    const store = services.store.connected?.() === false ? 'the Kubernetes API does not answer; serving the last good configuration' : 'ok';
    const state = await stateCheck(services, READINESS_PING_TIMEOUT_MS);
    return { ready: configuration === 'ok' && store === 'ok', checks: { configuration, store, state } };
  };
}

/** `ok`, or `degraded: <why>`: a connection known to be lost is not pinged (the probe answers at once). */
async function stateCheck(services: Pick<Services, 'state'>, ms: number): Promise<string> {
  if (!services.state.connection().connected) {
    return `degraded: the ${services.state.kind} state backend is not connected`;
  }
  const answer = await pingWithin(services, ms);
  return answer === 'ok' ? 'ok' : `degraded: ${answer}`;
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
        // Not the error's text: anyone reads /readyz, and Redis's errors name addresses and users.
        () => `the ${services.state.kind} state backend does not answer a ping`,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
