/**
 * Read-modify-write of one ConfigMap's `data` through the Kubernetes API, for the offline account
 * commands: the same optimistic concurrency as secret-api-writer.ts (replace with the
 * resourceVersion that was read; on `409 Conflict` read again and re-apply the same change, so
 * another writer's keys are never overwritten). A missing ConfigMap is created.
 */
import { patchedValues, type SecretPatch } from '../store.js';
import { KubeApiError, type KubeClient } from './kube-client.js';
import type { KubeObject } from './reflector.js';
import { asApiWriteFailure, SecretApiWriteFailed, type ApiWriteResult } from './secret-api-writer.js';

const MAX_ATTEMPTS = 8;

export async function updateConfigMapViaApi(client: KubeClient, name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<ApiWriteResult> {
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = await readConfigMap(client, name);
      const current = stored === undefined ? {} : dataOf(stored, name);
      const values = patchedValues(current, mutate(current));
      try {
        if (stored === undefined) {
          const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: values };
          return { object: await client.request('create', 'configmaps', undefined, body), created: true };
        }
        if (sameValues(current, values)) return { object: undefined, created: false };
        // Only `data` replaced: labels, annotations and binaryData stay as the operator set them.
        return { object: await client.request('update', 'configmaps', name, { ...stored, data: values }), created: false };
      } catch (err: unknown) {
        if (err instanceof KubeApiError && err.code === 409) continue; // Conflict or AlreadyExists: read again
        throw err;
      }
    }
    throw new SecretApiWriteFailed(`ConfigMap ${name} was changed by other writers ${MAX_ATTEMPTS} times in a row while svc wrote it; not written, try again`);
  } catch (err: unknown) {
    throw asApiWriteFailure(name, err, 'ConfigMap');
  }
}

async function readConfigMap(client: KubeClient, name: string): Promise<KubeObject | undefined> {
  try {
    return await client.request('get', 'configmaps', name);
  } catch (err: unknown) {
    if (err instanceof KubeApiError && err.code === 404) return undefined;
    throw err;
  }
}

function dataOf(object: KubeObject, name: string): Record<string, string> {
  const data = object['data'];
  if (typeof data !== 'object' || data === null) return {};
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    if (typeof value !== 'string') throw new SecretApiWriteFailed(`cannot update ConfigMap ${name}: data.${key} is not a string`);
    out[key] = value;
  }
  return out;
}

function sameValues(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}
