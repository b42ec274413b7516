// ESM entry: the same module as require('objstore-db').
import api from './index.js';

export const { Storage, KeyRange, Query, Transaction, Cursor, version } = api;
export default api;
