// `npm run ops`: incident operations in bulk through the admin API. Lists what a Temporal visibility query matches
// (always restricted to journeys, and to one clinic with --clinic), then acts on each journey with the workflow's own
// update, a few at a time and at a bounded rate, with progress, a summary, and a clean stop on Ctrl-C. Each action is
// safe to repeat: a journey it no longer applies to is "refused" with the journey's reason, so a second run finishes
// what an interrupted one left.
//
// Who acts: with an identity provider (--issuer or OPS_OIDC_ISSUER) the person signed in (`npm run ops -- sign-in`,
// the device authorization grant) or automation's service account (client credentials), whose subject the journeys
// record; without one, the static admin token, which names its actor (--actor).
//
//   npm run ops -- sign-in --issuer https://id.example/realms/journeys
//   npm run ops -- abandon --query "NeedsAttention=true" --dry-run --note "INC-42 outage"
//   npm run ops -- retry --query "JourneyStage='needs_attention'" --clinic demo-clinic --note n --rate 10/s
//   npm run ops -- replay-dead-letters --reason journey_not_found --since 2026-11-23T10:00:00Z --dry-run
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { queryProblem } from '../src/api/journey-query';
import { Actor, ClinicIdField, Note, OPERATOR_ACTIONS, type OperatorAction } from '../src/api/operation-schemas';
import { DEAD_LETTER_REASONS } from '../src/api/schemas';
import { checkIssuerUrl, OidcError } from '../src/auth/oidc-client';
import { cacheDirOf, SignInRequired } from '../src/auth/token-cache';
import { exitWith, parseApiUrl, parseCommandLine, table, UsageError } from './lib/cli';
import { requestJson, sleep, UnreachableError, type JsonAnswer, type Problem } from './lib/http';
import {
  operatorSession,
  runSession,
  SESSION_COMMANDS,
  type OidcSettings,
  type SessionCommand,
  type SessionOptions,
  type SignInIo,
} from './lib/ops-sign-in';
import { runShow, type ShowOptions } from './lib/ops-show';
import { LOCAL_ADMIN_TOKEN } from './lib/stack-secrets';

export { UsageError };
export type { OidcSettings, SessionOptions };

export const COMMANDS = [...OPERATOR_ACTIONS, 'replay-dead-letters', 'erase-patient'] as const;
export type Command = (typeof COMMANDS)[number];
export { SESSION_COMMANDS };

/** The client `npm run ops` signs a person in with (a public client with the device authorization grant). */
export const DEFAULT_CLIENT_ID = 'journey-ops';
/** Under $XDG_CACHE_HOME (else ~/.cache): where the sign-in is kept. */
export const CACHE_FOLDER = 'journey-ops';

export interface Options {
  command: Command;
  api: string;
  /** The static admin token; undefined when signed in with the identity provider (`oidc`). */
  token?: string;
  /** Where the token came from (printed instead of the token). */
  tokenSource: string;
  /** Signed in with the identity provider: the journeys record the signed-in subject, and no --actor is taken. */
  oidc?: OidcSettings;
  dryRun: boolean;
  concurrency: number;
  ratePerSecond: number;
  /** Act on at most this many (the newest first); all when undefined. */
  limit: number | undefined;
  /** How many matches a dry run shows. */
  sample: number;
  query?: string;
  clinicId?: string;
  /** Who acts, with the static admin token only. */
  actor?: string;
  note?: string;
  reason?: string;
  since?: string;
  /** reset: to before the first workflow task of this build. */
  badBuild?: string;
  /** reset: to the first workflow task after the last event of this type. */
  afterEvent?: string;
  /** erase-patient: the patient's e-mail (sent to the API, never printed). */
  email?: string;
  /** erase-patient: the request's Idempotency-Key (the same key, the same erasure). */
  idempotencyKey?: string;
  /** erase-patient: how long to wait for it to be done (0: do not wait). */
  waitSeconds?: number;
}

const DEFAULTS = { concurrency: 8, ratePerSecond: 25, sample: 10 };

export const USAGE = `Usage:
  npm run ops -- sign-in [--issuer URL] [--client-id ID]    sign in as yourself (in a browser, on any device)
  npm run ops -- sign-in --client-credentials --client-id ID [--client-secret-file FILE]   automation
  npm run ops -- whoami | sign-out
  npm run ops -- show <journey id> [--temporal-address A] [--namespace N] [--codec-endpoint URL]
                       the journey's history in the temporal CLI, decoded by the codec server as you (signed in)
  npm run ops -- <retry|abandon|cancel|resend> --query "<visibility query>" --note TEXT [options]
  npm run ops -- reset --query "<visibility query>" [--bad-build ID | --after-event TYPE] --note TEXT [options]
  npm run ops -- replay-dead-letters [--reason R] [--since T] [options]
  npm run ops -- erase-patient --clinic ID --email ADDRESS [--key K] [--wait SECONDS]

Acts on journeys through the admin API: lists the running journeys the query matches (always restricted to journeys,
and to one clinic with --clinic), then runs the journey's own update on each. A journey the action no longer applies
to (already abandoned, not parked, ended) is counted as refused with its reason: running the same command again is
safe and acts on what is left.

Who acts (the journeys record it):
  With an identity provider (--issuer or OPS_OIDC_ISSUER), the one signed in: a person (sign-in: the device
  authorization grant) or automation's service account (client credentials); the journeys record the token's subject,
  and --actor is refused. Without one, the static admin token, which names its actor with --actor.
  --issuer <url>       the identity provider, e.g. https://id.example/realms/journeys (default: $OPS_OIDC_ISSUER)
  --client-id <id>     its client (default: $OPS_OIDC_CLIENT_ID, else ${DEFAULT_CLIENT_ID})
  --client-credentials sign-in as the client's service account (a confidential client, e.g. journey-automation)
  --client-secret-file <f>  the client's secret, from a file (default: $OPS_OIDC_CLIENT_SECRET); never on the command
                       line. With a secret, the journey actions also sign in by client credentials when they need to.
  The sign-in is kept (mode 0600) under $XDG_CACHE_HOME/${CACHE_FOLDER}/ (else ~/.cache/${CACHE_FOLDER}/), one per
  issuer and client, used until its access token expires, then refreshed; a journey action without a valid sign-in
  signs in first on a terminal, and otherwise stops: run npm run ops -- sign-in. sign-out forgets it; whoami shows
  who is signed in (subject, roles, expiry; never a token).
  --admin-token <t>    the static admin token (default: $ADMIN_TOKEN, else the local stack's token for a local API)
  --actor <name>       with the admin token: who acts (an operator name or ticket; never patient data)

Journey actions:
  --query <q>          Temporal visibility query, e.g. "NeedsAttention=true" or
                       "JourneyStage='needs_attention' AND StartTime > '2026-11-23T10:00:00Z'" (one expression,
                       no ORDER BY)
  --clinic <id>        only this clinic's journeys
  --note <text>        why (recorded in each journey; never patient data)

Reset (journeys a bad build decided wrongly, running or ended; after the rollback, so the good version decides again):
  --bad-build <id>     to before the first workflow task this build completed (e.g. after a rollback from it)
  --after-event <type> to the first workflow task after the last event of this type, e.g. ActivityTaskCompleted
                       (neither: to the last completed workflow task). A point before the invite's activity ended
                       is refused: it would send a second invite.

Dead letters:
  --reason <r>         only letters kept for this reason (${DEAD_LETTER_REASONS.join(', ')})
  --since <time>       only callbacks received at or after this ISO 8601 time (with Z or an offset)

Erasing a patient (admins; docs/api.md#erasing-a-patient):
  --clinic <id>        the clinic whose patient it is
  --email <address>    the patient's e-mail as the clinic's journeys invited them (never printed)
  --key <k>            the request's Idempotency-Key: the same key answers the same erasure (default: a new one)
  --wait <seconds>     wait this long for it to be done, printing its journeys (default 120; 0: do not wait)

Options:
  --dry-run            print how many match and a sample; change nothing
  --concurrency <n>    actions under way at once (default ${DEFAULTS.concurrency}, at most 64)
  --rate <n>[/s]       actions started per second at most (default ${DEFAULTS.ratePerSecond})
  --limit <n>          act on at most n (the newest first)
  --sample <n>         how many a dry run shows (default ${DEFAULTS.sample})
  --api <url>          the API (default: $API_URL, else http://127.0.0.1:$API_PORT, port 3000 by default)
  -h, --help           this text

Progress: a bar on a terminal, a line per 10 % otherwise. Ctrl-C stops starting actions, waits for those under way
and prints the summary so far (a second Ctrl-C quits at once).
Exit status: 0 nothing failed; 1 some actions failed (whoami: not signed in); 2 the command could not run;
130 interrupted.`;

function positiveInt(value: string | undefined, flag: string, max: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new UsageError(`${flag} takes a whole number from 1 to ${max}, got "${value}"`);
  }
  return n;
}

function zodMessage(schema: typeof Actor, value: string, flag: string): string {
  const r = schema.safeParse(value);
  if (!r.success) throw new UsageError(`${flag} ${r.error.issues[0]?.message ?? 'is invalid'}`);
  return r.data;
}

const OPTIONS = {
  query: { type: 'string' },
  clinic: { type: 'string' },
  actor: { type: 'string' },
  note: { type: 'string' },
  reason: { type: 'string' },
  since: { type: 'string' },
  'bad-build': { type: 'string' },
  'after-event': { type: 'string' },
  'dry-run': { type: 'boolean', default: false },
  concurrency: { type: 'string' },
  rate: { type: 'string' },
  limit: { type: 'string' },
  sample: { type: 'string' },
  api: { type: 'string' },
  'admin-token': { type: 'string' },
  issuer: { type: 'string' },
  'client-id': { type: 'string' },
  'client-credentials': { type: 'boolean', default: false },
  'client-secret-file': { type: 'string' },
  'temporal-address': { type: 'string' },
  namespace: { type: 'string' },
  'codec-endpoint': { type: 'string' },
  email: { type: 'string' },
  key: { type: 'string' },
  wait: { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

type Values = ReturnType<typeof parseCommandLine<typeof OPTIONS>>['values'];

const ALL_COMMANDS: readonly string[] = [...COMMANDS, ...SESSION_COMMANDS, 'show'];

/** A parsed command line: a journey action or dead-letter replay, or a sign-in command. */
export type Parsed =
  | { kind: 'action'; options: Options }
  | { kind: 'session'; options: SessionOptions }
  | { kind: 'show'; options: ShowOptions };

/**
 * The identity provider's settings, when one is set (--issuer or OPS_OIDC_ISSUER): its client, the client's secret
 * (read from its file or OPS_OIDC_CLIENT_SECRET; never taken on the command line) and the cache folder.
 */
function oidcSettings(v: Values, env: NodeJS.ProcessEnv): OidcSettings | undefined {
  const issuer = v.issuer ?? (env.OPS_OIDC_ISSUER || undefined);
  if (issuer === undefined) {
    for (const flag of ['client-id', 'client-secret-file', 'client-credentials'] as const) {
      if (v[flag] !== undefined && v[flag] !== false) {
        throw new UsageError(
          `--${flag} is for signing in with the identity provider: give --issuer (or OPS_OIDC_ISSUER)`,
        );
      }
    }
    return undefined;
  }
  let checked: string;
  try {
    checked = checkIssuerUrl(issuer);
  } catch (err) {
    throw new UsageError(`--issuer (or OPS_OIDC_ISSUER): ${(err as Error).message}`);
  }
  const givenId = v['client-id'] ?? (env.OPS_OIDC_CLIENT_ID || undefined);
  if (givenId !== undefined && !/^[\x21-\x7e]{1,255}$/.test(givenId)) {
    throw new UsageError('--client-id (or OPS_OIDC_CLIENT_ID) must be a client id (printable, no spaces)');
  }
  const s: OidcSettings = {
    issuer: checked,
    clientId: givenId ?? DEFAULT_CLIENT_ID,
    clientIdGiven: givenId !== undefined,
    cacheDir: cacheDirOf(env, CACHE_FOLDER),
  };
  const file = v['client-secret-file'];
  if (file !== undefined) {
    let secret: string;
    try {
      secret = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (err) {
      throw new UsageError(`--client-secret-file ${file}: cannot read it (${(err as NodeJS.ErrnoException).code})`);
    }
    if (secret === '') throw new UsageError(`--client-secret-file ${file} is empty`);
    s.clientSecret = secret;
    s.secretSource = `the file ${file}`;
  } else if (env.OPS_OIDC_CLIENT_SECRET) {
    s.clientSecret = env.OPS_OIDC_CLIENT_SECRET;
    s.secretSource = 'OPS_OIDC_CLIENT_SECRET';
  }
  return s;
}

/** The flags of the journey actions and replays, refused by sign-in, sign-out and whoami. */
const ACTION_FLAGS = [
  'query',
  'clinic',
  'actor',
  'note',
  'reason',
  'since',
  'bad-build',
  'after-event',
  'dry-run',
  'concurrency',
  'rate',
  'limit',
  'sample',
  'api',
  'admin-token',
] as const;

function sessionOptions(cmd: SessionCommand, v: Values, env: NodeJS.ProcessEnv): SessionOptions {
  for (const flag of ACTION_FLAGS) {
    if (v[flag] !== undefined && v[flag] !== false) throw new UsageError(`--${flag} is not for ${cmd}`);
  }
  const oidc = oidcSettings(v, env);
  if (!oidc) {
    throw new UsageError(
      `${cmd} needs the identity provider: --issuer URL or OPS_OIDC_ISSUER (e.g. https://id.example/realms/journeys)`,
    );
  }
  const clientCredentials = v['client-credentials'] === true;
  if (cmd !== 'sign-in' && clientCredentials) throw new UsageError(`--client-credentials is for sign-in, not ${cmd}`);
  if (clientCredentials) {
    if (!oidc.clientIdGiven) {
      throw new UsageError(
        '--client-credentials needs the confidential client: --client-id or OPS_OIDC_CLIENT_ID (e.g. journey-automation)',
      );
    }
    if (oidc.clientSecret === undefined) {
      throw new UsageError(
        "--client-credentials needs the client's secret: OPS_OIDC_CLIENT_SECRET or --client-secret-file FILE " +
          '(never on the command line)',
      );
    }
  }
  return { command: cmd, oidc, clientCredentials };
}

/** `show <journey id>`: the history decoded as the person signed in (the identity provider is required). */
function showOptions(extra: string[], v: Values, env: NodeJS.ProcessEnv): ShowOptions {
  const [journeyId, ...more] = extra;
  if (!journeyId || more.length > 0)
    throw new UsageError('show takes one journey id: npm run ops -- show <journey id>');
  if (!/^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/.test(journeyId)) {
    throw new UsageError(`show: "${journeyId}" is not a journey id (letters, digits, "_" and "-")`);
  }
  for (const flag of ACTION_FLAGS) {
    if (v[flag] !== undefined && v[flag] !== false) throw new UsageError(`--${flag} is not for show`);
  }
  const oidc = oidcSettings(v, env);
  if (!oidc) {
    throw new UsageError(
      'show decodes as the person signed in: --issuer URL or OPS_OIDC_ISSUER (the static codec token is for ' +
        'machines, not people)',
    );
  }
  return {
    journeyId,
    oidc,
    address: v['temporal-address'] ?? env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233',
    namespace: v.namespace ?? env.TEMPORAL_NAMESPACE ?? 'default',
    codecEndpoint: v['codec-endpoint'] ?? env.CODEC_ENDPOINT ?? 'http://127.0.0.1:8888',
  };
}

/** Parses the command line; returns undefined for --help. */
export function parseCommand(argv: string[], env: NodeJS.ProcessEnv): Parsed | undefined {
  const parsed = parseCommandLine(argv, OPTIONS, { positionals: true });
  const v = parsed.values;
  if (v.help) return undefined;
  const [command, ...extra] = parsed.positionals;
  if (command === undefined) throw new UsageError(`give an action: ${ALL_COMMANDS.join(', ')}`);
  if (!ALL_COMMANDS.includes(command)) {
    throw new UsageError(`unknown action "${command}"; one of ${ALL_COMMANDS.join(', ')}`);
  }
  if (command === 'show') return { kind: 'show', options: showOptions(extra, v, env) };
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}" (quote the --query or --note value)`);
  if ((SESSION_COMMANDS as readonly string[]).includes(command)) {
    return { kind: 'session', options: sessionOptions(command as SessionCommand, v, env) };
  }
  return { kind: 'action', options: actionOptions(command as Command, v, env) };
}

/** Parses a journey action's or a replay's command line; returns undefined for --help. */
export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): Options | undefined {
  const parsed = parseCommand(argv, env);
  if (parsed?.kind === 'session') throw new UsageError(`${parsed.options.command} is not a journey action`);
  if (parsed?.kind === 'show') throw new UsageError('show is not a journey action');
  return parsed?.options;
}

function actionOptions(cmd: Command, v: Values, env: NodeJS.ProcessEnv): Options {
  if (v['client-credentials']) {
    throw new UsageError(
      `--client-credentials is for sign-in; ${cmd} signs in by client credentials itself when it has the secret`,
    );
  }
  const oidc = oidcSettings(v, env);
  const o: Partial<Options> = { command: cmd, dryRun: v['dry-run'] ?? false, ...(oidc ? { oidc } : {}) };
  if (cmd !== 'erase-patient') {
    for (const flag of ['email', 'key', 'wait'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for erase-patient, not ${cmd}`);
    }
  }
  if (cmd === 'erase-patient') {
    for (const flag of ['query', 'note', 'reason', 'since', 'bad-build', 'after-event'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is not for erase-patient`);
    }
    if (v.clinic === undefined || !ClinicIdField.safeParse(v.clinic).success) {
      throw new UsageError('--clinic is required: the id of the clinic whose patient it is');
    }
    o.clinicId = v.clinic;
    if (v.email === undefined || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(v.email)) {
      throw new UsageError("--email is required: the patient's e-mail address");
    }
    o.email = v.email;
    if (v.key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(v.key)) {
      throw new UsageError('--key: 1 to 255 visible ASCII characters');
    }
    o.idempotencyKey = v.key ?? `ops-erase-${randomBytes(12).toString('hex')}`;
    o.waitSeconds = v.wait === undefined ? 120 : (positiveInt(v.wait, '--wait', 3600) ?? 0);
    if (oidc && v.actor !== undefined) {
      throw new UsageError('--actor is not taken when signed in with the identity provider: who asks is who signed in');
    }
    if (!oidc && v.actor === undefined) {
      throw new UsageError('--actor is required with the admin token: who asks for the erasure (a name or a ticket)');
    }
    if (v.actor !== undefined) o.actor = zodMessage(Actor, v.actor, '--actor');
  } else if (cmd === 'replay-dead-letters') {
    for (const flag of ['query', 'clinic', 'note'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for the journey actions, not replay-dead-letters`);
    }
    // Reading dead letters is reading patient data: with the admin token, who reads is named (recorded with each).
    if (oidc && v.actor !== undefined) {
      throw new UsageError(
        '--actor is not taken when signed in with the identity provider: the reader is who signed in',
      );
    }
    if (!oidc && v.actor === undefined) {
      throw new UsageError('--actor is required with the admin token: who reads and replays (a name or a ticket)');
    }
    if (v.actor !== undefined) o.actor = zodMessage(Actor, v.actor, '--actor');
    if (v.reason !== undefined) {
      if (!(DEAD_LETTER_REASONS as readonly string[]).includes(v.reason)) {
        throw new UsageError(`--reason must be one of ${DEAD_LETTER_REASONS.join(', ')}, got "${v.reason}"`);
      }
      o.reason = v.reason;
    }
    if (v.since !== undefined) {
      if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/.test(v.since) || isNaN(Date.parse(v.since))) {
        throw new UsageError(`--since takes an ISO 8601 time with Z or an offset, e.g. 2026-11-23T10:00:00Z`);
      }
      o.since = v.since;
    }
  } else {
    for (const flag of ['reason', 'since'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for replay-dead-letters, not ${cmd}`);
    }
    if (v.query === undefined) throw new UsageError(`--query is required, e.g. --query "NeedsAttention=true"`);
    const problem = queryProblem(v.query);
    if (problem) throw new UsageError(`--query ${problem}`);
    o.query = v.query.trim();
    if (v.clinic !== undefined) {
      if (!ClinicIdField.safeParse(v.clinic).success) {
        throw new UsageError(`--clinic must be a clinic id (letters, digits, "_" and "-"), got "${v.clinic}"`);
      }
      o.clinicId = v.clinic;
    }
    if (oidc) {
      if (v.actor !== undefined) {
        throw new UsageError(
          '--actor is not taken when signed in with the identity provider: the actor is the person (or service ' +
            'account) signed in, whose subject each journey records (npm run ops -- whoami shows who); leave --actor out',
        );
      }
    } else if (v.actor === undefined) {
      throw new UsageError('--actor is required with the admin token: who acts (a name or a ticket)');
    }
    if (v.note === undefined) throw new UsageError('--note is required: why (recorded in each journey)');
    if (v.actor !== undefined) o.actor = zodMessage(Actor, v.actor, '--actor');
    o.note = zodMessage(Note, v.note, '--note');
  }
  if (cmd !== 'reset') {
    for (const flag of ['bad-build', 'after-event'] as const) {
      if (v[flag] !== undefined) throw new UsageError(`--${flag} is for reset, not ${cmd}`);
    }
  } else {
    if (v['bad-build'] !== undefined && v['after-event'] !== undefined) {
      throw new UsageError('--bad-build or --after-event, not both');
    }
    if (v['bad-build'] !== undefined) {
      if (!/^[A-Za-z0-9_.+-]{1,255}$/.test(v['bad-build'])) {
        throw new UsageError(`--bad-build must be a build id (letters, digits, - _ . +), got "${v['bad-build']}"`);
      }
      o.badBuild = v['bad-build'];
    }
    if (v['after-event'] !== undefined) {
      if (!/^([A-Z][A-Za-z]+|EVENT_TYPE_[A-Z_]+)$/.test(v['after-event'])) {
        throw new UsageError(
          `--after-event must be an event type such as ActivityTaskCompleted, got "${v['after-event']}"`,
        );
      }
      o.afterEvent = v['after-event'];
    }
  }

  o.concurrency = positiveInt(v.concurrency, '--concurrency', 64) ?? DEFAULTS.concurrency;
  if (v.rate !== undefined) {
    const n = Number(v.rate.replace(/\s*\/\s*s$/, ''));
    if (!Number.isFinite(n) || n <= 0 || n > 1000) {
      throw new UsageError(
        `--rate takes actions per second (more than 0, at most 1000), e.g. 20 or 20/s; got "${v.rate}"`,
      );
    }
    o.ratePerSecond = n;
  } else {
    o.ratePerSecond = DEFAULTS.ratePerSecond;
  }
  o.limit = positiveInt(v.limit, '--limit', 1_000_000);
  o.sample = positiveInt(v.sample, '--sample', 100) ?? DEFAULTS.sample;

  const envPort = env.API_PORT;
  if (envPort !== undefined && !/^\d{1,5}$/.test(envPort)) throw new UsageError('API_PORT must be a port number');
  const api = v.api ?? env.API_URL ?? `http://127.0.0.1:${envPort ?? 3000}`;
  const url = parseApiUrl(api);
  o.api = api.replace(/\/+$/, '');

  const local = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (oidc) {
    if (v['admin-token'] !== undefined) {
      throw new UsageError(
        '--admin-token and the identity provider (--issuer or OPS_OIDC_ISSUER) are two ways to act: give one',
      );
    }
    o.tokenSource = `signed in at ${oidc.issuer}, client ${oidc.clientId}`;
    return o as Options;
  }
  if (v['admin-token'] !== undefined) {
    o.token = v['admin-token'];
    o.tokenSource = 'the --admin-token option';
  } else if (env.ADMIN_TOKEN) {
    o.token = env.ADMIN_TOKEN;
    o.tokenSource = 'ADMIN_TOKEN';
  } else if (local) {
    o.token = LOCAL_ADMIN_TOKEN;
    o.tokenSource = "the local stack's admin token";
  } else {
    throw new UsageError(
      `--admin-token (or ADMIN_TOKEN) is required for ${o.api}, or sign in: --issuer (or OPS_OIDC_ISSUER)`,
    );
  }
  if (o.token === '') throw new UsageError('--admin-token is empty');
  return o as Options;
}

// ---- HTTP ------------------------------------------------------------------------------------------------------

/** An answer that is not 2xx (status 0: nothing answered), with the problem's details when the API sent them. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly problem: Problem | undefined,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }

  /** The reason in a few words: the problem's detail, its fields, or the status. */
  get reason(): string {
    const fields = (this.problem?.errors ?? []).map((e) => `${e.field}: ${e.message}`).join('; ');
    if (this.status === 0) return this.message;
    const detail = this.problem?.detail ?? this.message;
    return fields && !detail.includes(fields) ? `${detail} (${fields})` : detail;
  }
}

export class AdminClient {
  constructor(
    readonly base: string,
    /** The bearer token, or where to get a valid one for each request (a sign-in refreshed during a long run). */
    private readonly token: string | (() => Promise<string>),
    private readonly timeoutMs = 30_000,
    /** With the static admin token: who acts, sent as X-Actor (the admin API records it beside the token). */
    private readonly actor?: string,
  ) {}

  async request<T>(
    method: 'GET' | 'POST',
    route: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<T> {
    const token = typeof this.token === 'string' ? this.token : await this.token();
    let res: JsonAnswer;
    try {
      res = await requestJson(this.base, method, route, {
        token,
        body,
        timeoutMs: this.timeoutMs,
        headers: { ...headers, ...(this.actor ? { 'x-actor': this.actor } : {}) },
      });
    } catch (err) {
      if (err instanceof UnreachableError) throw new ApiError(0, undefined, err.message);
      throw err;
    }
    if (!res.ok) {
      const head = `${method} ${route.split('?')[0]} answered ${res.status}`;
      throw new ApiError(
        res.status,
        res.problem,
        res.problem?.detail ? `${head}: ${res.problem.detail}` : `${head}: ${res.text.slice(0, 200)}`,
        res.retryAfterMs,
      );
    }
    return res.body as T;
  }
}

// ---- what the API answers ----------------------------------------------------------------------------------------

interface JourneyItem {
  journeyId: string;
  clinicId: string | null;
  stage: string | null;
  needsAttention: boolean | null;
  workflowStatus: string;
  startedAt: string;
  attention?: string[] | null;
}
interface JourneySearch {
  query: string;
  count: number | null;
  journeys: JourneyItem[];
  nextPageToken: string | null;
}
interface DeadLetterItem {
  id: string;
  journeyId: string;
  reason: string;
  event?: number;
  receivedAt: string;
  replays: number;
}
interface DeadLetterPage {
  deadLetters: DeadLetterItem[];
  next: string | null;
}

// ---- running -----------------------------------------------------------------------------------------------------

export interface Io extends SignInIo {
  out: (text: string) => void;
  err: (text: string) => void;
  /** Progress as a redrawn bar (a terminal) or a line per 10 % (CI, a pipe). */
  isTTY: boolean;
  /** Aborted: start no more actions, finish those under way, print the summary. */
  stop?: AbortSignal;
  now?: () => number;
}

export type Outcome = 'done' | 'refused' | 'failed';

export interface Summary {
  command: Command;
  matched: number;
  done: number;
  refused: number;
  failed: number;
  notAttempted: number;
  refusedReasons: Map<string, number>;
  failures: { id: string; reason: string }[];
  interrupted: boolean;
  elapsedMs: number;
}

/** Statuses that say nothing about the action: try the same request again (the same update id). */
const TRANSIENT = new Set([0, 429, 503, 504]);
/** Statuses of an action that does not apply to this journey (any more): refused, with the API's reason. */
const REFUSED = new Set([404, 409, 422]);
const ATTEMPTS = 4;

interface Target {
  id: string;
}

class Progress {
  #lastDecile = 0;
  #lastDraw = 0;
  #drawn = false;

  constructor(
    private readonly io: Io,
    private readonly label: string,
    private readonly total: number,
    private readonly startedAt: number,
  ) {}

  update(s: Summary, final = false) {
    const now = (this.io.now ?? Date.now)();
    const finished = s.done + s.refused + s.failed;
    const pct = this.total === 0 ? 100 : Math.floor((finished / this.total) * 100);
    const secs = Math.max(0.001, (now - this.startedAt) / 1000);
    const rate = finished / secs;
    const counts = `done ${s.done}  refused ${s.refused}  failed ${s.failed}  ${rate.toFixed(1)}/s`;
    if (this.io.isTTY) {
      if (!final && now - this.#lastDraw < 100) return;
      this.#lastDraw = now;
      const width = 24;
      const filled = Math.round((width * pct) / 100);
      const eta = rate > 0 && finished < this.total ? `  ETA ${Math.ceil((this.total - finished) / rate)}s` : '';
      const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
      this.io.err(
        `\r\x1b[2K${this.label} [${bar}] ${finished}/${this.total} ${String(pct).padStart(3)}%  ${counts}${eta}`,
      );
      this.#drawn = true;
      if (final) this.io.err('\n');
      return;
    }
    const decile = Math.floor(pct / 10);
    if (decile > this.#lastDecile) {
      this.#lastDecile = decile;
      this.io.err(`${this.label}: ${finished}/${this.total} (${decile * 10} %)  ${counts}\n`);
    }
  }

  /** Leaves the bar's line before other output. */
  clear() {
    if (this.io.isTTY && this.#drawn) this.io.err('\n');
    this.#drawn = false;
  }
}

/** Runs `act` on every target: at most `concurrency` at once, at most `ratePerSecond` started per second. */
async function actOnAll(
  opts: Options,
  io: Io,
  targets: Target[],
  act: (t: Target) => Promise<void>,
  summary: Summary,
): Promise<void> {
  const now = io.now ?? Date.now;
  const progress = new Progress(io, opts.command, targets.length, now());
  const interval = 1000 / opts.ratePerSecond;
  let nextStart = now();
  let next = 0;
  const stopped = () => io.stop?.aborted === true;
  const classify = async (t: Target) => {
    for (let attempt = 1; ; attempt++) {
      try {
        await act(t);
        summary.done++;
        return;
      } catch (err) {
        const e = err instanceof ApiError ? err : new ApiError(-1, undefined, String(err));
        if (REFUSED.has(e.status)) {
          summary.refused++;
          summary.refusedReasons.set(e.reason, (summary.refusedReasons.get(e.reason) ?? 0) + 1);
          return;
        }
        if (TRANSIENT.has(e.status) && attempt < ATTEMPTS && !stopped()) {
          await sleep(e.retryAfterMs ?? 500 * 2 ** (attempt - 1), io.stop);
          continue;
        }
        summary.failed++;
        summary.failures.push({ id: t.id, reason: e.status > 0 ? `${e.status} ${e.reason}` : e.reason });
        return;
      }
    }
  };
  const lane = async () => {
    for (;;) {
      if (stopped() || next >= targets.length) return;
      const t = targets[next++]!;
      const wait = nextStart - now();
      nextStart = Math.max(nextStart, now()) + interval;
      if (wait > 0) await sleep(wait, io.stop);
      // Stopped while waiting for its turn: not attempted (counted below).
      if (stopped()) return;
      await classify(t);
      progress.update(summary);
    }
  };
  await Promise.all(Array.from({ length: Math.min(opts.concurrency, targets.length) }, lane));
  summary.notAttempted = targets.length - (summary.done + summary.refused + summary.failed);
  summary.interrupted = stopped() && summary.notAttempted > 0;
  if (targets.length > 0) progress.update(summary, true);
}

const journeysWord = (opts: Options) => (opts.command === 'reset' ? 'journeys' : 'running journeys');

function searchParams(opts: Options, extra: Record<string, string>): string {
  // A reset also reaches journeys a bad build ended wrongly; the updates reach running journeys only.
  const p = new URLSearchParams({ query: opts.query!, running: String(opts.command !== 'reset'), ...extra });
  if (opts.clinicId) p.set('clinicId', opts.clinicId);
  return p.toString();
}

/**
 * Journeys per request of a batch's listing. Temporal's frontend spends about 1 ms of CPU on each execution it lists
 * from SQL visibility (npm run bench:growth), so a page of 1000 took about a second on two cores: pages of 250 keep
 * each request well under it, whatever the number listed.
 */
export const LIST_PAGE_SIZE = 250;

/** The matching journeys (newest first), up to the limit. */
async function listJourneys(opts: Options, client: AdminClient): Promise<{ query: string; ids: string[] }> {
  const ids: string[] = [];
  let token: string | null = null;
  let query = '';
  do {
    const pageSize = Math.min(LIST_PAGE_SIZE, opts.limit === undefined ? LIST_PAGE_SIZE : opts.limit - ids.length);
    const page: JourneySearch = await client.request<JourneySearch>(
      'GET',
      `/admin/journeys?${searchParams(opts, { pageSize: String(pageSize), ...(token ? { nextPageToken: token } : {}) })}`,
    );
    query = page.query;
    ids.push(...page.journeys.map((j) => j.journeyId));
    token = page.nextPageToken;
  } while (token && (opts.limit === undefined || ids.length < opts.limit));
  return { query, ids: [...new Set(ids)] };
}

async function listDeadLetters(opts: Options, client: AdminClient): Promise<DeadLetterItem[]> {
  const letters: DeadLetterItem[] = [];
  let after: string | null = null;
  do {
    const p = new URLSearchParams({ limit: '500' });
    if (opts.reason) p.set('reason', opts.reason);
    if (opts.since) p.set('since', opts.since);
    if (after) p.set('after', after);
    const page: DeadLetterPage = await client.request<DeadLetterPage>('GET', `/admin/dead-letters?${p.toString()}`);
    letters.push(...page.deadLetters);
    after = page.next;
  } while (after && (opts.limit === undefined || letters.length < opts.limit));
  return opts.limit === undefined ? letters : letters.slice(0, opts.limit);
}

interface ErasureAnswer {
  erasureId: string;
  status: 'pending' | 'done';
  completedAt: string | null;
  unreadableEverywhereAt: string | null;
  journeys: string[];
}

/** erase-patient: asks the admin API to erase the patient, then waits for it to be done (--wait). */
async function erasePatient(opts: Options, client: AdminClient, io: Io, now: () => number): Promise<Summary> {
  const summary = newSummary(opts.command, 1);
  const started = now();
  const first = await client.request<ErasureAnswer>(
    'POST',
    '/admin/patients/erasure',
    { clinicId: opts.clinicId, email: opts.email },
    { 'idempotency-key': opts.idempotencyKey! },
  );
  io.out(`erasure ${first.erasureId} of a patient of clinic ${opts.clinicId}: ${first.status}\n`);
  let answer = first;
  const deadline = started + (opts.waitSeconds ?? 0) * 1000;
  while (answer.status !== 'done' && now() < deadline && !io.stop?.aborted) {
    await sleep(1_000);
    answer = await client.request<ErasureAnswer>('GET', `/admin/patients/erasure/${answer.erasureId}`);
  }
  summary.elapsedMs = now() - started;
  if (answer.status === 'done') {
    summary.done = 1;
    io.out(
      `done at ${answer.completedAt}: ${answer.journeys.length} journeys ended and made unreadable` +
        `${answer.journeys.length ? ` (${answer.journeys.join(', ')})` : ''}; no process can read them from ` +
        `${answer.unreadableEverywhereAt}\n`,
    );
  } else {
    summary.notAttempted = 1;
    summary.interrupted = io.stop?.aborted ?? false;
    io.out(`still pending: npm run ops -- erase-patient with --key ${opts.idempotencyKey} shows it again\n`);
  }
  return summary;
}

function newSummary(command: Command, matched: number): Summary {
  return {
    command,
    matched,
    done: 0,
    refused: 0,
    failed: 0,
    notAttempted: 0,
    refusedReasons: new Map(),
    failures: [],
    interrupted: false,
    elapsedMs: 0,
  };
}

export function formatSummary(s: Summary): string {
  const acted = s.done + s.refused + s.failed;
  const secs = s.elapsedMs / 1000;
  const head =
    `${s.command}: ${s.matched} matched, ${acted} handled in ${secs.toFixed(1)} s` +
    (acted > 0 && secs > 0 ? ` (${(acted / secs).toFixed(1)}/s)` : '') +
    (s.interrupted ? `; interrupted, ${s.notAttempted} not attempted (run the same command again for them)` : '');
  const rows = [
    ['outcome', 'count', 'reason'],
    ['done', String(s.done), ''],
    ['refused', String(s.refused), ''],
    ...[...s.refusedReasons.entries()].sort((a, b) => b[1] - a[1]).map(([reason, n]) => ['', String(n), reason]),
    ['failed', String(s.failed), ''],
    ...(s.notAttempted > 0 ? [['not attempted', String(s.notAttempted), s.interrupted ? 'interrupted' : '']] : []),
  ];
  const failures =
    s.failures.length === 0
      ? ''
      : `\nFailed (${s.failures.length}; a second run retries them):\n` +
        s.failures
          .slice(0, 20)
          .map((f) => `  ${f.id}  ${f.reason}`)
          .join('\n') +
        (s.failures.length > 20 ? `\n  ... and ${s.failures.length - 20} more` : '');
  return `${head}\n${table(rows)}${failures}\n`;
}

export function exitCode(s: Summary): number {
  if (s.failed > 0) return 1;
  if (s.interrupted) return 130;
  return 0;
}

/** Runs the command; returns the summary (undefined for a dry run). Throws ApiError when it cannot run at all. */
export async function runOps(opts: Options, io: Io): Promise<Summary | undefined> {
  let actor = opts.actor;
  let bearer: string | (() => Promise<string>);
  if (opts.oidc) {
    // The kept sign-in (refreshed, or a new one on a terminal); the journeys record its subject.
    const session = await operatorSession(opts.oidc, io);
    const name = session.name && session.name !== session.subject ? ` (${session.name})` : '';
    const roles = session.roles.length > 0 ? session.roles.join(', ') : 'no journey role';
    io.err(`ops: as ${session.subject}${name}, ${roles}\n`);
    actor = session.subject;
    bearer = session.token;
  } else if (opts.token !== undefined) {
    bearer = opts.token;
  } else {
    throw new UsageError('no admin token and no identity provider');
  }
  // The static admin token names nobody: the actor goes with each request (dead-letter reads are recorded with it).
  const client = new AdminClient(opts.api, bearer, 30_000, opts.oidc ? undefined : opts.actor);
  const now = io.now ?? Date.now;
  if (opts.command === 'erase-patient') return erasePatient(opts, client, io, now);
  if (opts.command === 'replay-dead-letters') {
    const filters = [opts.reason && `reason ${opts.reason}`, opts.since && `received since ${opts.since}`]
      .filter(Boolean)
      .join(', ');
    const letters = await listDeadLetters(opts, client);
    io.out(`${letters.length} dead letters${filters ? ` (${filters})` : ''} at ${opts.api}.\n`);
    if (opts.dryRun) {
      if (letters.length > 0) {
        const rows = letters
          .slice(0, opts.sample)
          .map((l) => [l.id, l.journeyId, l.reason, String(l.event ?? ''), l.receivedAt, String(l.replays)]);
        io.out(`${table([['id', 'journey', 'reason', 'event', 'received', 'replays'], ...rows])}\n`);
        if (letters.length > opts.sample) io.out(`... and ${letters.length - opts.sample} more\n`);
      }
      io.out('Dry run: nothing was replayed.\n');
      return undefined;
    }
    const summary = newSummary(opts.command, letters.length);
    const started = now();
    if (letters.length > 0) {
      io.out(`Replaying with concurrency ${opts.concurrency} at most ${opts.ratePerSecond}/s (Ctrl-C stops).\n`);
    }
    await actOnAll(
      opts,
      io,
      letters.map((l) => ({ id: l.id })),
      (t) => client.request('POST', `/admin/dead-letters/${encodeURIComponent(t.id)}/replay`),
      summary,
    );
    summary.elapsedMs = now() - started;
    return summary;
  }

  const action: OperatorAction = opts.command;
  if (opts.dryRun) {
    const page = await client.request<JourneySearch>(
      'GET',
      `/admin/journeys?${searchParams(opts, { pageSize: String(opts.sample), attention: 'true' })}`,
    );
    const n = page.count ?? page.journeys.length;
    io.out(`${page.count === null ? 'at least ' : ''}${n} ${journeysWord(opts)} match: ${page.query}\n`);
    if (page.journeys.length > 0) {
      const rows = page.journeys.map((j) => [
        j.journeyId,
        j.clinicId ?? '',
        j.stage ?? '',
        j.attention === null || j.attention === undefined ? '?' : j.attention.join(',') || '-',
        j.startedAt,
      ]);
      io.out(`${table([['journey', 'clinic', 'stage', 'attention', 'started'], ...rows])}\n`);
      if (n > page.journeys.length) io.out(`... and ${n - page.journeys.length} more\n`);
    }
    io.out(`Dry run: no journey was changed (${action} would run on each, as ${actor}).\n`);
    return undefined;
  }
  const started = now();
  const { query, ids } = await listJourneys(opts, client);
  io.out(`${ids.length} ${journeysWord(opts)} match: ${query}\n`);
  const summary = newSummary(opts.command, ids.length);
  if (ids.length > 0) {
    io.out(`${action} with concurrency ${opts.concurrency} at most ${opts.ratePerSecond}/s (Ctrl-C stops).\n`);
  }
  // One id per run: a request retried after a timeout gets the update's first answer, not the journey's refusal.
  const operationId = `ops-${new Date(started).toISOString().replace(/[-:.]/g, '')}-${randomBytes(4).toString('hex')}`;
  // Signed in, the API records the token's subject: no actor is sent.
  const body = {
    ...(opts.oidc ? {} : { actor: opts.actor }),
    note: opts.note,
    operationId,
    ...(opts.clinicId ? { clinicId: opts.clinicId } : {}),
    ...(opts.badBuild ? { badBuild: opts.badBuild } : {}),
    ...(opts.afterEvent ? { afterEvent: opts.afterEvent } : {}),
  };
  await actOnAll(
    opts,
    io,
    ids.map((id) => ({ id })),
    (t) => client.request('POST', `/admin/journeys/${encodeURIComponent(t.id)}/${action}`, body),
    summary,
  );
  summary.elapsedMs = now() - started;
  return summary;
}

// ---- main ------------------------------------------------------------------------------------------------------

/** What a failed sign-in says: the reason, and what to run. */
export function signInProblem(err: OidcError, oidc: OidcSettings | undefined): string {
  if (err instanceof SignInRequired) {
    const where = oidc ? ` to ${oidc.issuer} as client ${oidc.clientId}` : '';
    return `${err.reason}${err.reason === 'not signed in' ? where : ''}: run npm run ops -- sign-in (on a terminal)`;
  }
  return err.message;
}

async function main(): Promise<number> {
  let parsed: Parsed | undefined;
  try {
    parsed = parseCommand(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`ops: ${(err as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  if (!parsed) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    if (stop.signal.aborted) {
      process.stderr.write(
        `\nops: ${signal} again: quitting now; actions under way may or may not have been applied\n`,
      );
      process.exit(130);
    }
    process.stderr.write(
      parsed.kind === 'session'
        ? `\nops: ${signal}: stopping\n`
        : `\nops: ${signal}: stopping after the actions under way (again to quit at once)\n`,
    );
    stop.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const io: Io = {
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    isTTY: process.stderr.isTTY === true,
    interactive: process.stdin.isTTY === true,
    stop: stop.signal,
  };
  if (parsed.kind === 'session' || parsed.kind === 'show') {
    try {
      return parsed.kind === 'show' ? await runShow(parsed.options, io) : await runSession(parsed.options, io);
    } catch (err) {
      const command = parsed.kind === 'show' ? 'show' : parsed.options.command;
      if (err instanceof OidcError) {
        process.stderr.write(`ops: ${command}: ${signInProblem(err, parsed.options.oidc)}\n`);
        return err.code === 'interrupted' ? 130 : 2;
      }
      process.stderr.write(`ops: ${command}: ${err instanceof Error ? err.message : String(err)}\n`);
      return 2;
    }
  }
  const opts = parsed.options;
  process.stderr.write(
    `ops: ${opts.command} at ${opts.api} (${opts.oidc ? '' : 'admin token from '}${opts.tokenSource})\n`,
  );
  try {
    const summary = await runOps(opts, io);
    if (!summary) return 0;
    io.out(formatSummary(summary));
    return exitCode(summary);
  } catch (err) {
    if (err instanceof OidcError) {
      process.stderr.write(`ops: ${signInProblem(err, opts.oidc)}\n`);
      return err.code === 'interrupted' ? 130 : 2;
    }
    if (err instanceof ApiError) {
      const hint =
        err.status === 401
          ? opts.oidc
            ? `\nThe API refused the access token of the sign-in at ${opts.oidc.issuer}: does the API trust this ` +
              'issuer (its OIDC_ISSUER) and the audience of the token (OIDC_AUDIENCE)? npm run ops -- whoami shows the ' +
              'sign-in; npm run ops -- sign-in signs in again.'
            : `\nThe API refused the admin token from ${opts.tokenSource}.`
          : err.status === 403 && opts.oidc
            ? '\nnpm run ops -- whoami shows the roles of the sign-in.'
            : err.status === 404 && !err.problem?.errors
              ? '\nThe admin routes answer 404 when the API has neither ADMIN_TOKEN_SHA256 nor OIDC_ISSUER.'
              : '';
      const fields = (err.problem?.errors ?? []).map((e) => `\n  - ${e.field}: ${e.message}`).join('');
      process.stderr.write(`ops: ${err.message}${fields}${hint}\n`);
      return 2;
    }
    process.stderr.write(`ops: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    return 2;
  }
}

if (require.main === module) exitWith(main);
