/**
 * Runs the server in the foreground: one process, or a node:cluster primary with workers that
 * share the listening socket. Graceful on SIGTERM/SIGINT: in-flight requests finish.
 *
 * A worker that fails before it is ready (port taken, bad TLS file, Redis refused) would fail
 * the same way again, so the primary stops everything and exits 1 with the worker's reason,
 * instead of restarting it forever. A worker that dies after it was ready is restarted with a
 * growing delay, each worker slot on a budget of its own (restart-budget.ts); a slot that keeps
 * dying (MAX_RESTARTS within RESTART_WINDOW_MS) stops the server.
 *
 * /metrics, whichever worker takes the scrape, answers with every worker's metrics combined by
 * the primary (main/cluster-metrics.ts), on the public listener and on --metrics-listen alike.
 *
 * The audit trail (docs/audit.md): each process that serves opens its own sink, stdout or the
 * --audit-log file in append mode; every write is whole lines of at most PIPE_BUF bytes, so the
 * workers' lines never interleave and no line crosses the primary. SIGHUP reopens the file (the
 * primary passes it on to every worker); without a file, SIGHUP keeps its default (the process ends).
 */
import cluster, { type Worker } from 'node:cluster';
import { ensureInitialConfig } from '../config/bootstrap.js';
import { firstStartUrl } from '../main/listen-url.js';
import { createMetricsCollector, workerMetrics, type WorkerChannel } from '../main/cluster-metrics.js';
import { accessLogLevelFromEnv, createLogger } from '../main/log.js';
import { readLoginLimits } from '../session/limits.js';
import { startServer, type RunningServer, type ServerOptions } from '../main/server.js';
import { openAuditSink, type OpenedAuditSink } from '../audit/open-sink.js';
import { checkTracingEnvironment, startTracing } from '../tracing/start.js';
import { svcVersion } from '../lib/version.js';
import { createRestartBudgets, MAX_RESTARTS, RESTART_WINDOW_MS } from './restart-budget.js';


export interface ServeOptions extends Omit<ServerOptions, 'log' | 'env' | 'verifiers' | 'audit'> {
  readonly workers: number;
  /** --audit-log (or SVC_AUDIT_LOG): the audit lines' file; stdout when undefined. */
  readonly auditLog?: string;
}

type Logger = ReturnType<typeof createLogger>;

/** In-flight requests get this long after SIGTERM; the primary exits 2 s after it (deploy/ sizes the pod's grace period on it). */
export const SHUTDOWN_GRACE_MS = 10_000;
/** An exit can be seen before the worker's last message; wait this long for its reason. */
const REASON_WAIT_MS = 200;

/** Worker -> primary messages. */
type WorkerMessage = { readonly svc: 'ready' } | { readonly svc: 'start-failed'; readonly reason: string };

export async function runServe(options: ServeOptions): Promise<void> {
  const log = createLogger();
  if (options.workers > 1 && cluster.isPrimary) {
    // First start happens once, here, so workers never race to create the stores.
    // In a cluster each worker's start is safe alongside the others' (kube-bootstrap.ts).
    if (options.kube === undefined) await ensureInitialConfig({ dir: options.configDir, log, url: firstStartUrl({ host: options.host, port: options.port, tls: options.tls !== undefined }) });
    // Read here once, so that a bad value is warned about once; the workers read them quietly.
    readLoginLimits(process.env, log);
    accessLogLevelFromEnv(process.env, log);
    // A bad OTEL_ value stops the start once, here; each worker then starts its own exporter.
    checkTracingEnvironment(process.env, log);
    // Opened once here so that a path nobody can write stops the start with its name, not as N worker failures.
    if (options.auditLog !== undefined) await (await openAuditSink({ file: options.auditLog, fd: 1, log })).sink.close();
    runPrimary(options.workers, log, options.auditLog !== undefined);
    return;
  }
  // Before anything is opened: the Redis clients and the listener are traced only when it is on.
  const tracing = await startTracing(process.env, log, svcVersion(), cluster.isWorker);
  const audit = await openAuditSink({ file: options.auditLog, fd: 1, log });
  if (audit.file !== undefined) process.on('SIGHUP', () => audit.reopen());
  const running = cluster.isWorker ? await startWorker(options, log, audit) : await startServer({ ...options, log, audit: audit.sink });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    running.close(SHUTDOWN_GRACE_MS).then(() => tracing.shutdown().catch((err: unknown) => log.warn({ err }, 'the last spans could not be sent'))).then(() => audit.sink.close()).then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}

/** Tells the primary whether this worker came up; on failure the primary reports the reason once. */
async function startWorker(options: ServeOptions, log: Logger, audit: OpenedAuditSink): Promise<RunningServer> {
  try {
    const running = await startServer({ ...options, audit: audit.sink, log: log.child({ worker: cluster.worker?.id }), metricsText: (registry) => workerMetrics(registry, PROCESS_CHANNEL).text, environmentChecked: true });
    await send({ svc: 'ready' });
    return running;
  } catch (err: unknown) {
    await send({ svc: 'start-failed', reason: err instanceof Error ? err.message : String(err) });
    process.exit(1);
  }
}

/** The worker's IPC channel to the primary, for the metrics messages. */
const PROCESS_CHANNEL: WorkerChannel = {
  send: (message) => void process.send?.(message),
  on: (event, listener) => process.on(event, listener),
  off: (event, listener) => process.off(event, listener),
};

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined) resolve();
    else process.send(message, undefined, {}, () => resolve());
  });
}

function isWorkerMessage(value: unknown): value is WorkerMessage {
  return typeof value === 'object' && value !== null && 'svc' in value && (value.svc === 'ready' || value.svc === 'start-failed');
}

function runPrimary(workers: number, log: Logger, auditFile: boolean): void {
  const ready = new Set<number>();
  const reasons = new Map<number, string>();
  /** Worker id -> its slot: a replacement takes the slot, and the restart budget, of the worker it replaces. */
  const slots = new Map<number, number>();
  const restarts = createRestartBudgets();
  const fork = (slot: number) => slots.set(cluster.fork().id, slot);
  let stopping = false;
  // Only ready workers are asked: one still starting has no registry to answer from yet.
  const metrics = createMetricsCollector({
    workers: () => Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && ready.has(w.id) && w.isConnected()),
  });

  const shutdown = (code: number, signal?: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    // The timers below are unref'd: when the last worker is gone the process may end on its own.
    process.exitCode = code;
    log.info({ signal, workers }, 'shutting down workers');
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    const exitWhenDone = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(code);
    }, 50);
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 2000).unref();
    exitWhenDone.unref();
  };
  const failStart = (worker: Worker, detail: string) => {
    if (stopping) return;
    const reason = reasons.get(worker.id) ?? detail;
    log.error({ worker: worker.id, reason }, 'a worker could not start; stopping');
    process.stderr.write(`svc-server: a worker could not start: ${reason}\n`);
    shutdown(1);
  };

  cluster.on('message', (worker, message: unknown) => {
    if (metrics.handle(worker, message) || !isWorkerMessage(message)) return;
    if (message.svc === 'ready') {
      ready.add(worker.id);
      log.info({ worker: worker.id, slot: slots.get(worker.id), pid: worker.process.pid }, 'worker ready');
    } else {
      reasons.set(worker.id, message.reason);
      failStart(worker, message.reason);
    }
  });
  cluster.on('exit', (worker, code, signal) => {
    metrics.forget(worker.id);
    if (stopping) return;
    if (!ready.has(worker.id)) {
      const detail = `it exited (${signal ?? `code ${code}`}) before it was ready`;
      setTimeout(() => failStart(worker, detail), REASON_WAIT_MS);
      return;
    }
    ready.delete(worker.id);
    const slot = slots.get(worker.id) ?? 0;
    slots.delete(worker.id);
    const delay = restarts.next(slot, Date.now());
    if (delay === undefined) {
      log.error({ worker: worker.id, slot, code, signal }, 'a worker keeps dying; stopping');
      process.stderr.write(`svc-server: worker slot ${slot} died ${MAX_RESTARTS + 1} times within ${RESTART_WINDOW_MS / 1000}s; stopping\n`);
      shutdown(1);
      return;
    }
    log.error({ worker: worker.id, slot, code, signal, delayMs: delay }, 'worker died; starting another');
    setTimeout(() => {
      if (!stopping) fork(slot);
    }, delay);
  });
  for (let slot = 0; slot < workers; slot++) fork(slot);
  // logrotate signals the primary (its pid is the one a pid file or a container holds): every worker reopens.
  if (auditFile) process.on('SIGHUP', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGHUP');
  });
  process.once('SIGTERM', () => shutdown(0, 'SIGTERM'));
  process.once('SIGINT', () => shutdown(0, 'SIGINT'));
}
