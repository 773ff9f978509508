// `npm run audit-trail:verify`: checks an audit trail's hash chain from its first record; exit code 1 naming the first
// record that was changed, removed or put out of place.
// - `-- <file>`: a trail file (JSON lines: AUDIT_FILE, CODEC_AUDIT_FILE, or a whole export of GET /admin/audit/export).
// - `-- --range <file>`: an export of part of the trail, checked from its first record's prev.
// - `-- --database-url <url>` (or AUDIT_DATABASE_URL, AUDIT_DATABASE_URL_FILE in the environment, which keeps the
//   password out of the process list): the PostgreSQL table itself; with `--export <file>` it is also written there
//   as JSON lines (mode 0600).
// - `-- --sql [--writer-role <role>]`: the SQL that prepares the table and its writer role, for a deployer.
// The database URL is never printed.
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { ChainVerifier, type ChainCheck } from '../src/audit/chain';
import { auditStoreSql, verifyAuditTable } from '../src/audit/postgres';
import { exitWith, parseCommandLine, UsageError } from './lib/cli';

const USAGE = `Usage:
  npm run audit-trail:verify -- <file>                   a trail file (JSON lines), from seq 1
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
    return report(file, await checkFile(file, o.range === true));
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
  return report('the audit table', await checkTable(url, o.export));
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

async function checkFile(file: string, range: boolean): Promise<Outcome> {
  const verifier = new ChainVerifier({ from: range ? 'first' : 'genesis' });
  try {
    const lines = createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
    for await (const line of lines) verifier.add(line);
  } catch (err) {
    return { error: err instanceof Error ? err.message : String(err) };
  }
  return verifier.result();
}

async function checkTable(url: string, exportFile: string | undefined): Promise<Outcome> {
  const out = exportFile ? createWriteStream(exportFile, { mode: 0o600 }) : undefined;
  try {
    if (out) await once(out, 'open');
    const check = await verifyAuditTable(url, {
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

function report(what: string, check: Outcome): number {
  if ('error' in check) {
    console.error(`${what}: ${check.error}`);
    return 2;
  }
  if (check.ok) {
    console.log(`${what}: ${check.records} records, the chain is whole`);
    return 0;
  }
  console.error(`${what}: ${check.problem} (record ${check.at} of ${check.records}); the records before it are whole`);
  return 1;
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
