/**
 * /login: the local form (POST /api/v1/session), one link per single sign-on option from
 * /api/v1/settings, and the messages: wrong password, lockout (Retry-After), and the failed or
 * expired SSO login that /auth/callback sends back here as ?error=, and the refusals of the form
 * posted without the script (POST /login, the same ?error=). `return_url` goes with every
 * way in, and is kept in sessionStorage for an SSO login that comes back without it (expired).
 */
import { api, ApiError, byId, sameSiteReturnUrl, showMessage } from './api.js';

interface Settings {
  readonly oidcConfig?: { readonly name: string };
  readonly idpConnectors: readonly { readonly id: string; readonly name: string }[];
  readonly userLoginsDisabled: boolean;
}

const RETURN_KEY = 'svc.return_url';

const ERRORS: Readonly<Record<string, string>> = {
  invalid_credentials: 'Wrong username or password.',
  too_many_attempts: lockoutText(undefined),
  too_many_requests: 'svc is busy with other logins. Try again in a moment.',
  invalid_request: 'The login form was not filled in as expected. Try again.',
  sso_failed: 'Your identity provider did not complete the login. Try again, or ask your administrator if it keeps happening.',
  sso_expired: 'That login took too long or was started in another browser. Log in again.',
  sso_reserved_name: 'Your identity provider signed you in under a name svc reserves (a local account or a role), so svc cannot log you in with it. Ask your administrator: the server log says which name and why.',
};

const params = new URLSearchParams(location.search);
const error = params.get('error');
const returnUrl = sameSiteReturnUrl(params.get('return_url') ?? (error !== null ? sessionStorage.getItem(RETURN_KEY) : null));
const message = byId<HTMLParagraphElement>('message');

function ssoLink(name: string, connectorId: string | undefined): HTMLLIElement {
  const query = new URLSearchParams({ return_url: returnUrl });
  if (connectorId !== undefined) query.set('connector_id', connectorId);
  const link = document.createElement('a');
  link.className = 'button secondary block';
  link.href = `/auth/login?${query.toString()}`;
  link.textContent = `Log in via ${name}`;
  link.addEventListener('click', () => sessionStorage.setItem(RETURN_KEY, returnUrl));
  const item = document.createElement('li');
  item.append(link);
  return item;
}

function lockoutText(seconds: number | undefined): string {
  if (seconds === undefined) return 'Too many failed logins for this user. Wait a while before you try again.';
  const at = new Date(Date.now() + seconds * 1000).toLocaleTimeString(undefined, { timeStyle: 'short' });
  const wait = seconds < 90 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
  return `Too many failed logins for this user. Try again in ${wait} (at ${at}).`;
}

function failureText(err: unknown): string {
  if (!(err instanceof ApiError)) return 'Something went wrong. Try again.';
  if (err.code === 'too_many_attempts') return lockoutText(err.retryAfter);
  if (err.code === 'invalid_credentials' || err.code === 'too_many_requests') return ERRORS[err.code] ?? err.message;
  return err.message;
}

async function logIn(form: HTMLFormElement): Promise<void> {
  const button = form.querySelector('button') as HTMLButtonElement;
  const data = new FormData(form);
  button.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    await api('POST', '/api/v1/session', { username: String(data.get('username') ?? ''), password: String(data.get('password') ?? '') });
    sessionStorage.removeItem(RETURN_KEY);
    location.assign(returnUrl);
  } catch (err: unknown) {
    showMessage(message, failureText(err), 'error');
    const password = byId<HTMLInputElement>('password');
    password.value = '';
    password.focus();
  } finally {
    button.disabled = false;
    form.removeAttribute('aria-busy');
  }
}

async function start(): Promise<void> {
  if (error !== null) showMessage(message, ERRORS[error] ?? 'The login did not complete. Try again.', 'error');
  const settings = await api<Settings>('GET', '/api/v1/settings');
  const form = byId<HTMLFormElement>('local-login');
  byId<HTMLInputElement>('return-url').value = returnUrl;
  const sso = byId<HTMLUListElement>('sso');
  if (settings.oidcConfig !== undefined) sso.append(ssoLink(settings.oidcConfig.name, undefined));
  for (const connector of settings.idpConnectors) sso.append(ssoLink(connector.name, connector.id));
  const local = !settings.userLoginsDisabled;
  form.hidden = !local;
  sso.hidden = sso.childElementCount === 0;
  byId('or').hidden = !local || sso.hidden;
  byId('none').hidden = local || !sso.hidden;
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void logIn(form);
  });
  if (local) byId<HTMLInputElement>('username').focus();
}

start().catch((err: unknown) => showMessage(message, failureText(err), 'error'));
