/**
 * A second OS process for the concurrent-write tests: opens its own DirStore on a directory and
 * increments one counter key of one Secret `count` times, each a read-modify-write.
 * Usage: node --import tsx test/helpers/store-writer.ts <dir> <secret> <key> <count>
 * Prints `ready` once the store is open (the parent starts its own writes then) and `done` at the end.
 */
import { pino } from 'pino';
import { openDirStore } from '../../src/config/dir-store.js';

const [dir, secret, key, countText] = process.argv.slice(2);
if (dir === undefined || secret === undefined || key === undefined || countText === undefined) {
  process.stderr.write('usage: store-writer <dir> <secret> <key> <count>\n');
  process.exit(2);
}
const store = await openDirStore({ dir, log: pino({ level: 'silent' }) });
process.stdout.write('ready\n');
for (let i = 0; i < Number(countText); i++) {
  await store.updateSecret(secret, (current) => ({ set: { [key]: String(Number(current[key] ?? '0') + 1) } }));
}
await store.close();
process.stdout.write('done\n');
