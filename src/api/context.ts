// What the route plugins share: built once by buildApp from its injected dependencies.
import type { Client } from '@temporalio/client';
import type { AttachmentStore } from '../attachments/types';
import type { Config } from '../config';
import type { CallbackInbox, InboxForwarder } from '../inbox';
import type { AckPressure } from './ack-pressure';
import type { ClinicExamService } from './exam-service';
import type { JourneyGateway } from './journeys';
import type { ApiMetrics } from './metrics';

import type { AuditTrail } from '../audit/types';
import type { TokenVerifier } from '../auth/tokens';
import type { AuditFn } from './auth';
import type { SourceGuard } from './source-guard';

export interface ApiContext {
  config: Config;
  temporal: Client;
  journeys: JourneyGateway;
  examService: ClinicExamService;
  attachments: AttachmentStore;
  inbox: CallbackInbox;
  forwarder: InboxForwarder;
  ackPressure: AckPressure;
  metrics: ApiMetrics;
  now: () => Date;
  /** Operators' access tokens (OIDC_ISSUER), when an identity provider is configured. */
  verifyOperator?: TokenVerifier;
  /** The audit trail (AUDIT_STORE): sign-ins, operator actions, dead-letter access, refusals, retention's deletions. */
  audit?: AuditFn;
  /** Refused sign-ins counted per source address: 429 past the limit, refusals audited in aggregate. */
  signInGuard: SourceGuard;
  /** The same trail, to read (GET /admin/audit, its export); absent when none is kept. */
  auditTrail?: AuditTrail;
}

export interface RouteOptions {
  ctx: ApiContext;
}
