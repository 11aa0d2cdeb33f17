/**
 * One /metrics for all the workers of a server: a scrape taken by any worker is answered with
 * every worker's metrics combined by the primary, so each counter only goes up from scrape to
 * scrape whichever worker takes the connection. (Answering from the worker alone made a counter
 * read 4, 50, 4 on consecutive scrapes, and rate() meaningless.)
 *
 * The worker that took the scrape asks the primary; the primary asks every ready worker for its
 * registry's values (the asker too) and sums them with prom-client's cluster aggregation, each
 * metric by its own aggregator (a gauge may say max, min or first). prom-client's own
 * AggregatorRegistry listens through a module-wide list of registries; this keeps one registry
 * per server, passed by hand, and only uses its pure aggregate().
 *
 * A worker that does not answer in time fails the scrape rather than leave its counts out: a sum
 * without it would look like every counter dropped. A worker that ended keeps its counts in the
 * sum: the primary keeps the last values each worker sent, and when a worker exits, its counters
 * and histograms (buckets, sums and counts are counters too) from then are added to every later
 * answer; its gauges are dropped. Without that, one worker's death took its counts out of the sum
 * (svc_http_requests_total fell from 90,273 to 45,984, read by Prometheus as a reset; issue 52).
 * Only a restart of the primary resets the counters. What a worker counted after its last
 * answer is lost, which never makes a counter go down: no scrape showed it.
 */
import { AggregatorRegistry, type MetricObjectWithValues, type MetricValue, type Registry } from 'prom-client';
import { addCounters, countersOnly } from './ended-workers-metrics.js';

/** How long the primary waits for every worker's values. */
export const COLLECT_TIMEOUT_MS = 3_000;
/** How long a worker waits for the primary's answer: the primary's wait and some. */
export const ASK_TIMEOUT_MS = COLLECT_TIMEOUT_MS + 1_000;

export type Values = MetricObjectWithValues<MetricValue<string>>[];

/** Worker -> primary: a scrape arrived here; and a worker's own values, asked by the primary. */
export type MetricsFromWorker =
  | { readonly svc: 'metrics-collect'; readonly id: number }
  | { readonly svc: 'metrics-local'; readonly id: number; readonly metrics?: Values; readonly error?: string };

/** Primary -> worker: send your values; and the combined text, for the worker that asked. */
export type MetricsFromPrimary =
  | { readonly svc: 'metrics-get'; readonly id: number }
  | { readonly svc: 'metrics-collected'; readonly id: number; readonly text?: string; readonly error?: string };

/** What a worker sends and hears on: `process` in a cluster worker. */
export interface WorkerChannel {
  send(message: MetricsFromWorker): void;
  on(event: 'message', listener: (message: unknown) => void): unknown;
  off(event: 'message', listener: (message: unknown) => void): unknown;
}

/** A worker as the primary sees it: `cluster.Worker`. */
export interface WorkerEnd {
  readonly id: number;
  send(message: MetricsFromPrimary): void;
}

export function isMetricsFromWorker(value: unknown): value is MetricsFromWorker {
  return hasSvc(value, 'metrics-collect') || hasSvc(value, 'metrics-local');
}

/**
 * A worker's side: answers the primary's requests for this registry's values, and gives the
 * combined text of all workers for a scrape that arrived here.
 */
export function workerMetrics(registry: Registry, channel: WorkerChannel): { text(): Promise<string>; close(): void } {
  let next = 0;
  const waiting = new Map<number, { resolve(text: string): void; reject(err: Error): void }>();
  const listener = (message: unknown) => {
    if (hasSvc(message, 'metrics-get')) {
      const { id } = message as { id: number };
      registry.getMetricsAsJSON().then(
        (metrics) => channel.send({ svc: 'metrics-local', id, metrics }),
        (err: unknown) => channel.send({ svc: 'metrics-local', id, error: err instanceof Error ? err.message : String(err) }),
      );
    } else if (hasSvc(message, 'metrics-collected')) {
      const reply = message as Extract<MetricsFromPrimary, { svc: 'metrics-collected' }>;
      const pending = waiting.get(reply.id);
      waiting.delete(reply.id);
      if (reply.text !== undefined) pending?.resolve(reply.text);
      else pending?.reject(new Error(`the primary could not combine the workers' metrics: ${reply.error ?? 'no reason given'}`));
    }
  };
  channel.on('message', listener);
  return {
    text() {
      const id = next++;
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiting.delete(id);
          reject(new Error(`the primary did not answer for the workers' metrics within ${ASK_TIMEOUT_MS} ms`));
        }, ASK_TIMEOUT_MS);
        waiting.set(id, {
          resolve: (text) => (clearTimeout(timer), resolve(text)),
          reject: (err) => (clearTimeout(timer), reject(err)),
        });
        channel.send({ svc: 'metrics-collect', id });
      });
    },
    close: () => void channel.off('message', listener),
  };
}

interface Collection {
  readonly waitingFor: Set<number>;
  /** Each answering worker's values, by worker id. */
  readonly values: Map<number, Values>;
  settle(err: Error | undefined): void;
}

/** The primary's side: combines the ready workers' values into one exposition text. */
export function createMetricsCollector(deps: { readonly workers: () => readonly WorkerEnd[]; readonly timeoutMs?: number }) {
  let next = 0;
  const collections = new Map<number, Collection>();
  /** The last values each live worker sent: what it adds to the sum once it has ended. */
  const lastSent = new Map<number, Values>();
  /** The counters and histograms of every worker that ended, summed. */
  let ended: Values = [];
  const finish = (id: number, err?: Error) => {
    const collection = collections.get(id);
    if (collection === undefined) return;
    if (err === undefined && collection.waitingFor.size > 0) return;
    collections.delete(id);
    collection.settle(err);
  };

  function collect(): Promise<string> {
    const workers = deps.workers();
    const id = next++;
    return new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        const late = [...(collections.get(id)?.waitingFor ?? [])].join(', ');
        finish(id, new Error(`worker ${late} did not send its metrics within ${deps.timeoutMs ?? COLLECT_TIMEOUT_MS} ms`));
      }, deps.timeoutMs ?? COLLECT_TIMEOUT_MS);
      const values = new Map<number, Values>();
      collections.set(id, {
        waitingFor: new Set(workers.map((w) => w.id)),
        values,
        settle(err) {
          clearTimeout(timer);
          if (err !== undefined) reject(err);
          else {
            // aggregate() throws for an aggregator it does not know: a failed scrape, not a dead primary.
            try {
              AggregatorRegistry.aggregate([...values.values(), ended]).metrics().then(resolve, reject);
            } catch (error: unknown) {
              reject(error instanceof Error ? error : new Error(String(error)));
            }
          }
        },
      });
      for (const worker of workers) worker.send({ svc: 'metrics-get', id });
      finish(id); // no worker ready: an empty text
    });
  }

  return {
    collect,
    /** Takes a worker's message if it is about metrics; true when it was. */
    handle(worker: WorkerEnd, message: unknown): boolean {
      if (!isMetricsFromWorker(message)) return false;
      if (message.svc === 'metrics-collect') {
        collect().then(
          (text) => worker.send({ svc: 'metrics-collected', id: message.id, text }),
          (err: unknown) => worker.send({ svc: 'metrics-collected', id: message.id, error: err instanceof Error ? err.message : String(err) }),
        );
        return true;
      }
      const collection = collections.get(message.id);
      if (collection === undefined || !collection.waitingFor.delete(worker.id)) return true;
      if (message.metrics === undefined) finish(message.id, new Error(`worker ${worker.id} could not read its metrics: ${message.error ?? 'no reason given'}`));
      else {
        collection.values.set(worker.id, message.metrics);
        lastSent.set(worker.id, message.metrics);
        finish(message.id);
      }
      return true;
    },
    /**
     * A worker has exited: its last counters join the ended workers' sum, and a collection under
     * way takes them from there (not twice) or goes on without it if it had not answered yet.
     */
    forget(workerId: number): void {
      const last = lastSent.get(workerId);
      lastSent.delete(workerId);
      if (last !== undefined) ended = addCounters(ended, countersOnly(last));
      for (const [id, collection] of collections) {
        collection.values.delete(workerId);
        if (collection.waitingFor.delete(workerId)) finish(id);
      }
    },
  };
}

function hasSvc(value: unknown, svc: string): boolean {
  return typeof value === 'object' && value !== null && 'svc' in value && value.svc === svc && 'id' in value && typeof value.id === 'number';
}
