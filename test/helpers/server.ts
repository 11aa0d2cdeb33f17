/** Starts a real svc server in this process on a free loopback port, with logs kept in memory. */
import { pino, type Logger } from 'pino';
import { Writable } from 'node:stream';
import { startServer, type RunningServer, type ServerOptions } from '../../src/main/server.js';
import { CAPTURE_TRAIL } from '../audit-capture.js';

export interface TestServer extends RunningServer {
  /** Every log line so far, as text (to prove what never appears in logs). */
  logs(): string;
}

export async function startTestServer(configDir: string, options: Partial<Omit<ServerOptions, 'configDir' | 'log'>> = {}): Promise<TestServer> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  const log: Logger = pino({ level: 'debug' }, sink);
  // Every test server's events are checked for secrets and against the schema (audit-capture.ts), unless the test collects them itself.
  const running = await startServer({ configDir, host: '127.0.0.1', port: 0, log, audit: CAPTURE_TRAIL, ...options });
  return Object.assign(running, { logs: () => lines.join('') });
}
