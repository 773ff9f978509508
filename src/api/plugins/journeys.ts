// The journeys in Temporal (start, read, list, act on them) and the exam service acting for a clinic.
import fp from 'fastify-plugin';
import type { ApiDeps } from '../deps';
import { ClinicExamService } from '../exam-service';
import { JourneyGateway } from '../journeys';

export default fp<ApiDeps>(
  (app, { config, temporal, examServiceFor }, done) => {
    app.decorate(
      'journeys',
      new JourneyGateway({
        temporal,
        taskQueue: config.temporal.taskQueue,
        timeoutMs: config.api.temporalTimeoutMs,
        pageTokenSecret: config.api.webhookSecret,
      }),
    );
    app.decorate('examService', new ClinicExamService(examServiceFor, config.examService.catalogCacheTtlMs));
    done();
  },
  { name: 'journeys', dependencies: ['core'] },
);
