// Journey inputs for each scenario against the sandbox's seeded catalog, in test mode (state and tele_state TE).
import type { AttachmentStore } from '../../src/attachments/types';
import {
  DEFAULT_TIMINGS,
  JOURNEY_RULES,
  type CustomPharmacy,
  type JourneyInput,
  type Scenario,
} from '../../src/contract/journey-request';

/** What the sandbox's exams require beyond the standard ID (attachments_required 2). */
const REQUIRED_ATTACHMENTS: Record<number, string[]> = { 201: ['Lab'], 302: ['Scalp photo (top of head)'] };

/** Stores the attachments a scenario's exams require and returns their claim checks. */
export async function requiredAttachments(
  store: AttachmentStore,
  exams: number[],
): Promise<JourneyInput['attachments']> {
  const out: NonNullable<JourneyInput['attachments']> = [];
  for (const examId of exams) {
    for (const kind of REQUIRED_ATTACHMENTS[examId] ?? []) {
      const attachment = await store.put(Buffer.from(`%PDF-1.4 ${kind} for exam ${examId}`), {
        kind,
        fileName: `${kind.split(' ')[0]!.toLowerCase()}.pdf`,
        contentType: 'application/pdf',
      });
      out.push({ examId, attachment });
    }
  }
  return out;
}

export const SANDBOX_EXAMS = { gfe: 101, partner: 201, urgentCare: 301, ownPharmacy: 302 } as const;
export const SANDBOX_PARTNER_PHARMACY = 501;

const RETAIL: CustomPharmacy = {
  ncpdpid: '4512345',
  name: 'Sandbox Drug Mart #101',
  addressLine1: '100 Congress Ave',
  city: 'Austin',
  state: 'TX',
  zipCode: '78701',
  phone: '5125550111',
  type: 'Retail',
};

export type ScenarioName = 'gfe' | 'partner_pharmacy' | 'urgent_care' | 'custom_pharmacy';

export function scenarioOf(name: ScenarioName): { scenario: Scenario; exams: number[] } {
  switch (name) {
    case 'gfe':
      return { scenario: { type: 'gfe' }, exams: [SANDBOX_EXAMS.gfe] };
    case 'partner_pharmacy':
      return {
        scenario: { type: 'partner_pharmacy', pharmacyId: SANDBOX_PARTNER_PHARMACY, orderSetId: '8101' },
        exams: [SANDBOX_EXAMS.partner],
      };
    case 'urgent_care':
      return { scenario: { type: 'urgent_care', pharmacy: RETAIL }, exams: [SANDBOX_EXAMS.urgentCare] };
    case 'custom_pharmacy':
      return {
        scenario: { type: 'custom_pharmacy', pharmacy: RETAIL, patientChoice: 1 },
        exams: [SANDBOX_EXAMS.ownPharmacy],
      };
  }
}

export function journeyInput(
  journeyId: string,
  name: ScenarioName,
  outcome = name === 'gfe' ? 'Approve' : 'Prescription Approve',
  clinicId = 'demo-clinic',
): JourneyInput {
  return {
    clinicId,
    journeyId,
    patient: {
      firstName: 'Test',
      lastName: outcome,
      email: `patient-${journeyId}@example.test`,
      dob: '1988-04-12',
      phoneNumber: '5125550199',
      teleState: 'TE',
    },
    ...scenarioOf(name),
    additionalData: JSON.stringify({ clinicRef: journeyId }),
    // Drugs one per event 2 (the flat layout) come within moments here: a short wait for more.
    timings: { ...DEFAULT_TIMINGS, moreDrugsGraceMs: 2_000 },
    rules: JOURNEY_RULES,
  };
}
