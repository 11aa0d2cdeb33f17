import { expect } from 'chai';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { emptyConfig, withLogin, writeConfig } from '../../src/cli/config-file.js';
import { CliContext, normalizeServer, type GlobalOptions } from '../../src/cli/context.js';
import { CliError } from '../../src/cli/errors.js';
import { parseExpiresIn } from '../../src/cli/commands/account.js';
import { fakeIo } from './fake-io.js';

describe('cli/context', () => {
  it('normalises server addresses: https by default, http with --plaintext, no trailing slash', () => {
    expect(normalizeServer('svc.example.com:8443', false)).to.equal('https://svc.example.com:8443');
    expect(normalizeServer('127.0.0.1:8080', true)).to.equal('http://127.0.0.1:8080');
    expect(normalizeServer('http://127.0.0.1:8080/', false)).to.equal('http://127.0.0.1:8080');
    expect(normalizeServer('HTTPS://Svc.Example.com/base/', false)).to.equal('https://svc.example.com/base');
    expect(() => normalizeServer('https://u:p@x', false)).to.throw(CliError, 'the server address must not contain a user name or password');
    expect(() => normalizeServer('http://', false)).to.throw(CliError, "'http://' is not a server address (want host:port or http(s)://host:port)");
  });

  it('takes the insecure switch from the flag or from the server saved at login', async () => {
    const home = await mkdtemp(path.join(tmpdir(), 'svc-cli-ctx-'));
    try {
      const file = path.join(home, '.config', 'svc', 'config');
      await writeConfig(file, withLogin(emptyConfig(), { server: 'https://a:1', insecure: true, token: 'T' }));
      let options: GlobalOptions = {};
      const ctx = new CliContext(fakeIo({ HOME: home }).io, () => options);
      expect(await ctx.target()).to.deep.equal({ server: 'https://a:1', insecure: true, token: 'T', tokenSource: 'config' });
      options = { server: 'https://b:2' };
      expect(await ctx.target()).to.deep.equal({ server: 'https://b:2', insecure: false });
      options = { server: 'https://b:2', insecure: true, authToken: 'F' };
      expect(await ctx.target()).to.deep.equal({ server: 'https://b:2', insecure: true, token: 'F', tokenSource: 'flag' });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe('cli/commands/account: --expires-in', () => {
  it('reads 0, whole seconds and s/m/h/d durations as seconds', () => {
    expect(parseExpiresIn('0')).to.equal(0);
    expect(parseExpiresIn('3600')).to.equal(3600);
    expect(parseExpiresIn('90m')).to.equal(5400);
    expect(parseExpiresIn('1d12h')).to.equal(129_600);
    expect(parseExpiresIn(' 24h ')).to.equal(86_400);
  });

  it('rejects anything else with an example', () => {
    for (const bad of ['-1h', '1.5h', '1w', '', 'h']) {
      expect(() => parseExpiresIn(bad), bad).to.throw(CliError, `--expires-in: '${bad}' is not a duration (for example 30m, 24h, 7d, or 0 for no expiry)`);
    }
  });
});
