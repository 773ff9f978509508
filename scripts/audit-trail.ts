// `npm run audit-trail:verify -- <file>`: checks an audit trail's hash chain (JSON lines, as the codec server writes
// with CODEC_AUDIT_FILE) from its first record; exit code 1 naming the first record that was changed, removed or put
// out of place.
import { readFileSync } from 'node:fs';
import { verifyAuditChain } from '../src/audit/log';
import { exitWith } from './lib/cli';

function main(argv: string[]): Promise<number> {
  return Promise.resolve(check(argv));
}

function check(argv: string[]): number {
  const [file] = argv;
  if (!file || argv.length !== 1) {
    console.error('Usage: npm run audit-trail:verify -- <audit trail file (JSON lines)>');
    return 2;
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    console.error(`${file}: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  const check = verifyAuditChain(text.split('\n'));
  if (check.ok) {
    console.log(`${file}: ${check.records} records, the chain is whole`);
    return 0;
  }
  console.error(`${file}: ${check.problem} (record ${check.at} of ${check.records}); the records before it are whole`);
  return 1;
}

if (require.main === module) exitWith(() => main(process.argv.slice(2)));
