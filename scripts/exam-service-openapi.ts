// Writes docs/exam-service.openapi.json from the contract schemas (src/exam-service/openapi.ts), formatted as the
// repository formats JSON. A test fails when the committed file differs from what this writes.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';
import { examServiceOpenApi } from '../src/exam-service/openapi';

export const EXAM_SERVICE_OPENAPI_FILE = path.resolve(__dirname, '../docs/exam-service.openapi.json');

export async function examServiceOpenApiText(): Promise<string> {
  const options = (await prettier.resolveConfig(EXAM_SERVICE_OPENAPI_FILE)) ?? {};
  return prettier.format(JSON.stringify(examServiceOpenApi()), { ...options, parser: 'json' });
}

// --print writes the document to stdout instead (the up-to-date test compares it with the committed file).
if (require.main === module) {
  void examServiceOpenApiText().then((text) => {
    if (process.argv.includes('--print')) return void process.stdout.write(text);
    writeFileSync(EXAM_SERVICE_OPENAPI_FILE, text);
    console.log(`wrote ${path.relative(process.cwd(), EXAM_SERVICE_OPENAPI_FILE)}`);
  });
}
