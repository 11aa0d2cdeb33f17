/** `svc-server validate --config DIR` (or `--kube`): every problem of every store, one line each; exit 0 or 1. */
import type { Writable } from 'node:stream';
import { pino } from 'pino';
import { openKubeClient } from '../config/kube/kube-client.js';
import { openKubeStore } from '../config/kube/kube-store.js';
import type { ClusterStoreOptions } from '../config/kube/open.js';
import { formatProblem } from '../config/problems.js';
import { parseSettings } from '../main/settings.js';
import { describeSsoInForce } from '../oidc/in-force.js';
import { loadProblemsAndSettings, notADirectory } from './load-config.js';

export async function runValidate(dir: string, out: Writable, err: Writable): Promise<number> {
  const notDir = notADirectory(dir);
  if (notDir !== undefined) {
    err.write(`${notDir}\n`);
    return 1;
  }
  const { settings, problems, warnings } = await loadProblemsAndSettings(dir);
  out.write(`${describeSsoInForce(settings)}\n`);
  // The server logs the same text after "configuration warning: "; warnings do not fail validation.
  for (const warning of warnings) err.write(`warning: ${formatProblem(warning)}\n`);
  if (problems.length === 0) {
    out.write(`${dir}: configuration is valid\n`);
    return 0;
  }
  for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
  err.write(`${problems.length} problem${problems.length === 1 ? '' : 's'} found\n`);
  return 1;
}


/** `svc-server validate --kube`: the objects in the cluster, read once (LIST), through the same checks. */
export async function runValidateCluster(options: ClusterStoreOptions, out: Writable, err: Writable): Promise<number> {
  let store;
  try {
    store = await openKubeStore({ client: await openKubeClient(options), log: pino({ level: 'silent' }), backoff: { initialMs: 200, maxMs: 1000 }, startTimeoutMs: 15_000,
      ...(options.applicationNamespaces !== undefined ? { applicationNamespaces: options.applicationNamespaces } : {}),
    });
  } catch (error: unknown) {
    err.write(`${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  }
  try {
    const { settings, problems: settingProblems, warnings = [] } = parseSettings(store.current());
    const problems = [...store.problems(), ...settingProblems];
    out.write(`${describeSsoInForce(settings)}\n`);
    for (const warning of warnings) err.write(`warning: ${formatProblem(warning)}\n`);
    if (problems.length === 0) {
      out.write(`namespace ${store.namespace}: configuration is valid\n`);
      return 0;
    }
    for (const problem of problems) err.write(`${formatProblem(problem)}\n`);
    err.write(`${problems.length} problem${problems.length === 1 ? '' : 's'} found\n`);
    return 1;
  } finally {
    await store.close();
  }
}
