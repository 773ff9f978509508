// A CPU profile of the running API on request, for measuring what the acknowledgement costs under load: with
// API_CPU_PROFILE_DIR set, SIGUSR2 starts V8's sampling profiler and the next SIGUSR2 writes what it sampled to
// <dir>/api-<pid>-<n>.cpuprofile (read it with `npm run profile`). Off by default; a profile names functions and
// source lines only, never data.
import { Session } from 'node:inspector/promises';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

export interface ProfileLog {
  info(meta: object, msg: string): void;
  warn(meta: object, msg: string): void;
}

/** Starts and stops a profile at each SIGUSR2; answers a function that removes the handler. */
export function profileOnSignal(dir: string, log: ProfileLog): () => void {
  let session: Session | undefined;
  let n = 0;
  let last: Promise<void> = Promise.resolve();
  const toggle = async () => {
    if (!session) {
      const s = new Session();
      s.connect();
      await s.post('Profiler.enable');
      await s.post('Profiler.start');
      session = s;
      log.info({}, 'CPU profile started (SIGUSR2 again writes it)');
      return;
    }
    const s = session;
    session = undefined;
    const { profile } = await s.post('Profiler.stop');
    s.disconnect();
    const file = path.join(dir, `api-${process.pid}-${++n}.cpuprofile`);
    await writeFile(file, JSON.stringify(profile), { mode: 0o600 });
    log.info({ file }, 'CPU profile written');
  };
  const onSignal = () => {
    last = last.then(toggle).catch((err: unknown) => log.warn({ err }, 'the CPU profile could not be taken'));
  };
  process.on('SIGUSR2', onSignal);
  return () => process.off('SIGUSR2', onSignal);
}
