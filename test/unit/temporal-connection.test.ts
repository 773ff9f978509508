// The Temporal connection resolves as the Temporal CLI resolves it (@temporalio/envconfig): a temporal.toml profile,
// then the TEMPORAL_* variables over it; the engine's earlier variable names still work. No network here.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { connectionOptions } from '../../src/temporal';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'temporal-connection-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** An environment whose home holds no temporal.toml, so nothing from this machine's CLI set-up leaks in. */
function env(vars: Record<string, string> = {}): Record<string, string> {
  return { WEBHOOK_SECRET: 'webhook-secret-0123456789', HOME: dir, ...vars };
}

function file(name: string, text: string): string {
  const p = path.join(dir, name);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, text);
  return p;
}

const PROFILES = `
[profile.default]
address = "127.0.0.1:7233"
namespace = "default"

[profile.cloud]
address = "eu-west-1.aws.example:7233"
namespace = "journeys.acct"
api_key = "key-from-profile"

[profile.mtls]
address = "temporal.internal:7233"
namespace = "journeys"

[profile.mtls.tls]
client_cert_path = "CERT"
client_key_path = "KEY"
server_ca_cert_path = "CA"
server_name = "temporal.internal"
`;

describe('Temporal connection settings', () => {
  it('defaults to the local dev server without TLS when nothing is set', () => {
    const t = loadConfig(env()).temporal;
    expect(t).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default', taskQueue: 'patient-journeys' });
    expect(t.apiKey).toBeUndefined();
    const o = connectionOptions(t);
    expect(o).toEqual({ address: '127.0.0.1:7233' });
  });

  it('reads the standard variables alone: address, namespace, an API key (TLS then on)', () => {
    const t = loadConfig(
      env({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.example:7233', TEMPORAL_NAMESPACE: 'ns.acct', TEMPORAL_API_KEY: 'k-1' }),
    ).temporal;
    expect(t).toMatchObject({ address: 'ns.acct.tmprl.example:7233', namespace: 'ns.acct', apiKey: 'k-1' });
    expect(connectionOptions(t)).toEqual({ address: 'ns.acct.tmprl.example:7233', apiKey: 'k-1', tls: true });
    // The API key from a mounted file, as before.
    const keyFile = file('api-key', 'k-from-file\n');
    expect(loadConfig(env({ TEMPORAL_API_KEY_FILE: keyFile })).temporal.apiKey).toBe('k-from-file');
    // TLS switched off explicitly (a local proxy in front of the cloud, say).
    expect(connectionOptions(loadConfig(env({ TEMPORAL_API_KEY: 'k-1', TEMPORAL_TLS: 'false' })).temporal).tls).toBe(
      false,
    );
    expect(connectionOptions(loadConfig(env({ TEMPORAL_TLS: 'yes' })).temporal).tls).toBeTruthy();
  });

  it('reads a profile of the file TEMPORAL_CONFIG_FILE names; the variables win over it', () => {
    const config = file('temporal.toml', PROFILES);
    const cloud = loadConfig(env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'cloud' })).temporal;
    expect(cloud).toMatchObject({ address: 'eu-west-1.aws.example:7233', namespace: 'journeys.acct' });
    expect(connectionOptions(cloud)).toEqual({
      address: 'eu-west-1.aws.example:7233',
      apiKey: 'key-from-profile',
      tls: true,
    });
    const overridden = loadConfig(
      env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'cloud', TEMPORAL_NAMESPACE: 'other.acct' }),
    ).temporal;
    expect(overridden).toMatchObject({ address: 'eu-west-1.aws.example:7233', namespace: 'other.acct' });
    // Without TEMPORAL_PROFILE: the profile named default.
    expect(loadConfig(env({ TEMPORAL_CONFIG_FILE: config })).temporal.apiKey).toBeUndefined();
  });

  it("finds the CLI's own temporal.toml when TEMPORAL_CONFIG_FILE is unset", () => {
    file('xdg/temporalio/temporal.toml', PROFILES);
    const t = loadConfig(env({ XDG_CONFIG_HOME: path.join(dir, 'xdg'), TEMPORAL_PROFILE: 'cloud' })).temporal;
    expect(t.address).toBe('eu-west-1.aws.example:7233');
    file('.config/temporalio/temporal.toml', PROFILES.replace('eu-west-1', 'us-east-2'));
    expect(loadConfig(env({ TEMPORAL_PROFILE: 'cloud' })).temporal.address).toBe('us-east-2.aws.example:7233');
  });

  it('reads the TLS files a profile names (client pair, server CA, server name) when it connects', () => {
    const crt = file('tls/client.crt', 'client certificate bytes');
    const key = file('tls/client.key', 'client key bytes');
    const ca = file('tls/ca.crt', 'server CA bytes');
    const config = file(
      'temporal.toml',
      PROFILES.replace('"CERT"', JSON.stringify(crt))
        .replace('"KEY"', JSON.stringify(key))
        .replace('"CA"', JSON.stringify(ca)),
    );
    const t = loadConfig(env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'mtls' })).temporal;
    const tls = connectionOptions(t).tls;
    expect(tls).toMatchObject({ serverNameOverride: 'temporal.internal' });
    if (typeof tls !== 'object' || !tls) throw new Error('expected a TLS configuration');
    expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('client certificate bytes');
    expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('client key bytes');
    expect(Buffer.from(tls.serverRootCACertificate!).toString()).toBe('server CA bytes');
    // TEMPORAL_TLS=false turns the profile's TLS off.
    const off = loadConfig(env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'mtls', TEMPORAL_TLS: 'false' }));
    expect(connectionOptions(off.temporal).tls).toBe(false);
  });

  it('reads the client pair from the standard TLS variables and from the earlier TEMPORAL_TLS_CERT/KEY', () => {
    const crt = file('c.crt', 'crt-1');
    const key = file('c.key', 'key-1');
    for (const vars of <Record<string, string>[]>[
      { TEMPORAL_TLS_CLIENT_CERT_PATH: crt, TEMPORAL_TLS_CLIENT_KEY_PATH: key },
      { TEMPORAL_TLS_CERT: crt, TEMPORAL_TLS_KEY: key },
    ]) {
      const tls = connectionOptions(loadConfig(env(vars)).temporal).tls;
      if (typeof tls !== 'object' || !tls) throw new Error('expected a TLS configuration');
      expect(Buffer.from(tls.clientCertPair!.crt).toString()).toBe('crt-1');
      expect(Buffer.from(tls.clientCertPair!.key).toString()).toBe('key-1');
    }
    expect(() => loadConfig(env({ TEMPORAL_TLS_CERT: crt }))).toThrow(/client certificate and its key go together/);
  });

  it('names what is wrong without echoing the file: an unknown profile, bad TOML, a bad TEMPORAL_TLS', () => {
    const config = file('temporal.toml', PROFILES);
    expect(() => loadConfig(env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'staging' }))).toThrow(ConfigError);
    expect(() => loadConfig(env({ TEMPORAL_CONFIG_FILE: config, TEMPORAL_PROFILE: 'staging' }))).toThrow(
      /has no profile staging/,
    );
    const broken = file('broken.toml', '[profile.default]\napi_key = "secret-api-key-42\n');
    let message = '';
    try {
      loadConfig(env({ TEMPORAL_CONFIG_FILE: broken }));
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/is not valid TOML \(line 2\)/);
    expect(message).not.toContain('secret-api-key-42');
    expect(() => loadConfig(env({ TEMPORAL_CONFIG_FILE: path.join(dir, 'missing.toml') }))).toThrow(
      /TEMPORAL_CONFIG_FILE: no file at .*missing\.toml/,
    );
    // Without a file at all, a profile other than default cannot be found.
    expect(() => loadConfig(env({ TEMPORAL_PROFILE: 'cloud' }))).toThrow(/has no profile cloud/);
    expect(() => loadConfig(env({ TEMPORAL_TLS: 'maybe' }))).toThrow(/TEMPORAL_TLS: must be true or false/);
  });
});
