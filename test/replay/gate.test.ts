// The replay gate: `npm run replay -- <folder>` passes on this working tree's workflows and refuses a change that
// breaks determinism, naming the history and its first mismatching command. The wait states it captures by.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { WAIT_STATES, waitStateOf, type JourneyFacts } from '../../scripts/histories';
import { BREAKING_TIMER, sourceVariant } from '../../scripts/lib/workflow-variant';

jest.setTimeout(120_000);

const root = path.resolve(__dirname, '../..');
// Captured from a stack by npm run histories:capture, one per wait state, payloads encrypted.
const fixtures = path.join(root, 'test/fixtures/wait-states');

function replay(...args: string[]) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/histories.ts', 'replay', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, PAYLOAD_ENCRYPTION_KEYS: readFixtureKey() },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** The committed histories' payload key: a key for these synthetic journeys only. */
function readFixtureKey(): string {
  return readFileSync(path.join(fixtures, 'payload-key.txt'), 'utf8').trim();
}

describe('the replay gate', () => {
  it("passes on this working tree's workflows, a history of every wait state", () => {
    const { status, out } = replay(fixtures);
    expect(out).toContain('9 of 9 histories replay against src/workflows');
    for (const state of WAIT_STATES) expect(out).toMatch(new RegExp(`^ok +${state}\\.json \\(journey-j`, 'm'));
    expect(status).toBe(0);
  });

  it('says so when the histories are encrypted and no key is given', () => {
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/histories.ts', 'replay', fixtures], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, PAYLOAD_ENCRYPTION_KEYS: '' },
    });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("the histories' payloads are encrypted: set PAYLOAD_ENCRYPTION_KEYS");
  });

  it('refuses an unguarded breaking change, naming each history and the first mismatching command', () => {
    // The working tree's src/ with one more timer at the start of the journey, not behind patched().
    const copy = sourceVariant(root, `replay-gate-${process.pid}`, [BREAKING_TIMER]);
    try {
      const { status, out } = replay(fixtures, '--workflows', copy.workflowsPath);
      expect(status).toBe(1);
      const failed = out.split('\n').filter((l) => l.startsWith('FAIL '));
      expect(failed.length).toBeGreaterThan(0);
      for (const line of failed)
        expect(line).toMatch(/^FAIL \S+\.json \(\S+\): \S*Nondeterminism|DeterminismViolation/i);
      expect(out).toContain('0 of 9 histories replay');
      // Output to a pipe, as in CI: the SDK core's warnings about the failing tasks are plain JSON lines, no colour.
      expect(out).not.toContain('\u001b[');
      const core = out.split('\n').filter((l) => l.startsWith('{'));
      expect(core.length).toBeGreaterThan(0);
      for (const line of core)
        expect(JSON.parse(line)).toMatchObject({ level: 'WARN', fields: { message: 'Failing workflow task' } });
    } finally {
      copy.remove();
    }
  });

  it('says where a change does not fit the sources', () => {
    expect(() =>
      sourceVariant(root, `replay-gate-${process.pid}`, [{ ...BREAKING_TIMER, find: 'no such line' }]),
    ).toThrow('src/workflows/journey.ts: the change cannot be applied, its anchor is missing: "no such line"');
  });

  it('says what it needs', () => {
    expect(replay()).toMatchObject({ status: 2, out: expect.stringContaining('one folder of histories is required') });
  });
});

describe('the wait states the capture files histories by', () => {
  const facts = (f: Partial<JourneyFacts>): JourneyFacts => ({
    running: true,
    stage: 'awaiting_consultation',
    examStatuses: ['pending'],
    needsAttention: false,
    reminded: false,
    ...f,
  });

  it('reads them from visibility and the history, never from a payload', () => {
    expect(waitStateOf(facts({}))).toBe('invited');
    expect(waitStateOf(facts({ reminded: true }))).toBe('reminded');
    expect(
      waitStateOf(facts({ stage: 'awaiting_final_verdict', examStatuses: ['Deferred to Medical Director'] })),
    ).toBe('deferred');
    expect(waitStateOf(facts({ stage: 'awaiting_prescription', examStatuses: ['Approved'] }))).toBe(
      'awaiting_prescription',
    );
    expect(waitStateOf(facts({ stage: 'awaiting_tracking' }))).toBe('awaiting_tracking');
    expect(waitStateOf(facts({ stage: 'awaiting_tracking', needsAttention: true }))).toBe('parked');
    expect(waitStateOf(facts({ stage: 'needs_attention' }))).toBe('parked');
    expect(waitStateOf(facts({ running: false, stage: 'completed', examStatuses: ['Approved'] }))).toBe('completed');
    expect(waitStateOf(facts({ running: false, stage: 'cancelled', examStatuses: ['cancelled'] }))).toBe('cancelled');
    expect(waitStateOf(facts({ running: false, stage: 'completed', examStatuses: ['expired'] }))).toBe('expired');
    // Passing stages and ends that are no wait.
    expect(waitStateOf(facts({ stage: 'inviting' }))).toBeUndefined();
    expect(waitStateOf(facts({ running: false, stage: 'abandoned' }))).toBeUndefined();
  });
});
