#!/usr/bin/env node
'use strict';
// `npx objstore-results …`: runs the prebuilt binary of this platform's package (installed as an
// optional dependency, as esbuild ships), passing the arguments, the streams and the exit status
// through. Where no package matches this platform, says what to install instead.
const { spawnSync } = require('node:child_process');
const path = require('node:path');

/** The platform packages published, by Node's platform and architecture (and libc on Linux). */
const PACKAGES = {
  'linux-x64-gnu': 'objstore-results-linux-x64-gnu',
  'linux-arm64-gnu': 'objstore-results-linux-arm64-gnu',
  'darwin-x64': 'objstore-results-darwin-x64',
  'darwin-arm64': 'objstore-results-darwin-arm64',
  'win32-x64': 'objstore-results-win32-x64-msvc',
};

function platformKey() {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  // glibc reports its version in the process report; musl does not.
  const report = /** @type {any} */ (process.report && process.report.getReport());
  return `${base}-${report && report.header && report.header.glibcVersionRuntime ? 'gnu' : 'musl'}`;
}

function binary() {
  const key = platformKey();
  const name = PACKAGES[key];
  const file = process.platform === 'win32' ? 'objstore-results.exe' : 'objstore-results';
  if (name) {
    try {
      return path.join(path.dirname(require.resolve(`${name}/package.json`)), file);
    } catch {
      // Not installed (installed with --no-optional, or for another platform): said below.
    }
  }
  const why = name
    ? `its package ${name} is not installed (installed with --omit=optional, or node_modules copied from another platform?): reinstall objstore-results`
    : `no prebuilt binary is published for ${key}`;
  process.stderr.write(
    `objstore-results: ${why}.\n` +
      'Install the CLI another way: pip install objstore-results (builds from source where no wheel matches),\n' +
      'or cargo install --git <this repository> objstore-results (needs a Rust toolchain).\n',
  );
  process.exit(1);
}

const run = spawnSync(binary(), process.argv.slice(2), { stdio: 'inherit' });
if (run.error) {
  process.stderr.write(`objstore-results: could not run the binary: ${run.error.message}\n`);
  process.exit(1);
}
process.exit(run.status === null ? 1 : run.status);
