// What every other part of the API reads: the configuration, the Temporal client, the clock, the Prometheus series
// (with a count of every answer by route and status) and the sealer of what the API keeps at rest.
import fp from 'fastify-plugin';
import { RecordSealer } from '../../codec/at-rest';
import { sealerKeys } from '../../inbox/create';
import type { ApiDeps } from '../deps';
import { createApiMetrics } from '../metrics';

export default fp<ApiDeps>(
  (app, deps, done) => {
    const metrics = createApiMetrics();
    app.decorate('config', deps.config);
    app.decorate('temporal', deps.temporal);
    app.decorate('now', deps.clock ?? (() => new Date()));
    app.decorate('metrics', metrics);
    app.decorate('sealer', new RecordSealer(sealerKeys(deps.config)));
    app.addHook('onResponse', async (request, reply) => {
      metrics.httpRequests.inc({
        method: request.method,
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      });
    });
    done();
  },
  { name: 'core' },
);
