// The journey workflows as one pre-built bundle, so a worker in production does not run webpack at every start:
//   node dist/workflow-bundle.js <out.js>     (the image does this at build time; WORKFLOW_BUNDLE_PATH names it)
//   npm run build:workflows                   (the same from the sources, into dist/workflows.bundle.js)
// The bundle carries the tracing interceptors' workflow side, which a bundle cannot get later; without tracing the
// worker gives their span sink a no-op.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_TRACING_MODULE } from './observability/tracing';

/** Bundles the workflows at `workflowsPath` (these sources' by default) into `outFile`. */
export async function buildWorkflowBundle(
  outFile: string,
  workflowsPath: string = require.resolve('./workflows'),
): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [WORKFLOW_TRACING_MODULE],
  });
  mkdirSync(path.dirname(outFile), { recursive: true });
  writeFileSync(outFile, code);
  return { bytes: Buffer.byteLength(code), ms: performance.now() - t0 };
}

/** The bundle's code, checked to be one (a worker given a wrong path says so at start, not at the first task). */
export function readWorkflowBundle(file: string): string {
  if (!existsSync(file)) throw new Error(`WORKFLOW_BUNDLE_PATH: no file at ${file} (npm run build:workflows)`);
  const code = readFileSync(file, 'utf8');
  if (!code.includes('patientJourney')) {
    throw new Error(`WORKFLOW_BUNDLE_PATH: ${file} is not a bundle of the journey workflows`);
  }
  return code;
}

if (require.main === module) {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist', 'workflows.bundle.js'));
  buildWorkflowBundle(out).then(
    ({ bytes, ms }) => console.log(`workflow bundle: ${out} (${(bytes / 1024).toFixed(0)} KiB in ${ms.toFixed(0)} ms)`),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
