/**
 * `svc login <server> --subject-token-file FILE | --github-actions [--audience A]`: a workload
 * (CI job, pod) logs in with the short-lived token its platform gives it, exchanged for a svc
 * token (RFC 8693, POST /api/v1/session/exchange), which is stored as the current context.
 *
 * Where the subject token comes from: FILE (`-` for stdin), else SVC_SUBJECT_TOKEN; or, with
 * --github-actions, the runner, as GitHub documents: GET ACTIONS_ID_TOKEN_REQUEST_URL with
 * `audience` added, `Authorization: bearer ACTIONS_ID_TOKEN_REQUEST_TOKEN`, answer `{"value": …}`.
 * The default audience is the server's URL. No message ever contains a token.
 */
import { readFile } from 'node:fs/promises';
import { updateConfig, withLogin } from '../config-file.js';
import type { CliContext } from '../context.js';
import { CliError } from '../errors.js';

export const SUBJECT_TOKEN_ENV = 'SVC_SUBJECT_TOKEN';
/** As the server's limit: a larger file is not a platform token. */
const MAX_SUBJECT_TOKEN_BYTES = 16 * 1024;

export interface WorkloadLoginOptions {
  readonly server: string;
  readonly insecure: boolean;
  readonly subjectTokenFile?: string;
  readonly githubActions: boolean;
  readonly audience?: string;
}

/** Whether the options (or the environment) ask for a workload login. */
export function wantsWorkloadLogin(options: { subjectTokenFile?: string; githubActions?: boolean }, env: Readonly<Record<string, string | undefined>>): boolean {
  return options.subjectTokenFile !== undefined || options.githubActions === true || (env[SUBJECT_TOKEN_ENV] ?? '').trim() !== '';
}

export async function runWorkloadLogin(ctx: CliContext, options: WorkloadLoginOptions): Promise<void> {
  if (options.githubActions && options.subjectTokenFile !== undefined) throw new CliError('--github-actions and --subject-token-file are two ways to get the token: give one');
  if (options.audience !== undefined && !options.githubActions) throw new CliError('--audience goes with --github-actions (a token file already names its audience)');
  const subjectToken = options.githubActions
    ? await githubActionsToken(ctx, options.audience ?? options.server)
    : await tokenFromFileOrEnv(ctx, options.subjectTokenFile);
  const client = ctx.clientFor({ server: options.server, insecure: options.insecure });
  const { token, expiresIn } = await client.exchangeToken(subjectToken);
  await updateConfig(ctx.configFile(), (config) => withLogin(config, { server: options.server, insecure: options.insecure, token }));
  ctx.print(`'${subjectOf(token)}' logged in successfully (token valid for ${expiresIn}s)`);
  ctx.print(`Context '${options.server}' updated`);
}

async function tokenFromFileOrEnv(ctx: CliContext, file: string | undefined): Promise<string> {
  let text: string;
  if (file === undefined) {
    text = ctx.io.env[SUBJECT_TOKEN_ENV] ?? '';
  } else if (file === '-') {
    text = await readStdin(ctx.io.stdin);
  } else {
    try {
      text = await readFile(file, 'utf8');
    } catch (err: unknown) {
      throw new CliError(`cannot read the subject token file '${file}': ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    }
  }
  return checkedToken(text, file === undefined ? SUBJECT_TOKEN_ENV : file === '-' ? 'stdin' : `'${file}'`);
}

function checkedToken(text: string, from: string): string {
  const token = text.trim();
  if (token === '') throw new CliError(`no subject token in ${from}`);
  if (Buffer.byteLength(token) > MAX_SUBJECT_TOKEN_BYTES) throw new CliError(`the subject token in ${from} is larger than ${MAX_SUBJECT_TOKEN_BYTES} bytes`);
  if (!/^[\w-]+\.[\w-]+\.[\w-]*$/.test(token)) throw new CliError(`${from} does not hold a JWT (three base64url parts separated by dots)`);
  return token;
}

async function readStdin(stdin: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin as AsyncIterable<Buffer | string>) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_SUBJECT_TOKEN_BYTES * 2) throw new CliError(`the subject token on stdin is larger than ${MAX_SUBJECT_TOKEN_BYTES} bytes`);
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function githubActionsToken(ctx: CliContext, audience: string): Promise<string> {
  const requestUrl = ctx.io.env['ACTIONS_ID_TOKEN_REQUEST_URL'];
  const requestToken = ctx.io.env['ACTIONS_ID_TOKEN_REQUEST_TOKEN'];
  if (requestUrl === undefined || requestUrl === '' || requestToken === undefined || requestToken === '') {
    throw new CliError("ACTIONS_ID_TOKEN_REQUEST_URL and ACTIONS_ID_TOKEN_REQUEST_TOKEN are not set: run in a GitHub Actions job with 'permissions: id-token: write'");
  }
  if (!URL.canParse(requestUrl)) throw new CliError('ACTIONS_ID_TOKEN_REQUEST_URL is not a URL');
  const url = new URL(requestUrl);
  url.searchParams.set('audience', audience);
  const fetchImpl = ctx.io.fetch ?? globalThis.fetch;
  let response: Response;
  try {
    response = await fetchImpl(url.href, { method: 'GET', headers: { authorization: `bearer ${requestToken}`, accept: 'application/json; api-version=2.0' } });
  } catch (err: unknown) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new CliError(`cannot reach the runner's token endpoint (${url.origin}): ${cause}`);
  }
  const text = await response.text();
  if (!response.ok) throw new CliError(`the runner's token endpoint answered ${response.status}`);
  let value: unknown;
  try {
    value = (JSON.parse(text) as { value?: unknown }).value;
  } catch {
    value = undefined;
  }
  if (typeof value !== 'string') throw new CliError("the runner's token endpoint answered without a token (no \"value\")");
  return checkedToken(value, "the runner's answer");
}

/** The svc token's `sub`, for the greeting only (not verified: the server just issued it). */
function subjectOf(token: string): string {
  try {
    const payload = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof payload.sub === 'string' ? payload.sub : 'workload';
  } catch {
    return 'workload';
  }
}
