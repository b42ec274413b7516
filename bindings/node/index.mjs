// ESM entry: the same module as require('objstore-db').
import api from './index.js';

export const { Storage, KeyRange, DbKey, Query, Transaction, Cursor, RecordEvent, ReadyEvent, ErrorEvent, ydn, version } = api;
export default api;
