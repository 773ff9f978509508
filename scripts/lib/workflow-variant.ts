// Another build of the journey workflows: a copy of src/ with a few edits, under .scratch/ (inside the repository, so
// that its imports resolve to the same node_modules). What the replay gate's test and the deploy drill build the next
// versions from, as a developer's change would be.
import { cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface SourceEdit {
  /** Relative to src/. */
  file: string;
  /** Text that must appear exactly once. */
  find: string;
  replace: string;
}

export interface SourceVariant {
  /** The copy's src/. */
  src: string;
  /** Its workflows (what the replayer and bundleWorkflowCode take). */
  workflowsPath: string;
  remove(): void;
}

/** Copies `root`/src into `root`/.scratch/`name`/src and applies the edits; throws naming an edit that does not fit. */
export function sourceVariant(root: string, name: string, edits: readonly SourceEdit[]): SourceVariant {
  const dir = path.join(root, '.scratch', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const src = path.join(dir, 'src');
  cpSync(path.join(root, 'src'), src, { recursive: true });
  for (const edit of edits) {
    const file = path.join(src, edit.file);
    const text = readFileSync(file, 'utf8');
    const at = text.indexOf(edit.find);
    if (at < 0 || text.indexOf(edit.find, at + 1) >= 0) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `src/${edit.file}: the change cannot be applied, its anchor is ${at < 0 ? 'missing' : 'there more than once'}: ${JSON.stringify(edit.find.slice(0, 80))}`,
      );
    }
    writeFileSync(file, text.slice(0, at) + edit.replace + text.slice(at + edit.find.length));
  }
  return {
    src,
    workflowsPath: path.join(src, 'workflows'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const INVITE_START = '  async function invitePatient(): Promise<boolean> {\n';

/** An unguarded breaking change: one more timer before every journey's first step, not behind patched(). */
export const BREAKING_TIMER: SourceEdit = {
  file: 'workflows/journey.ts',
  find: INVITE_START,
  replace: `${INVITE_START}    await sleep(1_000);\n`,
};
