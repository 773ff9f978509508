/**
 * The sandbox's seeded world: clinics (one per onboarding situation), the exam catalog, questions, partner pharmacies
 * with their treatment packages, retail pharmacies for the custom pharmacy search, and what providers prescribe.
 * Documented in src/sandbox/README.md and docs/local-stack.md; tests import these constants instead of repeating literals.
 */
import type { Exam, PartnerPharmacy } from '../exam-service/schemas';

// ---------------------------------------------------------------------------------------------------------------
// Clinics and keys

export interface SeedClinic {
  clinic_id: number;
  name: string;
  api_key: string;
  /** Two-letter states with a Patient Care Provider; TE (test mode) is always served by the test provider. */
  providerStates: readonly string[];
  agreementsSigned: boolean;
  prescriptiveContractSigned: boolean;
  /** Name the clinic's providers sign with in callbacks. */
  providerName: string;
}

// prettier-ignore
const ALL_STATES = [
  'AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY', 'LA', 'ME',
  'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND', 'OH', 'OK', 'OR', 'PA',
  'RI', 'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY', 'DC',
] as const;

/** The state no seeded clinic has a provider for: an invite there answers the "add a Patient Care Provider" 401. */
export const STATE_WITHOUT_PROVIDER = 'AK';

export const DEMO_API_KEY = 'sandbox-demo-key';
export const UNSIGNED_AGREEMENTS_API_KEY = 'sandbox-unsigned-agreements-key';
export const NO_RX_CONTRACT_API_KEY = 'sandbox-no-rx-contract-key';
export const NO_PROVIDERS_API_KEY = 'sandbox-no-providers-key';

const STATES_WITH_PROVIDER = ALL_STATES.filter((s) => s !== STATE_WITHOUT_PROVIDER);

export const SEED_CLINICS: readonly SeedClinic[] = [
  {
    clinic_id: 7001,
    name: 'Sandbox Demo Clinic',
    api_key: DEMO_API_KEY,
    providerStates: STATES_WITH_PROVIDER,
    agreementsSigned: true,
    prescriptiveContractSigned: true,
    providerName: 'Dr. Riley Sandbox, MD',
  },
  {
    clinic_id: 7002,
    name: 'Sandbox Clinic Awaiting Agreements',
    api_key: UNSIGNED_AGREEMENTS_API_KEY,
    providerStates: STATES_WITH_PROVIDER,
    agreementsSigned: false,
    prescriptiveContractSigned: false,
    providerName: 'Dr. Avery Pending, MD',
  },
  {
    clinic_id: 7003,
    name: 'Sandbox Clinic Without Prescriptive Contract',
    api_key: NO_RX_CONTRACT_API_KEY,
    providerStates: STATES_WITH_PROVIDER,
    agreementsSigned: true,
    prescriptiveContractSigned: false,
    providerName: 'Dr. Morgan Clearance, DO',
  },
  {
    clinic_id: 7004,
    name: 'Sandbox Clinic Without Providers',
    api_key: NO_PROVIDERS_API_KEY,
    providerStates: [],
    agreementsSigned: true,
    prescriptiveContractSigned: true,
    providerName: 'Nobody',
  },
];

/** Who gives verdicts in test mode (tele_state and state TE). */
export const TEST_PROVIDER_NAME = 'Test Provider, NP';

// ---------------------------------------------------------------------------------------------------------------
// Exam catalog (shared by every clinic)

export const EXAM_IDS = {
  gfe: 101,
  gfeBotox: 102,
  gfeIvTherapy: 103,
  weightLossPartner: 201,
  testosteronePartner: 202,
  urgentCare: 301,
  hairLossOwnPharmacy: 302,
} as const;

export const SEED_EXAMS: readonly Exam[] = [
  { id: 101, title: 'Good Faith Exam', rx_type: 1, price: null, attachments_required: 1, attachments: [] },
  {
    id: 102,
    title: 'Good Faith Exam - Botox & Fillers',
    rx_type: 1,
    price: '49.00',
    attachments_required: 2,
    attachments: ['Lab', 'Face photo (front, no makeup)'],
  },
  {
    id: 103,
    title: 'Good Faith Exam - IV Therapy',
    rx_type: 1,
    price: '25.00',
    attachments_required: 1,
    attachments: [],
  },
  {
    id: 201,
    title: 'Weight Loss (Semaglutide) - Partner Pharmacy Package',
    rx_type: 2,
    price: '199.00',
    attachments_required: 2,
    attachments: ['Lab'],
  },
  {
    id: 202,
    title: 'Testosterone Therapy - Partner Pharmacy Package',
    rx_type: 2,
    price: null,
    attachments_required: 2,
    attachments: ['ID', 'Lab'],
  },
  { id: 301, title: 'Urgent Care Visit', rx_type: 2, price: '79.00', attachments_required: 1, attachments: [] },
  {
    id: 302,
    title: 'Hair Loss - Choose Your Own Pharmacy',
    rx_type: 2,
    price: null,
    attachments_required: 2,
    attachments: ['Scalp photo (top of head)'],
  },
];

/** How the sandbox reads a prescription exam's title when the invite does not say (see src/sandbox/README.md). */
export function titleKind(title: string): 'urgent_care' | 'own_pharmacy' | 'partner' | 'other' {
  const t = title.toLowerCase();
  if (t.includes('urgent care')) return 'urgent_care';
  if (t.includes('choose your own pharmacy')) return 'own_pharmacy';
  if (t.includes('partner pharmacy')) return 'partner';
  return 'other';
}

// ---------------------------------------------------------------------------------------------------------------
// Screening questions: every exam covers text (1), radio (2) and checkbox (3) answers and an input_field 2 option.

export interface SeedResponse {
  exam_question_response_id: number;
  response: string;
  input_field: 1 | 2;
}

export interface SeedQuestion {
  id: number;
  no: number;
  question: string;
  response_type: 1 | 2 | 3;
  input_field: 1 | 2;
  responses: SeedResponse[];
}

function questionsFor(examId: number, specific: { question: string; options: string[] }): SeedQuestion[] {
  const base = examId * 100;
  const r = (n: number, response: string, inputField: 1 | 2 = 1): SeedResponse => ({
    exam_question_response_id: base * 10 + n,
    response,
    input_field: inputField,
  });
  return [
    {
      id: base + 1,
      no: 1,
      question: 'Which medications do you currently take?',
      response_type: 1,
      input_field: 1,
      responses: [],
    },
    {
      id: base + 2,
      no: 2,
      question: 'Do you have any known drug allergies?',
      response_type: 2,
      input_field: 2,
      responses: [r(1, 'No'), r(2, 'Yes', 2)],
    },
    {
      id: base + 3,
      no: 3,
      question: 'Which of these conditions apply to you?',
      response_type: 3,
      input_field: 2,
      responses: [r(3, 'Diabetes'), r(4, 'High blood pressure'), r(5, 'Pregnancy'), r(6, 'None'), r(7, 'Other', 2)],
    },
    {
      id: base + 4,
      no: 4,
      question: specific.question,
      response_type: 2,
      input_field: 1,
      responses: specific.options.map((o, i) => r(8 + i, o)),
    },
  ];
}

export const SEED_QUESTIONS: Readonly<Record<number, readonly SeedQuestion[]>> = {
  101: questionsFor(101, { question: 'What brings you in today?', options: ['Aesthetic treatment', 'Wellness'] }),
  102: questionsFor(102, { question: 'Have you had Botox before?', options: ['Never', 'Within a year', 'Earlier'] }),
  103: questionsFor(103, { question: 'Have you had an IV infusion before?', options: ['Yes', 'No'] }),
  201: questionsFor(201, { question: 'What is your current BMI range?', options: ['Under 27', '27 to 30', 'Over 30'] }),
  202: questionsFor(202, { question: 'Have you had a testosterone panel?', options: ['Yes', 'No'] }),
  301: questionsFor(301, { question: 'How long have you had symptoms?', options: ['Under 3 days', '3 days or more'] }),
  302: questionsFor(302, { question: 'How long have you noticed hair loss?', options: ['Months', 'Years'] }),
};

// ---------------------------------------------------------------------------------------------------------------
// Drugs the providers prescribe (one prescription item per drug)

export interface SeedDrug {
  drug_name: string;
  dosage_form_type: string;
  strength: string;
  size: string;
  quantity: string;
  quantity_units: string;
  directions: string;
  duration_days: number;
  refill_amount: number;
  ndc_number: string;
  gpi_number: string;
  active_ingredient: string;
  inactive_ingredient: string;
  dispense_number: string;
  /** Controlled-substance schedule such as C3, empty otherwise. */
  schedule_code: string;
}

const SEMAGLUTIDE: SeedDrug = {
  drug_name: 'Semaglutide',
  dosage_form_type: 'Injectable solution',
  strength: '2.5 mg/mL',
  size: '2 mL vial',
  quantity: '1',
  quantity_units: 'vial',
  directions: 'Inject 0.25 mg subcutaneously once weekly for 4 weeks.',
  duration_days: 28,
  refill_amount: 2,
  ndc_number: '99999-0201-01',
  gpi_number: '2717005000E5',
  active_ingredient: 'Semaglutide',
  inactive_ingredient: 'Bacteriostatic water, sodium chloride',
  dispense_number: '1',
  schedule_code: '',
};

const ONDANSETRON: SeedDrug = {
  drug_name: 'Ondansetron',
  dosage_form_type: 'Orally disintegrating tablet',
  strength: '4 mg',
  size: '10 tablets',
  quantity: '10',
  quantity_units: 'tablet',
  directions: 'Dissolve 1 tablet on the tongue every 8 hours as needed for nausea.',
  duration_days: 10,
  refill_amount: 0,
  ndc_number: '99999-0202-10',
  gpi_number: '5025006510F5',
  active_ingredient: 'Ondansetron',
  inactive_ingredient: 'Mannitol, crospovidone',
  dispense_number: '10',
  schedule_code: '',
};

const TESTOSTERONE: SeedDrug = {
  drug_name: 'Testosterone Cypionate',
  dosage_form_type: 'Injectable solution',
  strength: '200 mg/mL',
  size: '10 mL vial',
  quantity: '1',
  quantity_units: 'vial',
  directions: 'Inject 0.5 mL intramuscularly once weekly.',
  duration_days: 70,
  refill_amount: 1,
  ndc_number: '99999-0203-10',
  gpi_number: '2310002010E2',
  active_ingredient: 'Testosterone cypionate',
  inactive_ingredient: 'Cottonseed oil, benzyl benzoate, benzyl alcohol',
  dispense_number: '1',
  schedule_code: 'C3',
};

const AMOXICILLIN: SeedDrug = {
  drug_name: 'Amoxicillin',
  dosage_form_type: 'Capsule',
  strength: '500 mg',
  size: '30 capsules',
  quantity: '30',
  quantity_units: 'capsule',
  directions: 'Take 1 capsule by mouth three times daily for 10 days.',
  duration_days: 10,
  refill_amount: 0,
  ndc_number: '99999-0301-30',
  gpi_number: '0120001000105',
  active_ingredient: 'Amoxicillin',
  inactive_ingredient: 'Magnesium stearate',
  dispense_number: '30',
  schedule_code: '',
};

const BENZONATATE: SeedDrug = {
  drug_name: 'Benzonatate',
  dosage_form_type: 'Capsule',
  strength: '100 mg',
  size: '21 capsules',
  quantity: '21',
  quantity_units: 'capsule',
  directions: 'Take 1 capsule by mouth three times daily as needed for cough.',
  duration_days: 7,
  refill_amount: 0,
  ndc_number: '99999-0302-21',
  gpi_number: '4320001000010',
  active_ingredient: 'Benzonatate',
  inactive_ingredient: 'Gelatin, glycerin',
  dispense_number: '21',
  schedule_code: '',
};

const FINASTERIDE: SeedDrug = {
  drug_name: 'Finasteride',
  dosage_form_type: 'Tablet',
  strength: '1 mg',
  size: '90 tablets',
  quantity: '90',
  quantity_units: 'tablet',
  directions: 'Take 1 tablet by mouth once daily.',
  duration_days: 90,
  refill_amount: 3,
  ndc_number: '99999-0401-90',
  gpi_number: '9055003000030',
  active_ingredient: 'Finasteride',
  inactive_ingredient: 'Lactose monohydrate, microcrystalline cellulose',
  dispense_number: '90',
  schedule_code: '',
};

// ---------------------------------------------------------------------------------------------------------------
// Partner pharmacies and their treatment packages

export const SEED_PARTNER_PHARMACIES: readonly PartnerPharmacy[] = [
  { pharmacy_id: 501, name: 'Lone Star Compounding Pharmacy', type: '503A Compounding' },
  { pharmacy_id: 502, name: 'Summit Outsourcing Facility', type: '503B Outsourcing' },
];

/** A package as the document describes it (the sandbox derives the live layout from it). */
export interface SeedTreatmentPackage {
  order_set_id: string;
  exam_pos_id: number;
  drug_name: string;
  strength: string;
  size: string;
  duration_days: number;
  /** Cents. */
  price: number;
  pharmacy_id: number;
  exam_id: number;
  /** Every drug the package prescribes; the first is the package's own drug_name. */
  drugs: readonly SeedDrug[];
}

function pkg(
  pharmacyId: number,
  examId: number,
  orderSetId: string,
  examPosId: number,
  priceCents: number,
  drugs: readonly [SeedDrug, ...SeedDrug[]],
): SeedTreatmentPackage {
  const [main] = drugs;
  return {
    pharmacy_id: pharmacyId,
    exam_id: examId,
    order_set_id: orderSetId,
    exam_pos_id: examPosId,
    drug_name: main.drug_name,
    strength: main.strength,
    size: main.size,
    duration_days: main.duration_days,
    price: priceCents,
    drugs,
  };
}

export const SEED_TREATMENT_PACKAGES: readonly SeedTreatmentPackage[] = [
  pkg(501, 201, '8101', 3101, 29_900, [SEMAGLUTIDE, ONDANSETRON]),
  pkg(501, 201, '8102', 3102, 49_900, [{ ...SEMAGLUTIDE, strength: '5 mg/mL', duration_days: 56 }]),
  pkg(501, 202, '8201', 3201, 15_900, [TESTOSTERONE]),
  pkg(502, 201, '8111', 3111, 27_500, [SEMAGLUTIDE]),
  pkg(502, 202, '8211', 3211, 14_500, [TESTOSTERONE]),
];

/** What the provider prescribes when no treatment package applies (custom pharmacies, provider's choice). */
export const SEED_REGIMENS: Readonly<Record<number, { prescribed_os_id: number; drugs: readonly SeedDrug[] }>> = {
  201: { prescribed_os_id: 8101, drugs: [SEMAGLUTIDE, ONDANSETRON] },
  202: { prescribed_os_id: 8201, drugs: [TESTOSTERONE] },
  301: { prescribed_os_id: 9301, drugs: [AMOXICILLIN, BENZONATATE] },
  302: { prescribed_os_id: 9302, drugs: [FINASTERIDE] },
};

// prettier-ignore
export const PARTNER_PHARMACY_CONTACTS: Readonly<
  Record<number, { full_name: string | null; email: string | null; phone_number: string | null; role: string | null }[]>
> = {
  501: [
    { full_name: 'Jordan Compounder, PharmD', email: 'rx@lonestar.sandbox.invalid', phone_number: '5125550101', role: 'Pharmacist in charge' },
    { full_name: null, email: 'shipping@lonestar.sandbox.invalid', phone_number: null, role: 'Shipping' },
  ],
  502: [{ full_name: 'Casey Outsourcing, PharmD', email: 'rx@summit.sandbox.invalid', phone_number: '3035550102', role: 'Pharmacist in charge' }],
};

export const PARTNER_PHARMACY_LOCATIONS: Readonly<Record<number, string>> = {
  501: 'Austin, TX',
  502: 'Denver, CO',
};

// ---------------------------------------------------------------------------------------------------------------
// Retail pharmacies for the custom pharmacy search (both layouts are derived from these records)

export interface SeedRetailPharmacy {
  ncpdpid: string;
  name: string;
  address1: string;
  address2: string;
  city: string;
  state: string;
  zip: string;
  phone: string;
  type: string;
}

// prettier-ignore
export const SEED_RETAIL_PHARMACIES: readonly SeedRetailPharmacy[] = [
  { ncpdpid: '4512345', name: 'Sandbox Drug Mart #101', address1: '100 Congress Ave', address2: '', city: 'Austin', state: 'TX', zip: '78701', phone: '5125550111', type: 'Retail' },
  { ncpdpid: '4512346', name: 'Sandbox Drug Mart #102', address1: '2200 S Lamar Blvd', address2: 'Suite 4', city: 'Austin', state: 'TX', zip: '78704', phone: '5125550112', type: 'Retail' },
  { ncpdpid: '4512347', name: 'Hill Country Compounding', address1: '815 W 6th St', address2: '', city: 'Austin', state: 'TX', zip: '78703', phone: '5125550113', type: 'Compound' },
  { ncpdpid: '4412001', name: 'Bayou Family Pharmacy', address1: '1200 Main St', address2: '', city: 'Houston', state: 'TX', zip: '77002', phone: '7135550120', type: 'Retail' },
  { ncpdpid: '0512001', name: 'Golden Gate Apothecary', address1: '500 Market St', address2: 'Floor 1', city: 'San Francisco', state: 'CA', zip: '94105', phone: '4155550130', type: 'Retail' },
  { ncpdpid: '0512002', name: 'Sandbox Drug Mart #205', address1: '1 Ferry Building', address2: '', city: 'San Francisco', state: 'CA', zip: '94111', phone: '4155550131', type: 'Retail' },
  { ncpdpid: '0598003', name: 'Pacific Specialty Rx', address1: '77 Wilshire Blvd', address2: '', city: 'Los Angeles', state: 'CA', zip: '90017', phone: '2135550132', type: 'Specialty' },
  { ncpdpid: '3312004', name: 'Empire Corner Pharmacy', address1: '350 5th Ave', address2: '', city: 'New York', state: 'NY', zip: '10118', phone: '2125550140', type: 'Retail' },
  { ncpdpid: '3312005', name: 'Harbor Mail Order Pharmacy', address1: '90 West St', address2: 'Unit 12', city: 'New York', state: 'NY', zip: '10006', phone: '2125550141', type: 'Mail Order' },
  { ncpdpid: '1012006', name: 'Sunshine Pharmacy', address1: '1 Biscayne Blvd', address2: '', city: 'Miami', state: 'FL', zip: '33132', phone: '3055550150', type: 'Retail' },
  { ncpdpid: '1412007', name: 'Lakeshore Drug Mart', address1: '233 S Wacker Dr', address2: '', city: 'Chicago', state: 'IL', zip: '60606', phone: '3125550160', type: 'Retail' },
  { ncpdpid: '0912008', name: 'Capitol Hill Pharmacy', address1: '600 Pennsylvania Ave SE', address2: '', city: 'Washington', state: 'DC', zip: '20003', phone: '2025550170', type: 'Retail' },
];
