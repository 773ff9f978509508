// The demo's command line: where the API is, the clinic's token, the time the journeys may take, --start-stack.
import { parseApiUrl, parseCommandLine, UsageError } from '../lib/cli';

export { UsageError };

export interface Options {
  api: string;
  token: string;
  /** Where the token came from (printed instead of the token). */
  tokenSource: string;
  timeoutMs: number;
  startStack: boolean;
  /** The API port the started stack must listen on (--start-stack only). */
  stackApiPort: number | undefined;
  stackReadyTimeoutMs: number;
  pollMs: number;
}

const DEFAULT_API = 'http://127.0.0.1:3000';
const DEFAULT_TOKEN = 'demo-clinic-token';

export const USAGE = `Usage: npm run demo -- [options]

Runs the GFE, partner pharmacy, urgent care, choose-your-own pharmacy and a stacked invite through the clinic API
against the exam-service sandbox (test mode) and checks that every journey ends as expected.

Options:
  --api <url>          the clinic API (default: $API_URL, else ${DEFAULT_API}; with --start-stack and $API_PORT,
                       http://127.0.0.1:$API_PORT)
  --token <token>      the clinic's API token (default: $DEMO_TOKEN, else the local stack's demo clinic token)
  --timeout <seconds>  how long the journeys may take, all together (default 120)
  --start-stack        start a local stack first (scripts/local-stack.ts; honours TEMPORAL_PORT, TEMPORAL_UI_PORT,
                       SANDBOX_PORT, API_PORT, CODEC_PORT, DATA_DIR) and stop it at the end
  --stack-timeout <s>  how long the started stack may take to become ready (default 300; the first run installs
                       the Temporal tools)
  -h, --help           this text

Exit status: 0 every journey as expected; 1 a journey ended wrong or did not finish in time; 2 the demo could not run.`;

function seconds(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback * 1000;
  const n = Number(value.replace(/s$/, ''));
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${name} takes a number of seconds, got "${value}"`);
  return Math.round(n * 1000);
}

/** Parses the command line; returns undefined for --help. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | undefined {
  const v = parseCommandLine(argv, {
    api: { type: 'string' },
    token: { type: 'string' },
    timeout: { type: 'string' },
    'start-stack': { type: 'boolean', default: false },
    'stack-timeout': { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  }).values;
  if (v.help) return undefined;
  const startStack = v['start-stack'] ?? false;
  const envApiPort = env.API_PORT ? Number(env.API_PORT) : undefined;
  if (envApiPort !== undefined && !(Number.isInteger(envApiPort) && envApiPort > 0 && envApiPort < 65536)) {
    throw new UsageError('API_PORT must be a port number');
  }
  let api = v.api ?? env.API_URL;
  if (api === undefined) api = startStack && envApiPort !== undefined ? `http://127.0.0.1:${envApiPort}` : DEFAULT_API;
  const url = parseApiUrl(api);
  let stackApiPort: number | undefined;
  if (startStack) {
    if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) || url.protocol !== 'http:') {
      throw new UsageError(`--start-stack runs the stack on this machine: --api must be http://127.0.0.1:<port>`);
    }
    const urlPort = Number(url.port || 80);
    if (envApiPort !== undefined && envApiPort !== urlPort) {
      throw new UsageError(`API_PORT=${envApiPort} and --api ${api} disagree; the stack's API would not be there`);
    }
    stackApiPort = urlPort;
  }
  const token = v.token ?? env.DEMO_TOKEN ?? DEFAULT_TOKEN;
  const tokenSource =
    v.token !== undefined
      ? 'the --token option'
      : env.DEMO_TOKEN !== undefined
        ? 'DEMO_TOKEN'
        : "the local stack's demo clinic token";
  return {
    api: api.replace(/\/+$/, ''),
    token,
    tokenSource,
    timeoutMs: seconds(v.timeout, '--timeout', 120),
    startStack,
    stackApiPort,
    stackReadyTimeoutMs: seconds(v['stack-timeout'], '--stack-timeout', 300),
    pollMs: 1_000,
  };
}
