// Point-in-time backups of the PostgreSQL cluster (postgres-cluster.ts) with pgBackRest, Debian's package
// (scripts/install-postgres-ha.sh), into a bucket of the S3 object store (MinIO): full backups, the continuous WAL
// archive every node's archive_command pushes, their retention, and a restore to a moment into a new data folder.
//
// - One stanza (`journeys`) for the cluster: each node has a configuration file of its own (its data folder, port and
//   socket as pg1), the same repository; a backup is taken on the primary, the WAL of whichever node is primary goes
//   to the same archive (a failover starts a new timeline, which recovery follows).
// - Retention: `retentionFull` full backups are kept (older ones expire at the next backup), and the WAL the oldest
//   kept one needs onwards: a restore can reach any moment since the oldest kept full backup began.
// - pgBackRest speaks S3 over TLS only: MinIO serves HTTPS (its certsDir) and pgBackRest trusts the CA file given.
// - The S3 keys go in the configuration files (mode 0600, the servers' OS user's), never in a command line or an
//   environment; pgBackRest runs as the servers' OS user, through setpriv, as they do.
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { promisify } from 'node:util';
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { startPostgres, type PostgresServer } from '../postgres-server';
import { waitFor } from '../processes';
import { ensureOwnedDir, writeOwned, type ArchiveTarget, type PostgresCluster } from './postgres-cluster';

const execFileAsync = promisify(execFile);
export const STANZA = 'journeys';

export interface BackupRepository {
  /**
   * https://<name>:<port> (MinIO with its certsDir). pgBackRest checks the name against the certificate's DNS names
   * only (not its IP addresses): on this machine `localhost`, which MinIO answers on as well.
   */
  endpoint: string;
  bucket: string;
  /** The folder inside the bucket. Default `/pgbackrest`. */
  path?: string;
  region?: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The CA (or the self-signed certificate) the endpoint's certificate is checked against. */
  caFile: string;
}

export interface BackupOptions {
  /** pgBackRest's configuration files, logs, locks and spool under it. */
  dir: string;
  repository: BackupRepository;
  /** Full backups kept. Default 2. */
  retentionFull?: number;
  log?: (line: string) => void;
}

export interface BackupResult {
  type: 'full' | 'diff' | 'incr';
  /** On which node it was taken (the primary). */
  node: string;
  ms: number;
}

export interface RestoreResult {
  server: PostgresServer;
  /** pgBackRest's restore (files and the restore command's settings), ms. */
  restoreMs: number;
  /** Recovery replaying the archive up to the target until the server is promoted and takes writes, ms. */
  recoveryMs: number;
}

/** uid, gid and setpriv's arguments of the OS user the servers run as (postgres-cluster.ts's runAs). */
type RunAs = PostgresCluster['runAs'];

export class PostgresBackups implements ArchiveTarget {
  readonly stanza = STANZA;
  readonly dir: string;
  readonly retentionFull: number;
  #cluster: PostgresCluster | undefined;
  #log: (line: string) => void;

  constructor(readonly o: BackupOptions) {
    this.dir = path.resolve(o.dir);
    this.retentionFull = o.retentionFull ?? 2;
    this.#log = o.log ?? (() => {});
  }

  /** The cluster it backs up (its nodes, its OS user): set before the cluster starts. */
  attach(cluster: PostgresCluster): this {
    this.#cluster = cluster;
    return this;
  }

  /** Makes the bucket when it is missing (MinIO takes a moment to answer after its port opens). */
  async ensureBucket(): Promise<void> {
    const r = this.o.repository;
    const ca = await fs.readFile(r.caFile);
    const s3 = new S3Client({
      region: r.region ?? 'us-east-1',
      endpoint: r.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: r.accessKeyId, secretAccessKey: r.secretAccessKey },
      requestHandler: { httpsAgent: new https.Agent({ ca }) },
    });
    try {
      await waitFor(
        `the bucket ${r.bucket}`,
        async () => {
          try {
            await s3.send(new HeadBucketCommand({ Bucket: r.bucket }));
          } catch (err) {
            if ((err as { name?: string }).name !== 'NotFound') throw err;
            await s3.send(new CreateBucketCommand({ Bucket: r.bucket }));
          }
          return true;
        },
        30_000,
        500,
      );
    } finally {
      s3.destroy();
    }
  }

  /** A node's configuration file (ArchiveTarget): written now, mode 0600, the servers' user's. */
  async configFor(node: { name: string; dataDir: string; port: number; socketDir: string }): Promise<string> {
    const runAs = this.#runAs();
    await this.#ownedDir(this.dir, runAs);
    await this.#copyCa(runAs);
    const own = path.join(this.dir, node.name);
    await this.#ownedDir(own, runAs);
    await this.#ownedDir(path.join(own, 'log'), runAs);
    const file = path.join(own, 'pgbackrest.conf');
    await writeOwned(file, this.#config(own, node), runAs);
    return file;
  }

  /** Creates the stanza on the primary (once; again is a no-op) and checks that WAL reaches the archive. */
  async createStanza(): Promise<void> {
    const conf = await this.#primaryConfig();
    await this.#run(['--config', conf.file, `--stanza=${STANZA}`, 'stanza-create']);
    await this.check();
  }

  /** pgBackRest's check on the primary: switches to a new WAL segment and waits until the archive has it. */
  async check(): Promise<void> {
    const conf = await this.#primaryConfig();
    await this.#run(['--config', conf.file, `--stanza=${STANZA}`, '--archive-timeout=60', 'check']);
  }

  /** A backup taken on the primary; the next full one expires what retention no longer keeps. */
  async backup(type: BackupResult['type'] = 'full'): Promise<BackupResult> {
    const conf = await this.#primaryConfig();
    const started = Date.now();
    // A standby just promoted has its new timeline in pg_control only after a checkpoint, which PostgreSQL does not
    // hurry; pgBackRest refuses a backup until then ("WAL timeline 2 does not match pg_control timeline 1").
    await this.#cluster!.checkpoint();
    await this.#run(['--config', conf.file, `--stanza=${STANZA}`, `--type=${type}`, 'backup']);
    const ms = Date.now() - started;
    this.#log(`pgbackrest: ${type} backup on ${conf.node} in ${ms} ms`);
    return { type, node: conf.node, ms };
  }

  /** pgBackRest's `info` (JSON): the backups and the archive's range. */
  async info(): Promise<unknown> {
    const conf = await this.#primaryConfig().catch(() => undefined);
    const file = conf?.file ?? path.join(this.dir, this.#cluster!.nodes[0]!.name, 'pgbackrest.conf');
    const out = await this.#run(['--config', file, `--stanza=${STANZA}`, '--output=json', 'info']);
    return JSON.parse(out) as unknown;
  }

  /**
   * Restores the cluster as it was at `target` into `dataDir` (a new, empty or missing folder) and starts it there, a
   * lone server on `port` (not part of the cluster, no archiving); resolves once recovery has reached the target and
   * it takes writes. The restore command's pgBackRest configuration is written beside the data folder.
   */
  async restoreToTime(o: { target: Date; dataDir: string; port: number; database?: string }): Promise<RestoreResult> {
    const cluster = this.#cluster;
    if (!cluster) throw new Error('pgbackrest: no cluster attached');
    const runAs = this.#runAs();
    const dataDir = path.resolve(o.dataDir);
    const entries = await fs.readdir(dataDir).catch(() => [] as string[]);
    if (entries.length > 0) throw new Error(`pgbackrest: restore into ${dataDir}, which is not empty`);
    await this.#ownedDir(dataDir, runAs);
    const confDir = `${dataDir}.pgbackrest`;
    await this.#ownedDir(confDir, runAs);
    await this.#ownedDir(path.join(confDir, 'log'), runAs);
    const socketDir = `${dataDir}.sock`;
    const conf = path.join(confDir, 'pgbackrest.conf');
    await this.#copyCa(runAs);
    await writeOwned(conf, this.#config(confDir, { dataDir, port: o.port, socketDir }), runAs);

    const started = Date.now();
    await this.#run([
      '--config',
      conf,
      `--stanza=${STANZA}`,
      '--type=time',
      `--target=${pgTimestamp(o.target)}`,
      '--target-action=promote',
      '--target-timeline=latest',
      'restore',
    ]);
    const restoreMs = Date.now() - started;
    this.#log(`pgbackrest: restored to ${o.target.toISOString()} into ${dataDir} in ${restoreMs} ms`);

    const recovering = Date.now();
    const server = await startPostgres({
      dataDir,
      port: o.port,
      database: o.database ?? cluster.database,
      user: cluster.superuser.user,
      password: cluster.superuser.password,
      readyTimeoutMs: 600_000,
      log: this.#log,
      settings: {
        // The copy is not the cluster: its own pg_hba (restored with the data), no archiving into the cluster's
        // repository, no standby to wait for.
        hba_file: path.join(dataDir, 'pg_hba.conf'),
        ident_file: path.join(dataDir, 'pg_ident.conf'),
        archive_mode: 'off',
        synchronous_standby_names: '',
        cluster_name: 'journeys-restored',
        hot_standby: 'on',
      },
    });
    try {
      // startPostgres is ready once a session opens, which a hot standby allows before the target: wait for the promotion.
      await waitFor(
        'the restored server to be promoted',
        async () => {
          const { Client } = await import('pg');
          const client = new Client({ connectionString: server.url, connectionTimeoutMillis: 3_000 });
          client.on('error', () => {});
          try {
            await client.connect();
            const { rows } = await client.query<{ r: boolean }>('SELECT pg_is_in_recovery() AS r');
            return rows[0]?.r === false;
          } finally {
            await client.end().catch(() => {});
          }
        },
        600_000,
        250,
      );
    } catch (err) {
      await server.stop();
      throw err;
    }
    const recoveryMs = Date.now() - recovering;
    this.#log(`pgbackrest: the restored server took writes after ${recoveryMs} ms of recovery`);
    return { server, restoreMs, recoveryMs };
  }

  #config(own: string, pg: { dataDir: string; port: number; socketDir: string }): string {
    const r = this.o.repository;
    const url = new URL(r.endpoint);
    if (url.protocol !== 'https:')
      throw new Error('pgbackrest: the S3 endpoint must be https (pgBackRest speaks TLS only)');
    return [
      '[global]',
      'repo1-type=s3',
      `repo1-path=${r.path ?? '/pgbackrest'}`,
      `repo1-s3-bucket=${r.bucket}`,
      `repo1-s3-endpoint=${url.hostname}`,
      `repo1-storage-port=${url.port || '443'}`,
      `repo1-s3-region=${r.region ?? 'us-east-1'}`,
      'repo1-s3-uri-style=path',
      `repo1-s3-key=${r.accessKeyId}`,
      `repo1-s3-key-secret=${r.secretAccessKey}`,
      `repo1-storage-ca-file=${this.#caFile}`,
      `repo1-retention-full=${this.retentionFull}`,
      'repo1-retention-full-type=count',
      'compress-type=lz4',
      'start-fast=y',
      'process-max=2',
      `log-path=${path.join(own, 'log')}`,
      `lock-path=${path.join(own, 'lock')}`,
      `spool-path=${path.join(own, 'spool')}`,
      'log-level-console=warn',
      'log-level-stderr=warn',
      'log-level-file=info',
      '',
      `[${STANZA}]`,
      `pg1-path=${pg.dataDir}`,
      `pg1-port=${pg.port}`,
      `pg1-socket-path=${pg.socketDir}`,
      'pg1-user=postgres',
      '',
    ].join('\n');
  }

  async #primaryConfig(): Promise<{ node: string; file: string }> {
    const cluster = this.#cluster;
    if (!cluster) throw new Error('pgbackrest: no cluster attached');
    const node = await cluster.primary();
    if (!node) throw new Error('pgbackrest: the cluster has no primary');
    return { node, file: path.join(this.dir, node, 'pgbackrest.conf') };
  }

  get #caFile(): string {
    return path.join(this.dir, 'repository-ca.crt');
  }

  /** The CA, copied where the servers' user reads it (the caller's copy may sit in a folder private to root). */
  async #copyCa(runAs: RunAs): Promise<void> {
    await this.#ownedDir(this.dir, runAs);
    await writeOwned(this.#caFile, await fs.readFile(this.o.repository.caFile, 'utf8'), runAs);
  }

  #runAs(): RunAs {
    if (!this.#cluster) throw new Error('pgbackrest: no cluster attached');
    return this.#cluster.runAs;
  }

  async #ownedDir(dir: string, runAs: RunAs): Promise<void> {
    await ensureOwnedDir(dir, runAs);
  }

  /** pgBackRest as the servers' user; its stderr in the error when it fails (never the configuration's keys). */
  async #run(args: string[]): Promise<string> {
    const runAs = this.#runAs();
    try {
      const { stdout } = await execFileAsync('setpriv', [...runAs.setpriv, 'pgbackrest', ...args], {
        cwd: '/',
        maxBuffer: 16 * 1024 * 1024,
        timeout: 15 * 60_000,
      });
      return stdout;
    } catch (err) {
      const e = err as Error & { stderr?: string; stdout?: string };
      const command = args.find((a) => !a.startsWith('-') && !a.includes('/')) ?? 'pgbackrest';
      throw new Error(`pgbackrest ${command} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
    }
  }
}

/** A time as PostgreSQL reads it in recovery_target_time: UTC, microseconds. */
function pgTimestamp(t: Date): string {
  return `${t.toISOString().replace('T', ' ').replace('Z', '')}+00`;
}
