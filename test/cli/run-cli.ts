/** The CLI run in-process against a real server, as a user at a shell would run it. */
import { run } from '../../src/cli/program.js';
import { fakeIo } from './fake-io.js';

/** Runs `svc args...` with HOME at `home` (its config file) and the real fetch; its exit code and what it wrote. */
export async function runCli(home: string, args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const io = fakeIo({ HOME: home });
  const code = await run(args, io.io);
  return { code, out: io.stdout(), err: io.stderr() };
}
