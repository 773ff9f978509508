// The replay bench's attribution of a workflow promise: the nearest named function of the journey's code on the stack
// made in the SDK's promise hook, past the hook's own frames, the SDK's functions and unnamed ones.
import { promiseSite } from '../../bench/workflow-replay-cost';

const at = (frames: string[]) => ['Error', ...frames.map((f) => `    at ${f}`)].join('\n');

describe('promiseSite', () => {
  it("names the journey's function past the hook, the SDK's frames and unnamed ones", () => {
    const stack = at([
      'init (/w/node_modules/@temporalio/worker/lib/workflow/vm-shared.js:260:70)',
      'new Promise (<anonymous>)',
      '/w/workflow-bundle-abc.js:8924:38',
      'conditionInner (/w/workflow-bundle-abc.js:8933:10)',
      'condition (/w/workflow-bundle-abc.js:8915:25)',
      'Object.follow (/w/workflow-bundle-abc.js:13976:47)',
      'patientJourney (/w/workflow-bundle-abc.js:14146:23)',
    ]);
    expect(promiseSite(stack)).toBe('follow');
  });

  it("says so when only the SDK's frames are on the stack", () => {
    const stack = at([
      'Activator.signalWorkflowNextHandler (/w/workflow-bundle-abc.js:6349:26)',
      '/w/workflow-bundle-abc.js:6392:30',
      'AsyncLocalStorage.run (node:internal/async_local_storage/async_context_frame:65:14)',
    ]);
    expect(promiseSite(stack)).toBe('(the SDK alone)');
  });
});
