// The dependencies' install scripts are allowed or refused on purpose (package.json `allowScripts`, which npm 11 reads:
// a script with no entry is skipped, and `npm ci` ends with a warning listing it). Allowed: the scripts that check a
// native binary's platform package and fetch it when npm left it out (@swc/core, esbuild, unrs-resolver); npm ci
// installs the platform package from the lockfile, so they find it and finish in under a second. Refused: protobufjs's
// (a notice about its dependents' version ranges) and @parcel/watcher's (a build from source, only with
// --build-from-source; its prebuilt platform package is used). A dependency that brings a new install script fails
// here until it is given an entry (`npm install-scripts ls`, then `npm install-scripts approve` or `deny`).
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  allowScripts?: Record<string, unknown>;
};
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { name?: string; version?: string; hasInstallScript?: boolean }>;
};

/** The lockfile's packages that have an install script, as name and version. */
const withScripts = Object.entries(lock.packages)
  .filter(([, p]) => p.hasInstallScript)
  .map(([where, p]) => ({
    name: p.name ?? where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length),
    version: p.version,
  }));

/** An allowScripts key as name and optional version (`esbuild`, `esbuild@0.28.2`, `@swc/core@1.16.18`). */
function parseKey(key: string): { name: string; version?: string } {
  const at = key.indexOf('@', 1);
  return at < 0 ? { name: key } : { name: key.slice(0, at), version: key.slice(at + 1) };
}
const entries = Object.entries(pkg.allowScripts ?? {}).map(([key, allowed]) => ({ key, allowed, ...parseKey(key) }));
const covers = (e: { name: string; version?: string }, p: { name: string; version?: string }) =>
  e.name === p.name && (e.version === undefined || e.version === p.version);

describe("the dependencies' install scripts", () => {
  it('each has an entry in package.json allowScripts, allowed (true) or refused (false)', () => {
    expect(withScripts.length).toBeGreaterThan(0);
    const uncovered = withScripts
      .filter((p) => !entries.some((e) => covers(e, p)))
      .map((p) => `${p.name}@${p.version}`);
    expect(uncovered).toEqual([]);
    for (const e of entries)
      expect({ key: e.key, allowed: typeof e.allowed }).toEqual({ key: e.key, allowed: 'boolean' });
  });

  it('has no entry for a package that no longer has one (npm install-scripts prune)', () => {
    const stale = entries.filter((e) => !withScripts.some((p) => covers(e, p))).map((e) => e.key);
    expect(stale).toEqual([]);
  });

  it("runs the native binaries' checks, whose platform packages the lockfile holds", () => {
    const allowed = entries.filter((e) => e.allowed === true).map((e) => e.name);
    expect(allowed.sort()).toEqual(['@swc/core', 'esbuild', 'unrs-resolver']);
    const installed = Object.keys(lock.packages);
    for (const platformPackage of [
      '@swc/core-linux-x64-gnu',
      '@esbuild/linux-x64',
      '@unrs/resolver-binding-linux-x64-gnu',
    ])
      expect(installed.some((where) => where.endsWith(`node_modules/${platformPackage}`))).toBe(true);
  });
});
