// What the API is built from (server.ts passes the process's own; tests pass theirs). Every plugin of plugins/ gets it.
import type { Tracer } from '@opentelemetry/api';
import type { Client } from '@temporalio/client';
import type { FastifyServerOptions } from 'fastify';
import type { AttachmentStore } from '../attachments/types';
import type { TokenVerifier } from '../auth/tokens';
import type { Config } from '../config';
import type { CallbackInbox, InboxForwarderOptions } from '../inbox';
import type { AckLayer } from '../inbox/callback-path';
import type { ExamServiceFor } from './exam-service';
import type { PatientKeysWhenReady } from '../codec/patient-codec';
import type { PatientKeys } from '../patient-keys/patient-keys';

export interface ApiDeps {
  config: Config;
  temporal: Client;
  /** The exam-service client acting for a clinic (tests pass fakes or point it at the sandbox). */
  examServiceFor: ExamServiceFor;
  attachments?: AttachmentStore;
  /** The callback inbox; by default the one the configuration names (files or PostgreSQL). */
  inbox?: CallbackInbox;
  clock?: () => Date;
  logger?: FastifyServerOptions['logger'];
  /** A server span per request, the parent of the workflow calls it makes (server.ts: when tracing is on). */
  tracer?: Tracer;
  /** How the forwarder sends a signal (server.ts: from a thread of its own); by default with `temporal`, inline. */
  signal?: InboxForwarderOptions['signal'];
  /** The forwarder and the retention sweeps start with the app unless false (tests drive them themselves). */
  startForwarder?: boolean;
  /** First wait of the forwarder after a failed attempt; doubles up to config.forwarder.maxBackoffMs. */
  forwarderMinBackoffMs?: number;
  /** Per-patient keys, opened by the app (plugins/patient-keys.ts); by default the ones the configuration names. */
  patientKeys?: PatientKeys;
  /** Told the patient keys once they are open: the Temporal client made before the app seals with them. */
  patientKeysReady?: PatientKeysWhenReady;
  /** How operators' access tokens are checked; by default against OIDC_ISSUER when it is set. */
  verifyOperator?: TokenVerifier;
  /** Layers of the webhook's acknowledgement left out, to measure each one's cost (bench/ack-layers.ts only). */
  measureWithout?: ReadonlySet<AckLayer>;
}
