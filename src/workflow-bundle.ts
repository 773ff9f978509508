// The journey workflows as pre-built bundles, so a worker in production does not run webpack at every start:
//   node dist/workflow-bundle.js <out.js>     (the image does this at build time; WORKFLOW_BUNDLE_PATH names it)
//   npm run build:workflows                   (the same from the sources, into dist/workflows.bundle.js)
// Two bundles are written: `<out>.js` without tracing, and its twin `<out>.traced.js` with the tracing interceptors'
// workflow side, which a bundle cannot get later. A worker takes the one that matches its tracing: interceptors that
// run in every workflow with their spans going nowhere cost a cached journey about twice the memory, and CPU.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_TRACING_MODULE } from './observability/tracing';

/** A class only the tracing interceptors' workflow side defines: it tells a traced bundle from an untraced one. */
const TRACING_MARK = 'OpenTelemetryInternalsInterceptor';

export interface BundleOptions {
  /** With the tracing interceptors' workflow side (default: without). */
  tracing?: boolean;
  /** The workflows to bundle: these sources' by default. */
  workflowsPath?: string;
}

/** Bundles the journey workflows into `outFile`. */
export async function buildWorkflowBundle(
  outFile: string,
  options: BundleOptions = {},
): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  const { code } = await bundleWorkflowCode({
    workflowsPath: options.workflowsPath ?? require.resolve('./workflows'),
    ...(options.tracing ? { workflowInterceptorModules: [WORKFLOW_TRACING_MODULE] } : {}),
  });
  mkdirSync(path.dirname(outFile), { recursive: true });
  writeFileSync(outFile, code);
  return { bytes: Buffer.byteLength(code), ms: performance.now() - t0 };
}

/** Where the traced twin of a bundle lies: `workflows.bundle.js` → `workflows.bundle.traced.js`. */
export function tracedTwin(file: string): string {
  return `${file.replace(/\.js$/, '')}.traced.js`;
}

/** Both bundles: `outFile` without tracing, its twin with it. */
export async function buildWorkflowBundles(outFile: string, options: Omit<BundleOptions, 'tracing'> = {}) {
  const plain = await buildWorkflowBundle(outFile, options);
  const traced = await buildWorkflowBundle(tracedTwin(outFile), { ...options, tracing: true });
  return { plain, traced };
}

/** Whether a bundle carries the tracing interceptors. */
export function bundleTraces(code: string): boolean {
  return code.includes(TRACING_MARK);
}

/** The bundle's code, checked to be one (a worker given a wrong path says so at start, not at the first task). */
function readWorkflowBundle(file: string): string {
  if (!existsSync(file)) throw new Error(`WORKFLOW_BUNDLE_PATH: no file at ${file} (npm run build:workflows)`);
  const code = readFileSync(file, 'utf8');
  if (!code.includes('patientJourney')) {
    throw new Error(`WORKFLOW_BUNDLE_PATH: ${file} is not a bundle of the journey workflows`);
  }
  return code;
}

/**
 * The bundle a worker loads: with tracing off, `file` (a bundle built with tracing also runs, its spans going
 * nowhere: `traced` says so); with tracing on, its traced twin, or `file` itself when that one traces (a bundle built
 * by an earlier release). A tracing worker never runs a bundle that cannot trace its workflows.
 */
export function workflowBundleFor(file: string, tracing: boolean): { file: string; code: string; traced: boolean } {
  if (!tracing) {
    const code = readWorkflowBundle(file);
    return { file, code, traced: bundleTraces(code) };
  }
  const twin = tracedTwin(file);
  const chosen = existsSync(twin) ? twin : file;
  const code = readWorkflowBundle(chosen);
  if (!bundleTraces(code)) {
    throw new Error(
      `WORKFLOW_BUNDLE_PATH: tracing is on, but ${chosen} was bundled without the tracing interceptors and no ` +
        `traced twin lies at ${twin} (npm run build:workflows writes both)`,
    );
  }
  return { file: chosen, code, traced: true };
}

if (require.main === module) {
  const out = path.resolve(process.argv[2] ?? path.join(__dirname, '..', 'dist', 'workflows.bundle.js'));
  const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
  buildWorkflowBundles(out).then(
    ({ plain, traced }) => {
      console.log(`workflow bundle: ${out} (${kib(plain.bytes)} in ${plain.ms.toFixed(0)} ms)`);
      console.log(`with tracing:    ${tracedTwin(out)} (${kib(traced.bytes)} in ${traced.ms.toFixed(0)} ms)`);
    },
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
