/**
 * A kubeconfig with one cluster (the stand-in API server), one user and one context, as kubectl
 * and svc read it: the tests differ only in how the user logs in (a token, a client certificate,
 * an exec plugin).
 */
import YAML from 'yaml';

export interface KubeconfigUser {
  readonly name: string;
  /** The `user:` entry: { token }, { 'client-certificate-data', 'client-key-data' }, { exec }. */
  readonly user: Readonly<Record<string, unknown>>;
}

/** `caPem`: the CA the server's certificate is checked with; none for plain http. */
export function kubeconfigText(server: string, caPem: string | undefined, user: KubeconfigUser, namespace: string): string {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return YAML.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'stand-in', cluster: { server, ...(caPem !== undefined ? { 'certificate-authority-data': b64(caPem) } : {}) } }],
    users: [{ name: user.name, user: user.user }],
    contexts: [{ name: 'stand-in', context: { cluster: 'stand-in', user: user.name, namespace } }],
    'current-context': 'stand-in',
  });
}
