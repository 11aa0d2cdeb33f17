/**
 * Read-modify-write of one Secret through the Kubernetes API with optimistic concurrency
 * ("API Concepts: resource versions"): read it, apply svc's one change to what is stored, and
 * replace it with the resourceVersion that was read. A `409 Conflict` means another writer came
 * first: read again and re-apply the same change to their version, so their keys are never
 * overwritten. A missing Secret is created (labelled part-of svc); `409 AlreadyExists` (a second
 * replica created it meanwhile) is another conflict. A 403 names the verb and the resource the
 * Role lacks. The write either lands whole or not at all: there is no partial Secret.
 */
import { Unavailable } from '../../errors.js';
import { PART_OF_LABEL, PART_OF_VALUE } from '../manifests.js';
import { patchedValues, type SecretPatch } from '../store.js';
import { KubeApiError, type KubeClient } from './kube-client.js';
import type { KubeObject } from './reflector.js';

export class SecretApiWriteFailed extends Unavailable {}

/** Conflicts in a row before giving up: each one means another writer just succeeded. */
const MAX_ATTEMPTS = 8;

export interface ApiWriteResult {
  readonly object: KubeObject | undefined; // undefined: nothing to write
  readonly created: boolean;
}

export async function updateSecretViaApi(client: KubeClient, name: string, mutate: (current: Readonly<Record<string, string>>) => SecretPatch): Promise<ApiWriteResult> {
  try {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const stored = await readSecret(client, name);
      const current = stored === undefined ? {} : decodeData(stored, name);
      const values = patchedValues(current, mutate(current));
      try {
        if (stored === undefined) {
          const body = { apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name, labels: { [PART_OF_LABEL]: PART_OF_VALUE } }, data: encodeData(values) };
          return { object: await client.request('create', 'secrets', undefined, body), created: true };
        }
        if (sameValues(current, values)) return { object: undefined, created: false };
        // The stored object with only `data` replaced: labels, annotations, type stay as the operator set them.
        const body: KubeObject = { ...stored, data: encodeData(values) };
        delete body['stringData'];
        return { object: await client.request('update', 'secrets', name, body), created: false };
      } catch (err: unknown) {
        if (err instanceof KubeApiError && err.code === 409) continue; // Conflict or AlreadyExists: read again
        throw err;
      }
    }
    throw new SecretApiWriteFailed(`Secret ${name} was changed by other writers ${MAX_ATTEMPTS} times in a row while svc wrote it; not written, try again`);
  } catch (err: unknown) {
    throw asApiWriteFailure(name, err);
  }
}

async function readSecret(client: KubeClient, name: string): Promise<KubeObject | undefined> {
  try {
    return await client.request('get', 'secrets', name);
  } catch (err: unknown) {
    if (err instanceof KubeApiError && err.code === 404) return undefined;
    throw err;
  }
}

function decodeData(secret: KubeObject, name: string): Record<string, string> {
  const data = secret['data'];
  const out: Record<string, string> = {};
  if (typeof data !== 'object' || data === null) return out;
  for (const [key, value] of Object.entries(data as Record<string, unknown>)) {
    if (typeof value !== 'string') throw new SecretApiWriteFailed(`cannot update Secret ${name}: data.${key} is not a string`);
    out[key] = Buffer.from(value, 'base64').toString('utf8');
  }
  return out;
}

function encodeData(values: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
}

function sameValues(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

/** The API's refusal as the client should see it: a 503 that says what to fix. */
export function asApiWriteFailure(name: string, err: unknown, kind: 'Secret' | 'ConfigMap' = 'Secret'): unknown {
  if (!(err instanceof KubeApiError)) return err;
  if (err.code === 403) {
    // deploy/'s Role creates no Secret (it could not be limited by name): a missing one is applied, not granted.
    const fix = err.verb === 'create' && kind === 'Secret' ? `; Secret ${name} is missing: apply it empty from deploy/base/${name}.yaml and svc fills it` : '';
    const who = kind === 'Secret' ? "svc's Role lacks" : 'the credentials used lack';
    return new SecretApiWriteFailed(`${kind} ${name} could not be written: ${who} "${err.verb}" on ${err.resource}${fix} (the API server said: ${err.message})`, { cause: err });
  }
  return new SecretApiWriteFailed(`${kind} ${name} could not be written: ${err.code === 0 ? err.message : `the Kubernetes API answered ${err.code} ${err.reason}: ${err.message}`}`, { cause: err });
}
