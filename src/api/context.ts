// What the route plugins read from the app: decorated once by the app's plugins (plugins/), each piece by the plugin
// that owns it. A route reads `app.callbacks`, `app.journeys`, ...; helpers take the same fields as an ApiContext.
import type { Client } from '@temporalio/client';
import type { AttachmentStore } from '../attachments/types';
import type { AuditTrail } from '../audit/types';
import type { TokenVerifier } from '../auth/tokens';
import type { RecordSealer } from '../codec/at-rest';
import type { Config } from '../config';
import type { PatientKeys } from '../patient-keys/patient-keys';
import type { PatientErasures } from './patient-erasure';
import type { CallbackPath } from '../inbox/callback-path';
import type { AuditFn } from './auth';
import type { ClinicExamService } from './exam-service';
import type { JourneyGateway } from './journeys';
import type { ApiMetrics } from './metrics';
import type { SourceGuard } from './source-guard';

export interface ApiContext {
  /** plugins/core.ts */
  config: Config;
  temporal: Client;
  now: () => Date;
  metrics: ApiMetrics;
  /** Seals what the API keeps at rest (inbox entries, attachments) under the payload key ring. */
  sealer: RecordSealer;
  /** plugins/audit-trail.ts: sign-ins, operator actions, dead-letter access, refusals, retention's deletions. */
  audit: AuditFn | undefined;
  /** The same trail, to read (GET /admin/audit, its export); undefined when none is kept. */
  auditTrail: AuditTrail | undefined;
  /** plugins/patient-keys.ts: each patient's data key; undefined when PATIENT_KEY_STORE is off. */
  patientKeys: PatientKeys | undefined;
  /** plugins/patient-erasures.ts: patients' erasures, requested and carried out; undefined without patient keys. */
  patientErasures: PatientErasures | undefined;
  /** plugins/callback-path.ts: the webhook's callbacks from acknowledgement to their journeys, and the dead letters. */
  callbacks: CallbackPath;
  /** plugins/journeys.ts */
  journeys: JourneyGateway;
  examService: ClinicExamService;
  /** plugins/uploads.ts */
  attachments: AttachmentStore;
  /** plugins/operators.ts: operators' access tokens (OIDC_ISSUER), when an identity provider is configured. */
  verifyOperator: TokenVerifier | undefined;
  /** Refused sign-ins counted per source address: 429 past the limit, refusals audited in aggregate. */
  signInGuard: SourceGuard;
}

declare module 'fastify' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type -- the decorations, declared once above
  interface FastifyInstance extends ApiContext {}
}
