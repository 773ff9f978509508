// A stand-in identity provider for tests: its discovery document and JWKS served over real HTTP on loopback, and
// access tokens signed as Keycloak signs them (realm roles in realm_access.roles).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export interface Issuer {
  url: string;
  keys: { kid: string; privateKey: CryptoKey; jwk: JWK }[];
  jwksFetches: number;
  close(): Promise<void>;
}

export async function signingKey(kid: string, alg = 'RS256') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { kid, privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' } };
}

/** An identity provider's two public documents, served on loopback. */
export async function startIssuer(): Promise<Issuer> {
  const issuer: Issuer = { url: '', keys: [await signingKey('key-1')], jwksFetches: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.url === '/realms/clinic/.well-known/openid-configuration') {
      res.end(JSON.stringify({ issuer: issuer.url, jwks_uri: `${issuer.url}/protocol/openid-connect/certs` }));
    } else if (req.url === '/realms/clinic/protocol/openid-connect/certs') {
      issuer.jwksFetches++;
      res.end(JSON.stringify({ keys: issuer.keys.map((k) => k.jwk) }));
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/realms/clinic`;
  issuer.close = () => new Promise((resolve) => server.close(() => resolve()));
  return issuer;
}

export const AUDIENCE = 'temporal-ui';

export function token(
  key: { kid: string; privateKey: CryptoKey },
  o: { iss: string; aud?: string; sub?: string; roles?: string[]; expSec?: number; nbfSec?: number; alg?: string },
) {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({
    realm_access: { roles: o.roles ?? ['journey-operator'] },
    preferred_username: 'olivia.operator',
  })
    .setProtectedHeader({ alg: o.alg ?? 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(o.iss)
    .setAudience(o.aud ?? AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(now + (o.expSec ?? 300));
  if (o.sub !== '') jwt.setSubject(o.sub ?? 'f3b1c7d2-operator');
  if (o.nbfSec !== undefined) jwt.setNotBefore(now + o.nbfSec);
  return jwt.sign(key.privateKey);
}
