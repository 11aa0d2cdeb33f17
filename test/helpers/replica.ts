/**
 * One svc replica as its own OS process, for the multi-replica tests.
 * Usage: node --import tsx test/helpers/replica.ts <configDir> <redisUrl | topology as JSON>
 * It accepts, beside svc's own tokens, those of the tests' issuer (test-issuer.ts). Prints `url <url>` once listening; closes cleanly when stdin ends or on SIGTERM.
 */
import { pino } from 'pino';
import { startServer } from '../../src/main/server.js';
import type { RedisTopology } from '../../src/state/redis-topology.js';
import { createTestVerifier } from './test-issuer.js';

const [configDir, redisUrl] = process.argv.slice(2);
if (configDir === undefined || redisUrl === undefined) {
  process.stderr.write('usage: replica.ts <configDir> <redisUrl>\n');
  process.exit(2);
}
const server = await startServer({
  configDir,
  host: '127.0.0.1',
  port: 0,
  ...(redisUrl.startsWith('{') ? { redis: JSON.parse(redisUrl) as RedisTopology } : { redisUrl }),
  log: pino({ level: 'warn' }, process.stderr),
  verifiers: () => [createTestVerifier()],
});
process.stdout.write(`url ${server.url}\n`);
let closing = false;
async function stop(): Promise<void> {
  if (closing) return;
  closing = true;
  await server.close(1000);
  process.exit(0);
}
process.stdin.on('end', () => void stop());
process.stdin.resume();
process.on('SIGTERM', () => void stop());
