/**
 * A PostgreSQL server from Debian's `postgresql` package (scripts/install-postgres.sh), run natively as a child
 * process: a cluster of its own in `dataDir`, listening on 127.0.0.1 only, for tests and the local stack.
 *
 * - The first start runs initdb (UTF8, scram-sha-256 over TCP, trust on the unix socket, whose directory only the
 *   server's OS user can enter) and creates the database; later starts reuse the cluster, so data survives restarts.
 * - postgres refuses to run as root: as root, initdb and the server run as the `postgres` system user (created when
 *   missing), through `setpriv`, which execs, so the child we spawn *is* the postmaster.
 * - Callers must call `stop()`. As a safety net the postmaster gets SIGINT (a fast shutdown) when the process that
 *   started it dies (PR_SET_PDEATHSIG through setpriv), so a crashed or forgetful test run leaves no server behind.
 * - Nothing here logs the password or the URL; the server's own log (`logFile`) leaves out statement text and error
 *   details, which can carry patient data.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { onKillAll } from './processes';
import { recordPart } from './stack-guardian';

const execFileAsync = promisify(execFile);

export interface PostgresServer {
  /** postgres://user:password@127.0.0.1:port/database. Carries the password: never log it. */
  readonly url: string;
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly database: string;
  readonly user: string;
  /** The server's log (stderr of the postmaster), inside dataDir. */
  readonly logFile: string;
  /** Directory of the unix socket (`psql -h <socketDir> -p <port> -U <user>` connects without a password). */
  readonly socketDir: string;
  /** True when this startPostgres ran initdb (a new cluster); false when it reused one. */
  readonly initialized: boolean;
  /** The postmaster's pid while it runs. */
  readonly pid: number | undefined;
  /** Fast shutdown (SIGINT: sessions are ended, a checkpoint is written); resolves once the server is gone. */
  stop(): Promise<void>;
  /** SIGKILL of the postmaster, a crash; resolves once it and its backends are gone. The next start recovers. */
  kill(): Promise<void>;
  /** An immediate shutdown (SIGQUIT: the postmaster ends its backends), not waited for: the last resort on exit. */
  killNow(): void;
  /** (Re)starts on the same port and data dir; resolves once it accepts connections. */
  start(): Promise<void>;
}

export interface StartPostgresOptions {
  dataDir: string;
  /** Default: a free port on 127.0.0.1. */
  port?: number;
  /** Created on start when missing. Default `journeys`. */
  database?: string;
  /** The cluster's superuser (initdb -U). Default `journeys`. */
  user?: string;
  /**
   * Default: the one stored in the data dir by the start that ran initdb, or a random one for a new cluster (then
   * stored, mode 0600, so a later start on the same data dir can connect).
   */
  password?: string;
  /** Progress lines (never secrets). */
  log?: (line: string) => void;
  /** How long to wait for the server to accept connections. Default 30 s. */
  readyTimeoutMs?: number;
  /** The OS user that runs the server when we are root. Default `postgres`. */
  osUser?: string;
  /** Server settings on top of this module's (each a `-c name=value`). */
  settings?: Record<string, string>;
}

const HOST = '127.0.0.1';
const LIB_DIR = '/usr/lib/postgresql';
const PASSWORD_FILE = '.superuser-password';
const LOG_FILE = 'postgresql.log';
const INSTALL_HINT = 'run `bash scripts/install-postgres.sh` (Debian package `postgresql`)';
// Names go unquoted into initdb's -U and quoted into CREATE DATABASE; a plain identifier keeps both trivially safe.
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
// Settings for a small (2-core) machine; durability as in production (fsync and synchronous commit on).
const SETTINGS: Record<string, string> = {
  listen_addresses: HOST,
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
  shared_buffers: '128MB',
  max_connections: '200',
  // Statement text and DETAIL lines (e.g. "Key (email)=(...) already exists") can carry patient data: keep them
  // out of the server log.
  log_min_error_statement: 'panic',
  log_error_verbosity: 'terse',
  log_line_prefix: '%m [%p] ',
};

/** The bin directory of the newest /usr/lib/postgresql/<major>, or PG_BIN when set. */
export async function findPostgresBin(): Promise<string> {
  const fromEnv = process.env.PG_BIN;
  if (fromEnv) {
    if (await isExecutable(path.join(fromEnv, 'initdb'))) return fromEnv;
    throw new Error(
      `PG_BIN=${fromEnv} holds no initdb: point it at a PostgreSQL bin directory, or unset it and ${INSTALL_HINT}`,
    );
  }
  const majors = (await fs.readdir(LIB_DIR).catch(() => [] as string[]))
    .filter((name) => /^\d+$/.test(name))
    .sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const bin = path.join(LIB_DIR, major, 'bin');
    if (await isExecutable(path.join(bin, 'initdb'))) return bin;
  }
  throw new Error(`PostgreSQL is not installed (no ${LIB_DIR}/*/bin/initdb): ${INSTALL_HINT}, or set PG_BIN`);
}

export async function startPostgres(opts: StartPostgresOptions): Promise<PostgresServer> {
  const server = await PostgresProcess.prepare(opts);
  await server.start();
  return server;
}

/** A free TCP port on 127.0.0.1 (bind port 0, read it back, release it). */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, HOST, resolve);
  });
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

interface RunAs {
  uid: number;
  gid: number;
  /** Prefix that runs a command as that user (empty when we already are it). */
  prefix: string[];
}

class PostgresProcess implements PostgresServer {
  readonly host = HOST;
  readonly logFile: string;
  #child: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  #port: number;
  #initialized = false;
  #everReady = false;
  // A true private field: console.log/util.inspect of the server (a failing test's output) does not show it.
  #password: string;
  /** Where this start's part of the log begins, so errors quote this start only. */
  #logOffset = 0;

  private constructor(
    private readonly bin: string,
    readonly dataDir: string,
    readonly socketDir: string,
    readonly database: string,
    readonly user: string,
    password: string,
    private readonly runAs: RunAs,
    private readonly portWasChosen: boolean,
    port: number,
    private readonly readyTimeoutMs: number,
    private readonly log: (line: string) => void,
    private readonly settings: Record<string, string> = {},
  ) {
    this.#port = port;
    this.#password = password;
    this.logFile = path.join(dataDir, LOG_FILE);
  }

  static async prepare(opts: StartPostgresOptions): Promise<PostgresProcess> {
    const database = opts.database ?? 'journeys';
    const user = opts.user ?? 'journeys';
    for (const [what, name] of [
      ['database', database],
      ['user', user],
    ] as const) {
      if (!IDENTIFIER.test(name)) throw new Error(`postgres: ${what} name must match ${IDENTIFIER.source}`);
    }
    const bin = await findPostgresBin();
    const dataDir = path.resolve(opts.dataDir);
    const socketDir = socketDirFor(dataDir);
    const runAs = await resolveRunAs(opts.osUser ?? 'postgres', opts.log);
    const port = opts.port ?? (await freePort());
    const server = new PostgresProcess(
      bin,
      dataDir,
      socketDir,
      database,
      user,
      opts.password ?? '',
      runAs,
      opts.port === undefined,
      port,
      opts.readyTimeoutMs ?? 30_000,
      opts.log ?? (() => {}),
      opts.settings,
    );
    await server.#initOnce(opts.password);
    return server;
  }

  get port(): number {
    return this.#port;
  }

  get url(): string {
    return `postgres://${this.user}:${encodeURIComponent(this.#password)}@${HOST}:${this.#port}/${this.database}`;
  }

  get initialized(): boolean {
    return this.#initialized;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    if (this.#child) return;
    await this.#ensureDir(this.socketDir);
    // A port we picked can be taken between picking and binding; pick again rather than fail the caller.
    for (let attempt = 1; ; attempt++) {
      const started = Date.now();
      try {
        await this.#spawnAndWait();
        this.#everReady = true;
        this.log(
          `postgres: ready on ${HOST}:${this.#port} in ${Date.now() - started} ms (pid ${this.pid}, data ${this.dataDir}, log ${this.logFile})`,
        );
        return;
      } catch (err) {
        // Only before the first success: a restart keeps its port, as clients hold it.
        const portTaken = /could not bind|Address already in use/i.test(await this.#logTail());
        if (!(this.portWasChosen && !this.#everReady && portTaken && attempt < 3)) throw err;
        this.#port = await freePort();
        this.log(`postgres: port taken, retrying on ${this.#port}`);
      }
    }
  }

  async stop(): Promise<void> {
    await this.#signalAndWait('SIGINT', 60_000);
  }

  async kill(): Promise<void> {
    const pid = this.pid;
    if (pid === undefined) return;
    // The backends outlive a SIGKILLed postmaster for a moment, and a new postmaster refuses to start while they
    // still hold the old shared memory: note them now, wait for them after.
    const children = await childPids(pid);
    await this.#signalAndWait('SIGKILL', 10_000);
    await waitGone(children, 10_000);
  }

  killNow(): void {
    this.#child?.kill('SIGQUIT');
  }

  /** initdb when the data dir holds no cluster yet; settles the password either way. */
  async #initOnce(givenPassword: string | undefined): Promise<void> {
    const passwordFile = path.join(this.dataDir, PASSWORD_FILE);
    if (await exists(path.join(this.dataDir, 'PG_VERSION'))) {
      if (givenPassword === undefined) {
        const stored = await fs.readFile(passwordFile, 'utf8').catch(() => undefined);
        if (stored === undefined) {
          throw new Error(`postgres: ${this.dataDir} holds a cluster but no stored password: pass the password`);
        }
        this.#password = stored.trim();
      }
      return;
    }
    if (await exists(this.dataDir)) {
      const entries = await fs.readdir(this.dataDir);
      if (entries.length > 0) throw new Error(`postgres: ${this.dataDir} is neither empty nor a PostgreSQL cluster`);
    }
    if (givenPassword === undefined) this.#password = randomBytes(18).toString('base64url');
    await this.#ensureDir(this.dataDir);
    await this.#ensureDir(this.socketDir);
    // initdb reads the password from a file; the socket dir is private to the server's OS user.
    const pwfile = path.join(this.socketDir, `initdb-pw-${process.pid}`);
    await fs.writeFile(pwfile, this.#password, { mode: 0o600 });
    await fs.chown(pwfile, this.runAs.uid, this.runAs.gid);
    const started = Date.now();
    try {
      await this.#run(path.join(this.bin, 'initdb'), [
        '--pgdata',
        this.dataDir,
        '--username',
        this.user,
        `--pwfile=${pwfile}`,
        '--auth-host=scram-sha-256',
        '--auth-local=trust',
        '--encoding=UTF8',
        // C.UTF-8: byte-order collation (stable, no glibc collation upgrades to worry about) with Unicode-aware
        // upper()/lower(); present on every Debian.
        '--locale=C.UTF-8',
      ]);
    } finally {
      await fs.rm(pwfile, { force: true });
    }
    if (givenPassword === undefined) {
      await fs.writeFile(passwordFile, this.#password, { mode: 0o600 });
      await fs.chown(passwordFile, this.runAs.uid, this.runAs.gid);
    }
    this.#initialized = true;
    this.log(`postgres: initdb ${this.dataDir} in ${Date.now() - started} ms (superuser ${this.user})`);
  }

  async #spawnAndWait(): Promise<void> {
    const settings = {
      ...SETTINGS,
      ...this.settings,
      port: String(this.#port),
      unix_socket_directories: this.socketDir,
    };
    const args = ['-D', this.dataDir, ...Object.entries(settings).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
    const logFd = await fs.open(this.logFile, 'a', 0o600);
    this.#logOffset = (await logFd.stat()).size;
    let child: ChildProcess;
    try {
      await logFd.chown(this.runAs.uid, this.runAs.gid);
      // The postmaster stays our child in a process group of its own (a terminal's signals reach the stack alone,
      // which stops it in order); PDEATHSIG shuts it down when node goes without stopping it.
      const [command, ...rest] = [...this.runAs.prefix, path.join(this.bin, 'postgres'), ...args];
      child = spawn(command!, rest, { cwd: '/', stdio: ['ignore', logFd.fd, logFd.fd], detached: true });
    } finally {
      await logFd.close();
    }
    this.#child = child;
    recordPart(child.pid, 'postgres');
    // Not one of processes.ts's own: if this process exits without stopping it, an immediate shutdown by pid.
    const forget = onKillAll(() => child.kill('SIGQUIT'));
    this.#exited = new Promise<void>((resolve) => {
      const exited = () => {
        if (this.#child === child) this.#child = undefined;
        forget();
        resolve();
      };
      child.once('exit', exited);
      child.once('error', exited);
    });
    child.unref();
    try {
      await this.#waitReady(child);
    } catch (err) {
      await this.#signalAndWait('SIGINT', 10_000);
      throw err;
    }
  }

  async #waitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + this.readyTimeoutMs;
    let lastError = 'no attempt';
    for (;;) {
      if (this.#child !== child) {
        throw new Error(`postgres exited during startup; end of ${this.logFile}:\n${await this.#logTail()}`);
      }
      try {
        await this.#ensureDatabase();
        return;
      } catch (err) {
        const e = err as Error & { code?: string };
        // 28P01: wrong password, 28000: no such role; waiting will not fix either.
        if (e.code === '28P01' || e.code === '28000') {
          throw new Error(
            `postgres: cannot log in as ${this.user} on the cluster in ${this.dataDir}: it was initialised with another user or password`,
          );
        }
        lastError = e.code ? `${e.code} ${e.message}` : e.message;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `postgres did not accept connections within ${this.readyTimeoutMs} ms (${lastError}); end of ${this.logFile}:\n${await this.#logTail()}`,
        );
      }
      await sleep(50);
    }
  }

  /** Connects (the readiness probe) and creates the database when it is missing. */
  async #ensureDatabase(): Promise<void> {
    const client = new Client({
      host: HOST,
      port: this.#port,
      user: this.user,
      password: this.#password,
      database: 'postgres',
      connectionTimeoutMillis: 2_000,
    });
    client.on('error', () => {}); // a server going away mid-probe must not become an uncaught 'error' event
    try {
      await client.connect();
      const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [this.database]);
      if (found.rowCount === 0) {
        await client.query(`CREATE DATABASE "${this.database}"`);
        this.log(`postgres: created database ${this.database}`);
      }
    } finally {
      await client.end().catch(() => {});
    }
  }

  async #signalAndWait(signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
    const child = this.#child;
    if (!child) return;
    child.kill(signal);
    if (await settlesWithin(this.#exited, timeoutMs)) return;
    // A fast shutdown stuck (e.g. on a full disk): an immediate one, and then no more asking.
    child.kill('SIGQUIT');
    if (!(await settlesWithin(this.#exited, 5_000))) child.kill('SIGKILL');
    await this.#exited;
  }

  /** Creates dir (0700) owned by the server's OS user, and makes sure that user can reach it. */
  async #ensureDir(dir: string): Promise<void> {
    // Missing parents get the usual mode (umask); only the directory itself is private.
    await fs.mkdir(path.dirname(dir), { recursive: true });
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    const st = await fs.stat(dir);
    if (st.uid !== this.runAs.uid || st.gid !== this.runAs.gid) await fs.chown(dir, this.runAs.uid, this.runAs.gid);
    if ((st.mode & 0o077) !== 0) await fs.chmod(dir, 0o700);
    if (this.runAs.uid === process.getuid?.()) return;
    // Every ancestor must be searchable by that user: a mkdtemp dir is 0700 root. Add search (x) for others, never
    // read, and only where it is missing.
    for (let parent = path.dirname(dir); ; parent = path.dirname(parent)) {
      const pst = await fs.stat(parent);
      const searchable =
        pst.uid === this.runAs.uid
          ? (pst.mode & 0o100) !== 0
          : pst.gid === this.runAs.gid
            ? (pst.mode & 0o010) !== 0
            : (pst.mode & 0o001) !== 0;
      if (!searchable) {
        await fs.chmod(parent, (pst.mode & 0o7777) | 0o001);
        this.log(`postgres: added o+x to ${parent} so the server's OS user can reach ${dir}`);
      }
      if (parent === path.dirname(parent)) break;
    }
  }

  /** Runs a command as the server's OS user; its output is returned in the error when it fails. */
  async #run(command: string, args: string[]): Promise<void> {
    const [cmd, ...rest] = [...this.runAs.prefix, command, ...args];
    try {
      await execFileAsync(cmd!, rest, { cwd: '/', maxBuffer: 16 * 1024 * 1024 });
    } catch (err) {
      const e = err as Error & { stderr?: string; stdout?: string };
      throw new Error(`${path.basename(command)} failed: ${(e.stderr || e.stdout || e.message).trim()}`);
    }
  }

  async #logTail(lines = 20): Promise<string> {
    const text = await fs.readFile(this.logFile).catch(() => Buffer.alloc(0));
    return text.subarray(this.#logOffset).toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
  }
}

/** As root: the server's OS user, created when missing, and a setpriv prefix. Otherwise ourselves. */
async function resolveRunAs(osUser: string, log?: (line: string) => void): Promise<RunAs> {
  const uid = process.getuid?.() ?? 0;
  const gid = process.getgid?.() ?? 0;
  // PDEATHSIG: the postmaster gets SIGINT (fast shutdown) if this process dies without stopping it.
  const setpriv = (await hasCommand('setpriv')) ? ['setpriv', '--pdeathsig', 'INT'] : [];
  if (uid !== 0) return { uid, gid, prefix: setpriv.length > 0 ? [...setpriv, '--'] : [] };
  if (setpriv.length === 0) throw new Error('postgres: running as root needs setpriv (util-linux) to drop to a user');
  let ids = await userIds(osUser);
  if (!ids) {
    await execFileAsync('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      osUser,
    ]);
    log?.(`postgres: created the system user ${osUser} to run the server (postgres refuses to run as root)`);
    ids = await userIds(osUser);
    if (!ids) throw new Error(`postgres: could not create the system user ${osUser}`);
  }
  // Credentials change first, then PDEATHSIG (setpriv sets it after, so the change does not clear it).
  return {
    ...ids,
    prefix: [...setpriv, `--reuid=${ids.uid}`, `--regid=${ids.gid}`, '--clear-groups', '--'],
  };
}

async function userIds(name: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [u, g] = await Promise.all([execFileAsync('id', ['-u', name]), execFileAsync('id', ['-g', name])]);
    return { uid: Number(u.stdout.trim()), gid: Number(g.stdout.trim()) };
  } catch {
    return undefined;
  }
}

/** The socket directory: next to the data dir, or under /tmp when that path would be too long for a socket. */
function socketDirFor(dataDir: string): string {
  const beside = `${dataDir}.sock`;
  // sun_path holds 107 bytes; the socket file is "<dir>/.s.PGSQL.<port>" (up to 18 more).
  if (Buffer.byteLength(beside) + 18 <= 107) return beside;
  const hash = createHash('sha256').update(dataDir).digest('hex').slice(0, 16);
  return path.join(os.tmpdir(), `pg-sock-${hash}`);
}

/** Direct children of pid (Linux /proc). */
async function childPids(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await fs.readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fs.readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // "pid (comm) state ppid ...": comm may hold spaces, so parse after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === pid) out.push(Number(entry));
  }
  return out;
}

/** Waits until none of pids runs (a zombie counts as gone: it holds no memory); SIGKILLs stragglers at the deadline. */
async function waitGone(pids: number[], timeoutMs: number): Promise<void> {
  const running = async (): Promise<number[]> => {
    const alive: number[] = [];
    for (const pid of pids) {
      const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
      if (stat && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') alive.push(pid);
    }
    return alive;
  };
  const deadline = Date.now() + timeoutMs;
  for (let alive = await running(); alive.length > 0; alive = await running()) {
    // Uninterruptible (D state) processes can ignore even SIGKILL for a while; do not hang the caller on them.
    if (Date.now() > deadline + 5_000) throw new Error(`postgres: processes ${alive.join(', ')} did not exit`);
    if (Date.now() > deadline) {
      for (const pid of alive) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await sleep(20);
  }
}

async function hasCommand(name: string): Promise<boolean> {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    if (dir && (await isExecutable(path.join(dir, name)))) return true;
  }
  return false;
}

async function isExecutable(file: string): Promise<boolean> {
  return fs.access(file, fsConstants.X_OK).then(
    () => true,
    () => false,
  );
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

/** Whether promise settles within ms; the timer is cleared either way, so it never holds the process open. */
async function settlesWithin(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
