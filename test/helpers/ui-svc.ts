/**
 * svc and a Chromium to look at its pages, as the UI tests start them: the pages' scripts
 * compiled, a server on the test's config dir, then the browser; one close for all three.
 */
import { rm } from 'node:fs/promises';
import { openChromium, type Chromium } from './chromium.js';
import { startTestServer, type TestServer } from './server.js';

export interface UiSvc {
  readonly server: TestServer;
  readonly chromium: Chromium;
  /** Closes Chromium, then the server (1 s for requests in flight), and removes the config dir. */
  close(): Promise<void>;
}

/** `options` as startTestServer's (a port, a lockout count in `env`). A start that fails undoes what it started. */
export async function startUiSvc(dir: string, options: Parameters<typeof startTestServer>[1] = {}): Promise<UiSvc> {
  let server: TestServer | undefined;
  let chromium: Chromium | undefined;
  async function close(): Promise<void> {
    await chromium?.close();
    await server?.close(1000);
    await rm(dir, { recursive: true, force: true });
  }
  try {
    server = await startTestServer(dir, options);
    chromium = await openChromium();
    return { server, chromium, close };
  } catch (err: unknown) {
    await close();
    throw err;
  }
}
