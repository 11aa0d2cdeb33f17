// One svc process whose audit sink the proxy bench chooses: `none` (no sink at all) or a file.
// bench/proxy.sh floods both with refused requests (403s, each one an audit event) to print what
// the audit trail costs; both run the same code the same way, so their ratio is the sink's cost.
// Usage: node --import tsx bench/audit-variant.ts CONFIG_DIR PORT REDIS_URL none|FILE
import { NO_AUDIT } from '../src/audit/trail.js';
import { openAuditSink } from '../src/audit/open-sink.js';
import { createLogger } from '../src/main/log.js';
import { startServer } from '../src/main/server.js';

const [configDir, port, redisUrl, mode] = process.argv.slice(2);
if (configDir === undefined || port === undefined || redisUrl === undefined || mode === undefined) {
  process.stderr.write('usage: audit-variant.ts CONFIG_DIR PORT REDIS_URL none|FILE\n');
  process.exit(2);
}
const log = createLogger({ level: 'warn' });
const opened = mode === 'none' ? undefined : await openAuditSink({ file: mode, fd: 1, log });
const server = await startServer({ configDir, host: '127.0.0.1', port: Number(port), redisUrl, log, audit: opened?.sink ?? NO_AUDIT });
process.once('SIGTERM', () => {
  void server.close(1000).then(() => opened?.sink.close()).then(() => process.exit(0));
});
