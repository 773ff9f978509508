// The rules a clinic's (or an operator's) request must keep that JSON Schema cannot say: they depend on the clinic's exam list, on
// another field's value or on today's date. Each has a name: the OpenAPI document lists an operation's rules under
// `x-rules` in these words, a 400 for a broken one names it in `errors[].rule`, and a rule the exam service judges
// (through the journey) is refused by it as a 422 `exam-service-refused`. So a client, or the contract fuzzer, can tell
// a stated rule from a schema the server does not keep.
export const REQUEST_RULES = {
  'dob-not-in-future': 'patient.dob is not after today (UTC).',
  'answers-exam-in-journey': "each answers[].examId is one of the request's exams.",
  'attachments-exam-in-journey': "each attachments[].examId is one of the request's exams.",
  'additional-data-json':
    'additionalData sent as a string is JSON text (JSON.stringify of a value), as contentMediaType says.',
  'additional-data-size': 'additionalData sent as an object is at most 4,000 characters once written as JSON.',
  'exam-in-list': "each exam id is one of the clinic's exam list (GET /v1/catalog/exams: examId).",
  'one-prescription-exam': 'at most one prescription exam (rxType 2) per journey; GFEs (rxType 1) stack.',
  'scenario-fits-exams':
    'scenario.type gfe takes GFEs (rxType 1) only; partner_pharmacy, urgent_care and custom_pharmacy take one ' +
    'prescription exam (rxType 2).',
  'attachments-required':
    'an exam whose attachmentsRequired is 2 needs, in attachments, one attachment of each kind its attachments list ' +
    'names (kind as written there; the ID is asked of the patient by the service).',
  'attachment-of-clinic': 'each attachment ref is one this clinic stored with POST /v1/attachments.',
  'attachment-in-time':
    'an attachment ref no journey has taken is named within ATTACHMENTS_ORPHAN_GRACE_MS (24 h) of its upload; later it ' +
    'is deleted as an orphan: upload it again.',
  'attachment-of-patient':
    "an attachment ref another journey took is named again only for that journey's patient (a document is sealed " +
    "under its patient's key).",
  'page-token-of-list': 'nextPageToken is one a page of this same list (same filters) answered.',
  'answers-fit-questions':
    "each answer's no is a question of the patient exam's questionnaire (the exam service's) and its answer one that " +
    'question takes; the exam service judges it: 422 exam-service-refused.',
  // The operator routes' (/admin).
  'no-patient-data':
    'actor, note and X-Actor hold no patient data: text that looks like an e-mail address or a phone number (10 digits ' +
    'or more in a run) is refused.',
  'actor-named':
    'who acts is named: with the admin token, `actor` in the body or the `X-Actor` header; signed in with an access ' +
    'token, the actor is its subject (leave `actor` out, or send that).',
  'clinic-configured': 'clinicId names a clinic configured on this API.',
  'visibility-query':
    'query is one Temporal visibility expression over search attributes Temporal knows (not empty, balanced ' +
    'parentheses and quotes, no backslash, no ";", ORDER BY, GROUP BY or LIMIT); Temporal refuses what it cannot read.',
  'attention-page-size': 'pageSize is at most 100 with attention=true.',
  'callback-readable':
    "a replayed dead letter's body is a callback the journey can read and keep (else 422 unparseable-callback or " +
    'callback-too-large, and it stays a dead letter).',
} as const;

/** The rules the exam service judges (its refusal is a 422 `exam-service-refused`), not the API. */
export const EXAM_SERVICE_RULES: readonly RequestRule[] = ['answers-fit-questions'];

export type RequestRule = keyof typeof REQUEST_RULES;

/** The zod issue params (and field-error member) naming a rule. */
export const ruleParams = (rule: RequestRule) => ({ rule });

/** An operation's rules as the document states them (`x-rules`): each rule's name, words and judge. */
export const rulesOf = (...rules: RequestRule[]) =>
  rules.map((name) => ({
    name,
    rule: REQUEST_RULES[name],
    judge: EXAM_SERVICE_RULES.includes(name) ? ('exam-service' as const) : ('api' as const),
  }));
