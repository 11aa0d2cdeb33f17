/**
 * docs/routes.md, written from the routes' own declarations (route-access.ts), so that the list
 * an operator audits is the one the gates decide on. test/e2e/route-walk.test.ts checks the
 * file against the assembled app and rewrites it with SVC_WRITE_ROUTES_DOC=1.
 */
import type { DeclaredRoute, Who } from './route-access.js';

const WHO: Readonly<Record<Who, string>> = {
  anyone: 'anyone (no token needed)',
  enrolment: 'any caller, a session confined to enrolment included',
  caller: 'a caller with its full rights (not a confined session)',
};

function cell(text: string): string {
  return text.replaceAll('|', '\\|');
}

export function renderRouteList(routes: readonly DeclaredRoute[]): string {
  const rows = [...routes]
    .sort((a, b) => a.path.localeCompare(b.path) || a.methods.join().localeCompare(b.methods.join()))
    .map((route) => {
      const methods = route.methods.filter((m) => m !== 'HEAD').join(', ') + (route.methods.includes('HEAD') && route.methods.includes('GET') ? ' (and HEAD)' : '');
      const who = route.access === undefined ? '**nobody: no declaration**' : WHO[route.access.who];
      return `| \`${cell(route.path)}\` | ${methods} | ${who} | ${cell(route.access?.needs ?? '')} |`;
    });
  return [
    '# Routes of the app and who may call them',
    '',
    'Generated from the access each route declares (`src/http/route-access.ts`); the route walk',
    '(`test/e2e/route-walk.test.ts`) checks this file and every answer against it, and',
    '`SVC_WRITE_ROUTES_DOC=1 npx mocha test/e2e/route-walk.test.ts` writes it again. Matching is',
    'case-sensitive; a trailing slash is ignored; any other spelling is no route (404). A route',
    'without a declaration refuses everyone. The extension gateway (`/api/v1/extensions/…`) and',
    'the bundled provider (`/api/idp/…`) are served before this app: see docs/request-paths.md.',
    '',
    '- anyone: no token needed; a session confined to enrolment (`users.mfa.required`) is shown',
    '  or ended only as itself.',
    '- any caller: 401 without a valid token.',
    '- full rights: 401 without a valid token, 403 `second_factor_enrolment_required` for a',
    '  confined session.',
    '',
    '"Needs" is what the route asks beyond the caller; rights are decided by the domain',
    '(docs/rbac.md).',
    '',
    '| route | methods | who | needs |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
  ].join('\n');
}
