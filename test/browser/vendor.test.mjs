// The console's vendored libraries (internal/web/static/vendor) are the
// files of their npm packages, unchanged: each folder <name>@<version> holds
// files that are byte for byte those of the same paths in the package pinned
// here (installed from the registry as a devDependency), its licence among
// them. vendor.json names the package of each folder. No browser needed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, statSync, existsSync } from 'node:fs';
import { join, dirname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const vendor = join(here, '../../internal/web/static/vendor');
const manifest = JSON.parse(readFileSync(join(here, 'vendor.json'), 'utf8'));
const pkg = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8'));

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? files(p) : [p];
  });
}

test('every vendored folder is named in vendor.json and pinned in package.json', () => {
  const folders = readdirSync(vendor).filter((n) => statSync(join(vendor, n)).isDirectory()).sort();
  assert.deepEqual(folders, Object.keys(manifest).sort(), 'vendor.json lists exactly the vendored folders');
  for (const [folder, name] of Object.entries(manifest)) {
    const version = folder.slice(folder.lastIndexOf('@') + 1);
    assert.equal(pkg.devDependencies?.[name], version, `${name} is pinned to ${version} in package.json`);
    const installed = JSON.parse(readFileSync(join(here, 'node_modules', name, 'package.json'), 'utf8'));
    assert.equal(installed.version, version, `node_modules has ${name}@${version} (run npm ci)`);
  }
});

for (const [folder, name] of Object.entries(manifest)) {
  test(`${folder} equals the files of ${name}`, () => {
    const root = join(vendor, folder);
    const got = files(root);
    assert.ok(got.some((f) => /^LICEN[CS]E/i.test(relative(root, f))), `${folder} has the package's licence`);
    for (const f of got) {
      const rel = relative(root, f);
      const original = join(here, 'node_modules', name, rel);
      assert.ok(existsSync(original), `${name} has no file ${rel}`);
      assert.ok(readFileSync(f).equals(readFileSync(original)), `${folder}/${rel} differs from ${name}'s`);
    }
  });
}
