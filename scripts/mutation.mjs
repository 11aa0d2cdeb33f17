#!/usr/bin/env node
// Mutation testing of the security-critical modules (docs/mutation-testing.md), not part of
// `npm test` or CI. StrykerJS's command runner, one Stryker run per group: each group's mutants
// run only that group's unit tests, in one process (mocha with tsx as an import), and stop at
// the first failure. (@stryker-mutator/mocha-runner 10.0.0 cannot load Mocha 12, whose CLI
// files became .cjs; its per-test selection would otherwise do what the groups do by hand.)
//
//   npm run mutation                  every group, incremental: unchanged mutants keep their result
//   npm run mutation -- oidc session  only these groups
//   npm run mutation -- --force oidc  run every mutant of the group again (after changing its tests)
//
// Reports: reports/mutation/<group>.html and .json, and the incremental files beside them.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const REPORTS = join(ROOT, 'reports', 'mutation');

/** Group -> the modules mutated and the unit tests that cover them (no peer but slapd for ldap-bind). */
export const GROUPS = {
  // Who a token is and whether it is still honoured. Not here: account-cutoffs.ts (sharing when an
  // account was disabled between replicas: subscriptions, retries, logs; its rule is validity.ts's),
  // limits.ts (environment parsing), revocation.ts and throttle.ts (Redis peers in their tests).
  session: {
    mutate: ['src/session/authenticate.ts', 'src/session/validity.ts', 'src/session/tokens.ts', 'src/session/local-verifier.ts'],
    tests: ['test/session/authenticate.test.ts', 'test/session/validity.test.ts', 'test/session/tokens.test.ts'],
  },
  rights: {
    mutate: ['src/rbac/rights.ts'],
    tests: ['test/rbac/rights.test.ts'],
  },
  // Who may use an extension, and what the backend then gets: the object decided on is the one sent.
  extensions: {
    mutate: ['src/extensions/access.ts', 'src/extensions/headers.ts', 'src/extensions/authorized-request.ts'],
    tests: ['test/extensions/access.test.ts', 'test/extensions/headers.test.ts', 'test/extensions/handshake-application.test.ts', 'test/extensions/authorized-request.test.ts'],
  },
  oidc: {
    mutate: ['src/oidc/audience.ts', 'src/oidc/return-url.ts', 'src/oidc/login-start.ts', 'src/oidc/sso-verifier.ts'],
    tests: ['test/oidc/sso-verifier.test.ts', 'test/oidc/return-url.test.ts', 'test/oidc/login-start.test.ts'],
  },
  'connectors-saml': {
    mutate: ['connectors/saml/assertion.ts', 'connectors/saml/document.ts', 'connectors/saml/identity.ts'],
    tests: ['test/connectors/saml/document.test.ts', 'test/connectors/saml/assertion.test.ts', 'test/connectors/saml/identity.test.ts', 'test/connectors/saml/saml.test.ts'],
  },
  'connectors-groups': {
    mutate: ['connectors/ldap/filter.ts', 'connectors/github/groups.ts', 'connectors/gitlab/groups.ts'],
    tests: ['test/connectors/ldap/filter.test.ts', 'test/connectors/github/groups.test.ts', 'test/connectors/gitlab/groups.test.ts'],
  },
  'ldap-bind': {
    // userBind only (lines of connection.ts: move them with the method), since a real slapd is
    // started per run; the rest of the file is connection plumbing the connector's tests cover.
    mutate: ['connectors/ldap/connection.ts:201-214'],
    tests: ['test/connectors/ldap/connection.test.ts'],
  },
  // What configuration may reference: never a key svc keeps for itself.
  'secret-ref': {
    mutate: ['src/config/secret-ref.ts', 'src/config/own-secrets.ts'],
    tests: ['test/config/secret-ref.test.ts', 'test/config/own-secrets.test.ts', 'test/config/zod-problems.test.ts'],
  },
  // The bound on anonymous state: which source a request counts under, and its share.
  'pending-bound': {
    mutate: ['src/idp/storage/pending-bound.ts', 'src/http/client-address.ts'],
    tests: ['test/idp/storage/pending-bound.test.ts', 'test/http/client-address.test.ts'],
  },
  restrict: {
    mutate: ['src/accounts/restrict.ts'],
    tests: ['test/accounts/restrict.test.ts', 'test/accounts/config.test.ts'],
  },
  // The identity provider's password-form lockout: which name and which entry an attempt counts under.
  'idp-password': {
    mutate: ['src/idp/login/password-guard.ts', 'src/idp/login/canonical-name.ts'],
    tests: ['test/idp/login/password-guard.test.ts', 'test/idp/login/canonical-name.test.ts'],
  },
  // The workload exchange's throttle stages and replay mark, the subject token's checks, and
  // which RBAC subjects a principal gives.
  // One person, one key: the (type, issuer, subject) every per-person record is kept under.
  person: {
    mutate: ['src/person.ts'],
    tests: ['test/person.test.ts'],
  },
  // Who may call each route of the app: the gate every route declares, and the sealing of routes without one.
  routes: {
    mutate: ['src/http/route-access.ts'],
    tests: ['test/http/route-access.test.ts'],
  },
  workload: {
    mutate: ['src/workload/exchange.ts', 'src/workload/verify.ts', 'src/principal.ts'],
    tests: ['test/workload/exchange.test.ts', 'test/workload/verify.test.ts', 'test/principal.test.ts'],
  },
};

function main(argv) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < 22) throw new Error(`StrykerJS 10 needs Node 22 or later; this is Node ${process.versions.node}: put a newer node first on PATH`);
  const force = argv.includes('--force');
  const names = argv.filter((a) => a !== '--force');
  for (const name of names) if (!(name in GROUPS)) throw new Error(`unknown group '${name}': one of ${Object.keys(GROUPS).join(', ')}`);
  const base = JSON.parse(readFileSync(join(ROOT, 'stryker.config.json'), 'utf8'));
  mkdirSync(REPORTS, { recursive: true });
  let failed = false;
  for (const name of names.length > 0 ? names : Object.keys(GROUPS)) {
    const group = GROUPS[name];
    const config = {
      ...base,
      mutate: group.mutate,
      // One process, no second one for mocha's node-option: tsx comes in through NODE_OPTIONS.
      commandRunner: { command: `NODE_OPTIONS="--import tsx" node node_modules/mocha/bin/mocha.js --no-config --require ./test/no-network.ts --extension ts --timeout 20000 --bail --reporter dot ${group.tests.join(' ')}` },
      incrementalFile: join('reports', 'mutation', `${name}.incremental.json`),
      htmlReporter: { fileName: join('reports', 'mutation', `${name}.html`) },
      jsonReporter: { fileName: join('reports', 'mutation', `${name}.json`) },
    };
    const file = join(REPORTS, `${name}.config.json`);
    writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
    process.stdout.write(`\n== mutation group ${name}: ${group.mutate.join(', ')}\n`);
    const run = spawnSync(join(ROOT, 'node_modules', '.bin', 'stryker'), ['run', file, ...(force ? ['--force'] : [])], { cwd: ROOT, stdio: 'inherit' });
    if (run.status !== 0) failed = true;
  }
  process.exit(failed ? 1 : 0);
}

main(process.argv.slice(2));
