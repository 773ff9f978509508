// docker-compose.yml's primary and synchronous standby, checked without a Docker engine: Debian's PostgreSQL runs
// the primary with the compose file's settings, then the postgres-replication job's script and the postgres-standby
// service's script run here as written, with the container's names and paths pointed at this machine (the `postgres`
// host at 127.0.0.1, gosu at setpriv). The standby streams as postgres_standby and the primary names it synchronous;
// a commit waits while it is down, and goes through once the primary is told to go on alone, as docs/operations.md
// says.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { findPostgresBin, freePort } from '../../scripts/lib/postgres-server';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { until } from '../support/until';
import { loadCompose, parseDotenv, read } from './compose-file';

const userEnv = { ...parseDotenv(read('deploy/.env.example')).values, POSTGRES_PASSWORD: 'x', SECRETS_GID: '1000' };
const { compose } = loadCompose(read('docker-compose.yml'), userEnv);
const scriptOf = (name: string) => (compose.services[name]!.command ?? []).join('\n');
const asRoot = process.getuid?.() === 0;

describe("docker-compose.yml's primary and synchronous standby, run natively", () => {
  let primary: TestPostgres;
  let work: string;
  let standby: ChildProcess | undefined;
  let standbyPort: number;
  const secrets = () => path.join(work, 'run-secrets');

  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'compose-standby-'));
    chmodSync(work, 0o755);
    // The primary with the compose file's -c settings.
    const args = compose.services.postgres!.command ?? [];
    const settings = Object.fromEntries(
      args
        .filter((_, i) => args[i - 1] === '-c')
        .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)] as const),
    );
    // The image's max_connections (100), which a hot standby must match or exceed: this module's servers take 200.
    primary = await startTestPostgres({ settings: { ...settings, max_connections: '100' } });
    mkdirSync(secrets(), { mode: 0o755 });
    writeFileSync(path.join(secrets(), 'postgres_replication_password'), 'a-replication-password-of-the-test\n', {
      mode: 0o644,
    });
    standbyPort = await freePort();
  }, 120_000);

  afterAll(async () => {
    standby?.kill('SIGQUIT');
    await primary?.cleanup();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const query = async <T>(url: string, sql: string) => {
    const c = new Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    await c.connect();
    try {
      return (await c.query(sql)).rows as T[];
    } finally {
      await c.end();
    }
  };

  it('runs the replication job against the primary, twice without harm', async () => {
    const pgBin = await findPostgresBin();
    const url = new URL(primary.url);
    const job = scriptOf('postgres-replication')
      .replaceAll('/primary/', `${primary.dataDir}/`)
      .replaceAll('/run/secrets/', `${secrets()}/`);
    for (let i = 0; i < 2; i++) {
      const out = execFileSync('/bin/sh', ['-ec', job], {
        env: {
          PATH: `${pgBin}:${process.env.PATH}`,
          PGHOST: '127.0.0.1',
          PGPORT: url.port,
          PGUSER: decodeURIComponent(url.username),
          PGPASSWORD: decodeURIComponent(url.password),
          PGDATABASE: 'postgres',
        },
        encoding: 'utf8',
      });
      expect(out).toContain('replication is ready');
    }
  });

  it('starts the standby from a copy of the primary, streaming as the synchronous postgres_standby', async () => {
    const bin = path.join(work, 'bin');
    mkdirSync(bin, { mode: 0o755 });
    // gosu USER CMD...: setpriv as root (the image's entrypoint runs as root), the command itself otherwise.
    writeFileSync(
      path.join(bin, 'gosu'),
      asRoot
        ? '#!/bin/sh\nshift\nexec setpriv --reuid=postgres --regid=postgres --init-groups "$@"\n'
        : '#!/bin/sh\nshift\nexec "$@"\n',
      { mode: 0o755 },
    );
    if (!asRoot) writeFileSync(path.join(bin, 'chown'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const sockets = path.join(work, 'sock');
    mkdirSync(sockets, { mode: 0o777 });
    chmodSync(sockets, 0o777);
    const port = new URL(primary.url).port;
    const script = scriptOf('postgres-standby')
      .replaceAll('/run/secrets/', `${secrets()}/`)
      .replaceAll('/var/lib/postgresql/standby.pgpass', path.join(work, 'standby.pgpass'))
      .replaceAll('postgres:5432:*', `127.0.0.1:${port}:*`)
      .replaceAll('-h postgres ', `-h 127.0.0.1 -p ${port} `)
      .replaceAll('host=postgres port=5432', `host=127.0.0.1 port=${port}`)
      .replaceAll('postgres -c hot_standby=on', `postgres -c hot_standby=on -p ${standbyPort} -k ${sockets}`);
    expect(script).not.toMatch(/host=postgres|-h postgres /);
    standby = spawn('/bin/bash', ['-ec', script], {
      env: {
        PATH: `${bin}:${await findPostgresBin()}:${process.env.PATH}`,
        PGDATA: path.join(work, 'standby-data'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    standby.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    standby.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const replicating = await until(
      'the standby streaming',
      async () =>
        (
          await query<{ application_name: string; state: string; sync_state: string }>(
            primary.url,
            'SELECT application_name, state, sync_state FROM pg_stat_replication',
          )
        ).find((r) => r.application_name === 'postgres_standby' && r.state === 'streaming'),
      90_000,
    ).catch(() => undefined);
    expect({ replicating, tail: replicating ? '' : `exit ${standby.exitCode}: ${out.slice(-2000)}` }).toEqual({
      replicating: { application_name: 'postgres_standby', state: 'streaming', sync_state: 'async' },
      tail: '',
    });

    // The job that names it synchronous, once it streams.
    const url = new URL(primary.url);
    const named = execFileSync('/bin/sh', ['-ec', scriptOf('postgres-synchronous')], {
      env: {
        PATH: `${await findPostgresBin()}:${process.env.PATH}`,
        PGHOST: '127.0.0.1',
        PGPORT: url.port,
        PGUSER: decodeURIComponent(url.username),
        PGPASSWORD: decodeURIComponent(url.password),
        PGDATABASE: 'postgres',
      },
      encoding: 'utf8',
    });
    expect(named).toContain('postgres_standby is the synchronous standby');
    const sync = await until(
      'the standby synchronous',
      async () =>
        (
          await query<{ sync_state: string }>(
            primary.url,
            "SELECT sync_state FROM pg_stat_replication WHERE application_name = 'postgres_standby'",
          )
        ).find((r) => r.sync_state === 'sync'),
      30_000,
    );
    expect(sync).toEqual({ sync_state: 'sync' });

    // A commit on the primary is on the standby when it returns.
    await query(primary.url, 'CREATE TABLE acknowledged (id int PRIMARY KEY)');
    await query(primary.url, 'INSERT INTO acknowledged VALUES (1)');
    const standbyUrl = new URL(primary.url);
    standbyUrl.port = String(standbyPort);
    expect(await query(standbyUrl.toString(), 'SELECT id FROM acknowledged')).toEqual([{ id: 1 }]);
  }, 180_000);

  it('holds a commit while the standby is down, and lets it through once the primary goes on alone', async () => {
    standby!.kill('SIGQUIT');
    await new Promise((r) => standby!.once('exit', r));
    standby = undefined;
    const c = new Client({ connectionString: primary.url });
    await c.connect();
    try {
      const insert = c.query('INSERT INTO acknowledged VALUES (2)');
      const waited = await Promise.race([insert.then(() => 'committed'), sleep(3_000).then(() => 'waiting')]);
      expect(waited).toBe('waiting');
      // docs/operations.md: the primary told to go on alone.
      await query(primary.url, "ALTER SYSTEM SET synchronous_standby_names = ''");
      await query(primary.url, 'SELECT pg_reload_conf()');
      await insert;
      expect(await query(primary.url, 'SELECT count(*)::int AS n FROM acknowledged')).toEqual([{ n: 2 }]);
    } finally {
      await c.end();
    }
  }, 60_000);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
