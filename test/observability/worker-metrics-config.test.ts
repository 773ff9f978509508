// WORKER_METRICS_ADDRESS: off unless set; a host:port when set; anything else refused at start, naming the variable.
import { ConfigError, loadConfig } from '../../src/config';

const base = { WEBHOOK_SECRET: 'w'.repeat(32), PAYLOAD_ENCRYPTION_DISABLED: 'true' };
const address = (value: string | undefined) =>
  loadConfig({ ...base, WORKER_METRICS_ADDRESS: value }).worker.metricsAddress;

describe('WORKER_METRICS_ADDRESS', () => {
  it('is off when unset, empty or off', () => {
    for (const value of [undefined, '', ' ', 'off', 'OFF']) expect(address(value)).toBeUndefined();
  });

  it('takes a host and a port', () => {
    for (const value of ['127.0.0.1:9464', '0.0.0.0:9464', 'localhost:1', '[::]:65535']) {
      expect(address(value)).toBe(value);
    }
  });

  it('refuses anything else, naming the variable', () => {
    for (const value of ['9464', ':9464', '0.0.0.0:', '0.0.0.0:65536', '0.0.0.0:0', 'http://0.0.0.0:9464']) {
      expect(() => address(value)).toThrow(ConfigError);
      expect(() => address(value)).toThrow(/WORKER_METRICS_ADDRESS/);
    }
  });
});
