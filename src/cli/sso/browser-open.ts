/**
 * Opens a URL in the user's browser, best effort: `open` on macOS, `cmd /c start` on Windows,
 * `xdg-open` elsewhere. A missing opener never fails the login; the URL is printed anyway.
 * `SVC_NO_BROWSER_OPEN=1` turns it off (headless machines, tests).
 */
import { spawn } from 'node:child_process';

export type BrowserOpener = (url: string) => void;

/** undefined when SVC_NO_BROWSER_OPEN is set: the URL is only printed. */
export function browserOpener(env: Readonly<Record<string, string | undefined>>, platform = process.platform): BrowserOpener | undefined {
  if ((env['SVC_NO_BROWSER_OPEN'] ?? '') !== '') return undefined;
  return (url) => {
    const [command, args] = openCommand(platform, url);
    try {
      const child = spawn(command, args, { stdio: 'ignore', detached: true });
      child.on('error', () => undefined);
      child.unref();
    } catch {
      // Best effort: the URL is on stderr.
    }
  };
}

function openCommand(platform: NodeJS.Platform, url: string): [string, string[]] {
  if (platform === 'darwin') return ['open', [url]];
  // The empty title keeps `start` from taking a quoted URL as the window title.
  if (platform === 'win32') return ['cmd', ['/c', 'start', '""', url.replace(/&/g, '^&')]];
  return ['xdg-open', [url]];
}
