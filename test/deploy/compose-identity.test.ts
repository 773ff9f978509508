// docker-compose.yml with the operators' identity provider, checked without a Docker engine: Keycloak and its realm
// (deploy/keycloak/journeys-realm.json), one issuer and audience for every part, the Web UI's sign-in and its token
// passed to the codec server over HTTPS, the Temporal server's JWT authorizer and internal frontend, the service
// accounts of the workers, the API replicas and the one-shot jobs; the services' scripts run here with stand-ins for
// the programs they start. `docker compose config` runs too where a Compose client is found (COMPOSE_BIN, or
// `docker compose`).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Payload } from '@temporalio/common';
import { createLocalJWKSet } from 'jose';
import { Client as PgClient } from 'pg';
import YAML from 'yaml';
import { tokenVerifier } from '../../src/auth/tokens';
import { buildCodecServer } from '../../src/codec/server';
import { loadCodecConfig, loadConfig } from '../../src/config';
import {
  ROOT,
  envOf,
  loadCompose,
  mounts,
  parseCompose,
  parseDotenv,
  publishedPorts,
  read,
  type ComposeFile,
} from '../compose/compose-file';
import { startTestPostgres } from '../support/postgres';
import { signingKey, token } from '../support/oidc-issuer';

const text = read('docker-compose.yml');
const userEnv = {
  ...parseDotenv(read('deploy/.env.example')).values,
  POSTGRES_PASSWORD: 'a-test-password-only',
  SECRETS_GID: '1000',
};
const { compose } = loadCompose(text, userEnv);
const realmText = read('deploy/keycloak/journeys-realm.json');

interface RealmClient {
  clientId: string;
  secret?: string;
  publicClient?: boolean;
  bearerOnly?: boolean;
  serviceAccountsEnabled?: boolean;
  redirectUris?: string[];
  standardFlowEnabled?: boolean;
  implicitFlowEnabled?: boolean;
  directAccessGrantsEnabled?: boolean;
  attributes?: Record<string, string>;
  protocolMappers?: { protocolMapper: string; config: Record<string, string> }[];
}
interface RealmUser {
  username: string;
  serviceAccountClientId?: string;
  realmRoles?: string[];
  clientRoles?: Record<string, string[]>;
  credentials?: { value: string }[];
}
const realm = JSON.parse(realmText) as { realm: string; clients: RealmClient[]; users: RealmUser[] };
const client = (id: string) => realm.clients.find((c) => c.clientId === id)!;
const serviceAccount = (id: string) => realm.users.find((u) => u.serviceAccountClientId === id)!;
/** The `${VAR}` placeholders Keycloak fills from its environment when it imports the realm. */
const PLACEHOLDERS = [...new Set([...realmText.matchAll(/\$\{([A-Z][A-Z0-9_]*)\}/g)].map((m) => m[1]!))].sort();

const svc = (name: string, c: ComposeFile = compose) => {
  const s = c.services[name];
  if (!s) throw new Error(`no service ${name}`);
  return s;
};
const env = (name: string) => envOf(svc(name));
/** The script of an entrypoint `[shell, -ec, script, argv0]`. */
const entrypointScript = (name: string) => {
  const [shell, flag, script, argv0] = svc(name).entrypoint!;
  expect(flag).toBe('-ec');
  return { shell: shell!, script: script!, argv0: argv0! };
};

/** Stand-in programs: each records its arguments, its environment and its standard input under `dir`. */
function standIns(dir: string, programs: Record<string, string>): string {
  const bin = path.join(dir, 'bin');
  mkdirSync(bin, { recursive: true });
  for (const [name, output] of Object.entries(programs)) {
    writeFileSync(
      path.join(bin, name),
      [
        '#!/bin/sh',
        `printf '%s\\n' "$@" > "${dir}/${name}.args"`,
        `env > "${dir}/${name}.env"`,
        `if [ ! -t 0 ]; then cat > "${dir}/${name}.stdin"; fi`,
        `printf '%s' '${output}'`,
        '',
      ].join('\n'),
      { mode: 0o755 },
    );
  }
  return bin;
}
const recorded = (dir: string, program: string, what: 'args' | 'env' | 'stdin') =>
  readFileSync(path.join(dir, `${program}.${what}`), 'utf8');
const recordedEnv = (dir: string, program: string) =>
  Object.fromEntries(
    recorded(dir, program, 'env')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

/** Renders the server's `{{ env "NAME" }}` (sprig, as the Temporal server renders an `enable-template` file). */
const renderEnv = (template: string, vars: Record<string, string>) =>
  template.replace(/\{\{ env "([A-Z0-9_]+)" \}\}/g, (_m, name: string) => {
    if (!(name in vars)) throw new Error(`${name} is not set`);
    return vars[name]!;
  });

describe('docker-compose.yml: the operators identity provider', () => {
  let work: string;
  let secretsDir: string;
  /** A service's secrets as its container sees them: <dir>/<secret name>. */
  let runSecrets: (service: string) => string;
  const secretFile = (secret: string) => path.join(secretsDir, path.basename(compose.secrets[secret]!.file));
  const secretValue = (secret: string) => readFileSync(secretFile(secret), 'utf8').trim();
  /** A service's environment with each /run/secrets/<name> turned into the file init-secrets.sh made. */
  const resolvedEnv = (service: string) =>
    Object.fromEntries(
      Object.entries(env(service)).map(([k, v]) => {
        const secret = /^\/run\/secrets\/([a-z0-9_]+)$/.exec(v)?.[1];
        if (secret) expect([service, secret, svc(service).secrets?.includes(secret)]).toEqual([service, secret, true]);
        return [k, secret ? secretFile(secret) : v];
      }),
    );

  beforeAll(() => {
    work = mkdtempSync(path.join(tmpdir(), 'compose-identity-'));
    secretsDir = path.join(work, 'secrets');
    execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, path.join(work, '.env')], {
      stdio: 'ignore',
    });
    runSecrets = (service: string) => {
      const dir = path.join(work, 'run', service, 'secrets');
      mkdirSync(dir, { recursive: true });
      for (const secret of svc(service).secrets ?? []) {
        writeFileSync(path.join(dir, secret), readFileSync(secretFile(secret)));
      }
      return dir;
    };
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  const issuer = () => `${env('keycloak').KC_HOSTNAME}/realms/${realm.realm}`;
  /** Keycloak as the containers reach it: its service name and container port. */
  const backChannel = () => {
    const port = publishedPorts(svc('keycloak'))[0]!.container;
    return `http://keycloak:${port}/realms/${realm.realm}`;
  };

  test('runs Keycloak 26.4.7 from its image, importing the realm at start, on a database of its own', () => {
    const kc = svc('keycloak');
    expect(kc.image).toBe('quay.io/keycloak/keycloak:26.4.7');
    expect(kc.command).toEqual(['start', '--import-realm']);
    expect(mounts(kc)).toContainEqual({
      source: './deploy/keycloak/journeys-realm.json',
      target: '/opt/keycloak/data/import/journeys-realm.json',
      readOnly: true,
    });
    expect(kc.restart).toBe('unless-stopped');
    expect(kc.depends_on).toEqual({ 'keycloak-database': { condition: 'service_completed_successfully' } });
    expect(svc('keycloak-database').depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(svc('keycloak-database').restart).toBe('no');
    expect(env('keycloak')).toMatchObject({
      KC_DB: 'postgres',
      KC_DB_URL: 'jdbc:postgresql://postgres:5432/keycloak',
      KC_DB_USERNAME: 'keycloak',
      // The browser's address is the issuer; containers use the back channel, resolved from their requests.
      KC_HOSTNAME: 'http://localhost:8180',
      KC_HOSTNAME_BACKCHANNEL_DYNAMIC: 'true',
      KC_HTTP_ENABLED: 'true',
      KC_HEALTH_ENABLED: 'true',
    });
    // Published on loopback at the port of KC_HOSTNAME; its management port (health) is not published.
    expect(publishedPorts(kc)).toEqual([
      { hostIp: '127.0.0.1', host: Number(new URL(env('keycloak').KC_HOSTNAME!).port), container: 8080 },
    ]);
    // Ready when its management interface says so, asked with bash alone (the image has no curl).
    const probe = kc.healthcheck!.test as string[];
    expect(probe.slice(0, 3)).toEqual(['CMD', '/bin/bash', '-c']);
    expect(probe[3]).toContain('/dev/tcp/127.0.0.1/9000');
    expect(probe[3]).toContain('GET /health/ready');
    expect(spawnSync('bash', ['-n', '-c', probe[3]!]).status).toBe(0);
    // The Temporal server reads Keycloak's keys at start: it waits for Keycloak (and every part that needs a
    // token waits for the server, or for the set-up job after it).
    expect(svc('temporal').depends_on).toMatchObject({ keycloak: { condition: 'service_healthy' } });
  });

  test('fills every placeholder of the realm file from a secret file or its environment, none on a command line', () => {
    const { shell, script, argv0 } = entrypointScript('keycloak');
    expect([shell, argv0]).toEqual(['/bin/bash', 'kc.sh']);
    const dir = path.join(work, 'keycloak');
    const bin = standIns(dir, { 'kc.sh': '' });
    const secrets = runSecrets('keycloak');
    execFileSync(
      'bash',
      [
        '-ec',
        script
          .replaceAll('/opt/keycloak/bin/kc.sh', path.join(bin, 'kc.sh'))
          .replaceAll('/run/secrets/', `${secrets}/`),
        argv0,
        ...svc('keycloak').command!,
      ],
      { env: { PATH: process.env.PATH, ...env('keycloak') }, stdio: 'ignore' },
    );
    expect(recorded(dir, 'kc.sh', 'args')).toBe('start\n--import-realm\n');
    const kcEnv = recordedEnv(dir, 'kc.sh');
    // The clients' secrets and the UI's address: no person's password (the realm has no people).
    expect(PLACEHOLDERS).toEqual([
      'JOURNEYS_API_CLIENT_SECRET',
      'JOURNEYS_AUTOMATION_CLIENT_SECRET',
      'JOURNEYS_UI_CLIENT_SECRET',
      'JOURNEYS_UI_URL',
      'JOURNEYS_WORKER_CLIENT_SECRET',
    ]);
    for (const name of PLACEHOLDERS) expect([name, (kcEnv[name] ?? '').length > 0]).toEqual([name, true]);
    expect(kcEnv).toMatchObject({
      KC_DB_PASSWORD: secretValue('keycloak_database_password'),
      KC_BOOTSTRAP_ADMIN_PASSWORD: secretValue('keycloak_admin_password'),
      JOURNEYS_UI_CLIENT_SECRET: secretValue('temporal_ui_client_secret'),
      JOURNEYS_WORKER_CLIENT_SECRET: secretValue('journey_worker_client_secret'),
      JOURNEYS_API_CLIENT_SECRET: secretValue('journey_api_client_secret'),
      JOURNEYS_AUTOMATION_CLIENT_SECRET: secretValue('journey_automation_client_secret'),
    });
    // None of them in the compose file's environment, nor anywhere in it.
    for (const name of [...PLACEHOLDERS.filter((p) => p !== 'JOURNEYS_UI_URL'), 'KC_DB_PASSWORD']) {
      expect([name, name in env('keycloak')]).toEqual([name, false]);
    }
  });

  test("ships a realm with no person in it: the services' accounts only, and a one-time-code policy", () => {
    expect(realm.users.filter((u) => !u.serviceAccountClientId)).toEqual([]);
    expect(realmText).not.toMatch(/"type": "password"/);
    expect(JSON.parse(realmText)).toMatchObject({
      otpPolicyType: 'totp',
      otpPolicyDigits: 6,
      otpPolicyPeriod: 30,
      otpPolicyCodeReusable: false,
      passwordPolicy: expect.stringMatching(/length\(1[2-9]\)/),
    });
  });

  test('the keycloak-database job makes a role that owns its database only, and running it again is harmless', async () => {
    const superuser = env('keycloak-database').PGUSER!;
    expect(superuser).toBe(env('postgres').POSTGRES_USER);
    const pg = await startTestPostgres({ user: superuser, database: 'postgres' });
    try {
      const jobScript = svc('keycloak-database').command!.join('\n');
      // The password never goes onto psql's command line: psql reads the file itself.
      expect(jobScript).not.toMatch(/-v password=/);
      const script = jobScript.replaceAll('/run/secrets/', `${runSecrets('keycloak-database')}/`);
      const jobEnv = {
        PATH: process.env.PATH,
        PGHOST: pg.host,
        PGPORT: String(pg.port),
        PGUSER: pg.user,
        PGDATABASE: env('keycloak-database').PGDATABASE,
        PGPASSWORD: decodeURIComponent(new URL(pg.url).password),
      };
      for (let run = 0; run < 2; run++) {
        expect(execFileSync('sh', ['-ec', script], { env: jobEnv, encoding: 'utf8' })).toContain('is ready');
      }
      // Temporal's databases, as its own job makes them.
      const temporalJob = svc('temporal-database')
        .command!.join('\n')
        .replaceAll('/run/secrets/', `${runSecrets('temporal-database')}/`);
      execFileSync('sh', ['-ec', temporalJob], { env: jobEnv, encoding: 'utf8' });
      // Keycloak's settings reach it: KC_DB_URL's database, KC_DB_USERNAME, the password file.
      const jdbc = new URL(env('keycloak').KC_DB_URL!.replace(/^jdbc:/, ''));
      const as = (database: string) =>
        new PgClient({
          host: pg.host,
          port: pg.port,
          user: env('keycloak').KC_DB_USERNAME,
          password: secretValue('keycloak_database_password'),
          database,
        });
      const kc = as(jdbc.pathname.slice(1));
      await kc.connect();
      try {
        await kc.query('CREATE TABLE realm_check (id int)');
        const { rows } = await kc.query<{ super: boolean }>(
          'SELECT rolsuper AS super FROM pg_roles WHERE rolname = current_user',
        );
        expect(rows).toEqual([{ super: false }]);
      } finally {
        await kc.end();
      }
      for (const other of ['temporal', 'temporal_visibility', 'postgres']) {
        const c = as(other);
        await expect(c.connect()).rejects.toThrow(/permission denied/);
        await c.end().catch(() => undefined);
      }
    } finally {
      await pg.cleanup();
    }
  });

  test('one issuer and one audience for the codec server, the API, the Temporal server and the Web UI', () => {
    const audience = 'journey-engine';
    const jwks = `${backChannel()}/protocol/openid-connect/certs`;
    const codec = loadCodecConfig(resolvedEnv('codec')).codec;
    expect(codec.oidc).toEqual({
      issuer: issuer(),
      audience: [audience],
      jwksUrl: jwks,
      roleClaim: 'realm_access.roles',
      clockSkewSeconds: 30,
      decodeRoles: ['journey-operator', 'journey-admin'],
    });
    for (const name of ['api-1', 'api-2']) {
      const e = env(name);
      expect([name, e.OIDC_ISSUER, e.OIDC_AUDIENCE, e.OIDC_JWKS_URL, e.OIDC_ROLE_CLAIM]).toEqual([
        name,
        issuer(),
        audience,
        jwks,
        'realm_access.roles',
      ]);
    }
    expect(env('temporal')).toMatchObject({ TEMPORAL_AUTH_JWKS_URL: jwks, TEMPORAL_AUTH_AUDIENCE: audience });
    expect(env('temporal-ui')).toMatchObject({
      TEMPORAL_AUTH_PROVIDER_URL: backChannel(),
      TEMPORAL_AUTH_ISSUER_URL: issuer(),
    });
    // Every client a token comes from puts the audience in it (the bearer-only `temporal` holds roles only).
    for (const c of realm.clients.filter((x) => !x.bearerOnly)) {
      const mapper = c.protocolMappers?.find((m) => m.protocolMapper === 'oidc-audience-mapper');
      expect([c.clientId, mapper?.config['included.custom.audience'], mapper?.config['access.token.claim']]).toEqual([
        c.clientId,
        audience,
        'true',
      ]);
    }
  });

  test('signs operators in to the Web UI with the realm client temporal-ui, and passes their token to the codec server', () => {
    const ui = env('temporal-ui');
    const uiClient = client(ui.TEMPORAL_AUTH_CLIENT_ID!);
    expect(uiClient).toMatchObject({ clientId: 'temporal-ui', publicClient: false });
    // The callback the UI names is the one the realm allows, with Keycloak's JOURNEYS_UI_URL.
    const uiUrl = env('keycloak').JOURNEYS_UI_URL!;
    expect(uiClient.redirectUris).toEqual(['${JOURNEYS_UI_URL}/auth/sso/callback']);
    expect(ui.TEMPORAL_AUTH_CALLBACK_URL).toBe(`${uiUrl}/auth/sso/callback`);
    // ... at the address the UI is published on.
    const published = publishedPorts(svc('temporal-ui'))[0]!;
    expect([new URL(uiUrl).hostname, Number(new URL(uiUrl).port)]).toEqual(['localhost', published.host]);
    expect(ui).toMatchObject({
      TEMPORAL_AUTH_ENABLED: 'true',
      TEMPORAL_AUTH_SCOPES: 'openid,profile,email',
      TEMPORAL_CODEC_PASS_ACCESS_TOKEN: 'true',
    });
    // The UI passes a token to an https:// codec endpoint only: the codec server's published port, on localhost.
    const endpoint = new URL(ui.TEMPORAL_CODEC_ENDPOINT!);
    expect(endpoint.protocol).toBe('https:');
    const codecPort = publishedPorts(svc('codec')).find((p) => p.container === Number(env('codec').CODEC_PORT))!;
    expect([endpoint.hostname, Number(endpoint.port), codecPort.hostIp]).toEqual([
      'localhost',
      codecPort.host,
      '127.0.0.1',
    ]);
    // The browser calls it from the UI's origin.
    expect(env('codec').CODEC_CORS_ORIGINS!.split(',')).toContain(new URL(uiUrl).origin);

    // Names the UI server's docker configuration reads (temporalio/ui-server v2.42.1, config/docker.yaml), and no
    // client secret in the environment: the entrypoint reads it from its file.
    for (const name of Object.keys(ui)) expect([name, UI_SERVER_ENV.includes(name)]).toEqual([name, true]);
    expect(ui.TEMPORAL_AUTH_CLIENT_SECRET).toBeUndefined();
    const { shell, script, argv0 } = entrypointScript('temporal-ui');
    expect([shell, argv0]).toEqual(['/bin/sh', 'start-ui-server.sh']);
    const dir = path.join(work, 'ui');
    const bin = standIns(dir, { 'start-ui-server.sh': '' });
    execFileSync(
      'sh',
      [
        '-ec',
        script
          .replaceAll('./start-ui-server.sh', path.join(bin, 'start-ui-server.sh'))
          .replaceAll('/run/secrets/', `${runSecrets('temporal-ui')}/`),
        argv0,
      ],
      { env: { PATH: process.env.PATH, ...ui }, stdio: 'ignore' },
    );
    expect(recordedEnv(dir, 'start-ui-server.sh').TEMPORAL_AUTH_CLIENT_SECRET).toBe(
      secretValue('temporal_ui_client_secret'),
    );
    // The same secret Keycloak puts into the realm's client.
    expect(uiClient.secret).toBe('${JOURNEYS_UI_CLIENT_SECRET}');
    expect(entrypointScript('keycloak').script).toContain(
      'JOURNEYS_UI_CLIENT_SECRET=$(< /run/secrets/temporal_ui_client_secret)',
    );
  });

  test("the Web UI's client: the code flow only, PKCE required, and the UI built to send its challenge", () => {
    const ui = env('temporal-ui');
    const uiClient = client(ui.TEMPORAL_AUTH_CLIENT_ID!);
    // The authorization code flow, to the one callback, with the client's secret: no implicit flow, no passwords.
    expect(uiClient).toMatchObject({
      publicClient: false,
      standardFlowEnabled: true,
      implicitFlowEnabled: false,
      directAccessGrantsEnabled: false,
    });
    expect(uiClient.redirectUris).toEqual(['${JOURNEYS_UI_URL}/auth/sso/callback']);
    // Keycloak refuses every authorization request of this client without an S256 code challenge. No release of
    // Temporal's UI server sends one, so compose runs the UI image with its server built again with
    // tools/temporal-ui/pkce.patch (the Dockerfile's temporal-ui target); the sign-in test runs the same build.
    expect(uiClient.attributes?.['pkce.code.challenge.method']).toBe('S256');
    const built = svc('temporal-ui') as { build?: { target?: string; args?: Record<string, string> }; image?: string };
    expect(built.build?.target).toBe('temporal-ui');
    expect(built.build?.args?.TEMPORAL_UI_IMAGE).toBe('temporalio/ui:2.42.1');
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^FROM \$\{TEMPORAL_UI_IMAGE\} AS temporal-ui$/m);
    expect(dockerfile).toContain('sh /build/build.sh /out/ui-server');
    const patch = readFileSync(path.join(ROOT, 'tools', 'temporal-ui', 'pkce.patch'), 'utf8');
    expect(patch).toContain('oauth2.S256ChallengeOption(verifier)');
    expect(patch).toContain('oauth2.VerifierOption(pkce.Value)');
  });

  test('the codec server answers over HTTPS with the certificate init-secrets.sh makes: operators decode, viewers get the redaction marker', async () => {
    const config = loadCodecConfig(resolvedEnv('codec')).codec;
    expect(config.tls).toEqual({ certFile: secretFile('codec_tls_cert'), keyFile: secretFile('codec_tls_key') });
    expect(config.serverToken).toBe(secretValue('codec_server_token'));
    // Named for both ways in: the browsers' (localhost) and the temporal-cli service's (codec).
    const san = execFileSync('openssl', ['x509', '-in', config.tls!.certFile, '-noout', '-ext', 'subjectAltName'], {
      encoding: 'utf8',
    });
    for (const host of [new URL(env('temporal-ui').TEMPORAL_CODEC_ENDPOINT!).hostname, 'codec']) {
      expect(san).toContain(`DNS:${host}`);
    }
    expect(new URL(env('temporal-cli').TEMPORAL_CODEC_ENDPOINT!).hostname).toBe('codec');

    // The compose's settings with a stand-in for Keycloak's keys: tokens shaped as the realm's.
    const key = await signingKey('realm-key');
    const oidc = config.oidc!;
    const same = (p: Payload[]) => Promise.resolve(p);
    const app = buildCodecServer({
      codec: { encode: same, decode: same },
      corsOrigins: config.corsOrigins,
      token: config.serverToken!,
      https: { cert: readFileSync(config.tls!.certFile), key: readFileSync(config.tls!.keyFile) },
      oidc: {
        verify: tokenVerifier({
          issuer: oidc.issuer,
          audience: oidc.audience,
          roleClaim: oidc.roleClaim,
          keys: createLocalJWKSet({ keys: [key.jwk] }),
        }),
        decodeRoles: oidc.decodeRoles,
      },
    });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const port = Number(new URL(address).port);
    const decode = (headers: Record<string, string>, path = '/decode') =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            servername: 'localhost',
            port,
            path,
            method: 'POST',
            // The browser trusts it once told to; here, the certificate itself is the trust.
            ca: readFileSync(config.tls!.certFile),
            headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
          },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ payloads: [] }));
      });
    try {
      const as = async (roles: string[]) =>
        `Bearer ${await token(key, { iss: oidc.issuer, aud: 'journey-engine', roles })}`;
      expect(await decode({ authorization: await as(['journey-operator', 'journey-viewer']) })).toBe(200);
      // A viewer reads what a payload is, not what it says: each one answered as `[redacted for this role]`.
      expect(await decode({ authorization: await as(['journey-viewer']) })).toBe(200);
      expect(await decode({ authorization: await as(['journey-viewer']) }, '/encode')).toBe(403);
      expect(await decode({})).toBe(401);
      expect(await decode({ authorization: `Bearer ${config.serverToken}` })).toBe(200);
    } finally {
      await app.close();
    }
  });

  test('the workers and the API replicas present their service accounts to Temporal', () => {
    const tokenUrl = `${backChannel()}/protocol/openid-connect/token`;
    const accounts = { 'api-1': 'journey-api', 'api-2': 'journey-api', worker: 'journey-worker' } as const;
    for (const [name, clientId] of Object.entries(accounts)) {
      const config = loadConfig(resolvedEnv(name));
      const secretName = `${clientId.replace(/-/g, '_')}_client_secret`;
      expect([name, config.temporal.oauth]).toEqual([
        name,
        { clientId, clientSecret: secretValue(secretName), tokenUrl },
      ]);
      // The realm's client of that id, a confidential service account with the secret Keycloak gets from that file.
      const c = client(clientId);
      expect([clientId, c.serviceAccountsEnabled, c.publicClient]).toEqual([clientId, true, false]);
      const placeholder = /^\$\{([A-Z_]+)\}$/.exec(c.secret!)![1]!;
      expect(entrypointScript('keycloak').script).toContain(`${placeholder}=$(< /run/secrets/${secretName})`);
      // Temporal: write to the journeys' namespace, nothing more.
      expect(serviceAccount(clientId).clientRoles).toEqual({ temporal: ['default:write'] });
    }
    // The realm's permissions name the `default` namespace: the compose's.
    expect(env('worker').TEMPORAL_NAMESPACE).toBe('default');
  });

  test("the Temporal server: the JWT authorizer and an internal frontend, in the configuration it reads after its image's", () => {
    const e = env('temporal');
    expect(e.SERVICES!.split(':')).toEqual(['frontend', 'internal-frontend', 'history', 'matching', 'worker']);
    const [mounted] = (svc('temporal') as { configs?: { source: string; target: string }[] }).configs!;
    // The server loads config/docker.yaml (the image renders it), then config/docker_<zone>.yaml over it.
    expect(mounted).toEqual({
      source: 'temporal-auth',
      target: `/etc/temporal/config/docker_${e.TEMPORAL_AVAILABILITY_ZONE}.yaml`,
    });
    const content = (compose as unknown as { configs: Record<string, { content: string }> }).configs['temporal-auth']!
      .content;
    expect(content.split('\n')[0]).toBe('# enable-template');
    const rendered = YAML.parse(renderEnv(content, e)) as {
      global: { authorization: Record<string, unknown> };
      services: Record<string, { rpc: Record<string, unknown> }>;
    };
    expect(rendered.global.authorization).toEqual({
      jwtKeyProvider: { keySourceURIs: [e.TEMPORAL_AUTH_JWKS_URL], refreshInterval: '1m' },
      permissionsClaimName: 'permissions',
      audience: 'journey-engine',
      authorizer: 'default',
      claimMapper: 'default',
    });
    // The internal frontend (and the other services without a token check) on loopback: test/compose/hardening.test.ts.
    const rpc = rendered.services['internal-frontend']!.rpc;
    expect(rpc).toEqual({
      grpcPort: Number(e.TEMPORAL_INTERNAL_FRONTEND_PORT),
      membershipPort: Number(e.TEMPORAL_INTERNAL_FRONTEND_MEMBERSHIP_PORT),
      httpPort: Number(e.TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT),
      bindOnIP: '127.0.0.1',
    });
    // Clear of the ports the image gives the other services (frontend 7233/7243, history 7234, matching 7235,
    // worker 7239; membership 6933-6935, 6939); membership ports are stored as smallint.
    const taken = [7233, 7243, 7234, 7235, 7239, 6933, 6934, 6935, 6939];
    for (const p of [rpc.grpcPort, rpc.membershipPort, rpc.httpPort]) expect(taken).not.toContain(p);
    expect(rpc.membershipPort).toBeLessThan(32768);
    // Not published: the frontend alone is, on loopback.
    expect(publishedPorts(svc('temporal')).map((p) => p.container)).toEqual([7233]);
    // The same settings as deploy/temporal/production.yaml has for `npm run start:production`.
    const production = read('deploy/temporal/production.yaml');
    for (const name of [
      'TEMPORAL_AUTH_JWKS_URL',
      'TEMPORAL_AUTH_AUDIENCE',
      'TEMPORAL_INTERNAL_FRONTEND_PORT',
      'TEMPORAL_INTERNAL_FRONTEND_HTTP_PORT',
      'TEMPORAL_INTERNAL_FRONTEND_MEMBERSHIP_PORT',
    ]) {
      expect([name, production.includes(`env "${name}"`), name in e]).toEqual([name, true, true]);
    }
  });

  test('temporal-setup and the temporal CLI act as the automation service account; its secret never on a command line', () => {
    const automation = client('journey-automation');
    expect(automation.serviceAccountsEnabled).toBe(true);
    expect(serviceAccount('journey-automation').clientRoles).toEqual({ temporal: ['temporal-system:admin'] });
    const secret = secretValue('journey_automation_client_secret');
    const runs = {
      'temporal-setup': svc('temporal-setup').command!.join('\n'),
      'temporal-cli': entrypointScript('temporal-cli').script,
    };
    for (const [name, script] of Object.entries(runs)) {
      expect(env(name)).toMatchObject({
        TEMPORAL_OAUTH_CLIENT_ID: 'journey-automation',
        TEMPORAL_OAUTH_TOKEN_URL: `${backChannel()}/protocol/openid-connect/token`,
      });
      const dir = path.join(work, name);
      const bin = standIns(dir, { curl: '{"access_token":"an-automation-token","expires_in":300}', temporal: '' });
      // jq reads the token from the answer (a stand-in of its one use here where jq is not installed).
      if (spawnSync('jq', ['--version']).status !== 0) {
        writeFileSync(path.join(bin, 'jq'), '#!/bin/sh\nsed -n \'s/.*"access_token":"\\([^"]*\\)".*/\\1/p\'\n', {
          mode: 0o755,
        });
      }
      execFileSync(
        'sh',
        [
          '-ec',
          script
            .replaceAll('/etc/ssl/certs/ca-certificates.crt', '/dev/null')
            .replaceAll('/tmp/roots.pem', path.join(dir, 'roots.pem'))
            .replaceAll('/run/secrets/', `${runSecrets(name)}/`),
          'temporal',
          'workflow',
          'list',
        ],
        { env: { PATH: `${bin}:${process.env.PATH}`, ...env(name) }, stdio: 'ignore' },
      );
      // Client credentials with HTTP basic authentication, the secret in curl's configuration on its stdin.
      const args = recorded(dir, 'curl', 'args');
      expect(args).not.toContain(secret);
      expect(args).toContain('grant_type=client_credentials\n');
      expect(args).toContain(`${env(name).TEMPORAL_OAUTH_TOKEN_URL}\n`);
      expect(recorded(dir, 'curl', 'stdin')).toBe(`user = "journey-automation:${secret}"\n`);
      // The CLI gets the token as its API key, over plain gRPC inside the network.
      const cli = recordedEnv(dir, 'temporal');
      expect([name, cli.TEMPORAL_API_KEY, cli.TEMPORAL_TLS]).toEqual([name, 'an-automation-token', 'false']);
    }
  });

  test('deploy/init-secrets.sh makes each secret the compose file names, once', () => {
    const names = readdirSync(secretsDir).sort();
    for (const [secret, { file }] of Object.entries(compose.secrets)) {
      expect([secret, names.includes(path.basename(file))]).toEqual([secret, true]);
    }
    const again = execFileSync('sh', [path.join(ROOT, 'deploy/init-secrets.sh'), secretsDir, path.join(work, '.env')], {
      encoding: 'utf8',
    });
    expect(again).not.toMatch(/^created/m);
    for (const file of ['keycloak_admin_password', 'journey_api_client_secret', 'codec_tls.crt']) {
      expect(again).toContain(`kept     ${path.join(secretsDir, file)}`);
    }
  });

  test('deploy/compose.temporal-cloud.yml turns the service accounts off: the API key goes to Temporal Cloud', () => {
    const override = parseCompose(read('deploy/compose.temporal-cloud.yml'));
    for (const name of ['api-1', 'api-2', 'worker']) {
      const merged = { ...env(name), ...envOf(override.services[name]!) };
      expect([name, merged.TEMPORAL_OAUTH_CLIENT_ID, merged.TEMPORAL_API_KEY_FILE]).toEqual([
        name,
        '',
        '/run/secrets/temporal_api_key',
      ]);
    }
  });

  const composeClient = findComposeClient();
  (composeClient ? test : test.skip)(
    '`docker compose config` accepts the file, alone and with the Temporal Cloud override',
    () => {
      const [cmd, ...pre] = composeClient!;
      for (const files of [['docker-compose.yml'], ['docker-compose.yml', 'deploy/compose.temporal-cloud.yml']]) {
        const res = spawnSync(
          cmd!,
          [...pre, ...files.flatMap((f) => ['-f', f]), '--profile', 'tools', 'config', '--quiet'],
          {
            cwd: ROOT,
            env: { ...process.env, POSTGRES_PASSWORD: 'a-test-password-only', SECRETS_GID: '1000' },
            encoding: 'utf8',
          },
        );
        expect([files.join(' + '), res.status, res.stderr]).toEqual([files.join(' + '), 0, '']);
      }
    },
  );
});

/** The variables the temporalio/ui image's configuration reads (ui-server v2.42.1, config/docker.yaml). */
const UI_SERVER_ENV = [
  'TEMPORAL_ADDRESS',
  'TEMPORAL_UI_PORT',
  'TEMPORAL_UI_PUBLIC_PATH',
  'TEMPORAL_DEFAULT_NAMESPACE',
  'TEMPORAL_CSRF_COOKIE_INSECURE',
  'TEMPORAL_CORS_ORIGINS',
  'TEMPORAL_AUTH_ENABLED',
  'TEMPORAL_AUTH_LABEL',
  'TEMPORAL_AUTH_TYPE',
  'TEMPORAL_AUTH_PROVIDER_URL',
  'TEMPORAL_AUTH_ISSUER_URL',
  'TEMPORAL_AUTH_CLIENT_ID',
  'TEMPORAL_AUTH_CLIENT_SECRET',
  'TEMPORAL_AUTH_CALLBACK_URL',
  'TEMPORAL_AUTH_USE_ID_TOKEN_AS_BEARER',
  'TEMPORAL_AUTH_SCOPES',
  'TEMPORAL_CODEC_ENDPOINT',
  'TEMPORAL_CODEC_PASS_ACCESS_TOKEN',
  'TEMPORAL_CODEC_INCLUDE_CREDENTIALS',
];

/** A Compose v2 client: COMPOSE_BIN, `docker compose` or `docker-compose` (v2), whichever answers first. */
function findComposeClient(): string[] | undefined {
  if (process.env.COMPOSE_BIN) return [process.env.COMPOSE_BIN];
  for (const c of [['docker', 'compose'], ['docker-compose']]) {
    const res = spawnSync(c[0]!, [...c.slice(1), 'version', '--short'], { encoding: 'utf8' });
    if (res.status === 0 && /^v?2\./.test(res.stdout.trim())) return c;
  }
  return undefined;
}
