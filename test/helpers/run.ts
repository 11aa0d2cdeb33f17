/** Runs one of the project's entry points as a real process, as an operator would. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The product's two entry points, as runEntry and entryArgs take them. */
export const SERVER_ENTRY = 'src/commands/svc-server.ts';
export const CLI_ENTRY = 'src/cli/main.ts';

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

/** The environment variable naming the suite's own compiled copy of dist/ (test/build.ts). */
export const SUITE_DIST_VARIABLE = 'SVC_TEST_DIST';

/**
 * How node runs `entry`: a source entry point of the product (under src/ or connectors/) from its
 * compiled twin in the suite's copy of dist/, as `npm start` and the image run it; anything else,
 * an option that loads TypeScript, or a run without the suite's global setup, through tsx. Each
 * process started through tsx spends about a second more CPU loading it.
 */
export function entryArgs(entry: string, nodeOptions: readonly string[] = []): string[] {
  const dist = process.env[SUITE_DIST_VARIABLE];
  const compiled = dist !== undefined && dist !== '' && /^(src|connectors)\/.*\.ts$/.test(entry) && !nodeOptions.some((o) => o.endsWith('.ts'));
  return compiled ? [...nodeOptions, join(dist, entry.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', ...nodeOptions, entry];
}
