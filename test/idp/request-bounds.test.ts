/** The settings of the bound on pending logins (src/idp/request-bounds.ts readPendingLimits). */
import { expect } from 'chai';
import { DEFAULT_PENDING_BYTES, DEFAULT_PENDING_BYTES_PER_SOURCE, readPendingLimits } from '../../src/idp/request-bounds.js';

describe('idp: the settings of the bound on pending logins', function () {
  const logged = () => {
    const lines: string[] = [];
    return { lines, log: { warn: (_obj: object, msg: string) => { lines.push(msg); } } };
  };

  it('defaults to 32 MiB in all and 2 MiB per source, and takes the operator\'s values', function () {
    const { lines, log } = logged();
    expect(readPendingLimits({}, log)).to.deep.equal({ totalBytes: DEFAULT_PENDING_BYTES, perSourceBytes: DEFAULT_PENDING_BYTES_PER_SOURCE });
    expect(DEFAULT_PENDING_BYTES).to.equal(32 * 1024 * 1024);
    expect(readPendingLimits({ SVC_IDP_PENDING_BYTES: '8388608', SVC_IDP_PENDING_BYTES_PER_SOURCE: '65536' }, log)).to.deep.equal({ totalBytes: 8388608, perSourceBytes: 65536 });
    expect(lines).to.deep.equal([]);
  });

  it('names the variable and the value it does not take, and keeps the default', function () {
    const { lines, log } = logged();
    expect(readPendingLimits({ SVC_IDP_PENDING_BYTES: '32M', SVC_IDP_PENDING_BYTES_PER_SOURCE: '100' }, log)).to.deep.equal({ totalBytes: DEFAULT_PENDING_BYTES, perSourceBytes: DEFAULT_PENDING_BYTES_PER_SOURCE });
    expect(lines).to.deep.equal([
      `SVC_IDP_PENDING_BYTES='32M' is not an integer >= 65536; using ${DEFAULT_PENDING_BYTES}`,
      `SVC_IDP_PENDING_BYTES_PER_SOURCE='100' is not an integer >= 16384; using ${DEFAULT_PENDING_BYTES_PER_SOURCE}`,
    ]);
  });

  it('says when one source may hold the whole bound', function () {
    const { lines, log } = logged();
    readPendingLimits({ SVC_IDP_PENDING_BYTES: '1048576', SVC_IDP_PENDING_BYTES_PER_SOURCE: '2097152' }, log);
    expect(lines).to.deep.equal(['SVC_IDP_PENDING_BYTES_PER_SOURCE=2097152 is above SVC_IDP_PENDING_BYTES=1048576; one source may hold the whole bound']);
  });
});
