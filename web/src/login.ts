/**
 * /login: the local form (POST /api/v1/session), one link per single sign-on option from
 * /api/v1/settings, and the messages: wrong password, lockout (Retry-After), and the failed or
 * expired SSO login that /auth/callback sends back here as ?error=, and the refusals of the form
 * posted without the script (POST /login, the same ?error=). `return_url` goes with every
 * way in, and is kept in sessionStorage for an SSO login that comes back without it (expired).
 */
import { api, ApiError, byId, sameSiteReturnUrl, showMessage } from './api.js';
import { passkeyAssertion } from './webauthn.js';

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
  second_factor_required: 'This account has a second factor, which this page can ask for only with JavaScript. Turn JavaScript on and log in again.',
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

/** The challenge of the second step in progress; undefined on the password step. */
let challenge: string | undefined;

function loggedIn(): void {
  sessionStorage.removeItem(RETURN_KEY);
  location.assign(returnUrl);
}

/** The password was right and the account has a second factor: ask for it. */
function showSecondStep(body: Readonly<Record<string, unknown>>): void {
  challenge = String(body['challenge'] ?? '');
  const factors = Array.isArray(body['factors']) ? body['factors'].map(String) : [];
  byId('local-login').hidden = true;
  byId('message').hidden = true;
  const step = byId<HTMLFormElement>('second-step');
  step.hidden = false;
  byId('use-passkey').hidden = !factors.includes('webauthn') || !('credentials' in navigator);
  const typed = factors.includes('totp') || factors.includes('recovery');
  byId('code').parentElement?.querySelectorAll('label[for=code], #code, #second-step > button[type=submit]').forEach((e) => ((e as HTMLElement).hidden = !typed));
  byId<HTMLInputElement>('code').required = typed;
  byId('second-step-hint').textContent = typed ? 'This account has a second factor: enter the code your authenticator app shows, or one of your recovery codes.' : 'This account logs in with a passkey.';
  (typed ? byId<HTMLInputElement>('code') : byId<HTMLButtonElement>('use-passkey')).focus();
}

/** A refused second step spends its challenge: back to the password, saying why. */
function backToPassword(text: string): void {
  challenge = undefined;
  byId('second-step').hidden = true;
  byId<HTMLInputElement>('code').value = '';
  byId('local-login').hidden = false;
  showMessage(message, text, 'error');
  const password = byId<HTMLInputElement>('password');
  password.value = '';
  password.focus();
}

async function secondStep(answer: { code: string } | { webauthn: unknown }): Promise<void> {
  try {
    await api('POST', '/api/v1/session', { challenge, ...answer });
    loggedIn();
  } catch (err: unknown) {
    const text = err instanceof ApiError && err.code === 'invalid_credentials' ? 'Wrong or already used code. Enter your password and a new code.' : failureText(err);
    backToPassword(text);
  }
}

async function usePasskey(): Promise<void> {
  try {
    const options = await api<Record<string, unknown>>('POST', '/api/v1/session/webauthn-options', { challenge });
    await secondStep({ webauthn: await passkeyAssertion(options) });
  } catch (err: unknown) {
    backToPassword(err instanceof ApiError ? failureText(err) : 'The passkey did not answer. Enter your password and try again.');
  }
}

async function logIn(form: HTMLFormElement): Promise<void> {
  const button = form.querySelector('button') as HTMLButtonElement;
  const data = new FormData(form);
  button.disabled = true;
  form.setAttribute('aria-busy', 'true');
  try {
    await api('POST', '/api/v1/session', { username: String(data.get('username') ?? ''), password: String(data.get('password') ?? '') });
    loggedIn();
  } catch (err: unknown) {
    if (err instanceof ApiError && err.code === 'second_factor_required') {
      showSecondStep(err.body);
      return;
    }
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
  byId<HTMLFormElement>('second-step').addEventListener('submit', (event) => {
    event.preventDefault();
    void secondStep({ code: byId<HTMLInputElement>('code').value.trim() });
  });
  byId('use-passkey').addEventListener('click', () => void usePasskey());
  if (local) byId<HTMLInputElement>('username').focus();
}

start().catch((err: unknown) => showMessage(message, failureText(err), 'error'));
