/**
 * Refuses to start on a Node.js older than the supported line. Imported first by the two
 * entry points (svc-server, svc), so it runs before any dependency is loaded: on Node 20, which
 * has no security releases any more, undici 8 fails at import with an unrelated TypeError, and an
 * identity service must not run there anyway. `npm start`, `npm test` and `npx svc` run on the
 * Node 24 that package.json pins; whoever runs the files directly brings their own Node 24+
 * (docs/decisions.md, "The runtime").
 */
export const SUPPORTED_MAJOR = 24;

/** Why `version` (as in process.version) cannot run svc, or undefined when it can. */
export function unsupportedRuntime(version: string): string | undefined {
  const major = Number(/^v?(\d+)\./.exec(version)?.[1]);
  if (Number.isInteger(major) && major >= SUPPORTED_MAJOR) return undefined;
  return (
    `svc needs Node.js ${SUPPORTED_MAJOR} or later; this is ${version} (${process.execPath}). ` +
    `Run it through npm (npm start, npx svc), which uses the Node.js ${SUPPORTED_MAJOR} installed in node_modules by npm ci, ` +
    `or install Node.js ${SUPPORTED_MAJOR} and run it with that.`
  );
}

const problem = unsupportedRuntime(process.version);
if (problem !== undefined) {
  process.stderr.write(`${problem}\n`);
  process.exit(1);
}
