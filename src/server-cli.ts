#!/usr/bin/env node
/**
 * `svc-server`: starts the server (default), or answers offline questions about a config dir
 * (`validate`, `rbac can`). Flags win over the environment (SVC_CONFIG_DIR, SVC_LISTEN,
 * SVC_REDIS_URL, SVC_WORKERS).
 */
import { Command, InvalidArgumentError } from 'commander';
import { availableParallelism } from 'node:os';
import { runServe, type ServeOptions } from './serve.js';
import { runRbacCan, runValidate } from './offline-commands.js';

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

const program = new Command('svc-server').description('svc: SSO broker, token issuer and authenticated extension proxy');

program
  .command('serve', { isDefault: true })
  .description('start the server')
  .option('--config <dir>', 'configuration directory (env SVC_CONFIG_DIR)', process.env['SVC_CONFIG_DIR'] ?? DEFAULT_CONFIG_DIR)
  .option('--listen <host:port>', 'address to listen on (env SVC_LISTEN)', process.env['SVC_LISTEN'] ?? DEFAULT_LISTEN)
  .option('--redis <url>', 'Redis URL for shared state (env SVC_REDIS_URL)', process.env['SVC_REDIS_URL'])
  .option('--tls-cert <file>', 'serve https with this certificate (PEM)')
  .option('--tls-key <file>', 'private key for --tls-cert (PEM)')
  .option('--workers <n>', 'worker processes (env SVC_WORKERS; default: all cores with --redis, else 1)', parseWorkers)
  .action(async (opts: { config: string; listen: string; redis?: string; tlsCert?: string; tlsKey?: string; workers?: number }) => {
    if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) fail('--tls-cert and --tls-key go together');
    const workers = opts.workers ?? envWorkers() ?? (opts.redis !== undefined ? availableParallelism() : 1);
    const listen = (() => {
      try {
        return parseListen(opts.listen);
      } catch (err: unknown) {
        return fail(`--listen: ${(err as Error).message}`);
      }
    })();
    if (workers > 1 && opts.redis === undefined) {
      fail('--workers above 1 needs --redis: login throttling and token revocation must be shared by every worker');
    }
    const serve: ServeOptions = {
      configDir: opts.config,
      ...listen,
      workers,
      ...(opts.redis !== undefined ? { redisUrl: opts.redis } : {}),
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

/**
 * SVC_WORKERS, read here and not as the option's default: a default is computed when the program
 * is defined, so a bad value would crash every subcommand (validate too) with a stack trace.
 */
function envWorkers(): number | undefined {
  const value = process.env['SVC_WORKERS'];
  if (value === undefined || value === '') return undefined;
  try {
    return parseWorkers(value);
  } catch (err: unknown) {
    return fail(`SVC_WORKERS: ${(err as Error).message}`);
  }
}

function fail(message: string): never {
  process.stderr.write(`svc-server: ${message}\n`);
  process.exit(1);
}

program.parseAsync(process.argv).catch((err: unknown) => fail(err instanceof Error ? err.message : String(err)));
