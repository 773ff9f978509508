// `npm run ops -- show <journey id>`: a journey's history in the temporal CLI, decoded by the codec server as the
// person signed in (`npm run ops -- sign-in`): their access token goes to the codec server (and to Temporal) in the
// CLI's environment, never on its command line, so the codec server records who read the patient's data by their
// own name. The static codec token is for machines alone.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { operatorSession, type OidcSettings, type SignInIo } from './ops-sign-in';

export interface ShowOptions {
  journeyId: string;
  oidc: OidcSettings;
  /** The Temporal frontend (TEMPORAL_ADDRESS, else 127.0.0.1:7233). */
  address: string;
  namespace: string;
  /** The codec server (CODEC_ENDPOINT, else the local stack's). */
  codecEndpoint: string;
}

/** The temporal CLI: TEMPORAL_CLI, else the project's (.tools/bin), else on the PATH. */
export function temporalCli(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_CLI) return env.TEMPORAL_CLI;
  const tools = env.TEMPORAL_TOOLS_DIR ?? path.resolve(__dirname, '../../.tools');
  const local = path.join(tools, 'bin', 'temporal');
  return existsSync(local) ? local : 'temporal';
}

/** The CLI's command line and environment: the token in the environment only (a process list shows arguments). */
export function showInvocation(
  o: Omit<ShowOptions, 'oidc'>,
  token: string,
  env: NodeJS.ProcessEnv = process.env,
): { command: string; args: string[]; env: NodeJS.ProcessEnv } {
  return {
    command: temporalCli(env),
    args: [
      'workflow',
      'show',
      '--workflow-id',
      `journey-${o.journeyId}`,
      '--address',
      o.address,
      '--namespace',
      o.namespace,
      '--codec-endpoint',
      o.codecEndpoint,
    ],
    env: { ...env, TEMPORAL_CODEC_AUTH: `Bearer ${token}`, TEMPORAL_API_KEY: token },
  };
}

/** Signs the person in (or uses their kept sign-in) and runs the CLI; its exit code. */
export async function runShow(o: ShowOptions, io: SignInIo): Promise<number> {
  const session = await operatorSession(o.oidc, io);
  io.err(`ops: showing journey ${o.journeyId} as ${session.subject}\n`);
  const run = showInvocation(o, await session.token());
  const child = spawn(run.command, run.args, { env: run.env, stdio: 'inherit' });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}
