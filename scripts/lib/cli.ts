// What the command-line tools (`npm run demo`, `npm run ops`) share beyond HTTP: a strict command line whose faults
// are UsageErrors, the --api URL, tables, and the process's exit.
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A command line the tool cannot run with: printed with its usage, exit status 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The --api value as a URL: http or https only. */
export function parseApiUrl(api: string): URL {
  let url: URL;
  try {
    url = new URL(api);
  } catch {
    throw new UsageError(`--api must be a URL such as http://127.0.0.1:3000, got "${api}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--api must be an http(s) URL');
  return url;
}

/** parseArgs, strict: an unknown option or a missing value is a UsageError. */
export function parseCommandLine<O extends NonNullable<ParseArgsConfig['options']>>(
  args: string[],
  options: O,
  { positionals = false } = {},
) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: positionals });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

/** Columns padded to their widest cell; with `rule`, a line of dashes under the header row. */
export function table(rows: string[][], { rule = false } = {}): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  const head = rule ? [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  ')] : [line(rows[0]!)];
  return [...head, ...rows.slice(1).map(line)].join('\n');
}

/** Runs a command's main and exits with its status. */
export function exitWith(main: () => Promise<number>): void {
  void main().then((code) => {
    // Keep-alive sockets would hold the process open a few seconds longer.
    process.exitCode = code;
    setImmediate(() => process.exit(code));
  });
}
