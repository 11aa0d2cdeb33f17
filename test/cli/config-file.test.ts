import { expect } from 'chai';
import { mkdtemp, readdir, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  configPath,
  currentLogin,
  emptyConfig,
  loginFor,
  parseConfig,
  readConfig,
  updateConfig,
  withLogin,
  withoutToken,
  withTokens,
  writeConfig,
} from '../../src/cli/config-file.js';
import { CliError } from '../../src/cli/errors.js';

describe('cli/config-file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-cli-config-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('lives in $HOME/.config/svc/config unless --config says otherwise', () => {
    expect(configPath({ HOME: '/home/ann' })).to.equal('/home/ann/.config/svc/config');
    expect(configPath({ HOME: '/home/ann' }, 'rel/cfg')).to.equal(path.resolve('rel/cfg'));
    expect(() => configPath({})).to.throw(CliError, 'HOME is not set; pass --config <path>');
  });

  it('is written with mode 0600 in a new 0700 directory', async () => {
    const file = path.join(dir, 'home', '.config', 'svc', 'config');
    await writeConfig(file, withLogin(emptyConfig(), { server: 'https://a:1', insecure: false, token: 't1' }));
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
    expect((await stat(path.dirname(file))).mode & 0o777).to.equal(0o700);
  });

  it('tightens an existing looser file to 0600 on write', async () => {
    const file = path.join(dir, 'config');
    await writeFile(file, '{}', { mode: 0o644 });
    await writeConfig(file, emptyConfig());
    expect((await stat(file)).mode & 0o777).to.equal(0o600);
  });

  it('writes atomically: no temp file is left and a reader sees the old or the new file', async () => {
    const file = path.join(dir, 'config');
    await writeConfig(file, withLogin(emptyConfig(), { server: 'https://a:1', insecure: false, token: 'old' }));
    const writes = Array.from({ length: 20 }, (_, i) =>
      updateConfig(file, (c) => withLogin(c, { server: `https://s${i}:1`, insecure: false, token: `t${i}` })),
    );
    const reads = Array.from({ length: 20 }, () => readConfig(file));
    await Promise.all([...writes, ...reads]); // a half-written file would make readConfig throw
    expect((await readdir(dir)).sort()).to.deep.equal(['config']);
    const final = await readConfig(file);
    // The lock serialises read-modify-write: no update is lost.
    expect(final.contexts).to.have.length(21);
  });

  it('records a login as the current context with server, token and insecure switch', () => {
    const config = withLogin(emptyConfig(), { server: 'https://a:1', insecure: true, token: 'tok' });
    expect(config).to.deep.equal({
      'current-context': 'https://a:1',
      contexts: [{ name: 'https://a:1', server: 'https://a:1', user: 'https://a:1' }],
      servers: [{ server: 'https://a:1', insecure: true }],
      users: [{ name: 'https://a:1', 'auth-token': 'tok' }],
    });
    expect(currentLogin(config)).to.deep.equal({ server: 'https://a:1', insecure: true, token: 'tok' });
  });

  it('keeps other contexts, switches the current one and replaces a token on re-login', () => {
    let config = withLogin(emptyConfig(), { server: 'https://a:1', insecure: true, token: 'a1' });
    config = withLogin(config, { server: 'https://b:2', insecure: false, token: 'b1' });
    config = withLogin(config, { server: 'https://a:1', insecure: false, token: 'a2' });
    expect(config['current-context']).to.equal('https://a:1');
    expect(config.contexts.map((c) => c.name)).to.deep.equal(['https://a:1', 'https://b:2']);
    expect(loginFor(config, 'https://a:1')).to.deep.equal({ server: 'https://a:1', insecure: false, token: 'a2' });
    expect(loginFor(config, 'https://b:2')).to.deep.equal({ server: 'https://b:2', insecure: false, token: 'b1' });
  });

  it('forgets only the token of one server on logout', () => {
    let config = withLogin(emptyConfig(), { server: 'https://a:1', insecure: false, token: 'a1' });
    config = withLogin(config, { server: 'https://b:2', insecure: false, token: 'b1' });
    config = withoutToken(config, 'https://a:1');
    expect(loginFor(config, 'https://a:1')).to.deep.equal({ server: 'https://a:1', insecure: false });
    expect(loginFor(config, 'https://b:2').token).to.equal('b1');
    expect(config.contexts).to.have.length(2);
  });

  it('keeps an SSO refresh token, replaces both tokens on renewal, and drops it on a password login or logout', () => {
    let config = withLogin(emptyConfig(), { server: 'https://a:1', insecure: false, token: 'id1', refreshToken: 'r1' });
    config = withLogin(config, { server: 'https://b:2', insecure: false, token: 'b1' });
    config = withTokens(config, 'https://a:1', 'id2', 'r2');
    expect(config['current-context']).to.equal('https://b:2');
    expect(loginFor(config, 'https://a:1')).to.deep.equal({ server: 'https://a:1', insecure: false, token: 'id2', refreshToken: 'r2' });
    expect(loginFor(withoutToken(config, 'https://a:1'), 'https://a:1')).to.deep.equal({ server: 'https://a:1', insecure: false });
    const password = withLogin(config, { server: 'https://a:1', insecure: false, token: 'session' });
    expect(loginFor(password, 'https://a:1')).to.deep.equal({ server: 'https://a:1', insecure: false, token: 'session' });
  });

  it('reads JSON as well as YAML and keeps keys it does not know', async () => {
    const file = path.join(dir, 'config');
    await writeFile(file, JSON.stringify({
      'current-context': 'https://a:1',
      contexts: [{ name: 'https://a:1', server: 'https://a:1', user: 'https://a:1', namespace: 'x' }],
      users: [{ name: 'https://a:1', 'auth-token': 'tok' }],
      prompts: { color: false },
    }));
    expect(currentLogin(await readConfig(file))?.token).to.equal('tok');
    await updateConfig(file, (c) => withoutToken(c, 'https://a:1'));
    const text = await readFile(file, 'utf8');
    expect(text).to.include('namespace: x').and.include('color: false').and.not.include('tok');
  });

  it('treats a missing file as empty and names the file and key of a broken one', async () => {
    expect(await readConfig(path.join(dir, 'none'))).to.deep.equal(emptyConfig());
    expect(() => parseConfig('contexts: [{name: 1}]', '/c')).to.throw(CliError, /^\/c: contexts\.0\.name: 1 must be a string, not a number$/);
    expect(() => parseConfig('a: [', '/c')).to.throw(CliError, /^\/c: not valid YAML or JSON: /);
    // A token's value is never quoted, nor zod's wording shown.
    expect(() => parseConfig('users: [{name: u, auth-token: 12345}]', '/c')).to.throw(CliError, /^\/c: users\.0\.auth-token: must be a string, not a number$/);
  });

  it('leaves an existing directory mode alone', async () => {
    const own = path.join(dir, 'mine');
    await mkdir(own, { mode: 0o755 });
    await writeConfig(path.join(own, 'config'), emptyConfig());
    expect((await stat(own)).mode & 0o777).to.equal(0o755);
  });
});
