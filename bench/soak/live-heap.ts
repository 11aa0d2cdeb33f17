/**
 * The live JS heap of the process no fault touches: a full collection through its inspector
 * (DevTools protocol over a WebSocket on 127.0.0.1 only), then the heap in use. RSS and the heap
 * /metrics reports also count garbage not yet collected and the pages V8 keeps for its heap to
 * grow into; what survives a full collection is what a leak grows. The collection is one that
 * reduces memory: V8 gives its spare pages back, so the RSS read after it is the floor a leak
 * would raise (and the RSS between two of them regrows to V8's heap size).
 */

const TIMEOUT_MS = 10_000;

interface Reply {
  readonly id?: number;
  readonly result?: { readonly usedSize?: number };
  readonly error?: { readonly message?: string };
}

/** The inspector's WebSocket address for the process listening on `port` (its first target). */
async function debuggerUrl(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/json/list`, { signal: AbortSignal.timeout(TIMEOUT_MS) });
  const targets = (await res.json()) as { webSocketDebuggerUrl?: string }[];
  const url = targets[0]?.webSocketDebuggerUrl;
  if (url === undefined) throw new Error(`the inspector on port ${port} lists no target`);
  return url;
}

/** MB of JS heap in use right after a full collection, or undefined (with why on stderr) when the inspector does not answer. */
export async function liveHeapMb(inspectPort: number): Promise<number | undefined> {
  let socket: WebSocket | undefined;
  try {
    socket = new WebSocket(await debuggerUrl(inspectPort));
    const ws = socket;
    const pending = new Map<number, (reply: Reply) => void>();
    ws.addEventListener('message', (event) => {
      const reply = JSON.parse(String(event.data)) as Reply;
      if (reply.id !== undefined) pending.get(reply.id)?.(reply);
    });
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve(), { once: true });
      ws.addEventListener('error', () => reject(new Error('the inspector refused the connection')), { once: true });
    });
    let next = 1;
    const call = (method: string): Promise<Reply> => {
      const id = next++;
      return new Promise<Reply>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`${method}: no answer in ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
        pending.set(id, (reply) => {
          clearTimeout(timer);
          if (reply.error !== undefined) reject(new Error(`${method}: ${reply.error.message ?? 'refused'}`));
          else resolve(reply);
        });
        ws.send(JSON.stringify({ id, method }));
      });
    };
    await call('HeapProfiler.collectGarbage');
    const used = (await call('Runtime.getHeapUsage')).result?.usedSize;
    return used === undefined ? undefined : used / (1 << 20);
  } catch (err) {
    process.stderr.write(`soak: live heap not read: ${err instanceof Error ? err.message : String(err)}\n`);
    return undefined;
  } finally {
    socket?.close();
  }
}
