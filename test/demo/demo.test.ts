// The demo's own logic: options, the requests it sends (valid for the API and the sandbox's catalog), and how it
// judges a finished journey. The end-to-end run itself is `npm run demo -- --start-stack`.
import {
  demoScenarios,
  eventsSeen,
  journeyBody,
  parseOptions,
  sampleAttachment,
  UsageError,
  verify,
  type DemoScenario,
  type ExamView,
  type JourneyView,
  type ReceivedEvent,
} from '../../scripts/demo';
import { catalogEntry } from '../../src/api/exam-service';
import { AttachmentUploadJson, StartJourneyBody } from '../../src/api/schemas';
import { SEED_EXAMS } from '../../src/sandbox/seed';
import { checkAgainstCatalog } from '../../src/contract/catalog-rules';
import type { CustomPharmacy } from '../../src/contract/journey-request';

const retail: CustomPharmacy = {
  ncpdpid: '4512345',
  name: 'Sandbox Drug Mart #101',
  addressLine1: '100 Congress Ave',
  city: 'Austin',
  state: 'TX',
  zipCode: '78701',
  phone: '5125550111',
};
const scenarios = demoScenarios(retail);
const byKey = (key: string) => scenarios.find((s) => s.key === key)!;

describe('options', () => {
  it('defaults to the local stack and its demo token, 120 s', () => {
    const o = parseOptions([], {})!;
    expect(o).toMatchObject({ api: 'http://127.0.0.1:3000', token: 'demo-clinic-token', timeoutMs: 120_000 });
    expect(o.startStack).toBe(false);
    expect(o.tokenSource).not.toContain('demo-clinic-token');
  });

  it('takes API_URL and DEMO_TOKEN, and the options over them', () => {
    const env = { API_URL: 'http://127.0.0.1:4000/', DEMO_TOKEN: 'secret-token' };
    expect(parseOptions([], env)).toMatchObject({ api: 'http://127.0.0.1:4000', token: 'secret-token' });
    expect(parseOptions([], env)!.tokenSource).toBe('DEMO_TOKEN');
    const o = parseOptions(['--api', 'http://127.0.0.1:5000', '--token', 't', '--timeout', '30'], env)!;
    expect(o).toMatchObject({ api: 'http://127.0.0.1:5000', token: 't', timeoutMs: 30_000 });
  });

  it('starts the stack on the API port of --api, or on API_PORT', () => {
    expect(parseOptions(['--start-stack', '--api', 'http://127.0.0.1:13000'], {})!.stackApiPort).toBe(13000);
    expect(parseOptions(['--start-stack'], { API_PORT: '13000' })).toMatchObject({
      api: 'http://127.0.0.1:13000',
      stackApiPort: 13000,
    });
    expect(() => parseOptions(['--start-stack', '--api', 'http://127.0.0.1:3000'], { API_PORT: '13000' })).toThrow(
      UsageError,
    );
    expect(() => parseOptions(['--start-stack', '--api', 'http://example.com:3000'], {})).toThrow(UsageError);
  });

  it('refuses what it does not know', () => {
    expect(() => parseOptions(['--timeout', 'soon'], {})).toThrow(UsageError);
    expect(() => parseOptions(['--nope'], {})).toThrow(UsageError);
    expect(parseOptions(['--help'], {})).toBeUndefined();
  });
});

describe('requests', () => {
  const catalog = SEED_EXAMS.map(catalogEntry);

  it.each(scenarios.map((s) => [s.label, s] as const))(
    '%s is a valid start request for the seeded catalog',
    (_l, s) => {
      const attachments = s.exams.flatMap((examId) => {
        const entry = catalog.find((c) => c.examId === examId)!;
        if (entry.attachmentsRequired !== 2) return [];
        return entry.attachments.map((kind) => {
          const upload = sampleAttachment(kind, examId);
          expect(AttachmentUploadJson.safeParse(upload).success).toBe(true);
          const attachment = {
            ref: 'att_0123456789ab',
            kind,
            fileName: upload.fileName,
            contentType: upload.contentType,
            size: 10,
          };
          return { examId, attachment };
        });
      });
      const body = journeyBody(s, '20250101T000000-abcd', attachments);
      const parsed = StartJourneyBody.safeParse(body);
      expect(parsed.error?.issues).toBeUndefined();
      expect(checkAgainstCatalog(body, catalog)).toEqual([]);
      expect(body.patient).toMatchObject({ firstName: 'Test', teleState: 'TE' });
    },
  );

  it('covers the four scenarios and a stacked invite', () => {
    expect(new Set(scenarios.map((s) => s.scenario.type))).toEqual(
      new Set(['gfe', 'partner_pharmacy', 'urgent_care', 'custom_pharmacy']),
    );
    const stacked = byKey('stacked');
    expect(stacked.expect.filter((x) => x.fulfilment === 'none')).toHaveLength(2);
    expect(stacked.expect.filter((x) => x.fulfilment === 'partner')).toHaveLength(1);
  });
});

describe('judging a finished journey', () => {
  let nextPe = 90001;
  let nextRx = 60001;

  /** The journey as it ends when everything goes right: the exams, and the events the scenario expects. */
  function happy(s: DemoScenario): { view: JourneyView; events: ReceivedEvent[] } {
    const exams: ExamView[] = [];
    const events: ReceivedEvent[] = [];
    for (const x of s.expect) {
      const pe = nextPe++;
      const rx = x.fulfilment === 'none' ? [] : x.fulfilment === 'partner' ? [nextRx++, nextRx++] : [nextRx++];
      exams.push({
        patientExamId: pe,
        examId: x.examId,
        status: 'Approved',
        rxStatus: x.fulfilment === 'none' ? null : 'Pharmacy Confirmed',
        prescriptions: rx.map((id) => ({
          prescriptionId: id,
          drugName: 'Drug',
          tracking: x.fulfilment === 'partner' ? { trackingNumber: `1Z${id}` } : null,
        })),
      });
      events.push({ event: 1, patientExamId: pe, disposition: 'applied' });
      if (x.fulfilment !== 'none') events.push({ event: 2, patientExamId: pe, disposition: 'applied' });
      if (x.fulfilment === 'partner') {
        for (const id of rx) events.push({ event: 3, patientExamId: pe, prescriptionId: id, disposition: 'applied' });
      }
    }
    const view: JourneyView = {
      journeyId: 'j1',
      workflowStatus: 'COMPLETED',
      startedAt: '2025-01-01T00:00:00.000Z',
      closedAt: '2025-01-01T00:00:07.000Z',
      source: 'query',
      journey: { stage: 'completed', exams, events },
    };
    return { view, events };
  }

  it.each(scenarios.map((s) => [s.label, s] as const))('%s: as expected', (_l, s) => {
    const { view, events } = happy(s);
    expect(verify(s, view, events)).toEqual([]);
  });

  it('shows the events as they came', () => {
    const { events } = happy(byKey('partner'));
    expect(eventsSeen(events)).toBe('1,2,3,3');
    expect(eventsSeen([...events, { event: 3, patientExamId: 1, disposition: 'duplicate' }])).toBe(
      '1,2,3,3 (+1 duplicate)',
    );
    expect(eventsSeen(undefined)).toBe('-');
  });

  it('a rejected exam, a missing shipment or a stage other than completed is wrong', () => {
    const gfe = happy(byKey('gfe'));
    gfe.view.journey.exams![0]!.status = 'Rejected';
    expect(verify(byKey('gfe'), gfe.view, gfe.events)).toEqual(['exam 101: Rejected, expected Approved']);

    const partner = happy(byKey('partner'));
    const shipped = partner.events.filter(
      (e) => e.event !== 3 || e.prescriptionId !== partner.events[3]!.prescriptionId,
    );
    expect(verify(byKey('partner'), partner.view, shipped).join('\n')).toMatch(
      /event 3 for \[\d+\], expected one each/,
    );

    const urgent = happy(byKey('urgent-care'));
    urgent.view.workflowStatus = 'RUNNING';
    urgent.view.journey.stage = 'needs_attention';
    urgent.view.journey.attention = [{ code: 'invite_ambiguous', message: 'the invite may exist' }];
    expect(verify(byKey('urgent-care'), urgent.view, urgent.events)).toEqual([
      'stage needs_attention, expected completed (invite_ambiguous: the invite may exist)',
      'workflow RUNNING, expected COMPLETED',
    ]);

    const stacked = happy(byKey('stacked'));
    const noGfeEvent = stacked.events.filter((e) => e.patientExamId !== stacked.view.journey.exams![1]!.patientExamId);
    expect(verify(byKey('stacked'), stacked.view, noGfeEvent)).toEqual(['exam 103: event 1 applied 0 times']);

    const own = happy(byKey('own-pharmacy'));
    const twice = [...own.events, { ...own.events[1]! }];
    expect(verify(byKey('own-pharmacy'), own.view, twice)).toEqual(['exam 302: event 2 applied 2 times, expected 1']);
  });
});
