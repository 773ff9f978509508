// Readers who are people are named by their own token: `npm run ops -- show` runs the temporal CLI with the signed-in
// person's access token for the codec server (in the CLI's environment, never on its command line, where a process
// list shows it), and refuses to run without an identity provider; the codec server's static token is a machine's,
// on the record as `machine:<name>`.
import { randomBytes } from 'node:crypto';
import type { AuditEvent } from '../../src/audit/types';
import { EncryptionCodec } from '../../src/codec/encryption-codec';
import { buildCodecServer } from '../../src/codec/server';
import { loadCodecConfig } from '../../src/config';
import { parseEncryptionKeys } from '../../src/encryption-keys';
import { showInvocation } from '../../scripts/lib/ops-show';
import { parseCommand, UsageError } from '../../scripts/ops';

const ISSUER = 'https://id.example/realms/journeys';

describe('npm run ops -- show', () => {
  it('decodes as the person signed in: the token in the CLI environment, never its arguments', () => {
    const parsed = parseCommand(['show', 'j-123', '--issuer', ISSUER, '--temporal-address', 'temporal:7233'], {
      CODEC_ENDPOINT: 'https://codec.example',
    });
    expect(parsed).toMatchObject({
      kind: 'show',
      options: {
        journeyId: 'j-123',
        address: 'temporal:7233',
        namespace: 'default',
        codecEndpoint: 'https://codec.example',
      },
    });
    if (parsed?.kind !== 'show') throw new Error('not show');
    const token = `eyJ.${randomBytes(12).toString('hex')}.sig`;
    const run = showInvocation(parsed.options, token, { TEMPORAL_CLI: '/opt/temporal' });
    expect(run.command).toBe('/opt/temporal');
    expect(run.args).toEqual([
      'workflow',
      'show',
      '--workflow-id',
      'journey-j-123',
      '--address',
      'temporal:7233',
      '--namespace',
      'default',
      '--codec-endpoint',
      'https://codec.example',
    ]);
    expect(run.args.join(' ')).not.toContain(token);
    expect(run.env).toMatchObject({ TEMPORAL_CODEC_AUTH: `Bearer ${token}`, TEMPORAL_API_KEY: token });
  });

  it('refuses to run without an identity provider (the static codec token is for machines), and a bad journey id', () => {
    expect(() => parseCommand(['show', 'j-123'], {})).toThrow(UsageError);
    expect(() => parseCommand(['show', 'j-123'], {})).toThrow(/the static codec token is for machines/);
    expect(() => parseCommand(['show', 'j 1', '--issuer', ISSUER], {})).toThrow(/is not a journey id/);
    expect(() => parseCommand(['show', '--issuer', ISSUER], {})).toThrow(/show takes one journey id/);
  });
});

describe("the codec server's static token", () => {
  it('is a machine on the record, under the name the deployment gives it', async () => {
    const token = randomBytes(24).toString('base64url');
    const recorded: AuditEvent[] = [];
    const { codec } = loadCodecConfig({
      PAYLOAD_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      CODEC_SERVER_TOKEN: token,
      CODEC_SERVER_TOKEN_NAME: 'nightly-export',
    });
    expect(codec.serverTokenName).toBe('nightly-export');
    expect(() => loadCodecConfig({ CODEC_SERVER_TOKEN_NAME: 'Ada Lovelace' })).toThrow(/CODEC_SERVER_TOKEN_NAME/);
    const server = buildCodecServer({
      codec: new EncryptionCodec(parseEncryptionKeys(`k1:${randomBytes(32).toString('base64')}`)),
      corsOrigins: [],
      token,
      tokenName: codec.serverTokenName,
      audit: (e) => void recorded.push(e),
    });
    try {
      const res = await server.inject({
        method: 'POST',
        url: '/decode',
        headers: { authorization: `Bearer ${token}` },
        payload: { payloads: [] },
      });
      expect(res.statusCode).toBe(200);
      expect(recorded.map((e) => [e.subject, e.roles])).toEqual([['machine:nightly-export', ['automation']]]);
    } finally {
      await server.close();
    }
  });
});
