/** Black-box helpers: HTTP over undici against a running sandbox, and a local callback receiver on port 0. */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { buildSandbox, type Sandbox, type SandboxOptions } from '../../src/sandbox';
import { DEMO_API_KEY } from '../../src/sandbox/seed';

export interface HttpAnswer<T = any> {
  status: number;
  body: T;
}

/** POST {baseUrl}/api/{operation} with a JSON body; the demo clinic's api_key unless the body brings its own. */
export async function callService<T = any>(
  baseUrl: string,
  operation: string,
  body: Record<string, unknown> = {},
  options: { withKey?: boolean } = {},
): Promise<HttpAnswer<T>> {
  const payload = options.withKey === false || 'api_key' in body ? body : { api_key: DEMO_API_KEY, ...body };
  return postJson<T>(`${baseUrl}/api/${operation}`, payload);
}

export async function postJson<T = any>(url: string, body?: unknown): Promise<HttpAnswer<T>> {
  const res = await request(url, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, body: (text === '' ? undefined : JSON.parse(text)) as T };
}

export async function getJson<T = any>(url: string): Promise<HttpAnswer<T>> {
  const res = await request(url, { method: 'GET' });
  const text = await res.body.text();
  const isJson = (res.headers['content-type'] ?? '').toString().includes('json');
  return { status: res.statusCode, body: (isJson ? JSON.parse(text) : text) as T };
}

/** A valid invite body (demo clinic, California patient, no test mode); override what a test is about. */
export function inviteBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    api_key: DEMO_API_KEY,
    exams: [101],
    first_name: 'Jamie',
    last_name: 'Rivera',
    email: 'jamie.rivera@example.com',
    dob: '1988-04-12',
    phone_number: '+14155550100',
    tele_state: 'CA',
    state: 'CA',
    ...overrides,
  };
}

/** Test-mode invite: state and tele_state TE, first name Test, the keyword in the last name. */
export function testModeInvite(keyword: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return inviteBody({ first_name: 'Test', last_name: keyword, tele_state: 'TE', state: 'TE', ...overrides });
}

export interface ReceivedCallback {
  body: any;
  at: number;
}

export interface Receiver {
  url: string;
  callbacks: ReceivedCallback[];
  /** The bodies received so far, optionally only those of one patient exam. */
  events(patientExamId?: number): any[];
  /** Statuses to answer with, in order; 200 once the list is used up. */
  respondWith(statuses: number[]): void;
  /** Delay before answering each callback. */
  delayMs: number;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startReceiver(): Promise<Receiver> {
  let statuses: number[] = [];
  const callbacks: ReceivedCallback[] = [];
  const receiver: Partial<Receiver> = { delayMs: 0 };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const text = await readBody(req);
      callbacks.push({ body: JSON.parse(text), at: Date.now() });
      const delay = receiver.delayMs ?? 0;
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      res.statusCode = statuses.shift() ?? 200;
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(receiver, {
    url: `http://127.0.0.1:${port}/webhooks/exam-service`,
    callbacks,
    events: (patientExamId?: number) =>
      callbacks
        .map((c) => c.body)
        .filter((b) => patientExamId === undefined || Number(b.patient_exam_id) === patientExamId),
    respondWith: (list: number[]) => {
      statuses = [...list];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  }) as Receiver;
}

/** A sandbox on a manual clock with its receiver; callbacks are retried quickly. */
export async function startManualSandbox(
  options: SandboxOptions = {},
): Promise<{ sandbox: Sandbox; receiver: Receiver }> {
  const sandbox = await buildSandbox({
    clockMode: 'manual',
    startAt: new Date('2025-03-01T12:00:00.000Z'),
    ...options,
  });
  const receiver = await startReceiver();
  return { sandbox, receiver };
}

/** Types as the spec's tables state them. */
export type SpecType = 'string' | 'integer' | 'string|null' | 'array' | 'iso-datetime';

export function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Asserts every field of the table is present with its type; returns the mismatches (empty when all hold). */
export function typeMismatches(payload: Record<string, unknown>, table: Record<string, SpecType>): string[] {
  const wrong: string[] = [];
  for (const [field, type] of Object.entries(table)) {
    if (!(field in payload)) {
      wrong.push(`${field}: missing`);
      continue;
    }
    const value = payload[field];
    const actual = typeOf(value);
    const ok =
      type === 'string|null'
        ? actual === 'string' || actual === 'null'
        : type === 'iso-datetime'
          ? typeof value === 'string' && !Number.isNaN(Date.parse(value)) && /^\d{4}-\d{2}-\d{2}T/.test(value)
          : actual === type;
    if (!ok) wrong.push(`${field}: expected ${type}, got ${actual}`);
  }
  return wrong;
}

// The spec's Events tables, row by row.
export const EVENT1_TABLE: Record<string, SpecType> = {
  event: 'integer',
  reason: 'string',
  exam_id: 'string',
  exam_url: 'string|null',
  exam_name: 'string',
  exam_status: 'string',
  rx_status: 'string|null',
  clinic_name: 'string',
  patient_email: 'string',
  patient_phone_number: 'string',
  patient_exam_id: 'string',
  provider_name: 'string|null',
  additional_data: 'string',
  questions_answers: 'array',
};

export const EVENT2_TABLE: Record<string, SpecType> = {
  event: 'integer',
  exam_id: 'integer',
  exam_name: 'string',
  exam_status: 'string',
  exam_url: 'string',
  rx_status: 'string',
  clinic_name: 'string',
  patient_email: 'string',
  patient_phone_number: 'string',
  provider_name: 'string',
  reason: 'string',
  patient_exam_id: 'integer',
  prescribed_os_id: 'integer',
  prescription: 'array',
  questions_answers: 'array',
};

export const PRESCRIPTION_ITEM_TABLE: Record<string, SpecType> = {
  prescription_id: 'integer',
  drug_name: 'string',
  dosage_form_type: 'string',
  strength: 'string',
  size: 'string',
  quantity: 'string',
  quantity_units: 'string',
  directions: 'string',
  duration_days: 'integer',
  refill_amount: 'integer',
  ndc_number: 'string',
  gpi_number: 'string',
  active_ingredient: 'string',
  inactive_ingredient: 'string',
  dispense_number: 'string',
  schedule_code: 'string',
  pharmacy_name: 'string',
  pharmacy_contacts: 'array',
  prescription_tracking: 'array',
  created_at: 'iso-datetime',
};

export const CONTACT_TABLE: Record<string, SpecType> = {
  full_name: 'string|null',
  email: 'string|null',
  phone_number: 'string|null',
  role: 'string|null',
};

export const TRACKING_TABLE: Record<string, SpecType> = {
  rx_number: 'string|null',
  tracking_number: 'string|null',
  ship_carrier: 'string|null',
  delivery_service: 'string|null',
  pharmacy_location: 'string|null',
};

export const EVENT3_TABLE: Record<string, SpecType> = {
  event: 'integer',
  patient_exam_id: 'string',
  prescription_id: 'string',
  tracking_number: 'string',
  delivery_service: 'string',
  pharmacy_location: 'string',
  order_id: 'string',
};

export const ANSWER_TABLE: Record<string, SpecType> = { no: 'integer', question: 'string' };
