/**
 * Import rules for `npm run lint`, type-only imports included (tsPreCompilationDeps): a cycle
 * anywhere in src/ or connectors/ fails the lint, and so does settings parsing (src/config/)
 * reaching into a feature folder: each feature registers its own parser (src/main/). Koa stays
 * at the HTTP edge and in the provider's web app; connectors import only the shared error,
 * problem, secret-reference and lib modules; src/http's machinery imports no feature.
 */
const FEATURES = '^src/(accounts|apps|extensions|http|idp|oidc|rbac|session|main|commands|cli)/|^connectors/';
/** Every feature folder but src/http itself. */
const FEATURES_BUT_HTTP = '^src/(accounts|apps|extensions|idp|oidc|rbac|session|main|commands|cli|workload|web)/|^connectors/';
/** Koa and its middleware, resolved (node_modules, @types) or not. */
const KOA = '(^|/node_modules/)(@types/)?(koa|koa-[^/]+|koa__[^/]+|@koa/[^/]+)(/|$)';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle, type-only imports included: split the shared part into a module both can import.',
      from: { path: '^(src|connectors)/' },
      to: { circular: true },
    },
    {
      name: 'config-knows-no-feature',
      severity: 'error',
      comment: 'src/config/ is the store and settings machinery; features register their parsers in src/main/.',
      from: { path: '^src/config/' },
      to: { path: FEATURES },
    },
    {
      name: 'accounts-below-session',
      severity: 'error',
      comment: 'session/ (tokens, login) builds on accounts/; accounts/ takes what it needs of session as narrow interfaces of its own.',
      from: { path: '^src/accounts/' },
      to: { path: '^src/session/' },
    },
    {
      name: 'lib-knows-no-svc',
      severity: 'error',
      comment: 'src/lib/ holds generic helpers that know nothing of svc.',
      from: { path: '^src/lib/' },
      to: { path: '^src/(?!lib/)|^connectors/' },
    },
    {
      name: 'koa-only-at-the-edge',
      severity: 'error',
      comment:
        'Koa belongs to the HTTP edge (src/http/), the provider\'s web app (src/idp/app.ts, src/idp/login/), the UI\'s routes (src/web/routes.ts) ' +
        'and the Feature contract that names a router (src/main/feature.ts): domain code takes plain values and throws typed errors.',
      from: { path: '^(src|connectors)/', pathNot: '^src/http/|^src/idp/app\\.ts$|^src/idp/login/|^src/web/routes\\.ts$|^src/main/feature\\.ts$' },
      to: { path: KOA },
    },
    {
      name: 'connectors-import-only-shared',
      severity: 'error',
      comment: 'A connector imports of svc only the errors, the settings problems, secret references, lib/ and the span helpers (tracing/spans.ts): it knows nothing of the provider, HTTP or state.',
      from: { path: '^connectors/' },
      to: { path: '^src/', pathNot: '^src/(errors\\.ts|config/(problems|zod-problems|secret-ref)\\.ts|lib/|tracing/spans\\.ts)' },
    },
    {
      name: 'http-knows-no-feature',
      severity: 'error',
      comment:
        'src/http/ (outside routes/, where features meet HTTP in thin routes) is the edge every feature uses: it names what it needs of one as a narrow interface of its own.',
      from: { path: '^src/http/', pathNot: '^src/http/routes/' },
      to: { path: FEATURES_BUT_HTTP },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
