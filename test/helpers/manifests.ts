/** Builds manifest YAML for tests: the three stores and other objects, as an operator writes them. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import YAML from 'yaml';

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

/** A fresh temp dir holding the given files (name -> YAML text). */
export function tempConfigDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  }
  return dir;
}

/** A snapshot-shaped value parsed straight from manifests, without a store (pure parser tests). */
export function docs(...texts: string[]): string {
  return texts.join('---\n');
}
