/**
 * Import rules for `npm run lint`, type-only imports included (tsPreCompilationDeps): a cycle
 * anywhere in src/ or connectors/ fails the lint, and so does settings parsing (src/config/)
 * reaching into a feature folder: each feature registers its own parser (src/main/).
 */
const FEATURES = '^src/(accounts|apps|extensions|http|idp|oidc|rbac|session|main|commands|cli)/|^connectors/';

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
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.test.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
};
