// The build id the stacks give their workers: the commit, and for a working tree with changes under src/ a hash of
// those changes beside it, so a worker running other workflow code is another version of the deployment.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

const git = (root: string, args: string[]) =>
  execFileSync('git', ['-C', root, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });

/** WORKER_BUILD_ID when given; else `<commit>` or `<commit>-<hash of the changes to src/>`; without git, a hash of src/. */
export function stackBuildId(root: string, env: NodeJS.ProcessEnv = process.env): string {
  const given = env.WORKER_BUILD_ID?.trim();
  if (given) return given;
  try {
    const commit = git(root, ['rev-parse', '--short=12', 'HEAD']).trim();
    const changes = git(root, ['status', '--porcelain', '--untracked-files=all', '--', 'src']).trim();
    if (!changes) return commit;
    const hash = createHash('sha256').update(git(root, ['diff', 'HEAD', '--', 'src']));
    for (const line of changes.split('\n').filter((l) => l.startsWith('??'))) {
      const file = line.slice(3);
      hash.update(file).update(readFileSync(path.join(root, file)));
    }
    return `${commit}-${hash.digest('hex').slice(0, 10)}`;
  } catch {
    return `src-${treeHash(path.join(root, 'src'))}`;
  }
}

function treeHash(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const file = path.join(d, name);
      if (statSync(file).isDirectory()) walk(file);
      else hash.update(path.relative(dir, file)).update(readFileSync(file));
    }
  };
  walk(dir);
  return hash.digest('hex').slice(0, 12);
}
