// A certificate for this machine's loopback addresses (127.0.0.1, localhost), self-signed, made once with openssl
// into a stack's data folder: the codec server serves HTTPS with it, since the Web UI passes the signed-in person's
// access token to an https:// codec endpoint only. A browser trusts it once told to (docs/deploy.md); a deployment
// uses a certificate of its own CA.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

export interface LocalCertificate {
  certFile: string;
  keyFile: string;
}

export function ensureLocalCertificate(dir: string, name = 'codec'): LocalCertificate {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const certFile = path.join(dir, `${name}.crt`);
  const keyFile = path.join(dir, `${name}.key`);
  if (existsSync(certFile) && existsSync(keyFile)) return { certFile, keyFile };
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        keyFile,
        '-out',
        certFile,
        '-days',
        '397',
        '-subj',
        `/CN=127.0.0.1/O=patient journey engine (local ${name})`,
        '-addext',
        'subjectAltName=IP:127.0.0.1,DNS:localhost',
        '-addext',
        'extendedKeyUsage=serverAuth',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
  } catch (err) {
    throw new Error(`could not make a certificate with openssl (apt-get install openssl): ${(err as Error).message}`);
  }
  return { certFile, keyFile };
}
