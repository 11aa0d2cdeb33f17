/** Which tokens findAccount refuses for want of `sid` (src/idp/cli-sid.ts): the CLI's refresh tokens only. */
import { expect } from 'chai';
import { isSidlessCliRefresh } from '../../src/idp/cli-sid.js';

describe('idp/cli-sid', function () {
  it('refuses a svc-cli refresh token without a sid, and nothing else', function () {
    expect(isSidlessCliRefresh({ kind: 'RefreshToken', clientId: 'svc-cli' })).to.equal(true);
    expect(isSidlessCliRefresh({ kind: 'RefreshToken', clientId: 'svc-cli', sid: '' })).to.equal(true);
    expect(isSidlessCliRefresh({ kind: 'RefreshToken', clientId: 'svc-cli', sid: 's1' })).to.equal(false);
    expect(isSidlessCliRefresh({ kind: 'RefreshToken', clientId: 'wiki' })).to.equal(false);
    expect(isSidlessCliRefresh({ kind: 'AuthorizationCode', clientId: 'svc-cli' })).to.equal(false);
    expect(isSidlessCliRefresh(undefined)).to.equal(false);
  });
});
