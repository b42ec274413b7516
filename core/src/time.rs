//! The two date forms buckets use: ISO 8601 in listings (`2026-11-22T04:29:11.000Z`) and HTTP
//! dates in headers (`Sun, 22 Nov 2026 04:29:11 GMT`). Records keep the ISO form, which sorts.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub fn iso(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

pub fn http_date(time: SystemTime) -> String {
    // httpdate cannot write years past 9999 (and panics); such a date can only come from a
    // corrupt record, so it is clamped.
    let last = UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    httpdate::fmt_http_date(time.min(last))
}

/// An HTTP date as ISO 8601; text that is not a date is kept as it is.
pub fn http_date_to_iso(date: &str) -> String {
    httpdate::parse_http_date(date).map(iso).unwrap_or_else(|_| date.to_string())
}

/// How far the clock that wrote HTTP date `date` is ahead of `now` (behind: negative), in ms;
/// `None` when it is not a date. (The date has whole seconds: the offset is good to a second.)
pub fn offset_from_now_ms(date: &str, now: SystemTime) -> Option<i64> {
    let then = httpdate::parse_http_date(date).ok()?;
    let ms = |t: SystemTime| t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
    // Whole seconds on the server's side: its clock is taken as half a second past them.
    Some(ms(then) + 500 - ms(now))
}

/// Howard Hinnant's days-to-civil: days since 1970-01-01 to (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_both_forms_of_the_same_instant() {
        let t = UNIX_EPOCH + Duration::from_millis(1_795_325_351_123);
        assert_eq!(iso(t), "2026-11-22T05:29:11.123Z");
        assert_eq!(http_date(t), "Sun, 22 Nov 2026 05:29:11 GMT");
        assert_eq!(http_date_to_iso("Sun, 22 Nov 2026 04:49:11 GMT"), "2026-11-22T04:49:11.000Z");
        assert_eq!(iso(UNIX_EPOCH + Duration::from_secs(951_782_400)), "2000-02-29T00:00:00.000Z");
        assert_eq!(http_date_to_iso("yesterday"), "yesterday");
    }
}
