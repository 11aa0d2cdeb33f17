/**
 * The account page's "Sessions" card: every login of mine (GET /api/v1/session/list), newest
 * first, with "End" on each but this one (DELETE /api/v1/session/{id}) and "Sign out everywhere
 * else", which ends every other one. An ended session's token stops working at once everywhere.
 */
import { api, byId } from './api.js';

interface Session {
  readonly id: string;
  readonly kind: string;
  readonly client: string;
  readonly address: string;
  readonly createdAt: string;
  readonly lastUsedAt: string;
  readonly expiresAt: string;
  readonly current: boolean;
}

const CLIENTS: Readonly<Record<string, string>> = { browser: 'Browser', cli: 'Command line', api: 'API client' };
const KINDS: Readonly<Record<string, string>> = { local: 'password', sso: 'single sign-on', workload: 'workload' };

export interface SessionsView {
  /** Says what happened, or what went wrong, in the page's message line. */
  readonly say: (text: string, kind: 'error' | 'ok') => void;
  readonly failure: (err: unknown) => string;
  /** `label`: the column's heading, for phones. */
  readonly cell: (row: HTMLTableRowElement, text: string, label: string) => HTMLTableCellElement;
}

function when(iso: string): string {
  return new Date(iso).toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' });
}

export async function showSessions(view: SessionsView): Promise<void> {
  const { items } = await api<{ items: Session[] }>('GET', '/api/v1/session/list');
  const rows = byId<HTMLTableSectionElement>('session-rows');
  rows.replaceChildren();
  for (const session of items) {
    const row = rows.insertRow();
    view.cell(row, `${CLIENTS[session.client] ?? session.client}${session.current ? ' (this one)' : ''}`, 'Client');
    view.cell(row, KINDS[session.kind] ?? session.kind, 'Login');
    view.cell(row, session.address === '' ? 'unknown' : session.address, 'Address');
    view.cell(row, when(session.createdAt), 'Started');
    view.cell(row, when(session.lastUsedAt), 'Last used');
    const actions = row.insertCell();
    if (!session.current) {
      const end = document.createElement('button');
      end.type = 'button';
      end.className = 'danger';
      end.textContent = 'End';
      end.setAttribute('aria-label', `End the ${CLIENTS[session.client] ?? session.client} session started ${when(session.createdAt)}`);
      end.dataset['session'] = session.id;
      end.addEventListener('click', () => void endOne(view, session.id));
      actions.append(end);
    }
  }
  byId('sign-out-others').hidden = !items.some((s) => !s.current);
  byId('sessions').hidden = false;
}

async function endOne(view: SessionsView, id: string): Promise<void> {
  try {
    await api('DELETE', `/api/v1/session/${encodeURIComponent(id)}`);
    await showSessions(view);
    view.say('Session ended.', 'ok');
  } catch (err: unknown) {
    view.say(view.failure(err), 'error');
  }
}

/** Ends every session but this one; the list is read again first, so one that began meanwhile ends too. */
export async function signOutOthers(view: SessionsView): Promise<void> {
  try {
    const { items } = await api<{ items: Session[] }>('GET', '/api/v1/session/list');
    const others = items.filter((s) => !s.current);
    for (const other of others) await api('DELETE', `/api/v1/session/${encodeURIComponent(other.id)}`);
    await showSessions(view);
    view.say(others.length === 1 ? '1 other session ended.' : `${others.length} other sessions ended.`, 'ok');
  } catch (err: unknown) {
    view.say(view.failure(err), 'error');
  }
}
