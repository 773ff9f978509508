// `npm run demo`: every scenario through the clinic API against the exam-service sandbox, in test mode, so the
// sandbox's simulated provider calls back through the real webhook. Uploads the required attachments, starts each
// journey with an Idempotency-Key (and starts it again to show the replay), follows GET /v1/journeys/:id live and
// ends with a table. Exits 0 when every journey ended as expected, 1 when one did not (or did not finish in time),
// 2 when the demo could not run (no API, refused token, bad options).
//
//   npm run demo                                   against a running stack (`npm start` in another terminal)
//   npm run demo -- --start-stack                  starts its own local stack first and stops it afterwards
//   npm run demo -- --api http://127.0.0.1:13000 --token demo-clinic-token --timeout 120
//
// The parts: demo/options (the command line), demo/api (the client), demo/scenarios (the journeys and their requests),
// demo/verify (judging a journey), demo/follow, demo/report (the output), demo/local-stack, demo/run (one run).
import os from 'node:os';
import path from 'node:path';
import { exitWith } from './lib/cli';
import { ApiClient, HttpError, UnreachableError } from './demo/api';
import { LocalStack } from './demo/local-stack';
import { parseOptions, USAGE, type Options } from './demo/options';
import { muteProgress, red } from './demo/report';
import { checkReady, runDemo, say, SetupError } from './demo/run';

export {
  ApiClient,
  HttpError,
  UnreachableError,
  type ExamView,
  type JourneyView,
  type ReceivedEvent,
} from './demo/api';
export { parseOptions, UsageError, USAGE, type Options } from './demo/options';
export {
  demoScenarios,
  journeyBody,
  PARTNER_PHARMACY_ID,
  RETAIL_NCPDPID,
  sampleAttachment,
  type DemoScenario,
  type ExamExpectation,
} from './demo/scenarios';
export { eventsSeen, isFinished, isFinishing, outcomeOf, verify } from './demo/verify';

async function main(): Promise<number> {
  let opts: Options | undefined;
  try {
    opts = parseOptions(process.argv.slice(2), process.env);
  } catch (err) {
    console.error(`demo: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (!opts) {
    say(USAGE);
    return 0;
  }
  const client = new ApiClient(opts.api, opts.token);
  say(`Patient journey demo against ${opts.api} (API token from ${opts.tokenSource}).`);

  let stack: LocalStack | undefined;
  let stopping: Promise<void> | undefined;
  const stopStack = () =>
    (stopping ??= (async () => {
      if (!stack) return;
      if (stack.running) say(`\nStopping the stack (SIGTERM to ${stack.pid})...`);
      const code = await stack.stop();
      say(`The stack ${stack.exitedEarly ? 'had ' : ''}stopped (${code}); its output is in ${stack.logPath}.`);
    })());
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    muteProgress();
    console.error(`\n[demo] ${signal}: stopping`);
    void stopStack().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => stack?.killOnExit());

  try {
    if (opts.startStack) {
      const answer = await client.ready(3_000).then(
        () => 'ready',
        (err: unknown) => (err instanceof UnreachableError ? undefined : (err as Error).message),
      );
      if (answer !== undefined) {
        throw new SetupError(
          `Something already answers at ${opts.api} (${answer}): a stack seems to run there. Run without ` +
            '--start-stack to use it, or give the started stack other ports (API_PORT, TEMPORAL_PORT, ...).',
        );
      }
      const logPath = path.join(os.tmpdir(), `journey-demo-stack-${process.pid}.log`);
      say(`Starting a local stack (scripts/local-stack.ts, API port ${opts.stackApiPort}); output also in ${logPath}`);
      stack = new LocalStack(logPath, opts.stackApiPort!);
      try {
        await stack.waitReady(client, opts.stackReadyTimeoutMs);
      } catch (err) {
        const tail = stack.lastLines();
        throw new SetupError(`${(err as Error).message}.${tail ? `\nIts last lines:\n${tail}` : ''}`);
      }
      stack.quiet(true);
      say('The stack is ready.\n');
    } else {
      await checkReady(client);
      say('The API is ready (Temporal answers).');
    }
    const started = stack;
    const ok = await runDemo(opts, client, () => started?.exitedEarly);
    if (!ok && stack) say(`The stack's output (worker, API, sandbox) is in ${stack.logPath}.`);
    return ok ? 0 : 1;
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) {
      console.error(red(`\n${err.message}\nThe API refused the token from ${opts.tokenSource}.`));
    } else if (err instanceof SetupError || err instanceof HttpError || err instanceof UnreachableError) {
      console.error(red(`\n${err.message}`));
    } else {
      console.error(red(`\n${err instanceof Error ? (err.stack ?? err.message) : String(err)}`));
    }
    return 2;
  } finally {
    await stopStack();
  }
}

if (require.main === module) exitWith(main);
