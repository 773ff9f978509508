// What the route plugins share: built once by buildApp from its injected dependencies.
import type { Client } from '@temporalio/client';
import type { AttachmentStore } from '../attachments/store';
import type { Config } from '../config';
import type { CallbackInbox, InboxForwarder } from '../inbox';
import type { AckPressure } from './ack-pressure';
import type { ClinicExamService } from './exam-service';
import type { JourneyGateway } from './journeys';
import type { ApiMetrics } from './metrics';

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
}

export interface RouteOptions {
  ctx: ApiContext;
}
