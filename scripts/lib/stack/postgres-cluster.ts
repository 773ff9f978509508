// A highly available PostgreSQL cluster on this machine, from Debian's packages (scripts/install-postgres-ha.sh):
// two PostgreSQL nodes run by Patroni, which holds the primary's lease in a three-member etcd (one member beside each
// node, as on its host, and a witness, the third voter), and HAProxy in front, the one address clients reach the
// primary by: it checks each node's Patroni REST API (`GET /primary` answers 200 on the primary alone) every second
// and cuts the sessions of a node that stops being it.
//
// - Synchronous: Patroni's synchronous_mode names the standby in synchronous_standby_names and synchronous_commit is
//   on, so a commit is acknowledged once the standby has its WAL on disk; Patroni promotes only that standby, so the
//   loss of one node loses no acknowledged commit. Not strict: with the standby gone the primary goes on alone (and
//   says so, synchronous_standby_names empty) rather than stop taking writes, until the standby is back.
// - Failover: the primary's lease (`ttl`) lapses when its Patroni stops renewing it (its host gone, SIGKILLed); the
//   standby's Patroni then promotes it (at its next loop, `loopWait`). The old primary, started again, is rewound
//   (pg_rewind, `use_pg_rewind`) and follows the new one as its synchronous standby.
// - Backups: with `archive`, every node's archive_command is pgBackRest's archive-push into the repository
//   (postgres-backup.ts), so the WAL of whichever node is primary reaches the object store.
//
// Ports from `portBase` (below 32768, out of the kernel's ephemeral range): +0 the primary's address (HAProxy), per
// node n (0, 1) +10+10n PostgreSQL, +11+10n Patroni's REST API, +12+10n etcd's client port, +13+10n etcd's peer port;
// the witness's etcd +32 and +33. Everything listens on 127.0.0.1 only.
//
// As root the nodes and etcd run as the `postgres` system user (PostgreSQL refuses root), through setpriv. Passwords
// (the superuser's, replication's, rewind's, the REST API's) are made at the first start into <dir>/secrets.json (mode
// 0600) and reach Patroni in its configuration file (mode 0600, the postgres user's); none is logged or put in a
// process's environment or command line.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { findPostgresBin } from '../postgres-server';
import { ManagedProcess, onKillAll, portProbe, sleep, waitFor } from '../processes';

const execFileAsync = promisify(execFile);
const HOST = '127.0.0.1';
/** The cluster's name in etcd (Patroni's scope). */
const SCOPE = 'journeys';
const NODES = ['pg-1', 'pg-2'] as const;
const WITNESS = 'witness';
const SUPERUSER = 'postgres';
const REPLICATION_USER = 'replicator';
const REWIND_USER = 'rewinder';
const REST_USER = 'patroni';

export type NodeName = (typeof NODES)[number];

/** Where pgBackRest keeps the archive (postgres-backup.ts): what a node's archive_command needs. */
export interface ArchiveTarget {
  /** pgBackRest's configuration file for a node (its pg1-path that node's data folder). */
  configFor(node: { name: string; dataDir: string; port: number; socketDir: string }): Promise<string>;
  readonly stanza: string;
}

export interface PostgresClusterOptions {
  /** Everything of the cluster under it: each node's data, etcd's, the logs, the secrets. */
  dir: string;
  /** The first of its ports (see above); the highest used is portBase + 33, below 32768. */
  portBase: number;
  /** The database made once the first primary is up. Default `journeys`. */
  database?: string;
  /** Progress lines (never secrets). */
  log?: (line: string) => void;
  /** Patroni's timing, seconds: the primary's lease, its loop, how long it retries etcd and PostgreSQL. */
  timing?: { ttl: number; loopWait: number; retryTimeout: number };
  /** Continuous WAL archiving through pgBackRest. */
  archive?: ArchiveTarget;
  /** Server settings on top of the cluster's (every node). */
  settings?: Record<string, string>;
}

/**
 * How long one WAL segment's push to the backup store may take, seconds: a push takes well under a second to a store
 * that answers, even on a loaded machine.
 */
export const ARCHIVE_PUSH_TIMEOUT_S = 20;

/** Defaults for a shared 2-core machine: a lapsed lease after 15 s, looked at every 2 s (loopWait + 2 retryTimeout ≤ ttl). */
export const DEFAULT_TIMING = { ttl: 15, loopWait: 2, retryTimeout: 5 };

interface Secrets {
  superuser: string;
  replication: string;
  rewind: string;
  rest: string;
}

interface RunAs {
  uid: number;
  gid: number;
  /** setpriv's arguments that run a command as that user, the parent-death signal set after the change. */
  setpriv: string[];
}

/** What Patroni's REST API says of one member (GET /cluster). */
export interface MemberState {
  name: string;
  role: string;
  state: string;
  timeline?: number;
  lag?: number | string;
}

export interface KilledNode {
  node: string;
  /** Every pid SIGKILLed: etcd's member, Patroni, the postmaster and its children. */
  pids: number[];
  /** When the signals went (Date.now()). */
  at: number;
  /**
   * Whether its etcd member led etcd: then etcd elects another leader first, which renews every lease, the primary's
   * too, so the lease lapses a full ttl after the election rather than after the last renewal.
   */
  etcdLeader: boolean;
}

class Node {
  readonly dir: string;
  readonly dataDir: string;
  readonly socketDir: string;
  readonly pgPort: number;
  readonly restPort: number;
  etcd!: ManagedProcess;
  patroni!: ManagedProcess;
  #guarded = false;

  constructor(
    readonly name: NodeName,
    root: string,
    base: number,
    index: number,
  ) {
    this.dir = path.join(root, name);
    this.dataDir = path.join(this.dir, 'data');
    this.socketDir = socketDirFor(path.join(this.dir, 'sock'));
    this.pgPort = base + 10 + 10 * index;
    this.restPort = base + 11 + 10 * index;
  }

  /** The postmaster's pid from postmaster.pid while one runs on the data folder. */
  postmasterPid(): number | undefined {
    try {
      const pid = Number(readFileSync(path.join(this.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
      return Number.isInteger(pid) && pid > 0 && isAlive(pid) ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Patroni starts the postmaster in a session of its own (it outlives a SIGKILLed Patroni, as it would on a host):
   * if this process exits without stopping the node, an immediate shutdown by the pid its data folder names.
   */
  guardPostmaster(): void {
    if (this.#guarded) return;
    this.#guarded = true;
    onKillAll(() => {
      const pid = this.postmasterPid();
      if (pid !== undefined) process.kill(pid, 'SIGQUIT');
    });
  }
}

export class PostgresCluster {
  readonly name = 'postgres cluster';
  readonly dir: string;
  readonly portBase: number;
  readonly database: string;
  readonly timing: { ttl: number; loopWait: number; retryTimeout: number };
  readonly nodes: Node[];
  readonly logDir: string;
  #witness!: ManagedProcess;
  #haproxy!: ManagedProcess;
  #secrets: Secrets | undefined;
  #runAs: RunAs | undefined;
  #log: (line: string) => void;
  #started = false;

  constructor(readonly o: PostgresClusterOptions) {
    if (o.portBase < 1024 || o.portBase + 33 >= 32_768) {
      throw new Error(`postgres cluster: portBase ${o.portBase} puts its ports outside 1024-32767`);
    }
    this.dir = path.resolve(o.dir);
    this.portBase = o.portBase;
    this.database = o.database ?? 'journeys';
    this.timing = o.timing ?? DEFAULT_TIMING;
    this.logDir = path.join(this.dir, 'logs');
    this.nodes = NODES.map((name, i) => new Node(name, this.dir, o.portBase, i));
    this.#log = o.log ?? (() => {});
  }

  /** The primary's address: HAProxy's port on 127.0.0.1. */
  get port(): number {
    return this.portBase;
  }

  get host(): string {
    return HOST;
  }

  /** The superuser, for setting up roles and databases; never for an engine process. Carries the password. */
  get superuser(): { user: string; password: string } {
    return { user: SUPERUSER, password: this.#need().superuser };
  }

  /**
   * The cluster's running processes, for a CPU account: each node's postmaster (whose backends are its children),
   * and the processes around them (Patroni, etcd's members, HAProxy), whose own CPU is the cluster's too.
   */
  processes(): { postmasters: number[]; others: number[] } {
    const pids = (xs: (number | undefined)[]) => xs.filter((p): p is number => p !== undefined);
    return {
      postmasters: pids(this.nodes.map((n) => n.postmasterPid())),
      others: pids([
        ...this.nodes.flatMap((n) => [n.patroni?.pid, n.etcd?.pid]),
        this.#witness?.pid,
        this.#haproxy?.pid,
      ]),
    };
  }

  /** postgres://superuser:password@127.0.0.1:<the primary's address>/<database>. Carries the password: never log it. */
  url(database = this.database): string {
    return `postgres://${SUPERUSER}:${encodeURIComponent(this.#need().superuser)}@${HOST}:${this.port}/${database}`;
  }

  /** A node's own address (not through HAProxy): for a test reading the standby. Carries the password. */
  nodeUrl(node: string, database = this.database): string {
    const n = this.#node(node);
    return `postgres://${SUPERUSER}:${encodeURIComponent(this.#need().superuser)}@${HOST}:${n.pgPort}/${database}`;
  }

  /** Starts etcd, both nodes and HAProxy; resolves once a primary with a synchronous standby answers through HAProxy. */
  async start(): Promise<void> {
    if (this.#started) return;
    const started = Date.now();
    await this.#prepare();
    this.#started = true;
    try {
      await Promise.all([this.#witness, ...this.nodes.map((n) => n.etcd)].map((p) => p.start().ready()));
      await waitFor('etcd to have a leader', () => this.#etcdHealthy(), 60_000, 250);
      // A new cluster: the first node alone, so it is the one that runs initdb (the other would wait for it anyway).
      // A cluster started again: both at once, since in synchronous mode only the node that was the primary or its
      // synchronous standby may take the lead, whichever of the two that was.
      const fresh = !this.nodes.some((n) => existsSync(path.join(n.dataDir, 'PG_VERSION')));
      const [first, ...rest] = fresh ? this.nodes : [];
      const startPatroni = async (n: Node) => {
        await n.patroni.start().ready();
        n.guardPostmaster();
      };
      if (first) {
        await startPatroni(first);
        await waitFor('the first primary', async () => (await this.primary()) !== undefined, 120_000, 500);
      }
      await Promise.all((fresh ? rest : this.nodes).map(startPatroni));
      await waitFor('a primary', async () => (await this.primary()) !== undefined, 120_000, 500);
      await this.#haproxy.start().ready();
      await this.waitForSynchronousStandby(180_000);
      await this.#ensureDatabase();
      this.#log(
        `postgres cluster: primary ${await this.primary()} with a synchronous standby, at ${HOST}:${this.port} ` +
          `(${Date.now() - started} ms; logs ${this.logDir})`,
      );
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  /** Stops the standbys' Patroni first (none takes over), then the primary's, etcd and HAProxy; no process is left. */
  async stop(): Promise<void> {
    if (!this.#started) return;
    this.#started = false;
    const primary = await this.primary().catch(() => undefined);
    const order = [...this.nodes].sort((a, b) => Number(a.name === primary) - Number(b.name === primary));
    for (const n of order) {
      await n.patroni.stop(90_000);
      await this.#stopPostmaster(n);
    }
    await this.#haproxy.stop(5_000);
    await Promise.all([...this.nodes.map((n) => n.etcd), this.#witness].map((p) => p.stop(10_000)));
  }

  /** What Patroni says of each member (from any node that answers). */
  async members(): Promise<MemberState[]> {
    for (const n of this.nodes) {
      try {
        const res = await fetch(`http://${HOST}:${n.restPort}/cluster`, { signal: AbortSignal.timeout(2_000) });
        if (!res.ok) continue;
        const body = (await res.json()) as { members?: MemberState[] };
        return body.members ?? [];
      } catch {
        // that node's Patroni is away: ask the other
      }
    }
    return [];
  }

  /** The node Patroni names leader and that answers as primary (GET /primary 200), or undefined. */
  async primary(): Promise<string | undefined> {
    for (const n of this.nodes) {
      if (!n.patroni.running) continue;
      try {
        const res = await fetch(`http://${HOST}:${n.restPort}/primary`, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        if (res.status === 200) return n.name;
      } catch {
        // not answering
      }
    }
    return undefined;
  }

  /**
   * Resolves once the primary has a streaming standby in sync_state `sync` (as the primary itself says) that Patroni
   * has also recorded as its synchronous standby (the one it would promote; a switchover goes to no other).
   */
  async waitForSynchronousStandby(timeoutMs = 120_000): Promise<string> {
    return waitFor(
      'a synchronous standby',
      async () => {
        const primary = await this.primary();
        if (!primary) return undefined;
        const rows = await this.#query<{ name: string }>(
          this.nodeUrl(primary, 'postgres'),
          "SELECT application_name AS name FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming'",
        );
        const name = rows[0]?.name;
        const member = (await this.members()).find((m) => m.name === name);
        return member?.role === 'sync_standby' ? name : undefined;
      },
      timeoutMs,
      250,
    );
  }

  /** Resolves once a session through the cluster's address lands on a primary that takes writes. */
  async waitForWritable(timeoutMs = 120_000): Promise<void> {
    await waitFor(
      'the address to reach a primary',
      async () => {
        const [row] = await this.#query<{ recovery: boolean }>(
          this.url('postgres'),
          'SELECT pg_is_in_recovery() AS recovery',
        );
        return row?.recovery === false;
      },
      timeoutMs,
      250,
    );
  }

  /** A CHECKPOINT on the primary (through the address). */
  async checkpoint(): Promise<void> {
    await this.#query(this.url('postgres'), 'CHECKPOINT');
  }

  /**
   * SIGKILL to every process of the primary's node at once, as when its host is lost: its etcd member, its Patroni,
   * the postmaster and every backend. Resolves once all are gone.
   */
  async killPrimary(): Promise<KilledNode> {
    const name = await this.primary();
    if (!name) throw new Error('postgres cluster: no primary to kill');
    return this.killNode(name);
  }

  /** SIGKILL to every process of a node (see killPrimary). */
  async killNode(name: string): Promise<KilledNode> {
    const n = this.#node(name);
    const etcdLeader = await this.#etcdLeads(this.nodes.indexOf(n));
    const postmaster = n.postmasterPid();
    const pgPids = postmaster === undefined ? [] : [postmaster, ...(await childPids(postmaster))];
    const pids = [n.etcd.pid, n.patroni.pid, ...pgPids].filter((p): p is number => p !== undefined);
    const at = Date.now();
    // Every signal before the first wait.
    for (const pid of pgPids) signal(pid, 'SIGKILL');
    const gone = [n.patroni.kill(), n.etcd.kill()];
    await Promise.all(gone);
    await waitGone(pgPids, 10_000);
    this.#log(`postgres cluster: ${name} killed (SIGKILL to ${pids.length} processes)`);
    return { node: name, pids, at, etcdLeader };
  }

  /** Starts a node killed or stopped before (its etcd member, then Patroni): it rejoins, rewound where it must be. */
  async startNode(name: string): Promise<void> {
    const n = this.#node(name);
    await n.etcd.start().ready();
    await n.patroni.start().ready();
    n.guardPostmaster();
  }

  /** Resolves once the node is a streaming replica of the current primary (Patroni's view). */
  async waitForReplica(name: string, timeoutMs = 180_000): Promise<void> {
    await waitFor(
      `${name} to follow the primary`,
      async () => {
        const m = (await this.members()).find((x) => x.name === name);
        return m && m.role !== 'leader' && (m.state === 'streaming' || m.state === 'running');
      },
      timeoutMs,
      500,
    );
  }

  /**
   * A planned switchover (Patroni's REST API, POST /switchover): the standby, caught up, becomes the primary and the
   * old primary follows it. Nothing acknowledged is lost: the candidate is the synchronous standby.
   */
  async switchover(candidate?: string): Promise<{ from: string; to: string }> {
    const from = await this.primary();
    if (!from) throw new Error('postgres cluster: no primary to switch over from');
    // Patroni switches over to its synchronous standby only: wait until there is one.
    const to = candidate ?? (await this.waitForSynchronousStandby(60_000));
    const auth = Buffer.from(`${REST_USER}:${this.#need().rest}`).toString('base64');
    const res = await fetch(`http://${HOST}:${this.#node(from).restPort}/switchover`, {
      method: 'POST',
      headers: { authorization: `Basic ${auth}`, 'content-type': 'application/json' },
      body: JSON.stringify({ leader: from, candidate: to }),
      signal: AbortSignal.timeout(90_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`postgres cluster: switchover ${from} -> ${to} refused (${res.status}): ${text}`);
    await waitFor(`${to} to be the primary`, async () => (await this.primary()) === to, 60_000, 250);
    this.#log(`postgres cluster: switched over from ${from} to ${to}`);
    return { from, to };
  }

  /** The pgBackRest settings of a node (its data folder, port, socket): for backups taken on the primary. */
  nodeInfo(name: string): { name: string; dataDir: string; port: number; socketDir: string } {
    const n = this.#node(name);
    return { name: n.name, dataDir: n.dataDir, port: n.pgPort, socketDir: n.socketDir };
  }

  /** The OS user the servers run as (uid, gid) and setpriv's arguments for it: pgBackRest runs as it too. */
  get runAs(): RunAs {
    if (!this.#runAs) throw new Error('postgres cluster: not prepared');
    return this.#runAs;
  }

  // ---- set-up ------------------------------------------------------------------------------------------------------

  async #prepare(): Promise<void> {
    if (this.#runAs) return;
    for (const bin of ['patroni', 'etcd', 'pgbackrest']) {
      if (!(await onPath(bin))) {
        throw new Error(`${bin} is missing: run \`bash scripts/install-postgres-ha.sh\` (Debian's packages)`);
      }
    }
    const pgBin = await findPostgresBin();
    this.#runAs = await resolveRunAs();
    await fs.mkdir(this.logDir, { recursive: true });
    this.#secrets = await this.#loadSecrets();
    const ownDir = (dir: string) => ensureOwnedDir(dir, this.#runAs!);
    await ownDir(this.dir);

    const etcdMembers = [
      ...this.nodes.map((n, i) => ({
        name: n.name,
        client: this.portBase + 12 + 10 * i,
        peer: this.portBase + 13 + 10 * i,
      })),
      { name: WITNESS, client: this.portBase + 32, peer: this.portBase + 33 },
    ];
    const initialCluster = etcdMembers.map((m) => `${m.name}=http://${HOST}:${m.peer}`).join(',');
    const etcd = (m: (typeof etcdMembers)[number], dataDir: string) =>
      new ManagedProcess({
        name: `etcd-${m.name}`,
        command: 'setpriv',
        args: [
          ...this.#runAs!.setpriv,
          'etcd',
          ...['--name', m.name, '--data-dir', dataDir],
          ...[
            '--listen-client-urls',
            `http://${HOST}:${m.client}`,
            '--advertise-client-urls',
            `http://${HOST}:${m.client}`,
          ],
          ...[
            '--listen-peer-urls',
            `http://${HOST}:${m.peer}`,
            '--initial-advertise-peer-urls',
            `http://${HOST}:${m.peer}`,
          ],
          ...['--initial-cluster', initialCluster, '--initial-cluster-state', 'new'],
          ...['--initial-cluster-token', `${SCOPE}-${this.portBase}`],
          ...['--logger', 'zap', '--log-level', 'warn'],
        ],
        cwd: '/',
        logDir: this.logDir,
        ready: portProbe(m.client),
        readyTimeoutMs: 30_000,
        stopGraceMs: 10_000,
      });
    const etcdHosts = etcdMembers.map((m) => `${HOST}:${m.client}`);

    for (const [i, n] of this.nodes.entries()) {
      await ownDir(n.dir);
      await ownDir(n.socketDir);
      await ownDir(path.join(n.dir, 'etcd'));
      n.etcd = etcd(etcdMembers[i]!, path.join(n.dir, 'etcd'));
      const archiveConfig = this.o.archive
        ? await this.o.archive.configFor({ name: n.name, dataDir: n.dataDir, port: n.pgPort, socketDir: n.socketDir })
        : undefined;
      const configFile = path.join(n.dir, 'patroni.yml');
      await writeOwned(
        configFile,
        JSON.stringify(this.#patroniConfig(n, pgBin, etcdHosts, archiveConfig), null, 2),
        this.#runAs,
      );
      n.patroni = new ManagedProcess({
        name: `patroni-${n.name}`,
        command: 'setpriv',
        args: [...this.#runAs.setpriv, 'patroni', configFile],
        cwd: '/',
        logDir: this.logDir,
        ready: portProbe(n.restPort),
        readyTimeoutMs: 60_000,
        // Patroni's own shutdown stops PostgreSQL (a fast shutdown, a checkpoint).
        stopGraceMs: 90_000,
      });
    }
    const witnessDir = path.join(this.dir, WITNESS);
    await ownDir(witnessDir);
    this.#witness = etcd(etcdMembers[2]!, witnessDir);

    const haproxyCfg = path.join(this.dir, 'haproxy.cfg');
    await fs.writeFile(haproxyCfg, this.#haproxyConfig(), { mode: 0o600 });
    this.#haproxy = new ManagedProcess({
      name: 'haproxy-postgres',
      command: haproxyBin(),
      args: ['-db', '-f', haproxyCfg],
      logDir: this.logDir,
      ready: portProbe(this.port),
      readyTimeoutMs: 30_000,
      stopGraceMs: 5_000,
    });
  }

  #patroniConfig(n: Node, pgBin: string, etcdHosts: string[], archiveConfig: string | undefined): unknown {
    const s = this.#need();
    const t = this.timing;
    // The cluster's own settings (etcd holds them, the same for every node, from the first node's bootstrap).
    const archive = archiveConfig
      ? // A quiet primary's WAL reaches the archive within a minute all the same (what a restore can reach).
        { archive_mode: 'on', archive_timeout: '60s' }
      : { archive_mode: 'off' };
    // The node's own: its archive_command names its pgBackRest configuration (pg1-path its data folder), so it
    // lives in the node's local parameters, which win over the cluster's. Each push is bounded (ARCHIVE_PUSH_TIMEOUT_S,
    // then SIGKILL 5 s on): pgBackRest retries a backup store that is gone for minutes, and a shutting-down server
    // waits for its archiver, which tries each segment three times. A push cut short fails; the segment stays
    // `.ready` and is pushed again later (or at the next start), nothing is lost.
    const archiveCommand = archiveConfig
      ? {
          archive_command:
            `timeout -k 5 ${ARCHIVE_PUSH_TIMEOUT_S} pgbackrest --config=${archiveConfig} ` +
            `--stanza=${this.o.archive!.stanza} archive-push %p`,
        }
      : {};
    return {
      scope: SCOPE,
      namespace: '/service/',
      name: n.name,
      log: { level: 'INFO', format: '%(asctime)s %(levelname)s: %(message)s' },
      restapi: {
        listen: `${HOST}:${n.restPort}`,
        connect_address: `${HOST}:${n.restPort}`,
        // The unsafe endpoints (switchover, restart, reinitialize) take this; the health checks need none.
        authentication: { username: REST_USER, password: s.rest },
      },
      etcd3: { hosts: etcdHosts, protocol: 'http' },
      bootstrap: {
        dcs: {
          ttl: t.ttl,
          loop_wait: t.loopWait,
          retry_timeout: t.retryTimeout,
          maximum_lag_on_failover: 1_048_576,
          synchronous_mode: true,
          synchronous_mode_strict: false,
          synchronous_node_count: 1,
          postgresql: {
            use_pg_rewind: true,
            use_slots: true,
            parameters: {
              synchronous_commit: 'on',
              wal_level: 'replica',
              hot_standby: 'on',
              wal_log_hints: 'on',
              max_wal_senders: 10,
              max_replication_slots: 10,
              wal_keep_size: '256MB',
              max_connections: 200,
              shared_buffers: '128MB',
              fsync: 'on',
              full_page_writes: 'on',
              ...archive,
            },
          },
        },
        initdb: [{ encoding: 'UTF8' }, { locale: 'C.UTF-8' }, 'data-checksums'],
      },
      postgresql: {
        listen: `${HOST}:${n.pgPort}`,
        connect_address: `${HOST}:${n.pgPort}`,
        data_dir: n.dataDir,
        bin_dir: pgBin,
        pgpass: path.join(n.dir, 'pgpass'),
        use_unix_socket: true,
        authentication: {
          superuser: { username: SUPERUSER, password: s.superuser },
          replication: { username: REPLICATION_USER, password: s.replication },
          rewind: { username: REWIND_USER, password: s.rewind },
        },
        // Trust on the unix socket, whose directory only the servers' OS user can enter; scram over TCP.
        pg_hba: [
          'local all all trust',
          `host replication ${REPLICATION_USER} ${HOST}/32 scram-sha-256`,
          `host all all ${HOST}/32 scram-sha-256`,
        ],
        parameters: {
          unix_socket_directories: n.socketDir,
          password_encryption: 'scram-sha-256',
          ...archiveCommand,
          // Statement text and DETAIL lines can carry patient data: kept out of the server log (postgres-server.ts).
          log_min_error_statement: 'panic',
          log_error_verbosity: 'terse',
          log_line_prefix: '%m [%p] ',
          ...this.o.settings,
        },
        basebackup: [{ checkpoint: 'fast' }],
        remove_data_directory_on_rewind_failure: true,
        remove_data_directory_on_diverged_timelines: true,
      },
      watchdog: { mode: 'off' },
      tags: { nofailover: false, noloadbalance: false, clonefrom: false, nosync: false },
    };
  }

  #haproxyConfig(): string {
    return [
      'global',
      '  maxconn 2000',
      'defaults',
      '  mode tcp',
      '  timeout connect 2s',
      // Database sessions sit idle in pools for long.
      '  timeout client 30m',
      '  timeout server 30m',
      '  timeout check 2s',
      'frontend primary',
      `  bind ${HOST}:${this.port}`,
      '  default_backend primary',
      'backend primary',
      // 200 from the node that holds the leader lock and runs as primary; 503 from every other.
      '  option httpchk GET /primary',
      '  http-check expect status 200',
      // A node that stops being the primary has its sessions cut, so no client keeps writing to a demoted node.
      '  default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions',
      ...this.nodes.map((n) => `  server ${n.name} ${HOST}:${n.pgPort} check port ${n.restPort}`),
      '',
    ].join('\n');
  }

  async #loadSecrets(): Promise<Secrets> {
    const file = path.join(this.dir, 'secrets.json');
    const stored = await fs.readFile(file, 'utf8').catch(() => undefined);
    if (stored !== undefined) return JSON.parse(stored) as Secrets;
    if (existsSync(path.join(this.nodes[0]!.dataDir, 'PG_VERSION'))) {
      throw new Error(`postgres cluster: ${this.dir} holds a cluster but no secrets.json`);
    }
    const make = () => randomBytes(18).toString('base64url');
    const secrets: Secrets = { superuser: make(), replication: make(), rewind: make(), rest: make() };
    await fs.mkdir(this.dir, { recursive: true });
    await fs.writeFile(file, JSON.stringify(secrets), { mode: 0o600 });
    return secrets;
  }

  #need(): Secrets {
    if (!this.#secrets) throw new Error('postgres cluster: not started');
    return this.#secrets;
  }

  #node(name: string): Node {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`postgres cluster: no node ${name} (${NODES.join(', ')})`);
    return n;
  }

  async #etcdHealthy(): Promise<boolean> {
    const ports = [12, 22, 32].map((d) => this.portBase + d);
    const answers = await Promise.all(
      ports.map(async (p) => {
        try {
          const res = await fetch(`http://${HOST}:${p}/health`, { signal: AbortSignal.timeout(2_000) });
          return ((await res.json()) as { health?: string }).health === 'true';
        } catch {
          return false;
        }
      }),
    );
    return answers.every(Boolean);
  }

  /** Whether the etcd member of node index i (2: the witness) is etcd's leader (its maintenance status says so). */
  async #etcdLeads(i: number): Promise<boolean> {
    try {
      const res = await fetch(`http://${HOST}:${this.portBase + 12 + 10 * i}/v3/maintenance/status`, {
        method: 'POST',
        body: '{}',
        signal: AbortSignal.timeout(2_000),
      });
      const status = (await res.json()) as { header?: { member_id?: string }; leader?: string };
      return status.leader !== undefined && status.leader === status.header?.member_id;
    } catch {
      return false;
    }
  }

  async #ensureDatabase(): Promise<void> {
    await waitFor(
      `the database ${this.database}`,
      async () => {
        const found = await this.#query(this.url('postgres'), 'SELECT 1 FROM pg_database WHERE datname = $1', [
          this.database,
        ]);
        if (found.length === 0) {
          await this.#query(this.url('postgres'), `CREATE DATABASE "${this.database}"`);
          this.#log(`postgres cluster: created database ${this.database}`);
        }
        return true;
      },
      60_000,
      500,
    );
  }

  async #query<T>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
    const client = new Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    client.on('error', () => {});
    try {
      await client.connect();
      return (await client.query(sql, params)).rows as T[];
    } finally {
      await client.end().catch(() => {});
    }
  }

  /** After its Patroni is gone: the postmaster too (an immediate shutdown if it outlived Patroni). */
  async #stopPostmaster(n: Node): Promise<void> {
    const pid = n.postmasterPid();
    if (pid === undefined) return;
    const children = await childPids(pid);
    signal(pid, 'SIGINT');
    await waitGone([pid], 30_000);
    await waitGone(children, 10_000);
  }
}

/** Makes and starts a cluster (see PostgresCluster.start). */
export async function startPostgresCluster(o: PostgresClusterOptions): Promise<PostgresCluster> {
  const cluster = new PostgresCluster(o);
  await cluster.start();
  return cluster;
}

// ---- helpers -------------------------------------------------------------------------------------------------------

/** As root: the `postgres` system user (Debian's postgresql package makes it). Otherwise ourselves. */
async function resolveRunAs(): Promise<RunAs> {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  if (uid !== 0) return { uid, gid, setpriv: ['--pdeathsig', 'TERM', '--'] };
  const { stdout } = await execFileAsync('id', ['-u', 'postgres']).catch(() => ({ stdout: '' }));
  if (!stdout.trim()) throw new Error("postgres cluster: no `postgres` system user (install Debian's postgresql)");
  const { stdout: g } = await execFileAsync('id', ['-g', 'postgres']);
  const ids = { uid: Number(stdout.trim()), gid: Number(g.trim()) };
  // The parent-death signal after the change of user (a change of credentials clears it).
  return {
    ...ids,
    setpriv: [`--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups', '--pdeathsig', 'TERM', '--'],
  };
}

/** dir (0700) owned by the servers' user; every ancestor searchable by it. */
export async function ensureOwnedDir(dir: string, runAs: RunAs): Promise<void> {
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const st = await fs.stat(dir);
  if (st.uid !== runAs.uid || st.gid !== runAs.gid) await fs.chown(dir, runAs.uid, runAs.gid);
  if ((st.mode & 0o077) !== 0) await fs.chmod(dir, 0o700);
  if (runAs.uid === process.getuid?.()) return;
  for (let parent = path.dirname(dir); ; parent = path.dirname(parent)) {
    const pst = await fs.stat(parent);
    const searchable =
      pst.uid === runAs.uid
        ? (pst.mode & 0o100) !== 0
        : pst.gid === runAs.gid
          ? (pst.mode & 0o010) !== 0
          : (pst.mode & 0o001) !== 0;
    if (!searchable) await fs.chmod(parent, (pst.mode & 0o7777) | 0o001);
    if (parent === path.dirname(parent)) break;
  }
}

/** A file (mode 0600) the servers' user owns. */
export async function writeOwned(file: string, text: string, runAs: { uid: number; gid: number }): Promise<void> {
  await fs.writeFile(file, text, { mode: 0o600 });
  await fs.chmod(file, 0o600);
  await fs.chown(file, runAs.uid, runAs.gid);
}

/** A unix socket directory: the path given, or one under /tmp when a socket there would pass sun_path's 107 bytes. */
function socketDirFor(dir: string): string {
  if (Buffer.byteLength(dir) + 18 <= 107) return dir;
  return path.join(os.tmpdir(), `pg-sock-${Buffer.from(dir).toString('base64url').slice(-24)}`);
}

function haproxyBin(): string {
  if (process.env.HAPROXY_BIN) return process.env.HAPROXY_BIN;
  for (const p of ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy', '/usr/bin/haproxy']) if (existsSync(p)) return p;
  throw new Error('HAProxy is missing: run `bash scripts/install-load-balancer.sh` (Debian package haproxy)');
}

async function onPath(name: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    if (!dir) continue;
    try {
      await fs.access(path.join(dir, name), fs.constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone already
  }
}

/** Direct children of pid (Linux /proc). */
export async function childPids(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await fs.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/** Waits until none of pids runs (a zombie counts as gone); SIGKILLs what is left at the deadline. */
async function waitGone(pids: number[], timeoutMs: number): Promise<void> {
  const alive = async () => {
    const out: number[] = [];
    for (const pid of pids) {
      const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (stat && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') out.push(pid);
    }
    return out;
  };
  const deadline = Date.now() + timeoutMs;
  for (let left = await alive(); left.length > 0; left = await alive()) {
    if (Date.now() > deadline + 5_000) throw new Error(`postgres cluster: processes ${left.join(', ')} did not exit`);
    if (Date.now() > deadline) for (const pid of left) signal(pid, 'SIGKILL');
    await sleep(20);
  }
}
