/** A test CA with a server certificate for 127.0.0.1 and a client certificate (CN = the user name), for the stand-in API server. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeconfigText } from './kubeconfig.js';

export interface KubeTls {
  readonly caPem: string;
  readonly certPem: string;
  readonly keyPem: string;
  readonly client: { readonly certPem: string; readonly keyPem: string };
}

export function makeKubeTls(clientName: string): KubeTls {
  const dir = mkdtempSync(join(tmpdir(), 'svc-kube-tls-'));
  const run = (...args: string[]): void => void execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const read = (file: string): string => readFileSync(join(dir, file), 'utf8');
  try {
    run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=kube test CA');
    const issue = (name: string, subject: string, ext: string): void => {
      run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
      writeFileSync(join(dir, `${name}.cnf`), ext);
      run('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.cnf`);
    };
    issue('server', '/CN=127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
    issue('client', `/CN=${clientName}/O=svc`, 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
    return { caPem: read('ca.pem'), certPem: read('server.pem'), keyPem: read('server.key'), client: { certPem: read('client.pem'), keyPem: read('client.key') } };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A kubeconfig that logs in with a client certificate only (no token). */
export function clientCertKubeconfig(server: string, tls: KubeTls, namespace: string): string {
  const b64 = (text: string): string => Buffer.from(text).toString('base64');
  return kubeconfigText(server, tls.caPem, { name: 'cert-user', user: { 'client-certificate-data': b64(tls.client.certPem), 'client-key-data': b64(tls.client.keyPem) } }, namespace);
}
