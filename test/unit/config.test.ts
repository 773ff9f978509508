import { randomBytes } from 'node:crypto';
import { ConfigError, loadCodecConfig, loadConfig } from '../../src/config';

const base = { WEBHOOK_SECRET: 'webhook-secret-0123456789' };

describe('configuration', () => {
  it('names the variable of a bad number, not its value', () => {
    expect(() => loadConfig({ ...base, API_PORT: 'notaport' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base, API_PORT: 'notaport' })).toThrow(/API_PORT: /);
    expect(() => loadConfig({ ...base, JOURNEY_CONSULTATION_DEADLINE_MS: '-5' })).toThrow(
      /JOURNEY_CONSULTATION_DEADLINE_MS: /,
    );
    expect(() => loadConfig({ ...base, JOURNEY_REMINDERS_MS: '1000,soon' })).toThrow(/JOURNEY_REMINDERS_MS: /);
  });

  it('names a secret file it cannot read', () => {
    expect(() => loadConfig({ WEBHOOK_SECRET_FILE: '/nonexistent/webhook-secret' })).toThrow(
      'WEBHOOK_SECRET_FILE: cannot read /nonexistent/webhook-secret (ENOENT)',
    );
  });

  it('names a missing required setting', () => {
    expect(() => loadConfig({})).toThrow(/api\.webhookSecret/);
  });

  it('lets the codec server start with its own settings only', () => {
    const keys = `k:${randomBytes(32).toString('base64')}`;
    const { codec } = loadCodecConfig({ PAYLOAD_ENCRYPTION_KEYS: keys, CODEC_PORT: '9999' });
    expect(codec).toMatchObject({ serverPort: 9999, disabled: false });
    expect(codec.keys.map((k) => k.id)).toEqual(['k']);
    expect(() => loadCodecConfig({ CODEC_PORT: 'x' })).toThrow(/CODEC_PORT: /);
  });
});
