/**
 * Two svc replicas (processes of replica-process.ts) acting as one identity provider: one config
 * dir with the bundled provider's LDAP connector `corp` on a real slapd (ldap-directory.ts), one
 * Redis, and a forwarder on their shared `url` as a load balancer would be, sending each request
 * to the replica the test names and recording who served what. The config dir starts without
 * provider keys: the replicas start together and must agree on the ones they generate.
 */
import { rm } from 'node:fs/promises';
import YAML from 'yaml';
import { startForwarder, type Forwarder } from './forwarder.js';
import { corpLdapConnector, LDAP_BIND_SECRETS, startLdapDirectory, type LdapDirectory } from './ldap-directory.js';
import { configMap, secret, tempConfigDir } from './manifests.js';
import { freePort, startRedis, type RedisPeer } from './peers.js';
import { startReplica, stopReplica, type Replica } from './replica-process.js';

export type ReplicaName = 'a' | 'b';

export interface LdapReplicasConfig {
  /** svc-secret's server.secretkey. */
  readonly secretKey: string;
  /** svc-rbac-cm's policy.csv. */
  readonly policy: string;
  /** idp.config's staticClients; none when absent. */
  readonly staticClients?: readonly unknown[];
  /** Further svc-cm keys (users.sso.groupsRecheck, ...). */
  readonly cm?: Readonly<Record<string, string>>;
  /** Further svc-secret keys (the static clients' secrets). */
  readonly secrets?: Readonly<Record<string, string>>;
}

export interface LdapReplicas {
  /** The forwarder's address: svc's `url` in the config, the issuer's base. */
  readonly url: string;
  /** The shared config dir (for rotate-keys, say). */
  readonly dir: string;
  /** slapd's port, to change the directory as its admin (connectors/ldap/directory-admin.ts). */
  readonly ldapPort: number;
  readonly replicas: Readonly<Record<ReplicaName, Replica>>;
  /** Sends every request through the forwarder from now on to this replica (first: a). */
  to(name: ReplicaName): void;
  /** `<replica> <method> <path without query>` for every request forwarded, in order. */
  readonly served: readonly string[];
  /** Stops the replicas, the forwarder, Redis and slapd, and removes the config dir. */
  close(): Promise<void>;
}

export async function startLdapReplicas(config: LdapReplicasConfig): Promise<LdapReplicas> {
  let directory: LdapDirectory | undefined;
  let redis: RedisPeer | undefined;
  let lb: Forwarder | undefined;
  let dir: string | undefined;
  let replicas: Record<ReplicaName, Replica> | undefined;
  let target: ReplicaName = 'a';
  const served: string[] = [];
  async function close(): Promise<void> {
    await Promise.all([stopReplica(replicas?.a), stopReplica(replicas?.b)]);
    await lb?.close();
    await redis?.stop();
    await directory?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  }
  try {
    directory = await startLdapDirectory();
    redis = await startRedis();
    lb = await startForwarder(await freePort(), (req) => {
      served.push(`${target} ${String(req.method)} ${String(req.url).split('?')[0]}`);
      return replicas?.[target].url;
    });
    const url = lb.url;
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        ...config.cm, url, 'idp.config': YAML.stringify({ connectors: [corpLdapConnector(directory)], ...(config.staticClients !== undefined ? { staticClients: config.staticClients } : {}) }),
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': config.policy }),
      'svc-secret.yaml': secret('svc-secret', { ...config.secrets, 'server.secretkey': config.secretKey, ...LDAP_BIND_SECRETS }),
    });
    // Both at once (they must agree on the keys); one that started is stopped if the other did not.
    const [a, b] = await Promise.allSettled([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
    if (a.status === 'rejected' || b.status === 'rejected') {
      await Promise.all([a, b].map((r) => stopReplica(r.status === 'fulfilled' ? r.value : undefined)));
      throw a.status === 'rejected' ? a.reason : (b as PromiseRejectedResult).reason;
    }
    const started = { a: a.value, b: b.value };
    replicas = started;
    const configDir = dir;
    return { url, dir: configDir, ldapPort: directory.port, replicas: started, to: (name) => { target = name; }, served, close };
  } catch (err: unknown) {
    await close();
    throw err;
  }
}
