/**
 * svc and a Chromium to look at its pages, as the UI tests start them: the pages' scripts
 * compiled and a server on the test's config dir, with the browser launched meanwhile (each
 * takes seconds, and neither needs the other until a page is opened); one close for all three.
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
  const [started, launched] = await Promise.allSettled([startTestServer(dir, options), openChromium()]);
  if (started.status === 'fulfilled') server = started.value;
  if (launched.status === 'fulfilled') chromium = launched.value;
  if (server === undefined || chromium === undefined) {
    await close();
    throw started.status === 'rejected' ? started.reason : launched.status === 'rejected' ? launched.reason : new Error('unreachable');
  }
  return { server, chromium, close };
}
