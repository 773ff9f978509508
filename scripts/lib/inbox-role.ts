// The callback inbox's own PostgreSQL role on the production-shaped stack: it logs in, owns the inbox database (the
// engine creates its tables there at start) and is no superuser, as docker-compose.yml's `inbox-database` job makes
// it. A cluster set up before the role existed had its inbox tables made by the superuser: they are handed over, rows
// and all, so no callback waiting in it is stranded (scripts/lib/database-roles.ts, as for Temporal's and Keycloak's).
import { prepareDatabaseRole, roleUrl, type SuperuserAccess } from './database-roles';

export interface InboxRole {
  database: string;
  role: string;
  password: string;
}

/** Makes (or updates) the role, gives it the database and everything in its `public` schema. Runs on every start. */
export async function prepareInboxRole(superuser: SuperuserAccess, o: InboxRole): Promise<void> {
  await prepareDatabaseRole(superuser, { role: o.role, password: o.password, databases: [o.database] });
}

/** The role's URL to the inbox database (carries the password: never log it). */
export function inboxRoleUrl(host: string, port: number, o: InboxRole): string {
  return roleUrl(host, port, o.role, o.password, o.database);
}
