// CPU profiles of the bench's API around the phases that measure the acknowledgement (BENCH_API_CPU_PROFILE=1): the
// API runs with API_CPU_PROFILE_DIR, and each measured level or burst is wrapped in two SIGUSR2s; the profile it
// writes is kept as <work folder>/profiles/<name>.cpuprofile for `npm run profile`.
import { existsSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { Ctx } from './context';

export const profilingWanted = () => process.env.BENCH_API_CPU_PROFILE === '1';

/** Where the API writes its profiles (one folder per run). */
export function profileDir(workDir: string): string {
  const dir = path.join(workDir, 'profiles', 'raw');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Runs `fn` with the API's profiler on around it, when profiling is wanted; the profile kept as `name`. */
export async function profiled<T>(ctx: Ctx, name: string, fn: () => Promise<T>): Promise<T> {
  const pid = ctx.stack.api?.pid;
  if (!profilingWanted() || pid === undefined) return fn();
  const raw = profileDir(ctx.workDir);
  const before = new Set(readdirSync(raw));
  process.kill(pid, 'SIGUSR2');
  await new Promise((r) => setTimeout(r, 200)); // the profiler started
  try {
    return await fn();
  } finally {
    process.kill(pid, 'SIGUSR2');
    const deadline = Date.now() + 30_000;
    let written: string | undefined;
    while (!written && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      written = readdirSync(raw).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
    }
    if (written) {
      const kept = path.join(ctx.workDir, 'profiles', `${name}.cpuprofile`);
      renameSync(path.join(raw, written), kept);
      ctx.log(`CPU profile of the API: ${kept}`);
    } else if (existsSync(raw)) ctx.log(`no CPU profile came for ${name}`);
  }
}
