/**
 * A foreign client's program (oidc-agent, idwcc, a Python script) as a child process: its output
 * kept, a wait for a line it prints, its end awaited with a bound, and a stop that kills only it.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export interface ForeignProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** stdout alone so far. */
  stdout(): string;
  /** Resolves with the first match of `pattern` in the output, within `timeoutMs`. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Resolves with the exit code, within `timeoutMs` (then the process is killed and it rejects). */
  exited(timeoutMs?: number): Promise<number | null>;
  stop(): Promise<void>;
}

export function startForeign(command: string, args: readonly string[], env: Readonly<Record<string, string>>, options: { readonly stdin?: 'pipe' | 'ignore' } = {}): ForeignProcess {
  const child = spawn(command, args, { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', LANG: 'C.UTF-8', ...env }, stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'] });
  let text = '';
  let out = '';
  const waiters = new Set<() => void>();
  const onData = (chunk: Buffer): void => {
    text += chunk.toString('utf8');
    for (const wake of waiters) wake();
  };
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
    onData(chunk);
  });
  child.stderr?.on('data', onData);
  const exit = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  child.once('close', () => {
    for (const wake of waiters) wake();
  });
  return {
    child,
    output: () => text,
    stdout: () => out,
    waitFor(pattern, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const match = pattern.exec(text);
          if (match !== null) done(() => resolve(match));
          else if (child.exitCode !== null) done(() => reject(new Error(`${command} exited (${child.exitCode}) before printing ${pattern}:\n${text}`)));
        };
        const timer = setTimeout(() => done(() => reject(new Error(`${command} did not print ${pattern} within ${timeoutMs} ms:\n${text}`))), timeoutMs);
        const done = (then: () => void): void => {
          clearTimeout(timer);
          waiters.delete(check);
          then();
        };
        waiters.add(check);
        check();
      });
    },
    async exited(timeoutMs = 30_000) {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`${command} did not end within ${timeoutMs} ms:\n${text}`));
        }, timeoutMs);
      });
      try {
        return await Promise.race([exit, late]);
      } finally {
        clearTimeout(timer);
      }
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const ended = await Promise.race([exit.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 2000))]);
      if (!ended) child.kill('SIGKILL');
    },
  };
}

/** Runs a program to its end: its exit code and output. */
export async function runForeign(command: string, args: readonly string[], env: Readonly<Record<string, string>>, timeoutMs = 30_000): Promise<{ code: number | null; output: string; stdout: string }> {
  const run = startForeign(command, args, env);
  const code = await run.exited(timeoutMs);
  return { code, output: run.output(), stdout: run.stdout() };
}
