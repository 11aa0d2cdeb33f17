/**
 * What a replica answers before it serves (start-gate.ts): /healthz 200, /readyz 503 with its
 * report, /metrics (the alert reads svc_config_applied there), and 503 with the same reason to
 * every other request, so nothing is answered from a configuration nobody validated. A login
 * is refused as `unavailable`, never as a wrong password or an account that does not exist.
 *
 * Raw Node, not the Koa app: the app's stages (authentication, rights) are built from the
 * configuration this replica has not applied yet.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MetricsExposition, Readiness } from '../http/routes/health.js';

export interface WaitingDeps {
  readonly readiness: Readiness;
  /** Why nothing is served yet. */
  readonly reason: () => string;
  /** False when /metrics has its own listener (--metrics-listen). */
  readonly publicMetrics: boolean;
  readonly metrics: MetricsExposition;
}

export function waitingListener(deps: WaitingDeps): (req: IncomingMessage, res: ServerResponse) => void {
  return function answerWhileWaiting(req, res) {
    answer(deps, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  };
}

async function answer(deps: WaitingDeps, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const read = req.method === 'GET' || req.method === 'HEAD';
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  if (read && path === '/healthz') return send(res, 200, 'text/plain; charset=utf-8', 'ok');
  if (read && path === '/readyz') {
    const report = await deps.readiness();
    return send(res, report.ready ? 200 : 503, 'application/json; charset=utf-8', JSON.stringify({ status: report.ready ? 'ready' : 'not ready', checks: report.checks }));
  }
  if (read && path === '/metrics' && deps.publicMetrics) return send(res, 200, deps.metrics.contentType, await deps.metrics.text());
  // The body is not read: closing after the answer keeps it from being taken for the next request.
  res.shouldKeepAlive = false;
  res.setHeader('Retry-After', '5');
  send(res, 503, 'application/json; charset=utf-8', JSON.stringify({ error: 'unavailable', message: deps.reason() }));
}

function send(res: ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}
