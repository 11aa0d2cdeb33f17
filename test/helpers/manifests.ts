/** Builds manifest YAML for tests: the three stores and other objects, as an operator writes them. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import YAML from 'yaml';
import { makeTempDir } from './temp-dir.js';

export function configMap(name: string, data: Record<string, string>): string {
  return YAML.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data });
}

export function secret(name: string, stringData: Record<string, string>, labels: Record<string, string> = { 'app.kubernetes.io/part-of': 'svc' }): string {
  return YAML.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, labels }, stringData });
}

export function application(namespace: string, name: string, project: string, destination: { name?: string; server?: string }): string {
  return YAML.stringify({ apiVersion: 'svc.io/v1alpha1', kind: 'Application', metadata: { name, namespace }, spec: { project, destination } });
}

export function clusterSecret(objectName: string, name: string, server: string): string {
  return secret(objectName, { name, server }, { 'svc.io/secret-type': 'cluster', 'app.kubernetes.io/part-of': 'svc' });
}

/**
 * A fresh temp dir holding the given files (name -> YAML text). The caller removes it (rmSync or
 * removeTempDir), also when its test fails; the harness fails a file that leaves one.
 */
export function tempConfigDir(files: Record<string, string>): string {
  const dir = makeTempDir('svc-config-');
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  }
  return dir;
}

/** svc with the bundled provider, as the identity provider's end-to-end tests set it up. */
export interface IdpConfig {
  readonly url: string;
  /** idp.config's connectors. */
  readonly connectors: readonly unknown[];
  /** Extensions by name, all in front of `backendUrl`. */
  readonly extensions: readonly string[];
  readonly backendUrl: string;
  readonly policy: string;
  /** svc-secret's data (server.secretkey and the connectors' secrets). */
  readonly secrets: Record<string, string>;
  /** Further svc-cm keys (users.sso.groupsRecheck, ...). */
  readonly cm?: Record<string, string>;
}

/** The policy of the extensions `tools` and `secret`: members of `toolsGroup` may use tools, of `secretGroup` secret. */
export function toolsAndSecretPolicy(toolsGroup: string, secretGroup: string): string {
  return [
    'p, role:dev-tools, extensions, *, */tools, allow',
    `g, ${toolsGroup}, role:dev-tools`,
    'p, role:admin-tools, extensions, *, */secret, allow',
    `g, ${secretGroup}, role:admin-tools`,
  ].join('\n');
}

/** A fresh config dir: svc-cm with url, idp.config and extension.config, svc-rbac-cm and svc-secret. */
export function idpConfigDir(config: IdpConfig): string {
  const extensions = config.extensions.map((name) => ({ name, enabled: true, backend: { services: [{ url: config.backendUrl }] } }));
  return tempConfigDir({
    'svc-cm.yaml': configMap('svc-cm', {
      url: config.url,
      'idp.config': YAML.stringify({ connectors: config.connectors }),
      'extension.config': YAML.stringify({ extensions }),
      ...config.cm,
    }),
    'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': config.policy }),
    'svc-secret.yaml': secret('svc-secret', config.secrets),
  });
}

/** A snapshot-shaped value parsed straight from manifests, without a store (pure parser tests). */
export function docs(...texts: string[]): string {
  return texts.join('---\n');
}
