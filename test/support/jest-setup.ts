import { DefaultLogger, Runtime } from '@temporalio/worker';

process.env.TZ = 'UTC';

// Worker state changes at INFO drown jest's own output; warnings and errors still show.
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // already installed in this worker process
}
