// The journeys the demo starts: one per scenario, in the sandbox's test mode (the patient's last name is the outcome),
// with what each must end as, the start request and the attachments it needs.
import type { StartJourneyBody } from '../../src/api/schemas';
import type { CustomPharmacy, Scenario } from '../../src/contract/journey-request';

/** How a patient exam must end: Approved, with events 1 / 1,2 / 1,2 and a 3 per prescription. */
export interface ExamExpectation {
  examId: number;
  fulfilment: 'none' | 'custom' | 'partner';
}

export interface DemoScenario {
  key: string;
  label: string;
  exams: number[];
  /** The test-mode outcome keyword, as the patient's last name. */
  outcome: 'Approve' | 'Prescription Approve';
  scenario: Scenario;
  expect: ExamExpectation[];
}

export const PARTNER_PHARMACY_ID = 501;
export const RETAIL_NCPDPID = '4512345';

export function demoScenarios(retail: CustomPharmacy): DemoScenario[] {
  return [
    {
      key: 'gfe',
      label: 'GFE',
      exams: [101],
      outcome: 'Approve',
      scenario: { type: 'gfe' },
      expect: [{ examId: 101, fulfilment: 'none' }],
    },
    {
      key: 'partner',
      label: 'Partner pharmacy',
      exams: [201],
      outcome: 'Prescription Approve',
      scenario: { type: 'partner_pharmacy', pharmacyId: PARTNER_PHARMACY_ID, orderSetId: '8101' },
      expect: [{ examId: 201, fulfilment: 'partner' }],
    },
    {
      key: 'urgent-care',
      label: 'Urgent care',
      exams: [301],
      outcome: 'Prescription Approve',
      scenario: { type: 'urgent_care', pharmacy: retail },
      expect: [{ examId: 301, fulfilment: 'custom' }],
    },
    {
      key: 'own-pharmacy',
      label: 'Choose-your-own pharmacy',
      exams: [302],
      outcome: 'Prescription Approve',
      scenario: { type: 'custom_pharmacy', pharmacy: retail, patientChoice: 1 },
      expect: [{ examId: 302, fulfilment: 'custom' }],
    },
    {
      key: 'stacked',
      label: 'Stacked: 2 GFEs + partner',
      exams: [102, 103, 202],
      outcome: 'Prescription Approve',
      scenario: { type: 'partner_pharmacy', pharmacyId: PARTNER_PHARMACY_ID, orderSetId: '8201' },
      expect: [
        { examId: 102, fulfilment: 'none' },
        { examId: 103, fulfilment: 'none' },
        { examId: 202, fulfilment: 'partner' },
      ],
    },
  ];
}

export function journeyBody(s: DemoScenario, runId: string, attachments: StartJourneyBody['attachments']) {
  const body: StartJourneyBody = {
    patient: {
      firstName: 'Test',
      lastName: s.outcome,
      email: `demo-${runId}-${s.key}@example.test`,
      dob: '1988-04-12',
      phoneNumber: '5125550199',
      teleState: 'TE',
    },
    exams: s.exams,
    scenario: s.scenario,
    ...(attachments && attachments.length > 0 ? { attachments } : {}),
    additionalData: JSON.stringify({ demoRun: runId, scenario: s.key }),
  };
  return body;
}

/** A tiny file standing in for the attachment: a JPEG for photos, a PDF otherwise. */
export function sampleAttachment(kind: string, examId: number) {
  const slug = kind
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
  if (/photo/i.test(kind)) {
    const jpeg = Buffer.concat([
      Buffer.from([0xff, 0xd8, 0xff, 0xe0]),
      Buffer.from(`demo ${kind} for exam ${examId}`),
      Buffer.from([0xff, 0xd9]),
    ]);
    return { kind, fileName: `${slug}.jpg`, contentType: 'image/jpeg', contentBase64: jpeg.toString('base64') };
  }
  const pdf = Buffer.from(`%PDF-1.4\n% demo ${kind} for exam ${examId}\n%%EOF\n`);
  return { kind, fileName: `${slug}.pdf`, contentType: 'application/pdf', contentBase64: pdf.toString('base64') };
}
