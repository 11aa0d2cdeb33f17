/** Which refused keys turn something off, so that /readyz reports them. */
import { expect } from 'chai';
import { refusedDisablingSwitches, refusedSwitchesReason } from '../../src/config/disabling-switches.js';
import type { ConfigProblem } from '../../src/config/problems.js';

const problem = (source: string, path: ConfigProblem['path'], message = 'bad'): ConfigProblem => ({ source, path, message });

describe('disabling switches', () => {
  it('picks admin.enabled, accounts.<name>.enabled and an extension\'s enabled, and nothing else', () => {
    const picked = [
      problem('svc-cm', ['admin.enabled']),
      problem('svc-cm', ['accounts.ci.bot.enabled']),
      problem('svc-cm', ['extension.config', 'extensions', 0, 'enabled']),
    ];
    const others = [
      problem('svc-cm', ['users.session.duration']),
      problem('svc-cm', ['accounts.ci']),
      problem('svc-cm', ['extension.config', 'extensions', 0, 'backend']),
      problem('svc-cm', ['oidc.tls.insecure.skip.verify']),
      problem('svc-secret', ['admin.enabled']),
      problem('config/svc-cm.yaml', []),
    ];
    expect(refusedDisablingSwitches([...others, ...picked])).to.deep.equal(picked);
  });

  it('says nothing when none is refused, and names each refused one', () => {
    expect(refusedSwitchesReason([problem('svc-cm', ['url'])])).to.equal(undefined);
    expect(refusedSwitchesReason([problem('svc-cm', ['admin.enabled'], "must be \"true\" or \"false\", not 'no'")])).to.equal(
      "a switch that turns something off was refused, so more stays on than svc-cm says: svc-cm: admin.enabled: must be \"true\" or \"false\", not 'no'",
    );
  });
});
