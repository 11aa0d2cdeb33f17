/**
 * The casbin model, shaped like Argo CD's `assets/model.conf`. The glob function in the matcher
 * is ours (./glob.ts), registered on each enforcer with `addFunction`. It cannot be called
 * `globMatch`: casbin 5.51.1's `FunctionMap.addFunction` silently keeps an existing entry, so
 * registering `globMatch` leaves casbin's built-in in place, whose `*` does not cross `/`
 * (`globMatch('x/a', '*')` is false). Hence a name casbin does not define.
 */
import { newModelFromString } from 'casbin';
import type { Model } from 'casbin';

export const GLOB_FUNCTION = 'svcGlobMatch';

export const MODEL_TEXT = `
[request_definition]
r = sub, res, act, obj

[policy_definition]
p = sub, res, act, obj, eft

[role_definition]
g = _, _

[policy_effect]
e = some(where (p.eft == allow)) && !some(where (p.eft == deny))

[matchers]
m = g(r.sub, p.sub) && ${GLOB_FUNCTION}(r.res, p.res) && ${GLOB_FUNCTION}(r.act, p.act) && ${GLOB_FUNCTION}(r.obj, p.obj)
`;

export function newRbacModel(): Model {
  return newModelFromString(MODEL_TEXT);
}
