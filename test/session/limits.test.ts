import { expect } from 'chai';
import { readLoginLimits } from '../../src/session/limits.js';

describe('login limits from the environment', function () {
  function read(env: Record<string, string>) {
    const warnings: string[] = [];
    const limits = readLoginLimits(env, { warn: (_o, msg) => void warnings.push(msg) });
    return { limits, warnings };
  }

  it('has the SPEC defaults', function () {
    expect(read({}).limits).to.deep.equal({ maxFailCount: 5, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 });
  });

  it('reads every variable', function () {
    const { limits, warnings } = read({
      SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '7',
      SVC_SESSION_FAILURE_WINDOW_SECONDS: '60',
      SVC_SESSION_MAX_CACHE_SIZE: '10',
      SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT: '0',
    });
    expect(limits).to.deep.equal({ maxFailCount: 7, windowSeconds: 60, maxCacheSize: 10, maxConcurrentLogins: 0 });
    expect(warnings).to.deep.equal([]);
  });

  it('a window of 0 means 10 consecutive failures', function () {
    expect(read({ SVC_SESSION_FAILURE_WINDOW_SECONDS: '0', SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '3' }).limits.maxFailCount).to.equal(10);
  });

  it('falls back to the default with a warning on an unparsable or out-of-range value', function () {
    const { limits, warnings } = read({ SVC_SESSION_FAILURE_MAX_FAIL_COUNT: 'five', SVC_SESSION_MAX_CACHE_SIZE: '0', SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT: '-1' });
    expect(limits).to.deep.equal({ maxFailCount: 5, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 });
    expect(warnings).to.deep.equal([
      "SVC_SESSION_FAILURE_MAX_FAIL_COUNT='five' is not an integer >= 1; using 5",
      "SVC_SESSION_MAX_CACHE_SIZE='0' is not an integer >= 1; using 1000",
      "SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT='-1' is not an integer >= 0; using 50",
    ]);
  });
});
