// The clinic API's committed document (docs/clinic-api.openapi.json) and the typed client's types generated from it
// (clients/typescript/clinic-api.ts) are what `npm run client:generate` writes from the routes' schemas now. The
// generator runs as its own process (openapi-typescript is an ES module jest does not load).
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '../..');

describe('the typed clinic client', () => {
  it('is generated from the current document: run `npm run client:generate` when this fails', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'scripts/clinic-api.ts', '--print'],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
    );
    const { document, types } = JSON.parse(stdout) as { document: string; types: string };
    expect(readFileSync(path.join(ROOT, 'docs/clinic-api.openapi.json'), 'utf8')).toBe(document);
    expect(readFileSync(path.join(ROOT, 'clients/typescript/clinic-api.ts'), 'utf8')).toBe(types);
    // Only the clinic's operations: nothing of the operators' or the webhook's.
    const paths = Object.keys((JSON.parse(document) as { paths: Record<string, unknown> }).paths);
    expect(paths.every((p) => p.startsWith('/v1/'))).toBe(true);
    expect(paths).toContain('/v1/journeys/{journeyId}');
  }, 60_000);
});
