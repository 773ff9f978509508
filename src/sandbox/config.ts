import { z } from 'zod';
import { SandboxFaults } from './faults';

const Ms = z.coerce.number().int().min(0);

/** Everything the sandbox can be told at start; `npm run sandbox` reads it from SANDBOX_* variables. */
export const SandboxConfig = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  /** 0 picks a free port (what buildSandbox does unless told otherwise). */
  port: z.coerce.number().int().min(0).max(65_535).default(4010),
  /** Origin used in meeting_url and exam_url; defaults to the listening address. */
  publicUrl: z.url().optional(),
  clockMode: z.enum(['real', 'manual']).default('real'),
  /** Seed of the random source behind fault shares and generated ids. */
  seed: z.coerce.number().int().default(20_240_501),
  /** Test mode: time from invite to the test provider's verdict (event 1). */
  providerDelayMs: Ms.default(2_000),
  /** Test mode: time from an approved prescription exam's verdict to the pharmacy's confirmation (event 2). */
  prescriptionDelayMs: Ms.default(2_000),
  /** Test mode: time from confirmation to shipment of a partner pharmacy package (event 3). */
  shipmentDelayMs: Ms.default(3_000),
  /** The spec's provider-availability countdown before a waiting patient's exam is Missed. */
  providerWaitMs: Ms.default(180_000),
  /** Lifetime of the signed exam_url links. */
  examUrlTtlMs: Ms.default(24 * 60 * 60 * 1000),
  /** Retries after a failed (non-200) callback attempt; 0 turns retries off. */
  callbackRetries: z.coerce.number().int().min(0).max(20).default(3),
  /** Backoff base: retry n waits base * 2^(n-1) on the sandbox clock. */
  callbackRetryBaseMs: Ms.default(1_000),
  /** Time a receiver gets to answer one attempt. */
  callbackTimeoutMs: Ms.default(5_000),
  /** The spec asks receivers to answer within 100 ms; slower attempts are flagged slow. */
  slowCallbackMs: Ms.default(100),
  /** Largest decoded attachment accepted. */
  attachmentMaxBytes: z.coerce
    .number()
    .int()
    .min(1)
    .default(5 * 1024 * 1024),
  faults: SandboxFaults.default(SandboxFaults.parse({})),
  logLevel: z.enum(['silent', 'fatal', 'error', 'warn', 'info', 'debug', 'trace']).default('silent'),
});
export type SandboxConfig = z.infer<typeof SandboxConfig>;
export type SandboxConfigInput = z.input<typeof SandboxConfig>;

const ENV_NAMES: Record<Exclude<keyof SandboxConfig, 'faults'>, string> = {
  host: 'SANDBOX_HOST',
  port: 'SANDBOX_PORT',
  publicUrl: 'SANDBOX_PUBLIC_URL',
  clockMode: 'SANDBOX_CLOCK',
  seed: 'SANDBOX_SEED',
  providerDelayMs: 'SANDBOX_PROVIDER_DELAY_MS',
  prescriptionDelayMs: 'SANDBOX_PRESCRIPTION_DELAY_MS',
  shipmentDelayMs: 'SANDBOX_SHIPMENT_DELAY_MS',
  providerWaitMs: 'SANDBOX_PROVIDER_WAIT_MS',
  examUrlTtlMs: 'SANDBOX_EXAM_URL_TTL_MS',
  callbackRetries: 'SANDBOX_CALLBACK_RETRIES',
  callbackRetryBaseMs: 'SANDBOX_CALLBACK_RETRY_BASE_MS',
  callbackTimeoutMs: 'SANDBOX_CALLBACK_TIMEOUT_MS',
  slowCallbackMs: 'SANDBOX_SLOW_CALLBACK_MS',
  attachmentMaxBytes: 'SANDBOX_ATTACHMENT_MAX_BYTES',
  logLevel: 'SANDBOX_LOG_LEVEL',
};

/** Reads SANDBOX_* variables (SANDBOX_FAULTS holds the faults as JSON). Throws a readable error on bad values. */
export function sandboxConfigFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxConfigInput {
  const input: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const value = env[name];
    if (value !== undefined && value !== '') input[key] = value;
  }
  const faults = env.SANDBOX_FAULTS;
  if (faults !== undefined && faults !== '') {
    try {
      input.faults = JSON.parse(faults) as unknown;
    } catch {
      throw new Error('SANDBOX_FAULTS must be JSON, for example {"errorRate":0.1}');
    }
  }
  return input;
}

export function resolveSandboxConfig(input: SandboxConfigInput = {}): SandboxConfig {
  const parsed = SandboxConfig.safeParse(input);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`Invalid sandbox configuration:\n  ${lines.join('\n  ')}`);
  }
  return parsed.data;
}
