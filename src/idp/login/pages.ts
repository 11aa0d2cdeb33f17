/**
 * The provider's HTML pages: connector chooser, password form, auto-posting form (SAML),
 * and the error page. Server-rendered, usable without JavaScript, every value escaped. Texts
 * are for the person at the browser: what happened and what to do, never internals.
 */
import type { ConnectorInfo } from '../connectors/connector-source.js';

const ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/**
 * svc's look (web/style.css, served at /web/style.css by the app beside the provider), and no
 * inline script or style: the pages' CSP (http/security-headers.ts) allows neither.
 */
function layout(title: string, body: string, application?: Application): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · svc</title>
<link rel="stylesheet" href="/web/style.css">
</head><body><main class="narrow" id="main"><div class="card">${applicationBanner(application)}<h1>${escapeHtml(title)}</h1>
${body}
</div></main></body></html>`;
}

/** The application the person is logging in to (a client's `name` and `logoURL`). */
export interface Application {
  readonly name: string;
  readonly logoUrl?: string;
}

/** Says whom the login is for; the logo's origin must be allowed by the page's CSP (img-src). */
function applicationBanner(application: Application | undefined): string {
  if (application === undefined) return '';
  const logo = application.logoUrl === undefined ? '' : `<img class="app-logo" src="${escapeHtml(application.logoUrl)}" alt="" width="48" height="48">`;
  return `<p class="application">${logo}Log in to continue to <strong>${escapeHtml(application.name)}</strong></p>
`;
}

export function chooserPage(connectors: readonly ConnectorInfo[], hrefOf: (id: string) => string, application?: Application): string {
  const items = connectors.map((c) => `<li><a class="button secondary block" href="${escapeHtml(hrefOf(c.id))}">Log in with ${escapeHtml(c.name)}</a></li>`);
  return layout('Log in', `<ul class="choices">${items.join('\n')}</ul>`, application);
}

export interface PasswordForm {
  readonly connectorName: string;
  readonly usernameLabel: string;
  readonly action: string;
  readonly csrf: string;
  readonly username?: string;
  readonly error?: string;
  readonly application?: Application;
}

export function passwordPage(form: PasswordForm): string {
  const error = form.error === undefined ? '' : `<p class="error" role="alert">${escapeHtml(form.error)}</p>`;
  return layout(`Log in with ${form.connectorName}`, `${error}
<form method="post" action="${escapeHtml(form.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(form.csrf)}">
<label for="username">${escapeHtml(form.usernameLabel)}</label>
<input id="username" name="username" autocomplete="username" required value="${escapeHtml(form.username ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit" class="block">Log in</button>
</form>`, form.application);
}

/** Sends the browser on with a POST (SAML HTTP-POST binding); the button is there for browsers without JavaScript. */
export function autoPostPage(action: string, fields: Readonly<Record<string, string>>, note = 'Your identity provider is next.'): string {
  const inputs = Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(v)}">`);
  return layout('Continue to log in', `<form method="post" action="${escapeHtml(action)}" data-auto-post>
${inputs.join('\n')}
<p>${escapeHtml(note)}</p><button type="submit">Continue</button>
</form>
<script type="module" src="/web/auto-post.js"></script>`);
}

export interface CliConsentForm {
  /** The loopback port the tokens would go to. */
  readonly port: string;
  readonly action: string;
  readonly csrf: string;
  readonly offline: boolean;
}

/**
 * The question before the CLI client gets a code (issue 21): any page can start its
 * authorization, and whatever listens on the named loopback port would get the tokens.
 */
export function cliConsentPage(form: CliConsentForm): string {
  const keep = form.offline ? ', and to stay logged in (a refresh token)' : '';
  return layout('Allow the svc command line?', `<p>A program on this computer, listening on port <strong>${escapeHtml(form.port)}</strong>, asks to act as you on svc as the svc command line${keep}.</p>
<p>Allow it only if you just ran <code>svc login</code> and it chose that port. If you did not, choose Cancel.</p>
<form method="post" action="${escapeHtml(form.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(form.csrf)}">
<button type="submit" name="decision" value="allow" class="block">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary block">Cancel</button>
</form>`);
}

/**
 * The same question for a registered public application with a loopback redirect
 * (./loopback-consent.ts): a program on this computer on the port would get its tokens.
 */
export function loopbackConsentPage(form: CliConsentForm & { readonly application: Application }): string {
  const name = escapeHtml(form.application.name);
  const keep = form.offline ? ', and to stay logged in (a refresh token)' : '';
  return layout(`Allow ${form.application.name}?`, `<p>A program on this computer, listening on port <strong>${escapeHtml(form.port)}</strong>, asks to act as you as <strong>${name}</strong>${keep}.</p>
<p>Allow it only if you just started ${name} on this computer and it chose that port. If you did not, choose Cancel.</p>
<form method="post" action="${escapeHtml(form.action)}">
<input type="hidden" name="csrf" value="${escapeHtml(form.csrf)}">
<button type="submit" name="decision" value="allow" class="block">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary block">Cancel</button>
</form>`, form.application);
}

export function errorPage(title: string, message: string): string {
  return layout(title, `<p class="error" role="alert">${escapeHtml(message)}</p>
<p><a href="/login">Go to svc's login page</a></p>`);
}

/**
 * The device flow's pages (RFC 8628), in place of oidc-provider's defaults (which load web
 * fonts from a third party). `form` is the provider's own form: its action and CSRF field are
 * kept, and its code input (no label, an inline onfocus handler the CSP refuses) is replaced by a
 * labelled one, keeping a code the link already carried.
 */
export function deviceInputPage(form: string, error: 'wrong_code' | 'aborted' | 'failed' | undefined): string {
  const messages = {
    wrong_code: 'That code is not right, or has expired. Check the code on your device and try again.',
    aborted: 'The login was cancelled.',
    failed: 'Something went wrong. Start again on your device.',
  } as const;
  const message = error === undefined ? '<p>Enter the code your device shows.</p>' : `<p class="error" role="alert">${escapeHtml(messages[error])}</p>`;
  return layout('Log in a device', `${message}
${labelledCodeForm(form)}`);
}

/** The provider's values are its own, already escaped where they need it: they are copied as they are. */
function labelledCodeForm(form: string): string {
  const action = /<form[^>]*\saction="([^"]*)"/.exec(form)?.[1];
  const xsrf = /name="xsrf" value="([^"]*)"/.exec(form)?.[1];
  const codeInput = /<input[^>]*name="user_code"[^>]*>/.exec(form)?.[0] ?? '';
  const code = /\svalue="([^"]*)"/.exec(codeInput)?.[1] ?? '';
  if (action === undefined || xsrf === undefined) {
    // Another provider version: its form as it is, which works too.
    return `${form}\n<button type="submit" form="op.deviceInputForm">Continue</button>`;
  }
  return `<form id="op.deviceInputForm" method="post" action="${action}">
<input type="hidden" name="xsrf" value="${xsrf}">
<label for="user_code">Code</label>
<input id="user_code" name="user_code" value="${code}" autocomplete="off" autocapitalize="characters" spellcheck="false" required autofocus>
<button type="submit">Continue</button>
</form>`;
}

export function deviceConfirmPage(form: string, clientName: string, userCode: string): string {
  return layout('Confirm the device', `<p>${escapeHtml(clientName)} asks to log in. Your device should show this code:</p>
<p><code>${escapeHtml(userCode)}</code></p>
<p>If it does not, or you did not start this, cancel.</p>
${form}
<button type="submit" form="op.deviceConfirmForm">Continue</button>
<button type="submit" form="op.deviceConfirmForm" name="abort" value="yes">Cancel</button>`);
}

export function deviceDonePage(): string {
  return layout('Device logged in', '<p>You are logged in on your device. You can close this window.</p>');
}

/** End session: confirm (oidc-provider's form with its CSRF field), then done. */
export function logoutPage(form: string): string {
  return layout('Log out', `<p>Log out of svc's identity provider?</p>
${form}
<button type="submit" form="op.logoutForm" name="logout" value="yes">Log out</button>
<button type="submit" form="op.logoutForm">Stay logged in</button>`);
}

export function loggedOutPage(): string {
  return layout('Logged out', '<p>You are logged out. You can close this window.</p>');
}
