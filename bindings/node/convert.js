'use strict';
// What crosses to the native module: errors with a code, keys and values as JSON, key ranges,
// YDN-DB's Key, and the scan options of count, keys and values.

// ----- errors -----------------------------------------------------------------------------------

/** An Error with a stable `code` (NOT_FOUND, CONSTRAINT, INVALID_ARGUMENT, INVALID_KEY, ...). */
function codedError(code, message) {
  const error = new Error(message);
  error.code = code;
  return error;
}

// ----- keys and values --------------------------------------------------------------------------

function keyJson(key) {
  switch (typeof key) {
    case 'number':
      if (!Number.isFinite(key)) throw codedError('INVALID_KEY', `${key} is not a valid key; a number key must be finite`);
      return key;
    case 'string':
      return key;
    case 'object':
      if (key instanceof Date) {
        const time = key.getTime();
        if (Number.isNaN(time)) throw codedError('INVALID_KEY', 'an invalid Date is not a valid key');
        return { $date: time };
      }
      if (key instanceof Uint8Array) return { $binary: Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex') };
      if (key instanceof ArrayBuffer) return { $binary: Buffer.from(key).toString('hex') };
      if (Array.isArray(key)) return key.map(keyJson);
      break;
    default:
  }
  throw codedError(
    'INVALID_KEY',
    `${described(key)} is not a valid key; keys are numbers, strings, Dates, Buffers/Uint8Arrays or arrays of them`,
  );
}

/** What a refused key was, as the C and Python messages say it: `an object ({"a":1})`. */
function described(key) {
  if (key === null) return 'null';
  if (typeof key === 'object') {
    let text;
    try {
      text = JSON.stringify(key);
    } catch {
      text = String(key);
    }
    const name = key.constructor && key.constructor !== Object ? key.constructor.name : 'object';
    return `${/^[aeiou]/i.test(name) ? 'an' : 'a'} ${name} (${text})`;
  }
  const type = typeof key;
  return `${/^[aeiou]/i.test(type) ? 'an' : 'a'} ${type} (${String(key)})`;
}

function keyJs(value) {
  if (Array.isArray(value)) return value.map(keyJs);
  if (value !== null && typeof value === 'object') {
    if ('$date' in value) return new Date(value.$date);
    if ('$binary' in value) return Buffer.from(value.$binary, 'hex');
  }
  return value;
}

const keysJs = (keys) => keys.map(keyJs);

function unstorable(key, value) {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw codedError('INVALID_ARGUMENT', `field ${JSON.stringify(key)} is ${value}, which JSON cannot hold`);
  }
  if (typeof value === 'bigint') {
    throw codedError('INVALID_ARGUMENT', `field ${JSON.stringify(key)} is a BigInt, which JSON cannot hold; store it as a string`);
  }
  return value;
}

/** A value as JSON text, refusing what JSON would silently change or cannot hold. */
function valueJson(what, value) {
  let text;
  try {
    text = JSON.stringify(value, unstorable);
  } catch (error) {
    if (error.code) throw codedError(error.code, `${what}: ${error.message}`);
    throw codedError('INVALID_ARGUMENT', `${what} cannot be stored as JSON: ${error.message}`);
  }
  if (text === undefined) throw codedError('INVALID_ARGUMENT', `${what} cannot be stored as JSON (it is ${typeof value})`);
  return text;
}

const keyText = (key) => JSON.stringify(keyJson(key));

// ----- key ranges -------------------------------------------------------------------------------

/** A range of keys, as YDN-DB (and IndexedDB) name them. */
class KeyRange {
  constructor(spec) {
    this.spec = spec;
  }

  static only(key) {
    return new KeyRange({ only: keyJson(key) });
  }

  static lowerBound(key, open = false) {
    return new KeyRange({ lower: keyJson(key), lowerOpen: open });
  }

  static upperBound(key, open = false) {
    return new KeyRange({ upper: keyJson(key), upperOpen: open });
  }

  static bound(lower, upper, lowerOpen = false, upperOpen = false) {
    return new KeyRange({ lower: keyJson(lower), upper: keyJson(upper), lowerOpen, upperOpen });
  }

  /** Every string key beginning with `prefix`, or with an array prefix every array key whose
   * leading elements are the prefix's (a compound index's leading fields). */
  static starts(prefix) {
    if (typeof prefix !== 'string' && !Array.isArray(prefix)) {
      throw codedError('INVALID_KEY', 'KeyRange.starts takes a string or an array prefix');
    }
    return new KeyRange({ starts: keyJson(prefix) });
  }
}

const RANGE_FIELDS = ['lower', 'upper', 'lowerOpen', 'upperOpen'];

function isPlainRange(value) {
  if (value === null || typeof value !== 'object' || Object.getPrototypeOf(value) !== Object.prototype) return false;
  const fields = Object.keys(value);
  return fields.length > 0 && fields.every((f) => RANGE_FIELDS.includes(f));
}

/** A KeyRange, a plain `{lower, upper, lowerOpen, upperOpen}` object (as YDN-DB takes), or a key. */
function rangeSpec(keyOrRange) {
  if (keyOrRange instanceof KeyRange) return keyOrRange.spec;
  if (isPlainRange(keyOrRange)) {
    const spec = { lowerOpen: !!keyOrRange.lowerOpen, upperOpen: !!keyOrRange.upperOpen };
    if (keyOrRange.lower != null) spec.lower = keyJson(keyOrRange.lower);
    if (keyOrRange.upper != null) spec.upper = keyJson(keyOrRange.upper);
    return spec;
  }
  return { only: keyJson(keyOrRange) };
}

/** A key in a named store (YDN-DB's `ydn.db.Key`): `new Key(store, id, parent?)` or
 * `new Key({store, id, parent})`. `values([keys])` reads the keys of several stores at once. */
class DbKey {
  constructor(store, id, parent) {
    if (store !== null && typeof store === 'object') ({ store, id, parent } = store);
    if (typeof store !== 'string' || store === '') {
      throw codedError('INVALID_ARGUMENT', `a Key needs a store name, not ${JSON.stringify(store)}`);
    }
    keyJson(id);
    this.store = store;
    this.id = id;
    this.parent = parent == null ? null : parent instanceof DbKey ? parent : new DbKey(parent);
  }

  getStoreName() {
    return this.store;
  }

  getId() {
    return this.id;
  }

  getParent() {
    return this.parent;
  }

  toJSON() {
    const json = { store: this.store, id: this.id };
    if (this.parent) json.parent = this.parent.toJSON();
    return json;
  }
}

/** Whether a call is YDN-DB's range-first form `(store, range, limit, ...)` rather than the index
 * form `(store, index, range, ...)`: the second argument does not name an index, and is not a
 * null index followed by a range. */
function rangeFirst(index, range) {
  if (typeof index === 'string') return false;
  if (index === null || index === undefined) return !(range instanceof KeyRange || isPlainRange(range));
  return true;
}

/** YDN-DB's default number of records for keys, values and a query's list. */
const DEFAULT_LIMIT = 100;

function scanText(index, range, limit, offset, reverse, unique) {
  if (limit != null && !(Number.isInteger(limit) && limit >= 0)) {
    throw codedError('INVALID_ARGUMENT', `limit must be a whole number of records, not ${JSON.stringify(limit)}`);
  }
  const scan = { offset: offset || 0, reverse: !!reverse, unique: !!unique };
  if (index != null) scan.index = index;
  if (range != null) scan.range = rangeSpec(range);
  if (limit != null) scan.limit = limit;
  return JSON.stringify(scan);
}

module.exports = {
  codedError,
  keyJson,
  keyJs,
  keysJs,
  valueJson,
  keyText,
  KeyRange,
  isPlainRange,
  rangeSpec,
  DbKey,
  rangeFirst,
  DEFAULT_LIMIT,
  scanText,
};
