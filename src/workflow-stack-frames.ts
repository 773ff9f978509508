// How many frames a stack in the journeys' workflow code keeps (WORKFLOW_STACK_TRACE_FRAMES).
//
// The Temporal SDK answers the stack-trace query (the Web UI's "Stack Trace" tab) from a promise hook it installs in
// every workflow thread: for each promise the workflow code makes, it creates an Error, formats its stack and maps
// every frame through the bundle's source map. A journey makes about 80 promises, most of them the SDK's own (a wait
// with a deadline is about 15), so that hook was the worker's largest cost per journey after the server's: with V8's
// default of 10 frames, about a third of the workflow thread's CPU (docs/cpu-profiles.md). The SDK has no option to
// leave the hook out, and it freezes the workflow context's globals before a journey runs, so `Error.stackTraceLimit`
// cannot be lowered from inside; V8 gives each new context the process's --stack-trace-limit instead.
//
// With 4 frames the view still names the journey's line each wait is on and what called it (`follow` at its deadline
// wait, `proveOwnership` at its condition); what it leaves out is the SDK's own frames between them. 0 empties the
// view (each stack is just "Error") and costs least; 10 is V8's default and the SDK's full view.
import v8 from 'node:v8';
import vm from 'node:vm';

export const DEFAULT_WORKFLOW_STACK_FRAMES = 4;
export const MAX_WORKFLOW_STACK_FRAMES = 100;

/** The frames a V8 context made now would keep (the process's --stack-trace-limit). */
export function newContextStackFrames(): number {
  return vm.runInNewContext('Error.stackTraceLimit') as number;
}

/**
 * Runs `create`, which starts the worker's workflow threads and their contexts, with every context made meanwhile
 * keeping `frames` stack frames. The process's own context keeps what it had; contexts made after `create` settles
 * get the previous limit back. A worker reusing one V8 context per thread (the SDK's default) makes all of its
 * contexts within `create`.
 */
export async function withWorkflowStackFrames<T>(frames: number, create: () => Promise<T>): Promise<T> {
  if (!Number.isInteger(frames) || frames < 0 || frames > MAX_WORKFLOW_STACK_FRAMES) {
    throw new RangeError(`WORKFLOW_STACK_TRACE_FRAMES: a whole number from 0 to ${MAX_WORKFLOW_STACK_FRAMES}`);
  }
  const before = newContextStackFrames();
  v8.setFlagsFromString(`--stack-trace-limit=${frames}`);
  try {
    return await create();
  } finally {
    v8.setFlagsFromString(`--stack-trace-limit=${before}`);
  }
}
