/** The real kubectl, pointed at a stand-in API server by a kubeconfig in a temp dir (its own HOME: no cache shared between tests). */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FakeKube } from './fake-kube-apiserver.js';

export interface Kubectl {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  run(args: readonly string[], options?: { input?: string; env?: NodeJS.ProcessEnv }): Promise<string>;
  /** `kubectl apply -f -` of a YAML text; validation off: the stand-in serves no OpenAPI schema. */
  apply(yaml: string): Promise<string>;
  /** `kubectl edit` with an "editor" that runs `script` (a sed program) on the file. */
  edit(resource: string, sedScript: string): Promise<string>;
  close(): void;
}

export function kubectlFor(kube: FakeKube, namespace: string): Kubectl {
  const dir = mkdtempSync(join(tmpdir(), 'svc-kubectl-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kube.kubeconfig(namespace), { mode: 0o600 });
  const env = { PATH: process.env['PATH'], HOME: dir, KUBECONFIG: kubeconfig };
  const run = (args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> =>
    new Promise((resolve, reject) => {
      const child = execFile('kubectl', [...args], { env: { ...env, ...options.env }, timeout: 20_000 }, (err, stdout, stderr) => {
        if (err) reject(new Error(`kubectl ${args.join(' ')}: ${stderr || err.message}`));
        else resolve(stdout);
      });
      child.stdin?.end(options.input ?? '');
    });
  return {
    dir,
    env,
    run,
    apply: (yaml) => run(['apply', '--validate=false', '-f', '-'], { input: yaml }),
    edit(resource, sedScript) {
      const editor = join(dir, 'editor.sh');
      writeFileSync(editor, `#!/bin/sh\nexec sed -i -e '${sedScript.replace(/'/g, `'\\''`)}' "$1"\n`, { mode: 0o700 });
      return run(['edit', '--validate=false', resource], { env: { EDITOR: editor, KUBE_EDITOR: editor } });
    },
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}
