/**
 * The CLI's own config file, `~/.config/svc/config` (honours $HOME; `--config` overrides), laid
 * out like Argo CD's `~/.config/argocd/config` so operators recognise it:
 *
 *   current-context: https://svc.example.com
 *   contexts: [{name, server, user}]
 *   servers:  [{server, insecure?}]
 *   users:    [{name, auth-token?, refresh-token?}]
 *
 * It holds bearer tokens, so it is written with mode 0600 in a 0700 directory, atomically
 * (temp file + rename: a crash never leaves half a file) and under a lock file (two `svc login`
 * at once never lose an update). YAML is written; JSON is read too (JSON is YAML). Keys this
 * version does not know are kept on rewrite, so a newer CLI's additions survive an older one.
 */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import YAML from 'yaml';
import { z } from 'zod';
import { writeFileAtomic } from '../lib/atomic-file.js';
import { errorCode, withFileLock } from '../lib/file-lock.js';
import { CliError } from './errors.js';
import { issueMessage, issuePlace } from '../config/zod-problems.js';

export const CONFIG_FILE_MODE = 0o600;
export const CONFIG_DIR_MODE = 0o700;

const contextSchema = z.looseObject({ name: z.string(), server: z.string(), user: z.string() });
const serverSchema = z.looseObject({ server: z.string(), insecure: z.boolean().optional() });
const userSchema = z.looseObject({ name: z.string(), 'auth-token': z.string().optional(), 'refresh-token': z.string().optional() });
const configSchema = z.looseObject({
  'current-context': z.string().optional(),
  contexts: z.array(contextSchema).default([]),
  servers: z.array(serverSchema).default([]),
  users: z.array(userSchema).default([]),
});

export type CliConfig = z.infer<typeof configSchema>;

/** What the commands need to talk to one server. */
export interface ServerLogin {
  readonly server: string;
  readonly insecure: boolean;
  readonly token?: string;
  /** Only after an SSO login: what renews the ID token stored as `token`. */
  readonly refreshToken?: string;
}

export function emptyConfig(): CliConfig {
  return { contexts: [], servers: [], users: [] };
}

/** `--config`, else `$HOME/.config/svc/config`. */
export function configPath(env: Readonly<Record<string, string | undefined>>, explicit?: string): string {
  if (explicit !== undefined && explicit !== '') return path.resolve(explicit);
  const home = env['HOME'];
  if (home === undefined || home === '') throw new CliError('HOME is not set; pass --config <path>');
  return path.join(home, '.config', 'svc', 'config');
}

export function parseConfig(text: string, file: string): CliConfig {
  let raw: unknown;
  try {
    raw = YAML.parse(text);
  } catch (err: unknown) {
    throw new CliError(`${file}: not valid YAML or JSON: ${firstLine(err)}`);
  }
  const parsed = configSchema.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new CliError(`${file}: ${issue === undefined ? 'not a svc config' : `${issuePlace(issue)}${issueMessage(issue, raw ?? {})}`}`);
  }
  return parsed.data;
}

/** The config, or an empty one when the file does not exist yet. */
export async function readConfig(file: string): Promise<CliConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err: unknown) {
    if (errorCode(err) === 'ENOENT') return emptyConfig();
    throw new CliError(`cannot read ${file}: ${firstLine(err)}`, { cause: err });
  }
  return parseConfig(text, file);
}

export async function writeConfig(file: string, config: CliConfig): Promise<void> {
  await ensureDir(path.dirname(file));
  await writeFileAtomic(file, YAML.stringify(config), { mode: CONFIG_FILE_MODE });
}

/** Read-modify-write under `<file>.lock`, so concurrent CLI runs never lose an update. */
export async function updateConfig(file: string, change: (config: CliConfig) => CliConfig | Promise<CliConfig>): Promise<CliConfig> {
  await ensureDir(path.dirname(file));
  return withFileLock(file, async () => {
    const next = await change(await readConfig(file));
    await writeConfig(file, next);
    return next;
  });
}

/** Creates the directory 0700 when missing; an existing directory is the user's and left alone. */
async function ensureDir(dir: string): Promise<void> {
  await mkdir(path.dirname(dir), { recursive: true });
  try {
    await mkdir(dir, { mode: CONFIG_DIR_MODE });
  } catch (err: unknown) {
    if (errorCode(err) !== 'EEXIST') throw err;
  }
}

/**
 * Records a successful login: server, token (and refresh token after SSO), and makes it the
 * current context. A password login drops an older SSO refresh token: it belongs to another
 * token and would otherwise renew into the wrong identity.
 */
export function withLogin(config: CliConfig, login: ServerLogin): CliConfig {
  const name = login.server;
  const contexts = upsert(config.contexts, (c) => c.name === name, (old) => ({ ...old, name, server: name, user: name }));
  const servers = upsert(config.servers, (s) => s.server === name, (old) => {
    const { insecure: _was, ...rest } = old ?? {};
    return { ...rest, server: name, ...(login.insecure ? { insecure: true } : {}) };
  });
  const users = upsert(config.users, (u) => u.name === name, (old) => {
    const { 'auth-token': _was, 'refresh-token': _wasRefresh, ...rest } = old ?? {};
    return {
      ...rest,
      name,
      ...(login.token !== undefined ? { 'auth-token': login.token } : {}),
      ...(login.refreshToken !== undefined ? { 'refresh-token': login.refreshToken } : {}),
    };
  });
  return { ...config, 'current-context': name, contexts, servers, users };
}

/** Forgets the tokens of one server; the context stays so `svc login` can be repeated. */
export function withoutToken(config: CliConfig, server: string): CliConfig {
  const context = config.contexts.find((c) => c.server === server);
  const userName = context?.user ?? server;
  const users = config.users.map((u) => {
    if (u.name !== userName) return u;
    const { 'auth-token': _dropped, 'refresh-token': _droppedRefresh, ...rest } = u;
    return rest;
  });
  return { ...config, users };
}

/** New tokens for `server` after a refresh; the current context stays what it is. */
export function withTokens(config: CliConfig, server: string, token: string, refreshToken: string): CliConfig {
  const userName = config.contexts.find((c) => c.server === server)?.user ?? server;
  const users = config.users.map((u) => (u.name === userName ? { ...u, 'auth-token': token, 'refresh-token': refreshToken } : u));
  return { ...config, users };
}

/** The current context's server, insecure switch and token, if any. */
export function currentLogin(config: CliConfig): ServerLogin | undefined {
  const name = config['current-context'];
  if (name === undefined) return undefined;
  const context = config.contexts.find((c) => c.name === name);
  if (context === undefined) return undefined;
  return loginFor(config, context.server);
}

/** What the config knows about `server` (by URL), whether or not it is the current one. */
export function loginFor(config: CliConfig, server: string): ServerLogin {
  const context = config.contexts.find((c) => c.server === server);
  const entry = config.servers.find((s) => s.server === server);
  const user = config.users.find((u) => u.name === (context?.user ?? server));
  const token = user?.['auth-token'];
  const refreshToken = user?.['refresh-token'];
  return {
    server,
    insecure: entry?.insecure === true,
    ...(token !== undefined ? { token } : {}),
    ...(refreshToken !== undefined ? { refreshToken } : {}),
  };
}

function upsert<T>(list: readonly T[], match: (item: T) => boolean, make: (old: T | undefined) => T): T[] {
  const index = list.findIndex(match);
  if (index < 0) return [...list, make(undefined)];
  return list.map((item, i) => (i === index ? make(item) : item));
}

function firstLine(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.split('\n')[0] ?? text;
}
