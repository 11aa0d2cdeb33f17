/** The CLI as a real process whose stderr a test reads while it runs (it prints the URL to visit). */
import { spawn } from 'node:child_process';
import { ROOT, entryArgs, CLI_ENTRY } from './run.js';

export interface RunningCli {
  /** Resolves with the first match of `pattern` in stderr so far or to come. */
  waitFor(pattern: RegExp): Promise<RegExpMatchArray>;
  readonly done: Promise<{ code: number | null; stdout: string; stderr: string }>;
  stop(): void;
}

/** SVC_NO_BROWSER_OPEN=1: the test plays the browser. `env` adds e.g. NODE_EXTRA_CA_CERTS for a provider on a test CA. */
export function startCli(home: string, args: readonly string[], env: Readonly<Record<string, string>> = {}): RunningCli {
  const childEnv = { PATH: process.env['PATH'], HOME: home, SVC_NO_BROWSER_OPEN: '1', ...env };
  const child = spawn(process.execPath, [...entryArgs(CLI_ENTRY), ...args], { cwd: ROOT, env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of [...waiters]) {
      const m = stderr.match(w.pattern);
      if (m === null) continue;
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(m);
    }
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  return {
    done,
    stop: () => void child.kill(),
    waitFor: (pattern) =>
      Promise.race([
        new Promise<RegExpMatchArray>((resolve) => {
          const m = stderr.match(pattern);
          if (m !== null) resolve(m); else waiters.push({ pattern, resolve });
        }),
        done.then((r) => Promise.reject(new Error(`the CLI ended (${r.code}) before printing ${pattern}: ${r.stderr}`))),
      ]),
  };
}
