//! Prometheus remote write 1.0: the `WriteRequest` protobuf (prost, the message definitions of
//! the spec written out), snappy block encoding, and the request headers. What goes in: the
//! stored counters, each series labelled as the spec asks (sorted, `__name__` first, no empty
//! value), with the previous value just before a changed one so that a window's increase is its
//! largest minus its smallest value.

use std::collections::BTreeMap;

use crate::store::SeriesRow;

/// `prometheus.WriteRequest` (remote write 1.0; fields 2 and 3 unused).
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`: a value at a time in milliseconds since the epoch.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// The headers every remote-write request carries (beside authentication).
pub const HEADERS: [(&str, &str); 3] = [
    ("Content-Encoding", "snappy"),
    ("Content-Type", "application/x-protobuf"),
    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
];

/// The series of one push: every stored row (`all`), or only those whose value changed since
/// the last accepted push. A changed series carries its previous value (0 for a new one) one
/// millisecond before its new one.
pub fn request(
    rows: &[SeriesRow],
    all: bool,
    at_ms: i64,
    instance: &str,
    static_labels: &BTreeMap<String, String>,
) -> WriteRequest {
    let timeseries = rows
        .iter()
        .filter(|r| all || r.pushed != Some(r.value))
        .map(|r| {
            let mut labels: Vec<Label> = [
                ("__name__", r.metric.as_str()),
                ("guideline", r.guideline.as_str()),
                ("group", r.group.as_str()),
                ("outcome", r.outcome.as_str()),
                ("instance", instance),
            ]
            .into_iter()
            .chain(static_labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .filter(|(_, v)| !v.is_empty())
            .map(|(name, value)| Label {
                name: name.into(),
                value: value.into(),
            })
            .collect();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let mut samples = Vec::with_capacity(2);
            if r.pushed != Some(r.value) {
                samples.push(Sample {
                    value: r.pushed.unwrap_or(0) as f64,
                    timestamp: at_ms - 1,
                });
            }
            samples.push(Sample {
                value: r.value as f64,
                timestamp: at_ms,
            });
            TimeSeries { labels, samples }
        })
        .collect();
    WriteRequest { timeseries }
}

/// The request's body: the protobuf, snappy block encoded.
pub fn encode(request: &WriteRequest) -> Vec<u8> {
    let proto = prost::Message::encode_to_vec(request);
    snap::raw::Encoder::new()
        .compress_vec(&proto)
        .expect("snappy takes any input below 4 GiB")
}

/// A body back into its request (tests, and the benches' simulated sidecars).
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let proto = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("snappy: {e}"))?;
    <WriteRequest as prost::Message>::decode(proto.as_slice()).map_err(|e| format!("protobuf: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, guideline: &str, value: u64, pushed: Option<u64>) -> SeriesRow {
        SeriesRow {
            metric: metric.into(),
            guideline: guideline.into(),
            group: "shown".into(),
            outcome: String::new(),
            value,
            pushed,
        }
    }

    #[test]
    fn a_changed_series_carries_its_previous_value_and_labels_come_sorted() {
        let rows = [
            row("guidebook_team_fires_total", "g", 3, Some(3)),
            row("guidebook_team_triggered_sessions_total", "g", 5, Some(2)),
            row("guidebook_team_blocks_total", "h", 1, None),
        ];
        let labels = BTreeMap::from([("team".to_string(), "payments".to_string())]);
        let changed = request(&rows, false, 10_000, "abc", &labels);
        assert_eq!(
            changed.timeseries.len(),
            2,
            "the unchanged series is left out"
        );
        let t = &changed.timeseries[0];
        let names: Vec<&str> = t.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["__name__", "group", "guideline", "instance", "team"]
        );
        assert_eq!(
            t.samples,
            [
                Sample {
                    value: 2.0,
                    timestamp: 9_999
                },
                Sample {
                    value: 5.0,
                    timestamp: 10_000
                }
            ]
        );
        assert_eq!(changed.timeseries[1].samples[0].value, 0.0, "new: from 0");
        let all = request(&rows, true, 10_000, "abc", &labels);
        assert_eq!(all.timeseries.len(), 3);
        assert_eq!(all.timeseries[0].samples.len(), 1);
        // No empty label value reaches the wire (`outcome` here).
        assert!(all
            .timeseries
            .iter()
            .all(|t| t.labels.iter().all(|l| !l.value.is_empty())));
    }

    #[test]
    fn the_body_is_snappy_block_encoded_protobuf() {
        let rows = [row("guidebook_team_fires_total", "g", 7, None)];
        let req = request(&rows, true, 1, "i", &BTreeMap::new());
        let body = encode(&req);
        // Snappy's block format starts with the uncompressed length as a varint; the frame
        // format would start with its stream identifier chunk (0xff).
        assert_ne!(body[0], 0xff);
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        assert_eq!(raw, prost::Message::encode_to_vec(&req));
        // Field 1 (timeseries), wire type 2.
        assert_eq!(raw[0], 0x0a);
        assert_eq!(decode(&body).unwrap(), req);
        assert!(decode(b"not snappy").is_err());
    }
}
