// `npm run audit-trail:verify`: checks an audit trail's hash chain from its first record, and against its checkpoints
// (the heads its writers put where they cannot rewrite them); exit code 1 naming the first record that was changed,
// removed or put out of place, or the records a checkpoint saw that were cut off.
// - `-- <file>`: a trail file (JSON lines: AUDIT_FILE, CODEC_AUDIT_FILE, or a whole export of GET /admin/audit/export),
//   against the checkpoints beside it (`<file>.checkpoints`) when there are some, or those `--checkpoints <file>`
//   names, or the bucket of AUDIT_CHECKPOINT_BUCKET (with `--trail <name>`: api, worker, codec, table).
// - `-- --range <file>`: an export of part of the trail, checked from its first record's prev.
// - `-- --database-url <url>` (or AUDIT_DATABASE_URL, AUDIT_DATABASE_URL_FILE in the environment, which keeps the
//   password out of the process list): the PostgreSQL table itself; with `--export <file>` it is also written there
//   as JSON lines (mode 0600); against the checkpoints in the bucket the environment names (AUDIT_CHECKPOINT_BUCKET,
//   as the engine reads it), `--no-checkpoints` to check the chain alone.
// - `-- --sql [--writer-role <role>]`: the SQL that prepares the table and its writer role, for a deployer.
// The database URL is never printed.
import { createReadStream, createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { ChainVerifier, type ChainCheck } from '../src/audit/chain';
import { FileCheckpoints, type Checkpoint } from '../src/audit/checkpoints';
import { checkpointStoreFor } from '../src/audit';
import { loadAuditConfig } from '../src/config';
import { auditStoreSql, verifyAuditTable } from '../src/audit/postgres';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';

const USAGE = `Usage:
  npm run audit-trail:verify -- <file>                   a trail file (JSON lines), from seq 1, against its checkpoints
      [--checkpoints <file>] [--trail <name>]            ... those of this file, or of the bucket in the environment
      [--no-checkpoints]                                 ... or the chain alone
  npm run audit-trail:verify -- --range <file>           an export of part of a trail, from its first record's prev
  npm run audit-trail:verify -- --database-url <url>     the PostgreSQL table (or AUDIT_DATABASE_URL in the environment)
      [--export <file>]                                  ... and write it to <file> as JSON lines
  npm run audit-trail:verify -- --sql [--writer-role <role>]   the SQL that prepares the table and its writer role`;

async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(
      argv,
      {
        range: { type: 'boolean' },
        'database-url': { type: 'string' },
        export: { type: 'string' },
        sql: { type: 'boolean' },
        checkpoints: { type: 'string' },
        'no-checkpoints': { type: 'boolean' },
        trail: { type: 'string' },
        'writer-role': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      { positionals: true },
    );
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`${err.message}\n${USAGE}`);
    return 2;
  }
  const { values: o, positionals } = parsed;
  if (o.help) {
    console.log(USAGE);
    return 0;
  }
  if (o.sql) {
    console.log(auditStoreSql({ writerRole: o['writer-role'] ?? 'journey_audit_writer' }));
    return 0;
  }
  if (positionals.length > 1) {
    console.error(USAGE);
    return 2;
  }
  const [file] = positionals;
  if (file) {
    if (o['database-url'] || o.export) {
      console.error(`a file or the database, not both\n${USAGE}`);
      return 2;
    }
    let checkpoints: Checkpoint[] | undefined;
    try {
      checkpoints = o['no-checkpoints'] ? undefined : await fileCheckpoints(file, o.checkpoints, o.trail);
    } catch (err) {
      console.error(`checkpoints: ${err instanceof Error ? err.message : String(err)}`);
      return 2;
    }
    return report(file, await checkFile(file, o.range === true, checkpoints), checkpoints);
  }
  let url: string | undefined;
  try {
    url = o['database-url'] ?? databaseUrlFromEnv();
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    return 2;
  }
  if (!url) {
    console.error(USAGE);
    return 2;
  }
  let checkpoints: Checkpoint[] | undefined;
  try {
    checkpoints = o['no-checkpoints'] ? undefined : await bucketCheckpoints(o.trail ?? 'table');
  } catch (err) {
    console.error(`checkpoints: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  return report('the audit table', await checkTable(url, o.export, checkpoints), checkpoints);
}

/** AUDIT_DATABASE_URL, or the file AUDIT_DATABASE_URL_FILE names (as the engine reads it). */
function databaseUrlFromEnv(): string | undefined {
  const file = process.env.AUDIT_DATABASE_URL_FILE;
  if (file) {
    try {
      return readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new Error(
        `AUDIT_DATABASE_URL_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
  return process.env.AUDIT_DATABASE_URL || undefined;
}

type Outcome = ChainCheck | { error: string };

/** The checkpoints of a trail file: named, beside it, or in the bucket the environment names; none when there are none. */
async function fileCheckpoints(
  file: string,
  named: string | undefined,
  trail: string | undefined,
): Promise<Checkpoint[] | undefined> {
  const name = trail ?? path.basename(file, '.jsonl');
  if (named) return new FileCheckpoints(named).list(name);
  if (existsSync(`${file}.checkpoints`)) return new FileCheckpoints(`${file}.checkpoints`).list(name);
  return bucketCheckpoints(name);
}

/** The checkpoints of a trail in the bucket of AUDIT_CHECKPOINT_BUCKET; undefined when none is set. */
async function bucketCheckpoints(trail: string): Promise<Checkpoint[] | undefined> {
  if (!process.env.AUDIT_CHECKPOINT_BUCKET) return undefined;
  const { audit } = loadAuditConfig({ ...process.env, AUDIT_STORE: 'file', AUDIT_CHECKPOINTS: 's3' });
  return checkpointStoreFor(audit)?.list(trail);
}

async function checkFile(file: string, range: boolean, checkpoints: Checkpoint[] | undefined): Promise<Outcome> {
  const verifier = new ChainVerifier({ from: range ? 'first' : 'genesis', ...(checkpoints ? { checkpoints } : {}) });
  try {
    const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
    for await (const line of lines) verifier.add(line);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
  return verifier.result();
}

async function checkTable(
  url: string,
  exportFile: string | undefined,
  checkpoints: Checkpoint[] | undefined,
): Promise<Outcome> {
  const out = exportFile ? createWriteStream(exportFile, { mode: 0o600 }) : undefined;
  try {
    if (out) await once(out, 'open');
    const check = await verifyAuditTable(url, {
      ...(checkpoints ? { checkpoints } : {}),
      ...(out
        ? {
            onRecord: async (line: string) => {
              if (!out.write(`${line}\n`)) await once(out, 'drain');
            },
          }
        : {}),
    });
    if (out) {
      out.end();
      await once(out, 'finish');
      console.log(`${exportFile}: ${check.records} records written`);
    }
    return check;
  } catch (err) {
    out?.destroy();
    // A connection or query error: its code and message (PostgreSQL's own: never the URL, never a record).
    const code = (err as { code?: string }).code;
    return { error: `${err instanceof Error ? err.message : String(err)}${code ? ` (${code})` : ''}` };
  }
}

function report(what: string, check: Outcome, checkpoints?: Checkpoint[]): number {
  if ('error' in check) {
    console.error(`${what}: ${check.error}`);
    return 2;
  }
  const anchored =
    checkpoints === undefined
      ? ' (no checkpoints to check it against)'
      : ` and matches its ${checkpoints.length} checkpoints`;
  if (check.ok) {
    console.log(`${what}: ${check.records} records, the chain is whole${anchored}`);
    return 0;
  }
  console.error(`${what}: ${check.problem} (record ${check.at} of ${check.records}); the records before it are whole`);
  return 1;
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
