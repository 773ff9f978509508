// People of their own instead of shared accounts: `npm run add-person` creates a person in the realm through
// Keycloak's admin API (a stand-in on loopback that keeps what it is asked) with a temporary password they must
// change, a second factor they must set up for the roles that read patient data or act, and their role; the
// administrator's password never on the command line.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { addPerson, parseAddPerson, requiredActions } from '../../scripts/add-person';
import { UsageError } from '../../scripts/lib/cli';

interface Seen {
  method: string;
  url: string;
  auth?: string;
  body: string;
}

describe('npm run add-person', () => {
  let server: Server;
  let base: string;
  const seen: Seen[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({
          method: req.method!,
          url: req.url!,
          ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
          body,
        });
        if (req.url === '/realms/master/protocol/openid-connect/token') {
          const form = new URLSearchParams(body);
          if (form.get('password') !== 'kc-admin-pw') return res.writeHead(401).end();
          return res.writeHead(200, { 'content-type': 'application/json' }).end('{"access_token":"admin-at"}');
        }
        if (req.method === 'POST' && req.url === '/admin/realms/journeys/users') {
          const user = JSON.parse(body) as { username: string };
          if (user.username === 'taken') return res.writeHead(409).end();
          return res.writeHead(201, { location: `${base}/admin/realms/journeys/users/u-1` }).end();
        }
        if (req.url === '/admin/realms/journeys/roles/journey-operator') {
          return res
            .writeHead(200, { 'content-type': 'application/json' })
            .end('{"id":"r-op","name":"journey-operator"}');
        }
        if (req.url === '/admin/realms/journeys/users/u-1/role-mappings/realm') return res.writeHead(204).end();
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('adds an operator with a temporary password, a second factor to set up, and the role', async () => {
    const o = parseAddPerson(
      ['--keycloak', base, '--username', 'alice.ops', '--email', 'alice@clinic.example', '--role', 'operator'],
      {
        KEYCLOAK_ADMIN_PASSWORD: 'kc-admin-pw',
      },
    )!;
    const { id, temporaryPassword } = await addPerson(o);
    expect(id).toBe('u-1');
    expect(temporaryPassword).toMatch(/^[A-Za-z0-9_-]{20}$/);
    const create = seen.find((s) => s.url === '/admin/realms/journeys/users')!;
    expect(create.auth).toBe('Bearer admin-at');
    expect(JSON.parse(create.body)).toEqual({
      username: 'alice.ops',
      email: 'alice@clinic.example',
      emailVerified: false,
      enabled: true,
      requiredActions: ['UPDATE_PASSWORD', 'CONFIGURE_TOTP'],
      credentials: [{ type: 'password', value: temporaryPassword, temporary: true }],
    });
    const mapping = seen.find((s) => s.url.endsWith('/role-mappings/realm'))!;
    expect(JSON.parse(mapping.body)).toEqual([{ id: 'r-op', name: 'journey-operator' }]);
  });

  it('asks a viewer for a new password only; refuses a taken name, bad input, and an administrator password argument', async () => {
    expect(requiredActions('viewer')).toEqual(['UPDATE_PASSWORD']);
    expect(requiredActions('admin')).toEqual(['UPDATE_PASSWORD', 'CONFIGURE_TOTP']);
    const env = { KEYCLOAK_ADMIN_PASSWORD: 'kc-admin-pw' };
    await expect(
      addPerson(parseAddPerson(['--keycloak', base, '--username', 'taken', '--role', 'operator'], env)!),
    ).rejects.toThrow('taken is already a person of realm journeys');
    expect(() => parseAddPerson(['--username', 'Ada Lovelace', '--role', 'viewer'], env)).toThrow(UsageError);
    expect(() => parseAddPerson(['--username', 'ada', '--role', 'root'], env)).toThrow(
      '--role: viewer, operator or admin',
    );
    expect(() => parseAddPerson(['--username', 'ada', '--role', 'viewer'], {})).toThrow(/KEYCLOAK_ADMIN_PASSWORD/);
    expect(() => parseAddPerson(['--username', 'ada', '--role', 'viewer', '--password', 'x'], env)).toThrow(UsageError);
  });
});
