/** `npm run sandbox`: the exam-service sandbox as a standalone server (SANDBOX_* variables, see src/sandbox/README.md). */
import { asStackPart } from '../part-lifecycle';
import { sandboxConfigFromEnv } from './config';
import { DEMO_API_KEY } from './seed';
import { buildSandbox } from './server';

async function main(): Promise<void> {
  const sandbox = await buildSandbox({ port: 4010, logLevel: 'info', ...sandboxConfigFromEnv() });
  const { baseUrl, config } = sandbox;
  console.log(
    `exam-service sandbox on ${baseUrl} (try POST ${baseUrl}/api/exam_list with {"api_key":"${DEMO_API_KEY}"})`,
  );
  console.log(`clock: ${config.clockMode}; control surface: ${baseUrl}/_sandbox/patient-exams`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    console.log(`${signal}: stopping the sandbox`);
    sandbox.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  asStackPart(5_000, (message) => console.log(message));
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
