//! The `sqlite` mechanism: one SQLite file in WAL mode, one WITHOUT ROWID table per store and
//! per index, so that a key lookup is one B-tree probe and a range is one B-tree walk.

use std::path::Path;
use std::sync::Arc;

use rusqlite::{params, Connection, OpenFlags};

use super::statements::Prepared;
use super::{After, Durability, Mechanism, OpenReader, TableId, Visit, VisitJoined, META_TABLE};
use crate::error::{Error, Result};
use crate::range::{just_above, ByteRange};

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Statement {
    Get,
    Put,
    Delete,
    Count,
    Scan { reverse: bool, values: bool },
    IndexInsert,
    IndexDelete,
    IndexCount,
    IndexScan { reverse: bool, after: bool },
    IndexScanValues { data: TableId, reverse: bool, after: bool },
}

pub struct SqliteMechanism {
    /// The connection, and its statements by (table, statement).
    prepared: Prepared<(TableId, Statement)>,
    /// `<file>-lock`, flock'ed for as long as the connection is open: one process per file.
    /// A reader (`open_reader`) holds none: the process already does.
    _lock: Option<std::fs::File>,
    path: String,
    /// The file, its path made absolute at open: where readers open it.
    file: std::path::PathBuf,
}

impl SqliteMechanism {
    pub fn open(path: &Path, durability: Durability) -> Result<SqliteMechanism> {
        Self::open_file(path, durability).map_err(|e| when_the_disk_is_full(path, e))
    }

    fn open_file(path: &Path, durability: Durability) -> Result<SqliteMechanism> {
        let path_text = path.display().to_string();
        let failed = |what: &str| {
            let context = format!("{what} {path_text:?}");
            move |source| Error::Storage { context, source }
        };
        let lock = lock_exclusively(path)?;
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(failed("opening database file"))?;
        // WAL; NORMAL syncs at checkpoints only (durable across application crashes), FULL at
        // every commit (durable across machine crashes). A page cache of up to 64 MiB and a
        // checkpoint every 64 MiB of WAL, truncated back to 64 MiB at most after one (not SQLite's
        // 2 MiB and 4 MiB, and a WAL that keeps its largest size): a bucket listing of
        // 100,000 names into a cold cache went from 12 s to 6.8 s, as pages stopped being
        // re-read and re-copied by checkpoints.
        let synchronous = match durability {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        };
        conn.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={synchronous}; PRAGMA busy_timeout=5000;\
             PRAGMA cache_size=-65536; PRAGMA wal_autocheckpoint=16384; PRAGMA journal_size_limit=67108864;"
        ))
        .map_err(failed("configuring database file"))?;
        conn.set_prepared_statement_cache_capacity(8); // BEGIN, COMMIT, ROLLBACK: the rest is `prepared`
        let file = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let mut mechanism = SqliteMechanism { prepared: Prepared::new(conn), _lock: Some(lock), path: path_text, file };
        mechanism.create_data_table(META_TABLE)?;
        Ok(mechanism)
    }

    /// A read-only connection to the file this one has open (`file`: its path made absolute at
    /// open, so that a change of directory since does not open another), for reads on callers'
    /// threads. In WAL mode it reads alongside the writer and sees every commit made before
    /// its read began.
    fn open_reader(file: &Path, path: &str) -> Result<SqliteMechanism> {
        let failed = |source| Error::Storage { context: format!("opening a reader of {path:?}"), source };
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(file, flags).map_err(failed)?;
        // A reader maps the file (up to 1 GiB of it) rather than copying pages into a cache of its
        // own: a reader's copies cost it a tenth of a point get's time against the worker's
        // connection, whose cache the writes keep warm. Safe here: readers never write, and the
        // engine never shrinks the file (no VACUUM), so no mapped page goes away under a read.
        conn.execute_batch("PRAGMA busy_timeout=5000; PRAGMA cache_size=-65536; PRAGMA mmap_size=1073741824;")
            .map_err(failed)?;
        conn.set_prepared_statement_cache_capacity(8); // BEGIN, COMMIT, ROLLBACK: the rest is `prepared`
        Ok(SqliteMechanism {
            prepared: Prepared::new(conn),
            _lock: None,
            path: path.to_string(),
            file: file.to_path_buf(),
        })
    }

    /// Runs one cached statement with `args`, turning a failure into an error naming the table.
    fn execute(
        &mut self,
        t: TableId,
        statement: Statement,
        what: &'static str,
        args: &[&dyn rusqlite::ToSql],
    ) -> Result<()> {
        let Self { prepared, path, .. } = self;
        let stmt = statement_for(prepared, t, statement).map_err(failed(path, what, t))?;
        stmt.execute(args).map_err(failed(path, what, t))?;
        Ok(())
    }

    fn count_with(&mut self, t: TableId, statement: Statement, range: &ByteRange) -> Result<u64> {
        if range.is_empty() {
            return Ok(0);
        }
        let Self { prepared, path, .. } = self;
        let stmt = statement_for(prepared, t, statement).map_err(failed(path, "count", t))?;
        let n: i64 = stmt.query_row(params![range.low, range.high], |r| r.get(0)).map_err(failed(path, "count", t))?;
        Ok(n as u64)
    }

    fn scan_with(
        &mut self,
        t: TableId,
        statement: Statement,
        range: &ByteRange,
        after: After,
        visit: VisitJoined,
    ) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let Self { prepared, path, .. } = self;
        let stmt = statement_for(prepared, t, statement).map_err(failed(path, "scan", t))?;
        let columns = stmt.column_count();
        let mut rows = match after {
            None => stmt.query(params![range.low, range.high]),
            Some((ik, pk)) => {
                // SQLite seeks on the plain bound, not on the row value (which only filters),
                // so move the bound up to the resume point: a late page then costs what an
                // early one does.
                let (low, high) = if reverse_scan(statement) {
                    (range.low.clone(), range.high.clone().min(just_above(ik)))
                } else {
                    (range.low.clone().max(ik.to_vec()), range.high.clone())
                };
                stmt.query(params![low, high, ik, pk])
            }
        }
        .map_err(failed(path, "scan", t))?;
        while let Some(row) = rows.next().map_err(failed(path, "scan", t))? {
            let blob = |i: usize| {
                if i >= columns {
                    return Ok(&[][..]);
                }
                row.get_ref(i).and_then(|v| Ok(v.as_blob()?)).map_err(failed(path, "scan", t))
            };
            if !visit(blob(0)?, blob(1)?, blob(2)?)? {
                break;
            }
        }
        Ok(())
    }

    fn run_plain(&mut self, sql: &str, what: &'static str) -> Result<()> {
        let Self { prepared, path, .. } = self;
        prepared.conn().prepare_cached(sql).and_then(|mut s| s.execute([])).map_err(failed(path, what, META_TABLE))?;
        Ok(())
    }

    fn run_ddl(&mut self, sql: &str, what: &'static str, t: TableId) -> Result<()> {
        let Self { prepared, path, .. } = self;
        prepared.conn().execute_batch(sql).map_err(failed(path, what, t))
    }
}

/// How long an open waits for a holder of the file that is letting go (a database closed a
/// moment ago, whose worker is still finishing) before it says the file is in use.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Takes the exclusive lock on `<path>-lock` (created when missing), waiting up to `LOCK_WAIT`.
fn lock_exclusively(path: &Path) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    let shown = path.display().to_string();
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push("-lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::Lock { path: shown.clone(), reason: e.to_string() })?;
    let started = std::time::Instant::now();
    loop {
        // SAFETY: flock on a descriptor we own; released when `file` is closed.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok(file);
        }
        let error = std::io::Error::last_os_error();
        if error.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(Error::Lock { path: shown, reason: error.to_string() });
        }
        if started.elapsed() >= LOCK_WAIT {
            return Err(Error::InUse { path: shown });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// An open that failed on a full disk says so: SQLite's own words for it at open are often
/// "disk I/O error" (it cannot grow the WAL index).
fn when_the_disk_is_full(path: &Path, error: Error) -> Error {
    const NEARLY_NOTHING: u64 = 64 * 1024;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(dir_c) = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()) else { return error };
    // SAFETY: statvfs fills the struct we own from a NUL-terminated path.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(dir_c.as_ptr(), &mut stats) } != 0 {
        return error;
    }
    let available = stats.f_bavail as u64 * stats.f_frsize as u64;
    match error {
        Error::Storage { .. } if available < NEARLY_NOTHING => {
            Error::DiskFull { path: path.display().to_string(), available }
        }
        other => other,
    }
}

fn statement_for(
    prepared: &mut Prepared<(TableId, Statement)>,
    t: TableId,
    statement: Statement,
) -> rusqlite::Result<&mut rusqlite::Statement<'static>> {
    prepared.statement((t, statement), || statement_text(t, statement))
}

fn failed<'p>(path: &'p str, what: &'static str, t: TableId) -> impl FnOnce(rusqlite::Error) -> Error + 'p {
    // The table's number is internal: the file and the step are what a person can act on.
    let _ = t;
    move |source| Error::Storage { context: format!("{what} in database file {path:?}"), source }
}

fn reverse_scan(statement: Statement) -> bool {
    matches!(
        statement,
        Statement::Scan { reverse: true, .. }
            | Statement::IndexScan { reverse: true, .. }
            | Statement::IndexScanValues { reverse: true, .. }
    )
}

/// The row-value condition that resumes a scan strictly after (?3, ?4). It only filters the
/// few rows that share the resume point's index key; `scan_with` moves the seek bound.
fn resume_clause(reverse: bool, after: bool, alias: &str) -> String {
    match (after, reverse) {
        (false, _) => String::new(),
        (true, false) => format!(" AND ({alias}ik, {alias}pk) > (?3, ?4)"),
        (true, true) => format!(" AND ({alias}ik, {alias}pk) < (?3, ?4)"),
    }
}

fn statement_text(t: TableId, statement: Statement) -> String {
    let order = |reverse: bool| if reverse { "DESC" } else { "ASC" };
    match statement {
        Statement::Get => format!("SELECT v FROM t{t} WHERE k = ?1"),
        Statement::Put => format!("INSERT OR REPLACE INTO t{t} (k, v) VALUES (?1, ?2)"),
        Statement::Delete => format!("DELETE FROM t{t} WHERE k = ?1"),
        Statement::Count => format!("SELECT count(*) FROM t{t} WHERE k >= ?1 AND k < ?2"),
        Statement::Scan { reverse, values } => format!(
            "SELECT k{} FROM t{t} WHERE k >= ?1 AND k < ?2 ORDER BY k {}",
            if values { ", v" } else { "" },
            order(reverse)
        ),
        Statement::IndexInsert => format!("INSERT OR IGNORE INTO t{t} (ik, pk) VALUES (?1, ?2)"),
        Statement::IndexDelete => format!("DELETE FROM t{t} WHERE ik = ?1 AND pk = ?2"),
        Statement::IndexCount => format!("SELECT count(*) FROM t{t} WHERE ik >= ?1 AND ik < ?2"),
        Statement::IndexScan { reverse, after } => {
            let o = order(reverse);
            let after = resume_clause(reverse, after, "");
            format!("SELECT ik, pk FROM t{t} WHERE ik >= ?1 AND ik < ?2{after} ORDER BY ik {o}, pk {o}")
        }
        Statement::IndexScanValues { data, reverse, after } => {
            let o = order(reverse);
            let after = resume_clause(reverse, after, "i.");
            format!(
                "SELECT i.ik, i.pk, d.v FROM t{t} AS i JOIN t{data} AS d ON d.k = i.pk \
                 WHERE i.ik >= ?1 AND i.ik < ?2{after} ORDER BY i.ik {o}, i.pk {o}"
            )
        }
    }
}

impl Mechanism for SqliteMechanism {
    fn reader_opener(&self) -> OpenReader {
        let (file, path) = (self.file.clone(), self.path.clone());
        Arc::new(move || Ok(Box::new(SqliteMechanism::open_reader(&file, &path)?) as Box<dyn Mechanism>))
    }

    fn begin(&mut self, write: bool) -> Result<()> {
        self.run_plain(if write { "BEGIN IMMEDIATE" } else { "BEGIN DEFERRED" }, "begin")
    }

    fn commit(&mut self) -> Result<()> {
        self.run_plain("COMMIT", "commit")
    }

    fn rollback(&mut self) -> Result<()> {
        if self.prepared.conn().is_autocommit() {
            return Ok(()); // SQLite already rolled back (for example after a full disk)
        }
        self.run_plain("ROLLBACK", "rollback")
    }

    fn create_data_table(&mut self, t: TableId) -> Result<()> {
        let sql =
            format!("CREATE TABLE IF NOT EXISTS t{t} (k BLOB NOT NULL PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID");
        self.run_ddl(&sql, "create table", t)
    }

    fn create_index_table(&mut self, t: TableId) -> Result<()> {
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS t{t} (ik BLOB NOT NULL, pk BLOB NOT NULL, PRIMARY KEY (ik, pk)) WITHOUT ROWID"
        );
        self.run_ddl(&sql, "create index table", t)
    }

    fn drop_table(&mut self, t: TableId) -> Result<()> {
        self.prepared.forget(|(table, _)| *table == t);
        self.run_ddl(&format!("DROP TABLE IF EXISTS t{t}"), "drop table", t)
    }

    fn clear_table(&mut self, t: TableId) -> Result<()> {
        self.run_ddl(&format!("DELETE FROM t{t}"), "clear table", t)
    }

    fn get(&mut self, t: TableId, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let Self { prepared, path, .. } = self;
        let stmt = statement_for(prepared, t, Statement::Get).map_err(failed(path, "get", t))?;
        let mut rows = stmt.query([key]).map_err(failed(path, "get", t))?;
        match rows.next().map_err(failed(path, "get", t))? {
            Some(row) => Ok(Some(row.get(0).map_err(failed(path, "get", t))?)),
            None => Ok(None),
        }
    }

    fn put(&mut self, t: TableId, key: &[u8], value: &[u8]) -> Result<()> {
        self.execute(t, Statement::Put, "put", &[&key, &value])
    }

    fn delete(&mut self, t: TableId, key: &[u8]) -> Result<()> {
        self.execute(t, Statement::Delete, "delete", &[&key])
    }

    fn count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        self.count_with(t, Statement::Count, range)
    }

    fn scan(&mut self, t: TableId, range: &ByteRange, reverse: bool, values: bool, visit: Visit) -> Result<()> {
        self.scan_with(t, Statement::Scan { reverse, values }, range, None, &mut |k, v, _| visit(k, v))
    }

    fn index_insert(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        self.execute(t, Statement::IndexInsert, "index insert", &[&index_key, &primary_key])
    }

    fn index_delete(&mut self, t: TableId, index_key: &[u8], primary_key: &[u8]) -> Result<()> {
        self.execute(t, Statement::IndexDelete, "index delete", &[&index_key, &primary_key])
    }

    fn index_count(&mut self, t: TableId, range: &ByteRange) -> Result<u64> {
        self.count_with(t, Statement::IndexCount, range)
    }

    fn index_scan(&mut self, t: TableId, range: &ByteRange, after: After, reverse: bool, visit: Visit) -> Result<()> {
        let statement = Statement::IndexScan { reverse, after: after.is_some() };
        self.scan_with(t, statement, range, after, &mut |ik, pk, _| visit(ik, pk))
    }

    fn index_scan_values(
        &mut self,
        index: TableId,
        data: TableId,
        range: &ByteRange,
        after: After,
        reverse: bool,
        visit: VisitJoined,
    ) -> Result<()> {
        let statement = Statement::IndexScanValues { data, reverse, after: after.is_some() };
        self.scan_with(index, statement, range, after, visit)
    }
}
