/**
 * The configuration edits of the load: a rights line for bob on a second extension, switched
 * on and off in svc-rbac-cm as an operator edits the file. An edit counts as done when every
 * process answers can-i accordingly (within 10 s). Edits and the "config garbage" fault write the
 * same file, so they take turns.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { PASSWORDS, type Rig } from './rig.js';

const LINE = 'p, bob, extensions, *, */soak2, allow';

export interface PolicyEdits {
  step(): Promise<string>;
  exclusive<T>(run: () => Promise<T>): Promise<T>;
}

export function editPolicy(rig: Rig): PolicyEdits {
  let turn: Promise<unknown> = Promise.resolve();
  let on = false;
  const exclusive = <T>(run: () => Promise<T>): Promise<T> => {
    const result = turn.then(run, run);
    turn = result.catch(() => undefined);
    return result;
  };
  const canI = async (base: string): Promise<string> => {
    const login = await fetch(`${base}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'bob', password: PASSWORDS.bob }) });
    const { token } = (await login.json()) as { token: string };
    const res = await fetch(`${base}/api/v1/account/can-i/extensions/get/${encodeURIComponent('default/soak2')}`, { headers: { authorization: `Bearer ${token}` } });
    return String(((await res.json()) as { value?: string }).value);
  };
  return {
    exclusive,
    step: () =>
      exclusive(async () => {
        const file = join(rig.configDir, 'svc-rbac-cm.yaml');
        const text = readFileSync(file, 'utf8');
        on = !on;
        const next = on ? text.replace(/(policy\.csv: [|>][^\n]*\n)/, `$1    ${LINE}\n`) : text.replace(`    ${LINE}\n`, '');
        if (next === text) throw new Error('the policy edit changed nothing: svc-rbac-cm.yaml is not as the soak wrote it');
        writeFileSync(file, next);
        const want = on ? 'yes' : 'no';
        const deadline = Date.now() + 10_000;
        for (;;) {
          const answers = await Promise.all(rig.all.map((s) => canI(s.url).catch((err: unknown) => String(err))));
          if (answers.every((a) => a === want)) return `applied on every process (${want})`;
          if (Date.now() > deadline) throw new Error(`policy edit not applied within 10 s: ${answers.join(', ')}`);
          await sleep(250);
        }
      }),
  };
}
