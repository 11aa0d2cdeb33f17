/**
 * Redis must keep every svc key until svc deletes it or its TTL ends: an evicted revocations
 * marker counts as a loss (every session of before is refused), and an evicted revocation
 * whose marker stays is a logged-out token accepted again (issue 52). So, once the first
 * connection is ready, svc asks each primary for `maxmemory-policy` and warns when it is not
 * `noeviction`. A Redis that refuses CONFIG (a managed service, an ACL user without it) cannot
 * be checked: that is said too, so the operator checks it by hand.
 *
 * Once per process, at its first connection: a warning per reconnect would repeat the same
 * line, and a primary elected later is checked by the next start of any replica.
 */
import type { Cluster, Redis } from 'ioredis';
import type { StateLog } from './state.js';

export const REQUIRED_POLICY = 'noeviction';

/** The node's answer to CONFIG GET maxmemory-policy (['maxmemory-policy', value]). */
async function policyOf(node: Pick<Redis, 'config'>): Promise<string | undefined> {
  const answer: unknown = await node.config('GET', 'maxmemory-policy');
  return Array.isArray(answer) && typeof answer[1] === 'string' ? answer[1] : undefined;
}

/** Warns about each primary whose policy can evict, or that does not say; never throws. */
export async function checkEvictionPolicy(client: Redis | Cluster, where: string, log: StateLog): Promise<void> {
  const nodes: Pick<Redis, 'config' | 'options'>[] = 'nodes' in client && typeof client.nodes === 'function' && client.isCluster ? client.nodes('master') : [client as Redis];
  for (const node of nodes) {
    const at = nodes.length > 1 ? `${where} (node ${String(node.options.host)}:${String(node.options.port)})` : where;
    let policy: string | undefined;
    try {
      policy = await policyOf(node);
    } catch (err: unknown) {
      log.warn({ redis: at, reason: err instanceof Error ? err.message : String(err) }, `state: could not read maxmemory-policy of redis at ${at} (CONFIG GET refused or failed); make sure it is '${REQUIRED_POLICY}': an evicted key can bring back a logged-out token or log everyone out`);
      continue;
    }
    if (policy !== REQUIRED_POLICY) {
      log.warn({ redis: at, maxmemoryPolicy: policy ?? null }, `state: redis at ${at} runs with maxmemory-policy '${policy ?? 'unknown'}', which can evict svc's keys: an evicted revocation brings back a logged-out token until the loss is found, an evicted marker logs everyone out; set maxmemory-policy ${REQUIRED_POLICY}`);
    }
  }
}
