/**
 * A programmable stand-in for the exam service on node:http, for client tests: each test says how the next calls of
 * an operation are answered (status, body, delay) or how they fail (reset, close, hang, stalled body). Listens on
 * 127.0.0.1, port 0. Records every request it read.
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export type StubReply =
  /** Answer with JSON (default status 200). */
  | { status?: number; body: unknown; delayMs?: number }
  /** Answer with a raw text body (e.g. an HTML error page). */
  | { status?: number; text: string; contentType?: string; delayMs?: number }
  /** Read the whole request, then reset the socket (RST): the client sees ECONNRESET after writing. */
  | { fault: 'reset' }
  /** Read the whole request, then close the socket (FIN) without a word: undici's "other side closed". */
  | { fault: 'close' }
  /** Read the whole request and never answer. */
  | { fault: 'hang' }
  /** Send the status line, headers and part of the body, then stall. */
  | { fault: 'stall-body'; status?: number };

export interface RecordedRequest {
  operation: string;
  method: string;
  headers: http.IncomingHttpHeaders;
  rawBody: string;
  /** Parsed JSON body (undefined when not JSON). */
  body: unknown;
}

type Responder = StubReply | ((request: RecordedRequest) => StubReply);

export class StubExamService {
  readonly requests: RecordedRequest[] = [];
  /** TCP connections accepted so far (keep-alive reuses one). */
  connections = 0;
  readonly #responders = new Map<string, Responder[]>();
  readonly #server: http.Server;
  readonly #timers = new Set<NodeJS.Timeout>();

  private constructor(server: http.Server) {
    this.#server = server;
  }

  static async start(): Promise<StubExamService> {
    const server = http.createServer();
    const stub = new StubExamService(server);
    server.on('request', (req, res) => stub.#handle(req, res));
    server.on('connection', () => (stub.connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return stub;
  }

  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Answers every following call of the operation this way (until `reply` is called again for it). */
  reply(operation: string, responder: Responder): this {
    this.#responders.set(operation, [responder]);
    return this;
  }

  /** Answers the following calls of the operation with these replies in turn; the last one then repeats. */
  replySequence(operation: string, ...responders: Responder[]): this {
    this.#responders.set(operation, responders);
    return this;
  }

  requestsFor(operation: string): RecordedRequest[] {
    return this.requests.filter((r) => r.operation === operation);
  }

  async close(): Promise<void> {
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #next(operation: string): Responder | undefined {
    const queue = this.#responders.get(operation);
    if (queue === undefined) return undefined;
    return queue.length > 1 ? queue.shift() : queue[0];
  }

  #handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const operation = (req.url ?? '').replace(/^\/api\//, '').replace(/\?.*$/, '');
      const recorded: RecordedRequest = { operation, method: req.method ?? '', headers: req.headers, rawBody, body };
      this.requests.push(recorded);
      const responder = this.#next(operation);
      const reply: StubReply =
        responder === undefined
          ? { status: 404, body: { http_code: 404, error_message: `stub: nothing programmed for ${operation}` } }
          : typeof responder === 'function'
            ? responder(recorded)
            : responder;
      this.#answer(req, res, reply);
    });
  }

  #answer(req: http.IncomingMessage, res: http.ServerResponse, reply: StubReply): void {
    if ('fault' in reply) {
      switch (reply.fault) {
        case 'reset':
          req.socket.resetAndDestroy();
          return;
        case 'close':
          req.socket.destroy();
          return;
        case 'hang':
          return;
        case 'stall-body':
          res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', 'content-length': '1000' });
          res.write('{"exams": [');
          return;
      }
    }
    const send = () => {
      if ('text' in reply) {
        res.writeHead(reply.status ?? 200, { 'content-type': reply.contentType ?? 'text/html' });
        res.end(reply.text);
      } else {
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(reply.body));
      }
    };
    if (reply.delayMs !== undefined && reply.delayMs > 0) {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        if (!res.destroyed) send();
      }, reply.delayMs);
      this.#timers.add(timer);
    } else {
      send();
    }
  }
}

/** A base URL nobody listens on (a port bound and released at once): connecting is refused. */
export async function closedPortUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

/**
 * A TCP listener that drops every connection as soon as it is accepted. Against an https:// base URL the TLS
 * handshake never completes, so the socket closes before any request could be written on it.
 */
export async function startConnectionDropper(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Sample bodies the tests serve: valid per the spec, with the quirks the spec shows.

export const SAMPLE = {
  examList: {
    clinic_id: 7001,
    exams: [
      { id: 101, title: 'Good Faith Exam', rx_type: 1, price: null, attachments_required: 1, attachments: [] },
      {
        id: 201,
        title: 'Weight Loss - Partner Pharmacy Package',
        rx_type: 2,
        price: '199.00',
        attachments_required: 2,
        attachments: ['Lab'],
      },
      { id: 301, title: 'Urgent Care Visit', rx_type: 2, price: '79.00', attachments_required: 1, attachments: [] },
    ],
  },
  invite: {
    http_code: 200,
    meeting_url: 'https://meet.example.test/m/6f1c',
    meeting_uuid: '6f1c2b8e-1d7a-4a55-9a43-0e2f3b1c9d77',
    patient_exams: [
      { patient_exam_id: 90001, exam_title: 'Good Faith Exam', exam_id: 101 },
      { patient_exam_id: 90002, exam_title: 'Weight Loss - Partner Pharmacy Package', exam_id: 201 },
    ],
  },
  upload: { http_code: 200, patient_exam_id: 90001, attachment_id: 'att-1', kind: 'Lab' },
  questionsPatient: {
    http_code: 200,
    exam_id: 101,
    meeting_uuid: '6f1c2b8e-1d7a-4a55-9a43-0e2f3b1c9d77',
    patient_exam_id: 90001,
    questions: [
      { id: 10101, question: 'Which medications do you currently take?', response_type: 1, responses: [] },
      {
        question_id: 10102,
        question: 'Do you have any known drug allergies?',
        response_type: 2,
        input_field: 2,
        responses: [
          { response: 'No', input_field: 1, exam_question_response_id: 1010201 },
          { response: 'Yes', input_field: 2, exam_question_response_id: 1010202 },
        ],
      },
    ],
    answers: [],
  },
  questionsCatalog: {
    exam_id: 101,
    questions: [
      { no: 1, question: 'Which medications do you currently take?' },
      { no: 2, question: 'Do you have any known drug allergies?' },
    ],
  },
  submitAnswers: { http_code: 200, patient_exam_id: 90001, answered: 2, questionnaire_skipped: true },
  resend: { http_code: 200, patient_exam_id: 90001, deliveries: 2 },
  cancel: { http_code: 200, patient_exam_id: 90001, status: 'cancelled', cancelled_at: '2025-03-01T10:15:00Z' },
  partnerPharmacies: {
    pharmacies: [
      { pharmacy_id: 501, name: 'Lone Star Compounding Pharmacy', type: '503A Compounding' },
      { pharmacy_id: 502, name: 'Summit Outsourcing Facility', type: '503B Outsourcing' },
    ],
  },
  treatmentPackages: {
    treatment_packages: [
      {
        order_set_id: '8101',
        exam_pos_id: 3101,
        drug_name: 'Semaglutide',
        strength: '2.5 mg/mL',
        size: '2 mL',
        duration_days: 28,
        price: 29900,
      },
      {
        order_set_id: '8102',
        exam_pos_id: '3102',
        drug_name: 'Semaglutide',
        strength: '5 mg/mL',
        size: '2 mL',
        duration_days: 56,
        price: 49900,
      },
    ],
  },
  searchA: {
    pharmacies: [
      {
        ncpdpid: '4512345',
        name: 'Main Street Pharmacy',
        address_line_1: '12 Main St',
        city: 'Austin',
        state: 'TX',
        zip_code: '78701',
        phone: '5125550100',
      },
    ],
  },
  searchB: {
    http_code: 200,
    data: [
      {
        NCPDPID: '4598765',
        Name: 'Corner Drug',
        Address: '400 Congress Ave',
        Address2: '',
        City: 'Austin',
        State: 'TX',
        Zip: '78701',
        Phone: '5125550199',
        Type: 'Retail',
      },
    ],
  },
} as const;
