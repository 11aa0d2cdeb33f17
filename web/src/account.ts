/**
 * The account page: who I am (GET /api/v1/session/userinfo), my API tokens (GET
 * /api/v1/account/<me>, POST and DELETE .../token) when my account has `apiKey`, the password
 * form for a local account (PUT /api/v1/account/password), the account list for those allowed
 * to read every account, and log out (DELETE /api/v1/session, or a POST to /auth/logout for SSO, which
 * also ends the provider's session). My sessions are sessions.ts's card.
 */
import { api, ApiError, byId, formatTime, showMessage } from './api.js';
import { showSecondFactor } from './second-factor.js';
import { showSessions, signOutOthers } from './sessions.js';

interface UserInfo {
  readonly loggedIn: boolean;
  readonly username: string;
  readonly displayName?: string;
  readonly iss: string;
  readonly groups: readonly string[];
  readonly expiresAt: number | null;
}

interface Token {
  readonly id: string;
  readonly issuedAt: number;
  readonly expiresAt: number | null;
}

interface Account {
  readonly name: string;
  readonly enabled: boolean;
  readonly capabilities: readonly string[];
  readonly tokens: readonly Token[];
}

/** Local accounts' tokens carry this issuer (DESIGN §3); every other issuer is single sign-on. */
const LOCAL_ISSUER = 'svc';

const message = byId<HTMLParagraphElement>('message');
let me: UserInfo;

function say(text: string, kind: 'error' | 'ok'): void {
  showMessage(message, text, kind);
  message.setAttribute('role', kind === 'error' ? 'alert' : 'status');
}

function failure(err: unknown): string {
  if (err instanceof ApiError && err.status === 401) return 'Your session has ended. Log in again.';
  return err instanceof Error ? err.message : 'Something went wrong.';
}

/** `label`: the column's heading, shown beside the value when a phone stacks the table's cells. */
function cell(row: HTMLTableRowElement, text: string, label: string): HTMLTableCellElement {
  const td = row.insertCell();
  td.textContent = text;
  td.dataset['label'] = label;
  return td;
}

function showMe(info: UserInfo): void {
  // An SSO user's sub is opaque: the readable name first, the sub (what rights name) beside it.
  byId('me-username').textContent = info.displayName ?? info.username;
  const subject = info.iss !== LOCAL_ISSUER;
  byId('me-subject-label').hidden = !subject;
  byId('me-subject').hidden = !subject;
  byId('me-subject').textContent = subject ? info.username : '';
  byId('me-groups').textContent = info.groups.length === 0 ? 'none' : info.groups.join(', ');
  byId('me-issuer').textContent = info.iss === LOCAL_ISSUER ? 'svc (local account)' : info.iss;
  byId('me-expires').textContent = info.expiresAt === null ? 'never' : formatTime(info.expiresAt);
}

function showTokens(tokens: readonly Token[]): void {
  const rows = byId<HTMLTableSectionElement>('token-rows');
  rows.replaceChildren();
  for (const token of tokens) {
    const row = rows.insertRow();
    cell(row, token.id, 'ID');
    cell(row, formatTime(token.issuedAt), 'Issued');
    cell(row, token.expiresAt === null ? 'never' : formatTime(token.expiresAt), 'Expires');
    const remove = document.createElement('button');
    remove.type = 'button';
    remove.className = 'danger';
    remove.textContent = 'Delete';
    remove.setAttribute('aria-label', `Delete token ${token.id}`);
    remove.addEventListener('click', () => void deleteToken(token.id));
    row.insertCell().append(remove);
  }
  byId('no-tokens').hidden = tokens.length > 0;
}

/** After a token is made or deleted: my tokens, and the Accounts table's counts when it is shown. */
async function reloadTokens(): Promise<void> {
  const account = await api<Account>('GET', `/api/v1/account/${encodeURIComponent(me.username)}`);
  showTokens(account.tokens);
  if (!byId('accounts').hidden) await reloadAccounts();
}

async function reloadAccounts(): Promise<void> {
  const { items } = await api<{ items: Account[] }>('GET', '/api/v1/account');
  if (items.some((account) => account.name !== me.username || me.iss !== LOCAL_ISSUER)) showAccounts(items);
}

async function generateToken(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const id = String(data.get('id') ?? '').trim();
  try {
    const { token } = await api<{ token: string }>('POST', `/api/v1/account/${encodeURIComponent(me.username)}/token`, {
      ...(id !== '' ? { id } : {}),
      expiresIn: String(data.get('expiresIn') ?? '0'),
    });
    const output = byId<HTMLInputElement>('new-token-value');
    output.value = token;
    byId('new-token').hidden = false;
    form.reset();
    await reloadTokens();
    output.focus();
    output.select();
  } catch (err: unknown) {
    say(failure(err), 'error');
  }
}

async function deleteToken(id: string): Promise<void> {
  try {
    await api('DELETE', `/api/v1/account/${encodeURIComponent(me.username)}/token/${encodeURIComponent(id)}`);
    await reloadTokens();
    say(`Token ${id} deleted.`, 'ok');
    byId('token-id').focus();
  } catch (err: unknown) {
    say(failure(err), 'error');
  }
}

async function copyToken(): Promise<void> {
  const output = byId<HTMLInputElement>('new-token-value');
  try {
    await navigator.clipboard.writeText(output.value);
    say('Token copied to the clipboard.', 'ok');
  } catch {
    // No clipboard permission (an http page, say): leave it selected for Ctrl+C.
    output.focus();
    output.select();
    say('Copy was refused by the browser: the token is selected, press Ctrl+C.', 'error');
  }
}

async function changePassword(form: HTMLFormElement): Promise<void> {
  const data = new FormData(form);
  const newPassword = String(data.get('newPassword') ?? '');
  if (newPassword !== String(data.get('confirmPassword') ?? '')) {
    say('The new password and its repetition differ.', 'error');
    byId('confirm-password').focus();
    return;
  }
  try {
    await api('PUT', '/api/v1/account/password', { currentPassword: String(data.get('currentPassword') ?? ''), newPassword });
    form.reset();
    say('Password changed. Your other sessions have ended.', 'ok');
  } catch (err: unknown) {
    say(err instanceof ApiError && err.code === 'invalid_credentials' ? 'The current password is wrong.' : failure(err), 'error');
  }
}

function showAccounts(accounts: readonly Account[]): void {
  const rows = byId<HTMLTableSectionElement>('account-rows');
  rows.replaceChildren();
  for (const account of accounts) {
    const row = rows.insertRow();
    cell(row, account.name, 'Name');
    cell(row, account.capabilities.join(', ') || 'none', 'Capabilities');
    cell(row, account.enabled ? 'yes' : 'no', 'Enabled');
    cell(row, String(account.tokens.length), 'Tokens');
  }
  byId('accounts').hidden = false;
}

async function logOut(): Promise<void> {
  if (me.iss !== LOCAL_ISSUER) {
    // A navigation (the provider's logout page is next), and a POST from this origin: svc logs out on nothing else.
    const form = document.createElement('form');
    form.method = 'post';
    form.action = '/auth/logout';
    document.body.append(form);
    form.submit();
    return;
  }
  try {
    await api('DELETE', '/api/v1/session');
  } finally {
    location.assign('/login');
  }
}

function on(id: string, event: 'submit' | 'click', handler: (target: HTMLFormElement) => Promise<void>): void {
  const element = byId<HTMLFormElement>(id);
  element.addEventListener(event, (e) => {
    e.preventDefault();
    void handler(element);
  });
}

async function start(): Promise<void> {
  me = await api<UserInfo>('GET', '/api/v1/session/userinfo');
  if (!me.loggedIn) {
    location.assign(`/login?return_url=${encodeURIComponent(location.pathname)}`);
    return;
  }
  showMe(me);
  on('logout', 'click', logOut);
  if (me.iss === LOCAL_ISSUER && me.expiresAt !== null) await showSecondFactor(say, failure);
  const sessions = { say, failure, cell };
  on('sign-out-others', 'click', () => signOutOthers(sessions));
  await showSessions(sessions);
  if (me.iss === LOCAL_ISSUER) {
    let account: Account;
    try {
      account = await api<Account>('GET', `/api/v1/account/${encodeURIComponent(me.username)}`);
    } catch (err: unknown) {
      // users.mfa.required and no factor yet: this session may only enrol one.
      if (err instanceof ApiError && err.code === 'second_factor_enrolment_required') {
        say(err.message, 'error');
        byId('totp-start').focus();
        return;
      }
      throw err;
    }
    byId('password').hidden = false;
    on('password-form', 'submit', changePassword);
    if (account.capabilities.includes('apiKey')) {
      showTokens(account.tokens);
      byId('tokens').hidden = false;
      on('token-form', 'submit', generateToken);
      on('copy-token', 'click', copyToken);
    }
  }
  // The list holds the accounts the caller may read: more than its own means an administrator
  // (or a read-only operator), who gets the whole table.
  await reloadAccounts();
}

start().catch((err: unknown) => say(failure(err), 'error'));
