//! The few messages of Prometheus's `prompb` (remote-write 1.0,
//! `prompb/remote.proto` and `types.proto`) that a sender writes, derived
//! with prost by hand (the field numbers are the protocol's), and the body
//! as it goes on the wire: protobuf, then one snappy block (not the framed
//! format).

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    /// What the metric families are (field 2 is reserved by the protocol).
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

/// `prometheus.TimeSeries`: labels sorted by name, `__name__` among them.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// The labels.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// The samples, oldest first.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Label {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.MetricMetadata`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricMetadata {
    /// A [`MetricType`].
    #[prost(enumeration = "MetricType", tag = "1")]
    pub r#type: i32,
    /// The metric's name.
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    /// What it is.
    #[prost(string, tag = "4")]
    pub help: String,
    /// Its unit, when known.
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// `prometheus.MetricMetadata.MetricType` (the values a sender here uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum MetricType {
    /// An event's payload: neither a count nor a level.
    Unknown = 0,
    /// A cumulative count.
    Counter = 1,
    /// A level.
    Gauge = 2,
}

/// The HTTP body of `request`: its protobuf in one snappy block.
pub fn encode(request: &WriteRequest) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(request);
    snap::raw::Encoder::new().compress_vec(&raw).expect("snappy compresses any buffer below 4 GiB")
}

/// A body read back ([`encode`]'s inverse): for tests and receivers.
pub fn decode(body: &[u8]) -> Result<WriteRequest, String> {
    let raw = snap::raw::Decoder::new().decompress_vec(body).map_err(|e| format!("snappy: {e}"))?;
    prost::Message::decode(raw.as_slice()).map_err(|e| format!("protobuf: {e}"))
}
