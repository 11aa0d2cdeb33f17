/** The API's refusals of a Secret write, as the caller reads them (src/config/kube/secret-api-writer.ts). */
import { expect } from 'chai';
import { KubeApiError } from '../../../src/config/kube/kube-client.js';
import { asApiWriteFailure, SecretApiWriteFailed } from '../../../src/config/kube/secret-api-writer.js';

const forbidden = (verb: string, resource: string) => new KubeApiError(403, 'Forbidden', `cannot ${verb} resource`, verb, resource);

describe('config/kube/secret-api-writer', () => {
  it('names the verb the Role lacks, and for a missing Secret the empty one deploy/ ships', () => {
    const create = asApiWriteFailure('svc-secret', forbidden('create', 'secrets'));
    expect(create).to.be.instanceOf(SecretApiWriteFailed);
    expect((create as Error).message).to.equal(
      'Secret svc-secret could not be written: svc\'s Role lacks "create" on secrets; Secret svc-secret is missing: apply it empty from deploy/base/svc-secret.yaml and svc fills it (the API server said: cannot create resource)',
    );
    const update = asApiWriteFailure('svc-secret', forbidden('update', 'secrets "svc-secret"'));
    expect((update as Error).message).to.equal('Secret svc-secret could not be written: svc\'s Role lacks "update" on secrets "svc-secret" (the API server said: cannot update resource)');
  });
});
