/** Headless Debian Chromium for page tests, driven by playwright-core (which downloads no browser). */
import { existsSync } from 'node:fs';

/** SVC_CHROMIUM overrides; Debian's package installs /usr/bin/chromium (scripts/install-test-deps.sh). */
export function chromiumPath(): string {
  const path = process.env['SVC_CHROMIUM'] ?? '/usr/bin/chromium';
  if (!existsSync(path)) throw new Error(`no Chromium at ${path}: run scripts/install-test-deps.sh, or set SVC_CHROMIUM`);
  return path;
}

/**
 * Headless, and quiet on the network: without the background-networking switches Chromium keeps
 * trying to reach Google's hosts, which a closed network refuses many times per start. No
 * sandbox: CI runs the tests as root, where Chromium's sandbox cannot start.
 */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
