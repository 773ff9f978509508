// The CI part of the fault suite (the full run is `npm run test:faults`): journeys of the four scenarios through the
// real clinic API, worker, Temporal dev server and sandbox, all child processes, while the worker is SIGKILLed, the
// dev server and the API are restarted and the sandbox fails, delays, drops invites and duplicates, reorders and
// delays callbacks, each invite's in another of the layouts the service is known to send. Every journey must end right
// (or parked as an ambiguous invite, then decided by an operator), never with two invites, and no callback may be lost,
// refused (400) or dead-lettered for its layout.
import { ALTERNATIVE_LAYOUTS } from '../../src/sandbox/layouts';
import { CI_RUN } from './harness/presets';
import { problemsText, reportTable } from './harness/report';
import { runFaultSuite } from './harness/suite';

const quiet = process.env.FAULTS_VERBOSE ? undefined : () => undefined;

describe('fault suite (CI part)', () => {
  it('every journey ends right under process and service faults; never two invites; no callback lost', async () => {
    const report = await runFaultSuite({ ...CI_RUN, ...(quiet ? { log: quiet } : {}) });
    console.log(`fault suite (CI part)\n\n${reportTable(report)}\n\n${problemsText(report)}`);
    expect(report.problems).toEqual([]);
    // Each fault kind really struck.
    expect(report.processFaults.filter((f) => f.kind === 'worker_sigkill')).toHaveLength(
      CI_RUN.processFaults.workerKills,
    );
    expect(report.processFaults.filter((f) => f.kind === 'temporal_restart')).toHaveLength(
      CI_RUN.processFaults.temporalRestarts,
    );
    // The planned restarts, and one more in the middle of the Temporal outage (callbacks in the inbox).
    expect(report.processFaults.filter((f) => f.kind === 'api_restart')).toHaveLength(
      CI_RUN.processFaults.apiRestarts + 1,
    );
    expect(report.callbackFaults.duplicateCopies).toBeGreaterThan(0);
    expect(report.callbackFaults.outOfOrderExams).toBeGreaterThan(0);
    expect(report.callbackFaults.delayedDeliveries).toBeGreaterThan(0);
    expect(report.sandboxInjected.delayed).toBeGreaterThan(0);
    // Callbacks in every alternative layout; none answered 400, none dead-lettered but as a late copy.
    if (CI_RUN.sandboxFaults.callbackLayout === 'rotate') {
      expect(Object.keys(report.callbackFaults.layouts).sort()).toEqual([...ALTERNATIVE_LAYOUTS].sort());
    }
    expect(report.callbacks.answered400).toBe(0);
    expect(Object.keys(report.callbacks.deadLettersByReason).filter((r) => r !== 'journey_finished')).toEqual([]);
    expect(report.journeys.filter((j) => j.journeyId)).toHaveLength(CI_RUN.journeys);
    expect(report.invitesHistogram.twoOrMore).toBe(0);
    expect(report.callbacks.appliedExactlyOnce).toBe(report.callbacks.expected);
    expect(report.callbacks.expected).toBeGreaterThan(CI_RUN.journeys);
  }, 600_000);
});
