'use strict';
// Loads the native module, as napi-rs packages do: the platform package npm installed beside this
// one (an optional dependency: npm installs only the one whose os, cpu and libc match), or a
// module built from source beside index.js (a clone: node scripts/build.js). Anything else is an
// error that names the supported platforms and how to build from source.
const path = require('path');

/** The platforms a prebuilt module is published for, by `<platform>-<arch>-<libc>`. */
const SUPPORTED = ['linux-x64-gnu'];

/** This process's `<platform>-<arch>[-<libc>]`: Linux adds gnu (glibc) or musl. */
function platformName() {
  const { platform, arch } = process;
  if (platform !== 'linux') return `${platform}-${arch}`;
  const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
  const glibc = report && /** @type {any} */ (report).header?.glibcVersionRuntime;
  return `${platform}-${arch}-${glibc ? 'gnu' : 'musl'}`;
}

/**
 * Whether `error` says that `what` itself (not something it needs) could not be found.
 * @param {any} error
 * @param {string} what
 */
function missing(error, what) {
  return error.code === 'MODULE_NOT_FOUND' && String(error.message).includes(what);
}

function load() {
  const built = path.join(__dirname, 'objstore_db.node');
  try {
    return require(built);
  } catch (error) {
    if (!missing(error, 'objstore_db.node')) throw error;
  }
  const name = platformName();
  const prebuilt = `objstore-db-${name}`;
  try {
    return require(prebuilt);
  } catch (error) {
    if (!missing(error, prebuilt)) throw error;
  }
  const why = SUPPORTED.includes(name)
    ? `its package for this platform, ${prebuilt}, is not installed (npm leaves optional dependencies out ` +
      'with --omit=optional or --no-optional; install it next to objstore-db)'
    : `no prebuilt native module is published for ${name} (published for: ${SUPPORTED.join(', ')})`;
  const error = new Error(
    `objstore-db: the native module has not been built: ${why}. To build it from source, in a clone of ` +
      `the repository (needs the Rust toolchain): node bindings/node/scripts/build.js, which puts it beside index.js.`,
  );
  /** @type {any} */ (error).code = 'OBJSTORE_NOT_BUILT';
  throw error;
}

module.exports = load();
