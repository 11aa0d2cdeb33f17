/**
 * The shared connector suite: every connector type runs the same cases against its real upstream
 * (or, for GitHub and GitLab, a local server following their documented APIs):
 *
 *   - a member signs in, with groups;
 *   - the upstream refuses someone (a wrong password, a user outside the allowed groups);
 *   - the upstream is down (nothing listens) or slow (accepts and never answers): a clear
 *     UpstreamUnavailable-style error within the timeout, no hang;
 *   - a bad config is refused by `svc-server validate`, naming its key path;
 *   - no secret of the config (bind password, client secret) appears in any log line.
 *
 * Each connector's test folder has a `suite.test.ts` calling `connectorSuite(harness)` with a
 * harness that knows how to start its upstream and drive a login through it (a password for
 * LDAP; the browser's round trip for the others). A connector whose upstream svc never contacts
 * (SAML: the browser carries both messages) says so with `upstream: undefined`, and the
 * down/slow cases are not registered for it.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import YAML from 'yaml';
import type { Connector, ConnectorDeps, ConnectorType, Identity, LoginContext } from '../../connectors/connector.js';
import { runValidate } from '../../src/commands/validate.js';
import { openWithUpstreamFetches, upstreamFetches, type UpstreamFetches } from '../../src/idp/connectors/upstream-fetch.js';
import { formatProblem, ProblemSink } from '../../src/config/problems.js';
import type { SecretLookup } from '../../src/config/secret-ref.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { silentServer } from '../helpers/silent-server.js';

export type Who = 'member' | 'outsider';

export interface ConnectorHarness {
  readonly type: string;
  /** Starts the upstream (once per file). */
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A working `config` map for the running upstream, secret references included. */
  config(): Record<string, unknown>;
  /** svc-secret keys the config references (`$key`), with their values. */
  readonly secrets: Readonly<Record<string, string>>;
  /** The connector built from `raw` (resolved against `secrets`) as the registry would build it. */
  open(raw: Record<string, unknown>, log: Logger): Connector;
  /**
   * A whole login of `who` through `connector` as a person would make it. Resolves to the
   * identity, to null when the connector says "wrong credentials", and rejects when it refuses
   * or fails.
   */
  login(connector: Connector, who: Who, ctx: LoginContext): Promise<Identity | null>;
  /** What the member's login must yield. */
  readonly member: { readonly userId: string; readonly groups: readonly string[] };
  /** How the outsider is refused: null (wrong credentials) or a rejection whose message matches. */
  readonly outsiderRefusal: null | RegExp;
  /**
   * The config with the upstream moved to 127.0.0.1:`port` (down or slow); undefined when svc
   * never contacts the upstream itself.
   */
  readonly upstream: ((port: number) => Record<string, unknown>) | undefined;
  /** A config with one mistake and the line `svc-server validate` must print for it (after `connectors[0].config.`). */
  readonly badConfig: { readonly raw: Record<string, unknown>; readonly problem: string };
  /** The callback URL the upstream knows for svc (`<url>/api/idp/callback`). */
  readonly callbackUrl: string;
}

/** svc-secret holding `secrets`, as the settings parser would look it up. */
export function secretLookup(secrets: Readonly<Record<string, string>>): SecretLookup {
  return new Map([['svc-secret', { name: 'svc-secret', file: 'secret.yaml', labels: {}, data: { ...secrets } }]]);
}

/**
 * Parses `raw` with the connector type, as idp.config parsing does, and opens it as the registry
 * does: fetch under the upstream TLS policy (pools closed with the connector), the clock, `log`.
 * `deps` replaces any of those (a pinned clock, a fetch whose pools the test closes itself).
 * A config problem fails the test, with its lines.
 */
export function openThroughType(type: ConnectorType, raw: Record<string, unknown>, secrets: Readonly<Record<string, string>>, log: Logger, deps: Partial<ConnectorDeps> = {}): Connector {
  const sink = new ProblemSink();
  const factory = type.parse({ raw, secrets: secretLookup(secrets), at: sink.scoped('svc-cm', ['idp.config', 'connectors', 0, 'config']) });
  if (factory === undefined) throw new Error(`config refused:\n${sink.problems.map(formatProblem).join('\n')}`);
  const { upstreamFetch, ...rest } = deps;
  const base = { now: () => new Date(), log, ...rest };
  return upstreamFetch === undefined ? openWithUpstreamFetches(factory, base, false) : factory({ ...base, upstreamFetch });
}

/**
 * Connectors of one type for a file of unit tests: each opened through the type on an upstream
 * fetch of its own (the TLS policy's pools, which close() closes), logging under `connectorId`
 * into `lines` and `text`, which clear() empties (the arrays stay the same ones).
 */
export function upstreamConnectors(type: ConnectorType, connectorId: string): {
  readonly lines: LogLine[];
  readonly text: string[];
  open(raw: Record<string, unknown>, secrets: Readonly<Record<string, string>>): Connector;
  clear(): void;
  close(): Promise<void>;
} {
  const { text, lines, log } = capture();
  const pools: UpstreamFetches[] = [];
  return {
    lines,
    text,
    open(raw, secrets) {
      const scoped = log.child({ connector: connectorId });
      const fetches = upstreamFetches(scoped, false);
      pools.push(fetches);
      return openThroughType(type, raw, secrets, scoped, { upstreamFetch: fetches.upstreamFetch });
    },
    clear() {
      lines.length = 0;
      text.length = 0;
    },
    async close() {
      await Promise.all(pools.splice(0).map((p) => p.close()));
    },
  };
}

/** The error a promise rejects with; fails when it resolves. */
export async function refusal(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  try {
    await promise;
  } catch (err: unknown) {
    return err as Error & { code?: string };
  }
  throw new Error('expected a refusal');
}

/** A log line as the tests read it. */
export interface LogLine { readonly level: number; readonly msg: string; readonly host?: string; readonly connector?: string }

/** A logger that keeps every line, as text and parsed, in the given arrays (new ones by default). */
function capture(text: string[] = [], lines: LogLine[] = []): { text: string[]; lines: LogLine[]; log: Logger } {
  const log = pino({ level: 'trace' }, { write: (line: string) => { text.push(line); lines.push(JSON.parse(line) as LogLine); } });
  return { text, lines, log };
}

/** The outcome of a login: identity, null, or the rejection. */
async function attempt(login: Promise<Identity | null>): Promise<{ identity?: Identity | null; error?: Error }> {
  try {
    return { identity: await login };
  } catch (err: unknown) {
    return { error: err instanceof Error ? err : new Error(String(err)) };
  }
}

const WITHIN_MS = 3_000;

export function connectorSuite(harness: ConnectorHarness): void {
  describe(`connector suite: ${harness.type}`, function () {
    cleanUpTempDirs();
    this.timeout(30_000);
    const ctx = (timeoutMs = 10_000): LoginContext => ({ callbackUrl: harness.callbackUrl, wantGroups: true, signal: AbortSignal.timeout(timeoutMs) });

    before(async function () {
      this.timeout(120_000);
      await harness.start();
    });
    after(() => harness.stop());

    it('signs a member in, with groups', async () => {
      const { log } = capture();
      const connector = harness.open(harness.config(), log);
      try {
        const identity = await harness.login(connector, 'member', ctx());
        expect(identity?.userId).to.equal(harness.member.userId);
        expect(identity?.groups).to.have.members([...harness.member.groups]);
      } finally {
        await connector.close?.();
      }
    });

    it('refuses someone the upstream or the config does not let in', async () => {
      const { log } = capture();
      const connector = harness.open(harness.config(), log);
      try {
        const outcome = await attempt(harness.login(connector, 'outsider', ctx()));
        if (harness.outsiderRefusal === null) {
          expect(outcome.error).to.equal(undefined);
          expect(outcome.identity).to.equal(null);
        } else {
          expect(outcome.identity).to.equal(undefined);
          expect(outcome.error?.message).to.match(harness.outsiderRefusal);
        }
      } finally {
        await connector.close?.();
      }
    });

    // Not registered at all for a connector svc never connects from (SAML): nothing to skip.
    if (harness.upstream !== undefined) describe('an upstream that is down or slow', function () {
      for (const kind of ['down', 'slow'] as const) {
        it(`fails clearly, without hanging, when the upstream is ${kind}`, async () => {
          const hole = await silentServer();
          if (kind === 'down') await hole.close();
          const { log } = capture();
          const connector = harness.open(harness.upstream?.(hole.port) ?? {}, log);
          const started = Date.now();
          try {
            const outcome = await attempt(harness.login(connector, 'member', ctx(WITHIN_MS / 2)));
            expect(outcome.identity, 'no identity from a dead upstream').to.equal(undefined);
            expect(outcome.error, 'an error').to.be.instanceOf(Error);
            expect(outcome.error?.message).to.match(/unreachable|unavailable|timed? ?out|abort|cannot be reached|try again/i);
            expect(Date.now() - started, 'answered within the timeout').to.be.below(WITHIN_MS * 3);
            // Nor does closing it (a config reload, a shutdown) wait on the connection left pending.
            const closing = Date.now();
            await connector.close?.();
            expect(Date.now() - closing, 'closed without waiting for the upstream').to.be.below(WITHIN_MS);
          } finally {
            await connector.close?.();
            if (kind === 'slow') await hole.close();
          }
        });
      }
    });

    it('has its bad config refused by svc-server validate, naming the key path', async () => {
      const dir = tempConfigDir({
        'cm.yaml': configMap('svc-cm', {
          url: 'https://svc.example.org',
          'idp.config': YAML.stringify({ connectors: [{ type: harness.type, id: 'x', name: 'X', config: harness.badConfig.raw }] }),
        }),
        'secret.yaml': secret('svc-secret', { 'server.secretkey': 'k', ...harness.secrets }),
      });
      const out: string[] = [];
      const err: string[] = [];
      const sink = (into: string[]): Writable => new Writable({ write(chunk: Buffer, _enc, done) { into.push(chunk.toString()); done(); } });
      const code = await runValidate(dir, sink(out), sink(err));
      expect(code).to.equal(1);
      expect(err.join('').trim().split('\n')).to.deep.equal([`svc-cm: idp.config: connectors[0].config.${harness.badConfig.problem}`, '1 problem found']);
    });

    it('never writes a secret of its config to the log, in success or failure', async () => {
      const { text, log } = capture();
      const connector = harness.open(harness.config(), log);
      try {
        await attempt(harness.login(connector, 'member', ctx()));
        await attempt(harness.login(connector, 'outsider', ctx()));
      } finally {
        await connector.close?.();
      }
      if (harness.upstream !== undefined) {
        const hole = await silentServer();
        await hole.close();
        const down = harness.open(harness.upstream(hole.port), log);
        await attempt(harness.login(down, 'member', ctx(WITHIN_MS / 2)));
        await down.close?.();
      }
      const all = text.join('');
      expect(all.length, 'something was logged').to.be.greaterThan(0);
      for (const value of Object.values(harness.secrets)) expect(all).not.to.include(value);
    });
  });
}
