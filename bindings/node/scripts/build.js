#!/usr/bin/env node
'use strict';
// The install script: builds the native module from source with cargo (release) and puts it
// beside index.js as objstore_db.node, without debug info. Nothing is downloaded but crates.
// Reuses the workspace's target directory, so a second build is a quick no-op.
// OBJSTORE_NODE_PREBUILT names a module built already (scripts/release-libs builds the one the
// tests and the npm package use): it is copied instead, and nothing is built.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const packageDir = path.join(__dirname, '..');
const workspace = path.join(packageDir, '..', '..');
const target = process.env.CARGO_TARGET_DIR || path.join(workspace, 'target');
const names = { linux: 'libobjstore_db_node.so', darwin: 'libobjstore_db_node.dylib', win32: 'objstore_db_node.dll' };
const prebuilt = process.env.OBJSTORE_NODE_PREBUILT;
const built = prebuilt || path.join(target, 'release', names[process.platform] || names.linux);
const out = path.join(packageDir, 'objstore_db.node');

if (!prebuilt) {
  try {
    execFileSync('cargo', ['build', '--release', '--quiet', '-p', 'objstore-db-node'], { cwd: workspace, stdio: 'inherit' });
  } catch (error) {
    console.error(`objstore-db: building the native module with cargo failed (${error.message}); the Rust toolchain is needed`);
    process.exit(1);
  }
}
const temporary = `${out}.${process.pid}`;
fs.copyFileSync(built, temporary);
try {
  // Debug info makes the module ~90 MB; the library's own release profile keeps it for benchmarks.
  execFileSync('strip', ['--strip-debug', temporary], { stdio: 'ignore' });
} catch {
  // No strip here: a larger module works just the same.
}
fs.renameSync(temporary, out); // atomic: a running process never loads a half-written module
