'use strict';
// The event objects listeners get, with YDN-DB's methods.

const { keyJs } = require('./convert');

// ----- events -----------------------------------------------------------------------------------

/** A change or sync event (YDN-DB's RecordEvent): `kind` (also `type`), `store`, `key` and
 * `value` as fields, and YDN-DB's getKey(), getValue() and getStoreName(). */
class RecordEvent {
  constructor(event) {
    Object.assign(this, event);
    this.name = 'RecordEvent';
    this.type = event.kind;
    if (event.key !== undefined && event.key !== null) this.key = keyJs(event.key);
  }

  getKey() {
    return this.key;
  }

  getValue() {
    return this.value;
  }

  getStoreName() {
    return this.store;
  }
}

/** The open's outcome (YDN-DB's ReadyEvent): getVersion(), and getOldVersion(), NaN for a new
 * database; `value` holds both as `{version, previousVersion}` (null for a new one). */
class ReadyEvent {
  constructor(version, previousVersion) {
    this.kind = 'ready';
    this.type = 'ready';
    this.name = 'ReadyEvent';
    this.value = { version, previousVersion };
  }

  getVersion() {
    return this.value.version;
  }

  getOldVersion() {
    return this.value.previousVersion === null ? NaN : this.value.previousVersion;
  }
}

/** A failed open or a listener that threw (YDN-DB's ErrorEvent): `message` and getError(). */
class ErrorEvent {
  constructor(message, error) {
    this.kind = 'error';
    this.type = 'error';
    this.name = 'ErrorEvent';
    this.message = message;
    this.error = error;
  }

  getError() {
    return this.error;
  }
}

module.exports = { RecordEvent, ReadyEvent, ErrorEvent };
