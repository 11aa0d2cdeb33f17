/**
 * The casbin model, shaped like Argo CD's `assets/model.conf`. The glob function in the matcher
 * is ours (./glob.ts), registered on each enforcer with `addFunction`. It cannot be called
 * `globMatch`: casbin 5.51.1's `FunctionMap.addFunction` silently keeps an existing entry, so
 * registering `globMatch` leaves casbin's built-in in place, whose `*` does not cross `/`
 * (`globMatch('x/a', '*')` is false). Hence a name casbin does not define.
 *
 * The last clause: an extension request is asked under its HTTP method (methods.ts), and only a
 * line written for `extensions`, or one whose action is `*`, speaks about it. Without it the
 * built-in `role:readonly` line (`*, get, *`) would hand every reader GET on every extension.
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
m = g(r.sub, p.sub) && ${GLOB_FUNCTION}(r.res, p.res) && ${GLOB_FUNCTION}(r.act, p.act) && ${GLOB_FUNCTION}(r.obj, p.obj) && (r.res != "extensions" || p.res == "extensions" || p.act == "*")
`;

export function newRbacModel(): Model {
  return newModelFromString(MODEL_TEXT);
}
