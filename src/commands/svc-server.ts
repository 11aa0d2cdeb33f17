#!/usr/bin/env node
/**
 * `svc-server`: starts the server (default), answers offline questions about a config dir
 * (`validate`, `rbac can`, `admin initial-password`), administers accounts when no login works
 * (`account …`), rotates the identity provider's keys (`idp rotate-keys`), or lifts a
 * login lockout in Redis (`login unlock`). Flags win over the environment (SVC_CONFIG_DIR, SVC_LISTEN,
 * SVC_REDIS_URL, SVC_REDIS_SENTINELS, SVC_REDIS_SENTINEL_MASTER, SVC_REDIS_CLUSTER, SVC_REDIS_TLS,
 * SVC_REDIS_DB, SVC_WORKERS); Redis passwords come from the environment only (SVC_REDIS_USERNAME,
 * SVC_REDIS_PASSWORD, SVC_REDIS_SENTINEL_USERNAME, SVC_REDIS_SENTINEL_PASSWORD), never a flag that
 * `ps` would show.
 */
// First: refuses an unsupported Node before any dependency loads (lib/supported-runtime.ts).
import '../lib/supported-runtime.js';
import { Command, InvalidArgumentError } from 'commander';
import { parseRedisTopology, RedisConfigError, withoutUnusedCredentials, type RedisTopology, type RedisTopologyInput } from '../state/redis-topology.js';
import { defaultWorkerCount } from '../main/cpu-limit.js';
import { runServe, type ServeOptions } from './serve.js';
import { runRotateKeys } from './idp.js';
import { runAccountCommand, type AccountCommand } from './account.js';
import { runLoginUnlock } from './login-unlock.js';
import { runRbacCan } from './rbac-can.js';
import { runInitialPassword } from './admin.js';
import { SERVER_SYNOPSIS } from './usage.js';
import { runValidate, runValidateCluster } from './validate.js';
import type { ClusterStoreOptions } from '../config/kube/open.js';
import { svcVersion } from '../lib/version.js';
import { validateState } from './validate-state.js';
import { AUDIT_LOG_VARIABLE, AuditLogUnwritable, openAuditSink } from '../audit/open-sink.js';
import { countingTrail, stderrAuditNote } from '../audit/offline.js';
import type { AuditTrail } from '../audit/trail.js';
import { createLogger } from '../main/log.js';

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

withKubeOptions(withRedisOptions(program.command('serve', { isDefault: true })), 'read and write the stores through the Kubernetes API, not --config', { applications: true })
  .description('start the server')
  .option('--config <dir>', 'configuration directory (env SVC_CONFIG_DIR)', env('SVC_CONFIG_DIR') ?? DEFAULT_CONFIG_DIR)
  .option('--listen <host:port>', 'address to listen on (env SVC_LISTEN)', env('SVC_LISTEN') ?? DEFAULT_LISTEN)
  .option('--tls-cert <file>', 'serve https with this certificate (PEM)')
  .option('--tls-key <file>', 'private key for --tls-cert (PEM)')
  .option('--workers <n>', 'worker processes (env SVC_WORKERS; default: the container CPU limit with Redis, else 1)', parseWorkers)
  .option('--metrics-listen <host:port>', 'serve /metrics on this address only, not on --listen (env SVC_METRICS_LISTEN)', env('SVC_METRICS_LISTEN'))
  .option(...auditLogOption('stdout, beside the operational log'))
  .action(async (opts: { config: string; listen: string; tlsCert?: string; tlsKey?: string; workers?: number; metricsListen?: string } & RedisFlags & KubeFlags & AuditFlags) => {
    if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) fail('--tls-cert and --tls-key go together');
    // '' is "not given", as for the environment: the state would otherwise be memory (state/index.ts)
    // while the worker count assumed Redis.
    const redis = redisTopology(opts);
    const workers = opts.workers ?? envWorkers() ?? (redis !== undefined ? defaultWorkerCount() : 1);
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
      fail('--workers above 1 needs --redis, --redis-sentinel or --redis-cluster: login throttling and token revocation must be shared by every worker');
    }
    const kube = kubeOptions(opts);
    const serve: ServeOptions = {
      configDir: opts.config,
      ...(kube !== undefined ? { kube } : {}),
      ...listen,
      workers,
      ...(redis !== undefined ? { redis } : {}),
      ...(metricsListen !== undefined ? { metricsListen } : {}),
      ...(opts.auditLog !== undefined ? { auditLog: opts.auditLog } : {}),
      ...(opts.tlsCert !== undefined && opts.tlsKey !== undefined ? { tls: { certFile: opts.tlsCert, keyFile: opts.tlsKey } } : {}),
    };
    await runServe(serve);
  });

withKubeOptions(withRedisOptions(program.command('validate')), 'check the objects in the cluster instead', { applications: true })
  .description('check every store of a config dir (or, with --kube, of the cluster), and the Redis topology when one is given; exit 0 when clean, 1 with one line per problem')
  .option('--config <dir>', 'configuration directory')
  .action(async (opts: { config?: string } & KubeFlags & RedisFlags) => {
    const topology = validateTopology(opts);
    const kube = kubeOptions(opts);
    let stores: number;
    if (kube !== undefined) stores = await runValidateCluster(kube, process.stdout, process.stderr);
    else if (opts.config === undefined) return fail('validate: give --config <dir>, or --kube');
    else stores = await runValidate(opts.config, process.stdout, process.stderr);
    const state = await validateState(topology, process.stdout, process.stderr);
    process.exitCode = Math.max(stores, state);
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
  .option(...auditLogOption('stderr'))
  .action(async (opts: { config: string } & AuditFlags) => {
    process.exitCode = await withAudit(opts, (audit) => runInitialPassword(opts.config, process.stdout, process.stderr, audit));
  });

const loginCommand = program.command('login').description('break-glass for password logins');
withRedisOptions(loginCommand.command('unlock'))
  .description("forget a name's failed logins and lift its lockout in Redis (anyone can lock admin with a few wrong passwords)")
  .argument('<username>')
  .option(...auditLogOption('stderr'))
  .action(async (username: string, opts: RedisFlags & AuditFlags) => {
    const topology = redisTopology(opts);
    process.exitCode = await withAudit(opts, (audit) => runLoginUnlock(topology, username, process.stdout, process.stderr, audit));
  });

const idp = program.command('idp').description('the bundled identity provider');
withKubeOptions(idp.command('rotate-keys'), 'rotate the keys in the cluster instead', { applications: false })
  .description('add a new signing key, published now and signing in 5 minutes; old keys stay published until their tokens expire')
  .option('--config <dir>', 'configuration directory')
  .option(...auditLogOption('stderr'))
  .action(async (opts: { config?: string } & KubeFlags & AuditFlags) => {
    const kube = kubeOptions(opts);
    if (kube === undefined && opts.config === undefined) fail('idp rotate-keys: give --config <dir>, or --kube');
    process.exitCode = await withAudit(opts, (audit) => runRotateKeys(kube ?? (opts.config as string), process.stdout, process.stderr, new Date(), audit));
  });

const account = program.command('account').description('break-glass administration of local accounts, for when no login works (writes the store; running servers follow within 2 s)');
const accountCommands: readonly { name: AccountCommand['command']; description: string }[] = [
  { name: 'set-password', description: "set an account's password, read from standard input or --password-file (never an argument); its sessions end" },
  { name: 'disable', description: 'disable an account: no login, its sessions and API tokens refused' },
  { name: 'enable', description: 'enable an account again (admin: admin.enabled too)' },
  { name: 'reset-second-factor', description: "remove every second factor of an account and end its sessions" },
  { name: 'create', description: 'add a local account to svc-cm, with --capabilities login,apiKey' },
];
for (const { name, description } of accountCommands) {
  const command = withKubeOptions(account.command(name), 'change the account in the cluster instead', { applications: false })
    .description(description)
    .argument('<name>', 'the account')
    .option('--config <dir>', 'configuration directory')
    // Refused below without echoing them: a stray argument may be the password itself.
    .allowExcessArguments(true)
    .option(...auditLogOption('stderr'));
  if (name === 'set-password') command.option('--password-file <file>', 'read the new password from this file (one line) instead of standard input');
  if (name === 'create') command.requiredOption('--capabilities <list>', 'comma-separated: login, apiKey');
  command.action(async (accountName: string, opts: { config?: string; passwordFile?: string; capabilities?: string } & KubeFlags & AuditFlags, self: Command) => {
    if (self.args.length > 1) fail(`account ${name}: takes one argument, the account name; ${self.args.length} were given${name === 'set-password' ? ' (the password is never one: ps and shell history would show it; give it on standard input or with --password-file)' : ''}`);
    const kube = kubeOptions(opts);
    if (kube === undefined && opts.config === undefined) fail(`account ${name}: give --config <dir>, or --kube`);
    const request: AccountCommand =
      name === 'set-password' ? { command: name, name: accountName, passwordFile: opts.passwordFile }
      : name === 'create' ? { command: name, name: accountName, capabilities: opts.capabilities ?? '' }
      : { command: name, name: accountName };
    process.exitCode = await withAudit(opts, (audit) => runAccountCommand(kube ?? (opts.config as string), request, { out: process.stdout, err: process.stderr, stdin: process.stdin, audit }));
  });
}

interface AuditFlags {
  readonly auditLog?: string;
}

/** `--audit-log FILE` (env SVC_AUDIT_LOG), the same for the server and every offline command that records. */
function auditLogOption(otherwise: string): [string, string, string | undefined] {
  return ['--audit-log <file>', `append audit events (docs/audit.md) to this file, created 0600 (env ${AUDIT_LOG_VARIABLE}; default: ${otherwise})`, env(AUDIT_LOG_VARIABLE)];
}

/**
 * Runs an offline command with its audit sink: the file, else stderr (stdout is the command's
 * answer, read by scripts), followed there by one line saying what those lines are. The sink is
 * flushed before the command's exit code is returned.
 */
async function withAudit(opts: AuditFlags, run: (audit: AuditTrail) => Promise<number>): Promise<number> {
  let opened;
  try {
    opened = await openAuditSink({ file: opts.auditLog, fd: 2, log: createLogger() });
  } catch (err: unknown) {
    if (err instanceof AuditLogUnwritable) return fail(err.message);
    throw err;
  }
  const trail = countingTrail(opened.sink);
  try {
    return await run(trail);
  } finally {
    await opened.sink.close();
    const note = opened.file === undefined ? stderrAuditNote(trail.recorded()) : undefined;
    if (note !== undefined) process.stderr.write(`svc-server: ${note}\n`);
  }
}

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

/** The Redis topology options (--redis, --redis-sentinel…, --redis-cluster), read by redisTopology(). */
function withRedisOptions(command: Command): Command {
  return command
    .option('--redis <url>', 'Redis URL for shared state (env SVC_REDIS_URL)', env('SVC_REDIS_URL'))
    .option('--redis-sentinel <host:port,...>', 'Redis Sentinel addresses for shared state (env SVC_REDIS_SENTINELS)', env('SVC_REDIS_SENTINELS'))
    .option('--redis-sentinel-master <name>', 'the master name the sentinels monitor (env SVC_REDIS_SENTINEL_MASTER)', env('SVC_REDIS_SENTINEL_MASTER'))
    .option('--redis-cluster <host:port,...>', 'Redis Cluster seed nodes for shared state (env SVC_REDIS_CLUSTER)', env('SVC_REDIS_CLUSTER'))
    .option('--redis-tls', 'TLS to the Redis nodes and sentinels of --redis-sentinel or --redis-cluster (env SVC_REDIS_TLS=1)')
    .option('--redis-db <n>', 'database number with --redis-sentinel (env SVC_REDIS_DB)', env('SVC_REDIS_DB'));
}

/** The Kubernetes store options (--kube, --kubeconfig, --namespace[, --application-namespaces]), read by kubeOptions(). */
function withKubeOptions(command: Command, kubeHelp: string, reads: { readonly applications: boolean }): Command {
  command
    .option('--kube', `${kubeHelp} (env SVC_STORE=kubernetes)`)
    .option('--kubeconfig <file>', 'with --kube: this kubeconfig (default: KUBECONFIG, else the pod service account)')
    .option('--namespace <ns>', "with --kube: the namespace of svc's objects (default: the context's, or the pod's)");
  if (reads.applications) {
    command.option('--application-namespaces <list>', 'with --kube: comma-separated namespaces whose Application objects svc reads (env SVC_APPLICATION_NAMESPACES; default: its own)');
  }
  return command;
}

interface KubeFlags {
  readonly kube?: boolean;
  readonly kubeconfig?: string;
  readonly namespace?: string;
  readonly applicationNamespaces?: string;
}

/** The Kubernetes store's options when --kube (or SVC_STORE=kubernetes) is asked for; the directory otherwise. */
function kubeOptions(opts: KubeFlags): ClusterStoreOptions | undefined {
  const store = env('SVC_STORE');
  if (store !== undefined && store !== 'kubernetes' && store !== 'directory') fail(`SVC_STORE: '${store}' is neither kubernetes nor directory`);
  if (opts.kube !== true && store !== 'kubernetes') {
    if (opts.kubeconfig !== undefined || opts.namespace !== undefined || opts.applicationNamespaces !== undefined) {
      fail('--kubeconfig, --namespace and --application-namespaces go with --kube');
    }
    return undefined;
  }
  const appNamespaces = (opts.applicationNamespaces ?? env('SVC_APPLICATION_NAMESPACES'))?.split(',').map((n) => n.trim()).filter((n) => n !== '');
  const bad = appNamespaces?.find((n) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(n));
  if (bad !== undefined) fail(`--application-namespaces (or SVC_APPLICATION_NAMESPACES): '${bad}' is not a namespace name`);
  return {
    ...(opts.kubeconfig !== undefined ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
    ...(appNamespaces !== undefined && appNamespaces.length > 0 ? { applicationNamespaces: appNamespaces } : {}),
  };
}

/** An environment variable; set but empty counts as unset. */
function env(name: string): string | undefined {
  const value = process.env[name];
  return value === '' ? undefined : value;
}

interface RedisFlags {
  redis?: string;
  redisSentinel?: string;
  redisSentinelMaster?: string;
  redisCluster?: string;
  redisTls?: boolean;
  redisDb?: string;
}

/** The Redis options from the flags and the environment, unparsed. */
function redisInput(opts: RedisFlags): RedisTopologyInput {
  return {
    redis: opts.redis,
    sentinels: opts.redisSentinel,
    sentinelMaster: opts.redisSentinelMaster,
    cluster: opts.redisCluster,
    tls: opts.redisTls === true || /^(1|true|yes)$/i.test(env('SVC_REDIS_TLS') ?? ''),
    db: opts.redisDb,
    username: env('SVC_REDIS_USERNAME'),
    password: env('SVC_REDIS_PASSWORD'),
    sentinelUsername: env('SVC_REDIS_SENTINEL_USERNAME'),
    sentinelPassword: env('SVC_REDIS_SENTINEL_PASSWORD'),
  };
}

/**
 * For validate: credentials no topology reads are said unused (one warning line on stderr) and
 * left out, not refused (withoutUnusedCredentials).
 */
function validateTopology(opts: RedisFlags): RedisTopology | undefined {
  const { input, unused } = withoutUnusedCredentials(redisInput(opts));
  if (unused.length > 0) {
    process.stderr.write(`svc-server: warning: ${unused.join(', ')} ${unused.length === 1 ? 'is' : 'are'} set but unused (no Redis topology here reads ${unused.length === 1 ? 'it' : 'them'}); validate ignores ${unused.length === 1 ? 'it' : 'them'}, a server started so refuses to start\n`);
  }
  return redisTopology(opts, input);
}

/** The Redis topology from the flags and the environment; one line naming the flag when wrong. */
function redisTopology(opts: RedisFlags, input: RedisTopologyInput = redisInput(opts)): RedisTopology | undefined {
  try {
    return parseRedisTopology(input);
  } catch (err: unknown) {
    if (err instanceof RedisConfigError) return fail(err.message);
    throw err;
  }
}

function fail(message: string): never {
  process.stderr.write(`svc-server: ${message}\n`);
  process.exit(1);
}

program.parseAsync(process.argv).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
