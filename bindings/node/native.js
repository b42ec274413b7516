'use strict';
// Loads the native module that `npm install` built (scripts/build.js). When the install script
// did not run (npm did not allow it), say how to build it rather than fail obscurely.
const path = require('path');

const file = path.join(__dirname, 'objstore_db.node');
try {
  module.exports = require(file);
} catch (error) {
  if (error.code !== 'MODULE_NOT_FOUND' || !String(error.message).includes('objstore_db.node')) throw error;
  const built = new Error(
    `objstore-db: the native module ${file} has not been built. Its install script builds it with cargo; ` +
      'if npm did not run it, approve it (npm install-scripts approve objstore-db, then npm rebuild objstore-db) ' +
      `or build it by hand: node ${path.join(__dirname, 'scripts', 'build.js')} (needs the Rust toolchain).`,
  );
  built.code = 'OBJSTORE_NOT_BUILT';
  throw built;
}
