//! Timestamps as the product stores and shows them: RFC 3339, UTC, milliseconds.
//!
//! One fixed-width format means stored strings sort in time order, so SQLite can
//! order and compare them without parsing.

use time::{format_description::FormatItem, macros::format_description, OffsetDateTime};

const FORMAT: &[FormatItem<'static>] =
    format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");

/// Format an instant in the product's timestamp format.
pub fn format(t: OffsetDateTime) -> String {
    // `checked_`: a time near the end of year 9999 in a negative offset has
    // no UTC form (`to_offset` would panic); it is formatted as given.
    t.checked_to_offset(time::UtcOffset::UTC)
        .unwrap_or(t)
        .format(FORMAT)
        .unwrap_or_else(|_| "1970-01-01T00:00:00.000Z".to_owned())
}

/// The current time, formatted.
pub fn now() -> String {
    format(OffsetDateTime::now_utc())
}

/// Parse a stored timestamp; `None` for anything that is not one.
/// `secs` seconds from now, as stored.
pub fn in_seconds(secs: u64) -> String {
    let secs = i64::try_from(secs).unwrap_or(i64::MAX / 2);
    format(OffsetDateTime::now_utc().saturating_add(::time::Duration::seconds(secs)))
}

pub fn parse(s: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(s, FORMAT).ok().map(|t| t.assume_utc())
}

/// Seconds elapsed between a stored timestamp and now (0 if it lies in the future).
pub fn seconds_since(s: &str) -> Option<f64> {
    let then = parse(s)?;
    let d = OffsetDateTime::now_utc() - then;
    Some(d.as_seconds_f64().max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_sorts() {
        let a = format(OffsetDateTime::from_unix_timestamp_nanos(1_700_000_000_123_456_789).unwrap());
        assert_eq!(a, "2023-11-14T22:13:20.123Z");
        assert_eq!(format(parse(&a).unwrap()), a);
        let b = format(OffsetDateTime::from_unix_timestamp(1_700_000_001).unwrap());
        assert!(a < b, "fixed width strings must sort in time order");
        assert!(parse("yesterday").is_none());
    }

    #[test]
    fn the_edges_of_time_never_panic() {
        let edge = OffsetDateTime::parse(
            "9999-12-31T23:00:00-05:00",
            &time::format_description::well_known::Rfc3339,
        )
        .unwrap();
        assert!(!format(edge).is_empty());
    }
}
