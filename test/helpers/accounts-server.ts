/**
 * svc running on a fresh accounts config dir (accounts-fixture.ts) for the tests of one
 * describe(): the start and stop the HTTP route tests share.
 */
import { rm } from 'node:fs/promises';
import { accountsConfigDir, type FixtureOptions } from './accounts-fixture.js';
import { startTestServer, type TestServer } from './server.js';

export interface AccountsServer {
  /** The config dir, for tests that edit it as an operator would. */
  readonly dir: string;
  readonly server: TestServer;
  /** The server's base URL. */
  readonly base: string;
}

export interface AccountsServerOptions {
  readonly fixture?: FixtureOptions;
  readonly server?: Parameters<typeof startTestServer>[1];
}

/**
 * Makes the dir and starts the server in the calling describe()'s before hook; closes the server,
 * then removes the dir, in its after hook. A hook registered before this call runs before the start.
 */
export function accountsServer(options: AccountsServerOptions = {}): AccountsServer {
  let dir: string | undefined;
  let server: TestServer | undefined;

  before(async function () {
    dir = accountsConfigDir(options.fixture);
    server = await startTestServer(dir, options.server);
  });

  after(async function () {
    await server?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  const started = (): { dir: string; server: TestServer } => {
    if (dir === undefined || server === undefined) throw new Error('the accounts server is not started (use it in a test or a later hook)');
    return { dir, server };
  };

  return {
    get dir() {
      return started().dir;
    },
    get server() {
      return started().server;
    },
    get base() {
      return started().server.url;
    },
  };
}
