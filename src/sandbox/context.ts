import type { SandboxClock } from './clock';
import type { SandboxConfig } from './config';
import type { CallbackDelivery } from './delivery';
import type { FaultControl } from './faults';
import type { ExamLifecycle } from './lifecycle';
import type { SandboxRandom } from './random';
import type { SandboxStore } from './store';

/** What the route plugins share; built once per sandbox in server.ts. */
export interface SandboxContext {
  config: SandboxConfig;
  clock: SandboxClock;
  store: SandboxStore;
  random: SandboxRandom;
  faults: FaultControl;
  delivery: CallbackDelivery;
  lifecycle: ExamLifecycle;
  /** Origin used in meeting_url and exam_url. */
  publicUrl: () => string;
}
