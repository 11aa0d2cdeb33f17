/**
 * Runs the server in the foreground: one process, or a node:cluster primary with workers that
 * share the listening socket. Graceful on SIGTERM/SIGINT: in-flight requests finish.
 */
import cluster from 'node:cluster';
import { ensureInitialConfig } from './config/bootstrap.js';
import { createLogger } from './log.js';
import { startServer, type ServerOptions } from './server.js';

export interface ServeOptions extends Omit<ServerOptions, 'log' | 'env'> {
  readonly workers: number;
}

const SHUTDOWN_GRACE_MS = 10_000;

export async function runServe(options: ServeOptions): Promise<void> {
  const log = createLogger();
  if (options.workers > 1 && cluster.isPrimary) {
    // First start happens once, here, so workers never race to create the stores.
    await ensureInitialConfig({ dir: options.configDir, log });
    runPrimary(options.workers, log);
    return;
  }
  const running = await startServer({ ...options, log: cluster.isWorker ? log.child({ worker: cluster.worker?.id }) : log });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down: finishing in-flight requests');
    running.close(SHUTDOWN_GRACE_MS).then(
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

function runPrimary(workers: number, log: ReturnType<typeof createLogger>): void {
  let stopping = false;
  for (let i = 0; i < workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    log.error({ worker: worker.id, code, signal }, 'worker died; starting another');
    cluster.fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    log.info({ signal, workers }, 'shutting down workers');
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    const exitWhenDone = setInterval(() => {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
    }, 50);
    setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS + 2000).unref();
    exitWhenDone.unref();
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
