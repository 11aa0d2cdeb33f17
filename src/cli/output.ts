/**
 * Printing listings: `-o json|yaml|wide`, a column-aligned table by default (the look of
 * kubectl and argocd). Pure functions from data to text, so they are tested without a process.
 */
import YAML from 'yaml';
import type { Account, SecondFactorStatus, SessionInfo, TokenInfo, UserInfo } from './api-client.js';
import { CliError } from './errors.js';

export type OutputFormat = 'table' | 'wide' | 'json' | 'yaml';
const FORMATS: readonly OutputFormat[] = ['wide', 'json', 'yaml'];

/** The value of `-o`; undefined means the default table. */
export function parseOutputFormat(value: string | undefined): OutputFormat {
  if (value === undefined) return 'table';
  if ((FORMATS as readonly string[]).includes(value)) return value as OutputFormat;
  throw new CliError(`unknown output format '${value}' (want json, yaml or wide)`);
}

/** Columns separated by three spaces, each as wide as its widest cell; no trailing blanks. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('   ').trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

export function renderData(format: 'json' | 'yaml', data: unknown): string {
  return format === 'json' ? `${JSON.stringify(data, null, 2)}\n` : YAML.stringify(data);
}

export function renderAccountList(format: OutputFormat, accounts: readonly Account[]): string {
  if (format === 'json' || format === 'yaml') return renderData(format, { items: accounts });
  const headers = ['NAME', 'ENABLED', 'CAPABILITIES'];
  const rows = accounts.map((a) => [a.name, String(a.enabled), a.capabilities.join(', ')]);
  if (format === 'table') return renderTable(headers, rows);
  return renderTable(
    [...headers, 'TOKENS', 'NEXT EXPIRY'],
    accounts.map((a, i) => [...(rows[i] ?? []), String(a.tokens.length), nextExpiry(a.tokens)]),
  );
}

export function renderAccount(format: OutputFormat, account: Account): string {
  if (format === 'json' || format === 'yaml') return renderData(format, account);
  const head = [
    `Name:           ${account.name}`,
    `Enabled:        ${String(account.enabled)}`,
    `Capabilities:   ${account.capabilities.join(', ')}`,
    '',
    'Tokens:',
  ].join('\n');
  if (account.tokens.length === 0) return `${head}\nNONE\n`;
  const rows = account.tokens.map((t) => [t.id, formatTime(t.issuedAt), formatTime(t.expiresAt)]);
  return `${head}\n${renderTable(['ID', 'ISSUED AT', 'EXPIRING AT'], rows)}`;
}

/** `svc session list`: newest first, the caller's own marked with `*`. */
export function renderSessionList(format: OutputFormat, sessions: readonly SessionInfo[]): string {
  if (format === 'json' || format === 'yaml') return renderData(format, { items: sessions });
  const headers = ['ID', 'KIND', 'CLIENT', 'ADDRESS', 'CREATED', 'LAST USED', 'CURRENT'];
  const rows = sessions.map((s) => [s.id, s.kind, s.client, s.address, formatTime(s.createdAt), formatTime(s.lastUsedAt), s.current ? '*' : '']);
  if (format === 'table') return renderTable(headers, rows);
  return renderTable([...headers, 'EXPIRES'], sessions.map((s, i) => [...(rows[i] ?? []), formatTime(s.expiresAt)]));
}

/** `svc account get-user-info`, in argocd's words (Logged In, Username, Issuer, Groups) and the readable name. */
export function renderUserInfo(format: OutputFormat, info: UserInfo): string {
  if (format === 'json' || format === 'yaml') return renderData(format, info);
  const lines = [`Logged In: ${String(info.loggedIn)}`];
  if (info.loggedIn) {
    lines.push(`Username: ${info.username ?? ''}`);
    if (info.displayName !== undefined) lines.push(`Name: ${info.displayName}`);
    lines.push(`Issuer: ${info.iss ?? ''}`, `Groups: ${(info.groups ?? []).join(',')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `svc account second-factor status`: what is on, as the account page says it. */
export function renderSecondFactorStatus(format: OutputFormat, status: SecondFactorStatus): string {
  if (format === 'json' || format === 'yaml') return renderData(format, status);
  const passkeys = status.passkeys.length === 0 ? 'none' : `${status.passkeys.length} (${status.passkeys.map((p) => p.name).join(', ')})`;
  return [
    `TOTP:            ${status.totp ? 'on' : 'off'}`,
    `Passkeys:        ${passkeys}`,
    `Recovery codes:  ${status.recoveryCodesLeft} left`,
    `Required:        ${status.required ? 'yes (users.mfa.required)' : 'no'}`,
  ].join('\n') + '\n';
}

/**
 * Times as the server sends them: seconds since the epoch, or an ISO string; missing or null
 * means "never" (an API token without `exp`).
 */
export function formatTime(value: number | string | null | undefined): string {
  if (value === undefined || value === null || value === '' || value === 0) return 'never';
  const date = typeof value === 'number' ? new Date(value * 1000) : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function nextExpiry(tokens: readonly TokenInfo[]): string {
  const times = tokens
    .map((t) => t.expiresAt)
    .filter((v): v is number | string => v !== undefined && v !== null && v !== '' && v !== 0)
    .map((v) => (typeof v === 'number' ? v * 1000 : Date.parse(v)))
    .filter((ms) => Number.isFinite(ms));
  if (times.length === 0) return tokens.length === 0 ? '-' : 'never';
  return formatTime(new Date(Math.min(...times)).toISOString());
}
