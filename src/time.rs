//! Formats instants as RFC 3339 UTC seconds (`2026-09-23T09:41:18Z`) and dates (`2026-09-23`),
//! and reads dates back; durations as milliseconds for log lines. Reads the system clock only.

use std::time::{SystemTime, UNIX_EPOCH};

/// `d` in milliseconds to a tenth, the precision log lines give durations in.
pub fn log_ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1e4).round() / 10.0
}

/// Formats `t` as `YYYY-MM-DDTHH:MM:SSZ`, the one timestamp shape the contract uses.
pub fn rfc3339(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// The current time, formatted by [`rfc3339`].
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

/// Seconds since the Unix epoch, now.
pub fn now_epoch() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_millis() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis() as i64,
        Err(e) => -(e.duration().as_millis() as i64),
    }
}

/// The UTC date (`YYYY-MM-DD`) of an epoch second.
pub fn date_of(epoch: i64) -> String {
    let (y, m, d) = civil_from_days(epoch.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// The epoch second at which a UTC date (`YYYY-MM-DD`, a real day) begins; `None` if `text` is
/// not such a date.
pub fn parse_date(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = &text[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if !(1..=12).contains(&m) || d < 1 {
        return None;
    }
    let days = days_from_civil(y, m as u32, d as u32);
    // A day past the month's end comes back as another date.
    (civil_from_days(days) == (y, m as u32, d as u32)).then_some(days * 86_400)
}

/// The epoch second of a timestamp as [`rfc3339`] writes it (`YYYY-MM-DDTHH:MM:SSZ`); `None`
/// for anything else.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() != 20 || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z' {
        return None;
    }
    let day = parse_date(&text[..10])?;
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let s = &text[r];
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    let (h, m, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    (h < 24 && m < 60 && s < 60).then_some(day + h * 3600 + m * 60 + s)
}

/// Howard Hinnant's civil-to-days algorithm, the inverse of [`civil_from_days`].
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Howard Hinnant's days-to-civil algorithm: exact for the proleptic Gregorian calendar, which
/// is why no date-time crate is needed for the few timestamps the sidecar writes.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_back() {
        for t in [0i64, 86_399, 1_790_000_123] {
            let at = UNIX_EPOCH + std::time::Duration::from_secs(t as u64);
            assert_eq!(parse_rfc3339(&rfc3339(at)), Some(t));
        }
        assert_eq!(parse_rfc3339("2026-12-06T24:00:00Z"), None);
        assert_eq!(parse_rfc3339("2026-12-06 10:00:00Z"), None);
        assert_eq!(parse_rfc3339("2026-12-06T10:00:00+01:00"), None);
    }
    use std::time::Duration;

    #[test]
    fn log_durations_are_milliseconds_to_a_tenth() {
        assert_eq!(log_ms(Duration::from_micros(47_659)), 47.7);
        assert_eq!(log_ms(Duration::from_micros(7_254)), 7.3);
        assert_eq!(log_ms(Duration::from_secs(2)), 2000.0);
        assert_eq!(log_ms(Duration::ZERO), 0.0);
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2026-09-23T09:41:18Z, the design's example.
        let t = UNIX_EPOCH + Duration::from_secs(1_790_156_478);
        assert_eq!(rfc3339(t), "2026-09-23T09:41:18Z");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn dates_round_trip_and_bad_ones_are_refused() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2000-02-29"), Some(951_782_400));
        assert_eq!(date_of(1_790_156_478), "2026-09-23");
        for day in [0i64, 10_957, 20_000, 60_000, 2_000_000] {
            let e = day * 86_400;
            assert_eq!(parse_date(&date_of(e)), Some(e));
        }
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "2026-1-01",
            "26-01-01x",
            "",
            "2026-00-10",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
    }
}
