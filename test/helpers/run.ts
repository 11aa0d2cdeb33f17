/** Runs one of the project's entry points as a real process, as an operator would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface RunResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A user that file permissions apply to. Tests run as root in CI, and root reads and writes a
 * chmod 000 directory anyway; as nobody the EACCES paths are real. Empty when not root.
 */
export const UNPRIVILEGED: { readonly uid?: number; readonly gid?: number } = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};

/** runEntry's processes still running, with what they run. */
const running = new Map<ChildProcess, string>();

/**
 * Kills runEntry's processes still running (test/processes-left.ts, after each test) and names
 * them. A test that mocha timed out goes on without being awaited; its svc-server, whose peers
 * and config dir the after hooks then remove, would otherwise run on (and write a fresh config
 * dir with a new admin password where the removed one was).
 */
export function killRunEntryProcesses(): string[] {
  const killed = [...running.values()];
  for (const child of running.keys()) child.kill('SIGKILL');
  running.clear();
  return killed;
}

/** Runs `entry` (a file of the repository, see entryArgs) with `args`, as its own process; resolves when it exits. */
export function runEntry(
  entry: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  stdin?: string,
  user: { readonly uid?: number; readonly gid?: number } = {},
  /** More node options before the entry (another `--import`, say; one of a TypeScript file runs it all through tsx). */
  nodeOptions: readonly string[] = [],
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...entryArgs(entry, nodeOptions), ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'], ...user });
    // Named in a log line: a URL's user and password stay out of it.
    running.set(child, [entry, ...args].join(' ').replace(/\/\/[^@/\s]*@/g, '//…@'));
    child.on('exit', () => running.delete(child));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}

/**
 * How node runs `entry`: through tsx. Not the compiled twin in dist/: the quick start's test runs
 * `npm run build`, which rewrites dist/ while the other worker's tests start processes from it
 * (a svc-server once loaded a half-written module).
 */
export function entryArgs(entry: string, nodeOptions: readonly string[] = []): string[] {
  return ['--import', 'tsx', ...nodeOptions, entry];
}
