/**
 * The provider's login pages (oidc-provider "interactions"), thin over ./login-flow.ts:
 *
 *   GET  /api/idp/interaction/:uid                   one connector: straight to it; several: a chooser
 *   GET  /api/idp/interaction/:uid/connector/:id     password form, or off to the upstream
 *   POST /api/idp/interaction/:uid/connector/:id     the password form
 *   GET|POST /api/idp/callback                        the upstream's return (SAML posts): on to the interaction
 *   GET|POST /api/idp/interaction/:uid/callback       the upstream's answer, completed by the browser that started
 *   GET  /api/idp/interaction/:uid/finish            back on the provider, finish the login
 *   POST /api/idp/interaction/:uid/consent           the answer to the loopback question (CLI, public apps)
 *   GET  /api/idp/saml/:id/metadata                   a SAML connector's SP metadata, for the IdP's admin
 *
 * A browser connector's round trip is bound to the browser that started it (issue 21): starting
 * it sets the `svc.idp.login` cookie, a random binding scoped to the interaction's path
 * (HttpOnly, SameSite=Lax, Secure under https), whose hash the transaction keeps. The callback
 * URL the upstream knows is not under that path, so /callback only finds the interaction by
 * `state`/`RelayState` and sends the browser on to the interaction's own callback with the same
 * parameters: a 303 for a GET, and for a POST (SAML) a page that posts them on from svc's own
 * origin, because a cross-site POST carries no SameSite=Lax cookie. There the binding must match
 * before the connector even reads the answer, and /finish checks it again (with interactionDetails,
 * which proves the `_interaction` cookie). A victim who is sent an attacker's upstream URL ends
 * that login without filling it. Consent is implied for svc's first-party clients, except for
 * the CLI's code flow: any page can start it for a loopback port of its choosing, so the person
 * is asked, on a page naming the port, with a CSRF-protected form (the device flow has its own
 * confirmation of the code).
 * Registered applications (staticClients) get implied consent too, except a public one with a
 * loopback redirect, asked as the CLI is (./loopback-consent.ts); the pages name the
 * application the login is for (./application.ts).
 */
import type Router from '@koa/router';
import type { IncomingMessage } from 'node:http';
import type Koa from 'koa';
import type Provider from 'oidc-provider';
import type { Interaction } from 'oidc-provider';
import type { Logger } from 'pino';
import type { Connector } from '../../../connectors/connector.js';
import type { ConnectorSource } from '../connectors/connector-source.js';
import { readForm } from './form-body.js';
import { PendingLoginsRefused, UPSTREAM_SESSION_RESULT, type LoginFlow, type LoginRequest } from './login-flow.js';
import { applicationOf, logoOrigin } from './application.js';
import { autoPostPage, chooserPage, cliConsentPage, errorPage, loopbackConsentPage, passwordPage, type Application } from './pages.js';
import { interactionConsentPort } from './loopback-consent.js';
import { CLI_CLIENT_ID } from '../clients.js';
import type { GuardedOutcome, PasswordGuard } from './password-guard.js';
import { MOUNT_PATH } from '../issuer.js';
import { setPageHeaders } from '../../http/security-headers.js';
import { allow, declaredRouter } from '../../http/route-access.js';
import { CONNECTOR_TRANSACTION_TTL_S } from '../lifetimes.js';

export interface InteractionDeps {
  /** The provider in force (it is rebuilt when the signing keys change). */
  readonly provider: () => Provider;
  readonly flow: LoginFlow;
  readonly guard: PasswordGuard;
  readonly connectors: ConnectorSource;
  readonly log: Logger;
  /** Who a request counts as for the bound on pending logins (../pending-source.ts). */
  readonly sourceOf: (req: IncomingMessage) => string;
}

const EXPIRED = 'This login has expired or was started in another browser. Go back to the application and log in again.';
const UNAVAILABLE = 'The directory is unreachable right now. Try again in a few minutes; if it keeps happening, tell your administrator.';
const WRONG = 'Wrong username or password.';
const BUSY = 'Too many logins are in progress. Try again in a moment.';
const EXHAUSTED = 'Too many attempts on this login page. Go back to the application and log in again.';

/** The browser's half of a round trip's binding (login-flow.ts), under the interaction's path. */
export const BINDING_COOKIE = 'svc.idp.login';

const interactionPath = (uid: string): string => `${MOUNT_PATH}/interaction/${encodeURIComponent(uid)}`;
const connectorPath = (uid: string, id: string): string => `${interactionPath(uid)}/connector/${encodeURIComponent(id)}`;

function page(ctx: Koa.Context, status: number, html: string, application?: Application): void {
  ctx.status = status;
  ctx.type = 'html';
  setPageHeaders(ctx, 'idp', logoOrigin(application));
  ctx.body = html;
}

/**
 * The paths the routes below answer (with the mount); every other path under the mount is the
 * provider's. None of the provider's routes starts so (test/idp/app.test.ts checks both sides).
 */
export function isLoginAppPath(path: string): boolean {
  return path.startsWith(`${MOUNT_PATH}/interaction/`) || path === `${MOUNT_PATH}/callback` || path.startsWith(`${MOUNT_PATH}/saml/`);
}

export function interactionRoutes(deps: InteractionDeps): Router {
  const router = declaredRouter<Koa.DefaultState>(MOUNT_PATH);

  /** The interaction of this browser, or an "expired" page (undefined). */
  async function details(ctx: Koa.Context): Promise<Interaction | undefined> {
    try {
      const found = await deps.provider().interactionDetails(ctx.req, ctx.res);
      if (found.uid === ctx.params['uid']) return found;
    } catch {
      // SessionNotFound: no cookie, another browser, or the interaction expired.
    }
    page(ctx, 400, errorPage('Login expired', EXPIRED));
    return undefined;
  }

  async function finish(ctx: Koa.Context, result: Parameters<Provider['interactionFinished']>[2], merge: boolean): Promise<void> {
    await deps.provider().interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: merge });
    // The provider answered on the raw response (it writes only after its last await). Set only
    // now: one that fails first (its storage unreachable) is answered by the error page, not left hanging.
    ctx.respond = false;
  }

  function requestOf(ctx: Koa.Context, interaction: Interaction, connectorId: string): LoginRequest {
    return { uid: interaction.uid, connectorId, scope: String(interaction.params['scope'] ?? ''), source: deps.sourceOf(ctx.req) };
  }

  function amr(connectorId: string): string[] {
    return [deps.connectors.list().find((c) => c.id === connectorId)?.type ?? 'pwd'];
  }

  router.get('/interaction/:uid', allow('anyone', 'the interaction cookie of the browser that started the login'), async (ctx) => {
    const interaction = await details(ctx);
    if (interaction === undefined) return;
    if (interaction.prompt.name === 'consent') {
      const port = await interactionConsentPort(deps.provider(), interaction);
      if (port !== undefined) {
        const offline = String(interaction.params['scope'] ?? '').split(' ').includes('offline_access');
        const form = { port, action: `${interactionPath(interaction.uid)}/consent`, csrf: deps.flow.csrfToken(interaction.uid), offline };
        if (interaction.params['client_id'] === CLI_CLIENT_ID) return page(ctx, 200, cliConsentPage(form));
        const application = await applicationOf(deps.provider(), interaction) ?? { name: String(interaction.params['client_id']) };
        return page(ctx, 200, loopbackConsentPage({ ...form, application }), application);
      }
      return finish(ctx, { consent: { grantId: await impliedConsent(deps.provider(), interaction) } }, true);
    }
    const list = deps.connectors.list();
    const asked = interaction.params['connector_id'];
    const chosen = list.find((c) => c.id === asked) ?? (list.length === 1 ? list[0] : undefined);
    // Its page at once, not a redirect to it: one request less per login (the form posts to the connector's path).
    if (chosen !== undefined) return showConnector(ctx, interaction, chosen.id);
    if (list.length === 0) return page(ctx, 503, errorPage('Login unavailable', 'No login method is configured. Tell your administrator.'));
    const application = await applicationOf(deps.provider(), interaction);
    page(ctx, 200, chooserPage(list, (id) => connectorPath(interaction.uid, id), application), application);
  });

  router.get('/interaction/:uid/connector/:id', allow('anyone', 'the interaction cookie of the browser that started the login'), async (ctx) => {
    const interaction = await details(ctx);
    if (interaction === undefined) return;
    await showConnector(ctx, interaction, ctx.params['id'] ?? '');
  });

  /** A password connector's form, or the start of a browser connector's login at its upstream. */
  async function showConnector(ctx: Koa.Context, interaction: Interaction, id: string): Promise<void> {
    const connector = connectorOr404(ctx, id);
    if (connector === undefined) return;
    if (connector.kind === 'password') {
      const application = await applicationOf(deps.provider(), interaction);
      return page(ctx, 200, passwordForm(interaction.uid, id, connector.prompt, application), application);
    }
    let bound;
    try {
      bound = await deps.flow.begin(connector, requestOf(ctx, interaction, id));
    } catch (err: unknown) {
      // The bound logged it (source, bound, bytes); the person is told to come back later.
      if (err instanceof PendingLoginsRefused) return page(ctx, 503, errorPage('Login unavailable', 'Too many logins are pending from your network. Try again in a few minutes.'));
      deps.log.error({ err, connector: id }, 'identity provider: a connector could not start a login');
      return page(ctx, 503, errorPage('Login unavailable', 'The identity provider cannot be reached right now. Try again in a few minutes.'));
    }
    setBinding(ctx, interaction.uid, bound.binding, new Date(Date.now() + CONNECTOR_TRANSACTION_TTL_S * 1000));
    const { start } = bound;
    if (start.via === 'redirect') return ctx.redirect(start.url);
    page(ctx, 200, autoPostPage(start.action, start.fields));
  }

  router.post('/interaction/:uid/connector/:id', allow('anyone', 'the interaction cookie of the browser that started the login' + '; a password is throttled'), async (ctx) => {
    const interaction = await details(ctx);
    if (interaction === undefined) return;
    const id = ctx.params['id'] ?? '';
    const connector = connectorOr404(ctx, id);
    if (connector === undefined) return;
    if (connector.kind !== 'password') return page(ctx, 405, errorPage('Login failed', 'This login method does not take a password here.'));
    const form = await readForm(ctx.req);
    if (!deps.flow.csrfValid(interaction.uid, form.get('csrf') ?? '')) return page(ctx, 400, errorPage('Login expired', EXPIRED));
    const username = form.get('username') ?? '';
    const requestId = String(ctx.res.getHeader('X-Request-Id') ?? '');
    const outcome = await deps.guard.attempt({ uid: interaction.uid, connectorId: id, username, requestId },
      (admitEntry) => deps.flow.password(connector, requestOf(ctx, interaction, id), username, form.get('password') ?? '', admitEntry));
    if (outcome.kind === 'ok') return finish(ctx, { login: { accountId: outcome.sub, amr: amr(id) } }, false);
    if (outcome.kind === 'exhausted') return page(ctx, 429, errorPage('Login failed', EXHAUSTED));
    if (outcome.kind === 'locked' && outcome.retryAfterS !== undefined) ctx.set('Retry-After', String(outcome.retryAfterS));
    if (outcome.kind === 'busy') ctx.set('Retry-After', '1');
    const [status, error] = refusal(outcome);
    const application = await applicationOf(deps.provider(), interaction);
    page(ctx, status, passwordForm(interaction.uid, id, connector.prompt, application, username, error), application);
  });

  router.get('/interaction/:uid/finish', allow('anyone', 'the interaction cookie of the browser that started the login'), async (ctx) => {
    const interaction = await details(ctx);
    if (interaction === undefined) return;
    const done = await deps.flow.takePending(interaction.uid, ctx.cookies.get(BINDING_COOKIE, { signed: false }));
    if (done === undefined) return page(ctx, 400, errorPage('Login expired', EXPIRED));
    setBinding(ctx, interaction.uid, '', new Date(0));
    // The upstream session rides in the login result to the resume, where the provider session is known (../upstream-link.ts).
    await finish(ctx, { login: { accountId: done.sub, ...(done.upstream !== undefined ? { [UPSTREAM_SESSION_RESULT]: done.upstream } : {}) } }, false);
  });

  router.post('/interaction/:uid/consent', allow('anyone', 'the interaction cookie of the browser that started the login'), async (ctx) => {
    const interaction = await details(ctx);
    if (interaction === undefined) return;
    const form = await readForm(ctx.req);
    if (interaction.prompt.name !== 'consent' || !deps.flow.csrfValid(interaction.uid, form.get('csrf') ?? '')) return page(ctx, 400, errorPage('Login expired', EXPIRED));
    if (form.get('decision') !== 'allow') {
      const application = await applicationOf(deps.provider(), interaction);
      const name = interaction.params['client_id'] === CLI_CLIENT_ID ? 'the svc command line' : application?.name ?? String(interaction.params['client_id']);
      return finish(ctx, { error: 'access_denied', error_description: `the user did not allow ${name}` }, false);
    }
    await finish(ctx, { consent: { grantId: await impliedConsent(deps.provider(), interaction) } }, true);
  });

  const paramsOf = async (ctx: Koa.Context): Promise<URLSearchParams> => (ctx.method === 'POST' ? await readForm(ctx.req) : new URLSearchParams(ctx.querystring));
  const stateOf = (params: URLSearchParams): string => params.get('state') ?? params.get('RelayState') ?? '';

  /** The URL the upstream knows: on to the interaction's path, where the binding cookie is sent. */
  const callback = async (ctx: Koa.Context): Promise<void> => {
    const params = await paramsOf(ctx);
    const uid = await deps.flow.interactionOf(stateOf(params));
    if (uid === undefined) return page(ctx, 400, errorPage('Login expired', EXPIRED));
    const next = `${interactionPath(uid)}/callback`;
    if (ctx.method === 'POST') return page(ctx, 200, autoPostPage(next, Object.fromEntries(params), 'Back to svc to finish logging in.'));
    ctx.status = 303;
    // The query as it came: a signed redirect-binding message is verified over its exact bytes.
    ctx.redirect(`${next}?${ctx.querystring}`);
  };
  router.get('/callback', allow('anyone', 'the upstream login\'s state cookie'), callback);
  router.post('/callback', allow('anyone', 'the upstream login\'s state cookie'), callback);

  const boundCallback = async (ctx: Koa.Context): Promise<void> => {
    const params = await paramsOf(ctx);
    const outcome = await deps.flow.complete(ctx.params['uid'] ?? '', stateOf(params), ctx.cookies.get(BINDING_COOKIE, { signed: false }), params, (id) => deps.connectors.get(id), String(ctx.res.getHeader('X-Request-Id') ?? ''));
    if (outcome.kind === 'ok') {
      // 303: a SAML POST must become a GET; the browser sends the interaction cookie there.
      ctx.status = 303;
      return ctx.redirect(`${interactionPath(outcome.uid)}/finish`);
    }
    if (outcome.kind === 'expired' || outcome.kind === 'foreign') return page(ctx, 400, errorPage('Login expired', EXPIRED));
    const said = outcome.message === undefined ? undefined : `${outcome.message.charAt(0).toUpperCase()}${outcome.message.slice(1)}.`;
    page(ctx, 401, errorPage('Login failed', said ?? 'Your identity provider did not confirm the login. Go back to the application and try again.'));
  };
  router.get('/interaction/:uid/callback', allow('anyone', 'the interaction cookie of the browser that started the login'), boundCallback);
  router.post('/interaction/:uid/callback', allow('anyone', 'the interaction cookie of the browser that started the login'), boundCallback);

  /** Koa's `secure` follows the configured url (app.ts pins the forwarded scheme under https). */
  function setBinding(ctx: Koa.Context, uid: string, value: string, expires: Date): void {
    ctx.cookies.set(BINDING_COOKIE, value, { path: interactionPath(uid), httpOnly: true, sameSite: 'lax', secure: ctx.secure, expires, overwrite: true, signed: false });
  }

  router.get('/saml/:id/metadata', allow('anyone'), async (ctx) => {
    const id = ctx.params['id'] ?? '';
    const connector = deps.connectors.get(id);
    const isSaml = deps.connectors.list().find((c) => c.id === id)?.type === 'saml';
    if (!isSaml || connector?.kind !== 'browser' || connector.metadata === undefined) {
      ctx.status = 404;
      ctx.body = `no SAML connector with id ${id}`;
      return;
    }
    // The ACS URL comes from the configured url (through the issuer), never from the Host header.
    ctx.type = 'application/samlmetadata+xml';
    ctx.body = await connector.metadata(`${deps.provider().issuer}/callback`);
  });

  function connectorOr404(ctx: Koa.Context, id: string): Connector | undefined {
    const connector = deps.connectors.get(id);
    if (connector === undefined) page(ctx, 404, errorPage('Login unavailable', 'This login method is not available. Go back and choose another one.'));
    return connector;
  }

  function passwordForm(uid: string, id: string, prompt: string, application: Application | undefined, username?: string, error?: string): string {
    const name = deps.connectors.list().find((c) => c.id === id)?.name ?? id;
    return passwordPage({
      connectorName: name, usernameLabel: prompt, action: connectorPath(uid, id), csrf: deps.flow.csrfToken(uid),
      ...(application !== undefined ? { application } : {}),
      ...(username !== undefined ? { username } : {}), ...(error !== undefined ? { error } : {}),
    });
  }

  return router;
}

/** The status and sentence of a password post that did not log in. */
function refusal(outcome: Exclude<GuardedOutcome, { kind: 'ok' | 'exhausted' }>): [number, string] {
  switch (outcome.kind) {
    case 'wrong': return [401, WRONG];
    case 'unavailable': return [503, UNAVAILABLE];
    // The connector's claim rules: the rule's own message, as written by the operator.
    case 'refused': return [403, sentence(outcome.message)];
    case 'busy': return [429, BUSY];
    case 'locked': return [429, lockoutText(outcome.retryAfterS, new Date())];
  }
}

/** As the login page says it (web/src/login.ts), with the time in UTC: the server knows no time zone of the person. */
export function lockoutText(seconds: number | undefined, now: Date): string {
  if (seconds === undefined) return 'Too many failed logins for this user. Logins for this name are locked until an administrator clears them.';
  const at = new Date(now.getTime() + seconds * 1000).toISOString().slice(11, 16);
  const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `Too many failed logins for this user. Try again in ${wait} (at ${at} UTC).`;
}

/** The consent prompt (asked for by offline_access): grant what is missing, as the user would. */
async function impliedConsent(provider: Provider, interaction: Interaction): Promise<string> {
  const { prompt, params, session, grantId } = interaction;
  const grant = (grantId !== undefined ? await provider.Grant.find(grantId) : undefined)
    ?? new provider.Grant({ accountId: session?.accountId ?? '', clientId: String(params['client_id']) });
  const details = prompt.details as { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  if (details.missingOIDCScope !== undefined) grant.addOIDCScope(details.missingOIDCScope.join(' '));
  if (details.missingOIDCClaims !== undefined) grant.addOIDCClaims(details.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(details.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  return grant.save();
}

/** An operator's message as a sentence on the page: a capital first, a full stop unless it has one. */
function sentence(message: string): string {
  const text = `${message.charAt(0).toUpperCase()}${message.slice(1)}`;
  return /[.!?]$/.test(text) ? text : `${text}.`;
}
