import { expect } from 'chai';
import YAML from 'yaml';
import type { Account } from '../../src/cli/api-client.js';
import { CliError } from '../../src/cli/errors.js';
import { formatTime, parseOutputFormat, renderAccount, renderAccountList, renderTable } from '../../src/cli/output.js';

const accounts: Account[] = [
  { name: 'admin', enabled: true, capabilities: ['login'], tokens: [] },
  {
    name: 'alice',
    enabled: false,
    capabilities: ['apiKey', 'login'],
    tokens: [
      { id: 'ci', issuedAt: 1_700_000_000, expiresAt: 1_700_086_400 },
      { id: 'forever', issuedAt: 1_700_000_100 },
    ],
  },
];

describe('cli/output', () => {
  it('accepts json, yaml and wide, defaults to a table and names the choices otherwise', () => {
    expect(parseOutputFormat(undefined)).to.equal('table');
    expect(parseOutputFormat('json')).to.equal('json');
    expect(parseOutputFormat('yaml')).to.equal('yaml');
    expect(parseOutputFormat('wide')).to.equal('wide');
    expect(() => parseOutputFormat('xml')).to.throw(CliError, "unknown output format 'xml' (want json, yaml or wide)");
  });

  it('aligns table columns by the widest cell with no trailing blanks', () => {
    expect(renderTable(['A', 'LONG HEADER'], [['xxxx', 'y'], ['z', '']])).to.equal(
      'A      LONG HEADER\nxxxx   y\nz\n',
    );
  });

  it('lists accounts as a table by default', () => {
    expect(renderAccountList('table', accounts)).to.equal(
      'NAME    ENABLED   CAPABILITIES\n' +
        'admin   true      login\n' +
        'alice   false     apiKey, login\n',
    );
  });

  it('adds token count and the next expiry in wide output', () => {
    expect(renderAccountList('wide', accounts)).to.equal(
      'NAME    ENABLED   CAPABILITIES    TOKENS   NEXT EXPIRY\n' +
        'admin   true      login           0        -\n' +
        'alice   false     apiKey, login   2        2023-11-15T22:13:20Z\n',
    );
  });

  it('prints listings as JSON and YAML that parse back to the data', () => {
    expect(JSON.parse(renderAccountList('json', accounts))).to.deep.equal({ items: accounts });
    expect(YAML.parse(renderAccountList('yaml', accounts))).to.deep.equal({ items: accounts });
  });

  it('shows one account with its tokens, or NONE', () => {
    expect(renderAccount('table', accounts[0]!)).to.equal(
      'Name:           admin\nEnabled:        true\nCapabilities:   login\n\nTokens:\nNONE\n',
    );
    expect(renderAccount('table', accounts[1]!)).to.equal(
      'Name:           alice\nEnabled:        false\nCapabilities:   apiKey, login\n\nTokens:\n' +
        'ID        ISSUED AT              EXPIRING AT\n' +
        'ci        2023-11-14T22:13:20Z   2023-11-15T22:13:20Z\n' +
        'forever   2023-11-14T22:15:00Z   never\n',
    );
    expect(JSON.parse(renderAccount('json', accounts[1]!))).to.deep.equal(accounts[1]);
  });

  it('formats epoch seconds and ISO strings alike; none means never', () => {
    expect(formatTime(1_700_000_000)).to.equal('2023-11-14T22:13:20Z');
    expect(formatTime('2023-11-14T22:13:20.000Z')).to.equal('2023-11-14T22:13:20Z');
    expect(formatTime(undefined)).to.equal('never');
    expect(formatTime(null)).to.equal('never');
  });
});
