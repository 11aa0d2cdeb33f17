#!/usr/bin/env node
/**
 * `svc-server`: starts the server (default), answers offline questions about a config dir
 * (`validate`, `rbac can`, `admin initial-password`), rotates the identity provider's keys (`idp rotate-keys`), or lifts a
 * login lockout in Redis (`login unlock`). Flags win over the environment (SVC_CONFIG_DIR, SVC_LISTEN,
 * SVC_REDIS_URL, SVC_WORKERS).
 */
// First: refuses an unsupported Node before any dependency loads (lib/supported-runtime.ts).
import '../lib/supported-runtime.js';
import { Command, InvalidArgumentError } from 'commander';
import { availableParallelism } from 'node:os';
import { runServe, type ServeOptions } from './serve.js';
import { runRotateKeys } from './idp.js';
import { runLoginUnlock } from './login-unlock.js';
import { runRbacCan } from './rbac-can.js';
import { runInitialPassword } from './admin.js';
import { SERVER_SYNOPSIS } from './usage.js';
import { runValidate } from './validate.js';
import { svcVersion } from '../lib/version.js';

export const DEFAULT_CONFIG_DIR = './config';
export const DEFAULT_LISTEN = '127.0.0.1:8080';

function parseListen(value: string): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]*):(\d{1,5})$/.exec(value);
  const port = Number(match?.[2]);
  if (match === null || port > 65535) throw new InvalidArgumentError(`'${value}' is not HOST:PORT (for example 127.0.0.1:8080)`);
  return { host: (match[1] || '0.0.0.0').replace(/^\[|\]$/g, ''), port };
}

function parseWorkers(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new InvalidArgumentError(`'${value}' is not a number of workers from 1 to 256`);
  return n;
}

const program = new Command('svc-server')
  .description('svc: SSO broker, token issuer and authenticated extension proxy')
  .version(`svc-server ${svcVersion()} (Node.js ${process.version})`, '--version', 'print the version and exit')
  .addHelpText('after', `\nSynopsis (as in the README):\n${SERVER_SYNOPSIS}\n\nFlags win over the environment; a variable set to the empty string counts as unset.`);

program
  .command('serve', { isDefault: true })
  .description('start the server')
  .option('--config <dir>', 'configuration directory (env SVC_CONFIG_DIR)', env('SVC_CONFIG_DIR') ?? DEFAULT_CONFIG_DIR)
  .option('--listen <host:port>', 'address to listen on (env SVC_LISTEN)', env('SVC_LISTEN') ?? DEFAULT_LISTEN)
  .option('--redis <url>', 'Redis URL for shared state (env SVC_REDIS_URL)', env('SVC_REDIS_URL'))
  .option('--tls-cert <file>', 'serve https with this certificate (PEM)')
  .option('--tls-key <file>', 'private key for --tls-cert (PEM)')
  .option('--workers <n>', 'worker processes (env SVC_WORKERS; default: all cores with --redis, else 1)', parseWorkers)
  .option('--metrics-listen <host:port>', 'serve /metrics on this address only, not on --listen (env SVC_METRICS_LISTEN)', env('SVC_METRICS_LISTEN'))
  .action(async (opts: { config: string; listen: string; redis?: string; tlsCert?: string; tlsKey?: string; workers?: number; metricsListen?: string }) => {
    if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) fail('--tls-cert and --tls-key go together');
    // '' is "not given", as for the environment: the state would otherwise be memory (state/index.ts)
    // while the worker count assumed Redis.
    const redis = opts.redis === '' || opts.redis === undefined ? undefined : checkedRedisUrl(opts.redis);
    const workers = opts.workers ?? envWorkers() ?? (redis !== undefined ? availableParallelism() : 1);
    const listen = (() => {
      try {
        return parseListen(opts.listen);
      } catch (err: unknown) {
        return fail(`--listen (or SVC_LISTEN): ${(err as Error).message}`);
      }
    })();
    const metricsListen = (() => {
      if (opts.metricsListen === undefined || opts.metricsListen === '') return undefined;
      try {
        return parseListen(opts.metricsListen);
      } catch (err: unknown) {
        return fail(`--metrics-listen (or SVC_METRICS_LISTEN): ${(err as Error).message}`);
      }
    })();
    if (workers > 1 && redis === undefined) {
      fail('--workers above 1 needs --redis: login throttling and token revocation must be shared by every worker');
    }
    const serve: ServeOptions = {
      configDir: opts.config,
      ...listen,
      workers,
      ...(redis !== undefined ? { redisUrl: redis } : {}),
      ...(metricsListen !== undefined ? { metricsListen } : {}),
      ...(opts.tlsCert !== undefined && opts.tlsKey !== undefined ? { tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey } } : {}),
    };
    await runServe(serve);
  });

program
  .command('validate')
  .description('check every store of a config dir; exit 0 when clean, 1 with one line per problem')
  .requiredOption('--config <dir>', 'configuration directory')
  .action(async (opts: { config: string }) => {
    process.exitCode = await runValidate(opts.config, process.stdout, process.stderr);
  });

const rbac = program.command('rbac').description('questions about the rights policy');
rbac
  .command('can')
  .description('answer offline: exit 0 when SUBJECT may, 2 when not')
  .requiredOption('--config <dir>', 'configuration directory')
  .argument('<subject>')
  .argument('<resource>')
  .argument('<action>')
  .argument('<object>')
  .action(async (subject: string, resource: string, action: string, object: string, opts: { config: string }) => {
    process.exitCode = await runRbacCan(opts.config, { subject, resource, action, object }, process.stdout, process.stderr);
  });

const admin = program.command('admin').description('administration of a config dir');
admin
  .command('initial-password')
  .description("print the first start's admin password (Secret svc-initial-admin-secret), as argocd admin initial-password")
  .requiredOption('--config <dir>', 'configuration directory')
  .action(async (opts: { config: string }) => {
    process.exitCode = await runInitialPassword(opts.config, process.stdout, process.stderr);
  });

const loginCommand = program.command('login').description('break-glass for password logins');
loginCommand
  .command('unlock')
  .description("forget a name's failed logins and lift its lockout in Redis (anyone can lock admin with a few wrong passwords)")
  .option('--redis <url>', 'Redis URL of the shared state (env SVC_REDIS_URL)', env('SVC_REDIS_URL'))
  .argument('<username>')
  .action(async (username: string, opts: { redis?: string }) => {
    const redis = opts.redis === '' || opts.redis === undefined ? undefined : checkedRedisUrl(opts.redis);
    process.exitCode = await runLoginUnlock(redis, username, process.stdout, process.stderr);
  });

const idp = program.command('idp').description('the bundled identity provider');
idp
  .command('rotate-keys')
  .description('add a new signing key, published now and signing in 5 minutes; old keys stay published until their tokens expire')
  .requiredOption('--config <dir>', 'configuration directory')
  .action(async (opts: { config: string }) => {
    process.exitCode = await runRotateKeys(opts.config, process.stdout, process.stderr);
  });

/**
 * SVC_WORKERS, read here and not as the option's default: a default is computed when the program
 * is defined, so a bad value would crash every subcommand (validate too) with a stack trace.
 */
function envWorkers(): number | undefined {
  const value = env('SVC_WORKERS');
  if (value === undefined) return undefined;
  try {
    return parseWorkers(value);
  } catch (err: unknown) {
    return fail(`SVC_WORKERS: ${(err as Error).message}`);
  }
}

/** An environment variable; set but empty counts as unset. */
function env(name: string): string | undefined {
  const value = process.env[name];
  return value === '' ? undefined : value;
}

/**
 * `redis://[user:password@]host[:port][/db]` or `rediss://` (TLS). Anything else is refused here,
 * without echoing the value (it may hold the password): ioredis reads an unknown scheme as a
 * Unix socket path and logs it whole, and a non-numeric db crashes it on connect.
 */
function checkedRedisUrl(value: string): string {
  const problem = redisUrlProblem(value);
  return problem === undefined ? value : fail(`--redis (or SVC_REDIS_URL): ${problem}; use redis://[user:password@]host[:port][/db], or rediss:// for TLS`);
}

function redisUrlProblem(value: string): string | undefined {
  if (!URL.canParse(value)) return 'not a URL';
  const url = new URL(value);
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return `the scheme is ${url.protocol.slice(0, 12)}, not redis: or rediss:`;
  if (url.hostname === '') return 'no host';
  if (!/^\/?(\d{1,2})?$/.test(url.pathname)) return 'the path must be a database number (/0 to /99) or nothing';
  return undefined;
}

function fail(message: string): never {
  process.stderr.write(`svc-server: ${message}\n`);
  process.exit(1);
}

program.parseAsync(process.argv).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
