/**
 * A test double of the PasswordConnector contract (connectors/connector.ts), not of any
 * directory: a map of users. `unreachable` as a username makes login throw, as a connector does
 * when its upstream cannot be reached; removing a user makes refresh answer null, as a
 * directory that no longer has the user.
 */
import type { ConnectorSource } from '../../src/idp/connectors/connector-source.js';
import type { Identity, PasswordConnector } from '../../connectors/connector.js';

export interface FakeUser {
  readonly password: string;
  readonly identity: Identity;
}

export interface FakePasswordConnector extends PasswordConnector {
  readonly users: Map<string, FakeUser>;
  readonly refreshes: () => number;
}

export function fakePasswordConnector(users: Record<string, FakeUser>): FakePasswordConnector {
  const map = new Map(Object.entries(users));
  let refreshes = 0;
  return {
    kind: 'password',
    prompt: 'Email or username',
    users: map,
    refreshes: () => refreshes,
    async login(username, password) {
      if (username === 'unreachable') throw new Error('connect ECONNREFUSED 10.0.0.1:636');
      const user = map.get(username);
      return user !== undefined && user.password === password ? user.identity : null;
    },
    async refresh(identity) {
      refreshes++;
      const user = [...map.values()].find((u) => u.identity.userId === identity.userId);
      return user?.identity ?? null;
    },
  };
}

/** One connector, `id`, under the name and type given. */
export function singleConnector(id: string, connector: PasswordConnector, name = 'Directory'): ConnectorSource {
  return {
    list: () => [{ id, name, type: 'ldap' }],
    get: (wanted) => (wanted === id ? connector : undefined),
  };
}
