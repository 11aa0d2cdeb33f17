#!/usr/bin/env node
/**
 * Entry point of the `svc` binary (package.json `bin`): runs the command line against the real
 * process and exits with its code once stdout and stderr are flushed (so `svc … | head` and
 * redirected output never lose the last line). Exiting explicitly also closes pooled HTTP
 * connections that would otherwise keep the process alive for their keep-alive time.
 */
// First: refuses an unsupported Node before any dependency loads (lib/supported-runtime.ts).
import '../lib/supported-runtime.js';
import { run } from './program.js';

function flush(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (!stream.write('', () => resolve())) stream.once('drain', () => resolve());
  });
}

const code = await run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
await Promise.all([flush(process.stdout), flush(process.stderr)]);
process.exit(code);
