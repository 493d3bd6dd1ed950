//! Field numbers of the Perfetto trace protos (protos/perfetto/trace/ in Perfetto's
//! sources) that chorus writes and reads; the writer and the reader share them.

/// `Trace.packet` (repeated TracePacket).
pub const TRACE_PACKET: u32 = 1;

/// Fields of `TracePacket`.
pub mod packet {
    /// `uint64 timestamp` (ns).
    pub const TIMESTAMP: u32 = 8;
    /// `uint32 trusted_packet_sequence_id`.
    pub const SEQUENCE_ID: u32 = 10;
    /// `TrackEvent track_event`.
    pub const TRACK_EVENT: u32 = 11;
    /// `InternedData interned_data`.
    pub const INTERNED_DATA: u32 = 12;
    /// `uint32 sequence_flags`.
    pub const SEQUENCE_FLAGS: u32 = 13;
    /// Deprecated `bool incremental_state_cleared`, still honoured as the flag.
    pub const INCREMENTAL_STATE_CLEARED_OLD: u32 = 41;
    /// `uint32 previous_packet_dropped`: packets of the sequence were lost before this.
    pub const PREVIOUS_PACKET_DROPPED: u32 = 42;
    /// `TrackDescriptor track_descriptor`.
    pub const TRACK_DESCRIPTOR: u32 = 60;
    /// Sequence flag: interned data before this packet is forgotten.
    pub const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
    /// Sequence flag: this packet refers to interned data.
    pub const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
}

/// Fields of `TrackDescriptor` and the process and thread descriptors inside it.
pub mod track {
    /// `uint64 uuid`.
    pub const UUID: u32 = 1;
    /// `string name`.
    pub const NAME: u32 = 2;
    /// `ProcessDescriptor process`.
    pub const PROCESS: u32 = 3;
    /// `ThreadDescriptor thread`.
    pub const THREAD: u32 = 4;
    /// `uint64 parent_uuid`.
    pub const PARENT_UUID: u32 = 5;
    /// `ProcessDescriptor.pid` and `ThreadDescriptor.pid`.
    pub const PID: u32 = 1;
    /// `ThreadDescriptor.tid`.
    pub const TID: u32 = 2;
    /// `ThreadDescriptor.thread_name`.
    pub const THREAD_NAME: u32 = 5;
    /// `ProcessDescriptor.process_name`.
    pub const PROCESS_NAME: u32 = 6;
}

/// Fields of `TrackEvent`.
pub mod event {
    /// `repeated uint64 category_iids`.
    pub const CATEGORY_IIDS: u32 = 3;
    /// `repeated DebugAnnotation debug_annotations`.
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    /// `Type type`.
    pub const TYPE: u32 = 9;
    /// `uint64 name_iid`.
    pub const NAME_IID: u32 = 10;
    /// `uint64 track_uuid`.
    pub const TRACK_UUID: u32 = 11;
    /// `repeated string categories`.
    pub const CATEGORIES: u32 = 22;
    /// `string name`.
    pub const NAME: u32 = 23;
    /// Deprecated `repeated uint64 flow_ids`, still read.
    pub const FLOW_IDS_OLD: u32 = 36;
    /// Deprecated `repeated uint64 terminating_flow_ids`, still read.
    pub const TERMINATING_FLOW_IDS_OLD: u32 = 42;
    /// `repeated fixed64 flow_ids`.
    pub const FLOW_IDS: u32 = 47;
    /// `repeated fixed64 terminating_flow_ids`.
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    /// `TYPE_SLICE_BEGIN`.
    pub const SLICE_BEGIN: u64 = 1;
    /// `TYPE_SLICE_END`.
    pub const SLICE_END: u64 = 2;
    /// `TYPE_INSTANT`.
    pub const INSTANT: u64 = 3;
}

/// Fields of `DebugAnnotation`.
pub mod annotation {
    /// `uint64 name_iid`.
    pub const NAME_IID: u32 = 1;
    /// `bool bool_value`.
    pub const BOOL_VALUE: u32 = 2;
    /// `uint64 uint_value`.
    pub const UINT_VALUE: u32 = 3;
    /// `int64 int_value`.
    pub const INT_VALUE: u32 = 4;
    /// `string string_value`.
    pub const STRING_VALUE: u32 = 6;
    /// `string name`.
    pub const NAME: u32 = 10;
}

/// Fields of `InternedData` and of its entries.
pub mod interned {
    /// `repeated EventCategory event_categories`.
    pub const EVENT_CATEGORIES: u32 = 1;
    /// `repeated EventName event_names`.
    pub const EVENT_NAMES: u32 = 2;
    /// `repeated DebugAnnotationName debug_annotation_names`.
    pub const DEBUG_ANNOTATION_NAMES: u32 = 3;
    /// `iid` of an entry.
    pub const IID: u32 = 1;
    /// `name` of an entry.
    pub const NAME: u32 = 2;
}
