// One failure table. The exam service's classified failure (src/exam-service/errors.ts) is, to the activity, its
// failure type and whether Temporal retries it; to the workflow, which failure types end a retry; and to the clinic,
// the HTTP status, slug and words its API answers with, whether the clinic's call met the failure itself (the
// catalog) or through a journey's update (an activity). Every reader takes it from here.
import { FailureType, type FailureTypeName } from './activity-contract';

export type FailureKind = keyof typeof FailureType;

export interface FailureRow {
  type: FailureTypeName;
  /** Temporal retries the activity: the request provably went nowhere, or the service failed on it. */
  retried: boolean;
  /** The clinic's answer: status, problem slug, what happened (without patient data), and when to try again. */
  http: { status: number; slug: string; say: string; retryAfterSeconds?: number };
}

const UNAVAILABLE = {
  status: 503,
  slug: 'exam-service-unavailable',
  say: 'the exam service is unavailable; retry',
  retryAfterSeconds: 10,
};

export const FAILURES: Record<FailureKind, FailureRow> = {
  validation: {
    type: FailureType.validation,
    retried: false,
    http: { status: 422, slug: 'exam-service-refused', say: 'the exam service refused the request' },
  },
  already_final: {
    type: FailureType.already_final,
    retried: false,
    http: { status: 409, slug: 'already-final', say: 'the provider has already acted on the exam' },
  },
  unauthorized: {
    type: FailureType.unauthorized,
    retried: false,
    http: { status: 502, slug: 'exam-service-unauthorized', say: "the exam service refused the clinic's api key" },
  },
  account_setup: {
    type: FailureType.account_setup,
    retried: false,
    http: {
      status: 502,
      slug: 'exam-service-account-setup',
      say: "the clinic's account at the exam service needs setting up",
    },
  },
  bad_response: {
    type: FailureType.bad_response,
    retried: false,
    http: { status: 502, slug: 'exam-service-bad-response', say: 'the exam service answered outside its contract' },
  },
  server: { type: FailureType.server, retried: true, http: UNAVAILABLE },
  not_sent: { type: FailureType.not_sent, retried: true, http: UNAVAILABLE },
  // Sent, and no usable answer: never sent again by itself (the invite is not idempotent at the service).
  ambiguous: { type: FailureType.ambiguous, retried: false, http: UNAVAILABLE },
  attachment_missing: {
    type: FailureType.attachment_missing,
    retried: false,
    http: { status: 409, slug: 'attachment-missing', say: 'the attachment is no longer in the store' },
  },
  notification_rejected: {
    type: FailureType.notification_rejected,
    retried: false,
    http: { status: 502, slug: 'notification-rejected', say: "the clinic's notification address refused it" },
  },
};

/** The failure types Temporal does not retry (an activity's retry policy). */
export const NOT_RETRIED: FailureTypeName[] = Object.values(FAILURES)
  .filter((row) => !row.retried)
  .map((row) => row.type);

/** The kind of an activity's failure type; undefined for a type not in the table. */
export function failureKindOf(type: string | undefined): FailureKind | undefined {
  return (Object.keys(FAILURES) as FailureKind[]).find((k) => FAILURES[k].type === type);
}
